// bind_translation.cc — the sequence-to-sequence Transformer in mtf.models:
// its config, model and cached decoder (greedy and beam search), and what
// translation needs around them (mtf.models as well): the verse-aligned
// Bible and TSV corpora, the deterministic split, SentencePiece
// vocabularies, encoded pairs and padded or packed batches, and corpus
// BLEU — so a Python script trains and evaluates the model as
// examples/translate does.

#include "array_convert.h"
#include "config_kwargs.h"
#include "handles.h"
#include "interruptible.h"
#include "learning_rate_arg.h"
#include "models/encdec_decoder.h"
#include "models/translation_data.h"

namespace mtf::python {
namespace {

using models::EncDecConfig;
using models::EncDecDecoder;
using models::TransformerEncDec;

const std::vector<const char*> kEncDecFields = {"encoder_layers",
                                                "decoder_layers",
                                                "d_model",
                                                "d_ff",
                                                "heads",
                                                "d_kv",
                                                "vocab",
                                                "batch",
                                                "input_length",
                                                "target_length",
                                                "dropout",
                                                "stack_dropout",
                                                "label_smoothing",
                                                "norm",
                                                "ffn",
                                                "position",
                                                "relative_buckets",
                                                "relative_max_distance",
                                                "packed",
                                                "optimizer",
                                                "learning_rate",
                                                "clip_norm",
                                                "microbatches",
                                                "seed"};

// {placeholder: array} for Session.run.
py::dict feed_dict(const Feeds& feeds) {
  py::dict d;
  for (const auto& [tensor, value] : feeds) d[py::cast(wrap(tensor))] = host_to_array(value);
  return d;
}

void bind_config_and_model(py::module_& m) {
  py::class_<EncDecConfig> config(
      m, "EncDecConfig",
      "Sizes and choices of the sequence-to-sequence Transformer; EncDecConfig(d_model=256, "
      "...) sets any field by name. norm: \"rms\" or \"layer\"; ffn: \"relu\" or "
      "\"gated_gelu\"; position: \"relative\" (T5's buckets) or \"absolute\"; optimizer: "
      "\"adafactor\" or "
      "\"adam\" (which needs a learning_rate).");
  config.def(py::init([](const py::kwargs& kwargs) {
    return config_from_kwargs<EncDecConfig>(kwargs, kEncDecFields, "EncDecConfig");
  }));
  learning_rate_property(config, "learning_rate", &EncDecConfig::learning_rate);
  config.def_readwrite("encoder_layers", &EncDecConfig::encoder_layers)
      .def_readwrite("clip_norm", &EncDecConfig::clip_norm)
      .def_readwrite("microbatches", &EncDecConfig::microbatches)
      .def_readwrite("decoder_layers", &EncDecConfig::decoder_layers)
      .def_readwrite("d_model", &EncDecConfig::d_model)
      .def_readwrite("d_ff", &EncDecConfig::d_ff)
      .def_readwrite("heads", &EncDecConfig::heads)
      .def_readwrite("d_kv", &EncDecConfig::d_kv)
      .def_readwrite("vocab", &EncDecConfig::vocab)
      .def_readwrite("batch", &EncDecConfig::batch)
      .def_readwrite("input_length", &EncDecConfig::input_length)
      .def_readwrite("target_length", &EncDecConfig::target_length)
      .def_readwrite("dropout", &EncDecConfig::dropout)
      .def_readwrite("stack_dropout", &EncDecConfig::stack_dropout)
      .def_readwrite("label_smoothing", &EncDecConfig::label_smoothing)
      .def_readwrite("norm", &EncDecConfig::norm)
      .def_readwrite("ffn", &EncDecConfig::ffn)
      .def_readwrite("optimizer", &EncDecConfig::optimizer)
      .def_readwrite("position", &EncDecConfig::position)
      .def_readwrite("relative_buckets", &EncDecConfig::relative_buckets)
      .def_readwrite("relative_max_distance", &EncDecConfig::relative_max_distance)
      .def_readwrite("packed", &EncDecConfig::packed)
      .def_readwrite("seed", &EncDecConfig::seed)
      .def_readwrite("variable_dtype", &EncDecConfig::variable_dtype)
      .def("validate", &EncDecConfig::validate)
      .def("__repr__",
           [](const EncDecConfig& c) { return config_repr(c, kEncDecFields, "EncDecConfig"); });

  py::class_<TransformerEncDec, std::shared_ptr<TransformerEncDec>>(
      m, "TransformerEncDec",
      "The sequence-to-sequence Transformer (T5's variant of the paper's model): a training "
      "graph (loss, Adafactor updates in train_ops) and an evaluation graph (eval_loss_sum, "
      "eval_tokens, eval_logits) sharing its variables. inputs [batch, inputs_length] and "
      "targets [batch, targets_length] are int32 ids, 0 padding, 1 ending a sentence; a packed "
      "model also takes segmentation and position placeholders (see feeds()).")
      .def(py::init([](const EncDecConfig& c) {
             return make_graph_owner<TransformerEncDec>(
                 [](TransformerEncDec& t) -> Graph& { return t.graph(); }, c);
           }),
           py::arg("config"))
      .def_property_readonly("graph", [](TransformerEncDec& t) { return owner_of(t.graph()); })
      .def_property_readonly("config", &TransformerEncDec::config)
      .def_readonly("batch", &TransformerEncDec::batch)
      .def_readonly("inputs_length", &TransformerEncDec::inputs_length)
      .def_readonly("targets_length", &TransformerEncDec::targets_length)
      .def_readonly("d_model", &TransformerEncDec::d_model)
      .def_readonly("vocab", &TransformerEncDec::vocab)
      .def_readonly("inputs", &TransformerEncDec::inputs)
      .def_readonly("targets", &TransformerEncDec::targets)
      .def_readonly("inputs_segmentation", &TransformerEncDec::inputs_segmentation)
      .def_readonly("inputs_position", &TransformerEncDec::inputs_position)
      .def_readonly("targets_segmentation", &TransformerEncDec::targets_segmentation)
      .def_readonly("targets_position", &TransformerEncDec::targets_position)
      .def_readonly("loss", &TransformerEncDec::loss)
      .def_readonly("gradient_norm", &TransformerEncDec::gradient_norm)
      .def_readonly("eval_loss_sum", &TransformerEncDec::eval_loss_sum)
      .def_readonly("eval_tokens", &TransformerEncDec::eval_tokens)
      .def_readonly("eval_logits", &TransformerEncDec::eval_logits)
      .def_property_readonly("train_ops", [](TransformerEncDec& t) { return wrap(t.train_ops); })
      .def_property_readonly("apply_ops", [](TransformerEncDec& t) { return wrap(t.apply_ops); })
      .def(
          "feeds",
          [](const TransformerEncDec& t, const py::handle& inputs, const py::handle& targets) {
            return feed_dict(t.feeds(array_to_host(inputs, t.inputs.shape(), int32, "inputs"),
                                     array_to_host(targets, t.targets.shape(), int32, "targets")));
          },
          py::arg("inputs"), py::arg("targets"),
          "The feed dict of rows of one pair each (int32 arrays padded with 0): inputs and "
          "targets, and for a packed model one segment a row and positions from 0.");
  m.def(
      "translate_greedy",
      [](TransformerEncDec& t, const py::object& session,
         const std::vector<std::vector<int32_t>>& sources) {
        Session& s = session_of(session);
        return interruptible([&] { return models::translate_greedy(t, s, sources); });
      },
      py::arg("model"), py::arg("session"), py::arg("sources"),
      "Greedy translation by recomputing the decoder over the prefix each step (the "
      "reference for EncDecDecoder): at most batch sources; ids without the ending.");
}

void bind_decoder(py::module_& m) {
  py::class_<EncDecDecoder, models::IncrementalDecoder>(
      m, "EncDecDecoder",
      "Cached decoding of a TransformerEncDec: encode() runs the encoder once per batch of "
      "sources and keeps each layer's encoder-decoder keys and values; each step feeds one "
      "token per sequence at a position over self-attention caches. With beams > 1 (a divisor "
      "of batch) the encoder also runs once per sentence of `beams` sequences, as translate() "
      "with that many beams does. Make it before the Session (which creates its caches); "
      "restore the model's variables to decode a trained model.")
      .def(py::init<TransformerEncDec&, int64_t, const std::string&, int64_t>(), py::arg("model"),
           py::arg("batch"), py::arg("batch_name") = "batch", py::arg("beams") = 1,
           py::keep_alive<1, 2>())
      .def_readonly("batch", &EncDecDecoder::batch)
      .def_property_readonly("beams", &EncDecDecoder::beams)
      .def_property_readonly("caches", &EncDecDecoder::caches)
      .def(
          "encode",
          [](EncDecDecoder& d, const py::object& session,
             const std::vector<std::vector<int32_t>>& sources) {
            Session& s = session_of(session);
            interruptible([&] {
              d.encode(s, sources);
              return 0;
            });
          },
          py::arg("session"), py::arg("sources"),
          "Encodes one source (ids) per sequence, or (beams > 1) one per sentence.")
      .def(
          "translate",
          [](EncDecDecoder& d, const py::object& session,
             const std::vector<std::vector<int32_t>>& sources, int64_t beams, double alpha) {
            Session& s = session_of(session);
            models::BeamOptions o;
            o.beams = beams;
            o.alpha = alpha;
            return interruptible([&] { return models::translate(d, s, sources, o); });
          },
          py::arg("session"), py::arg("sources"), py::kw_only(), py::arg("beams") = 1,
          py::arg("alpha") = 0.6,
          "Translations of sources (ids), batch / beams at a time: greedy for one beam, else "
          "beam search with the length penalty ((5 + n) / 6)^alpha. Ids without the ending.");
}

void bind_corpus_and_bleu(py::module_& m) {
  py::class_<models::SentencePair>(m, "SentencePair", "A source sentence and its translation.")
      .def(py::init([](std::string key, std::string source, std::string target) {
             return models::SentencePair{std::move(key), std::move(source), std::move(target)};
           }),
           py::arg("key"), py::arg("source"), py::arg("target"))
      .def_readwrite("key", &models::SentencePair::key)
      .def_readwrite("source", &models::SentencePair::source)
      .def_readwrite("target", &models::SentencePair::target);
  m.def("read_tsv_pairs", &models::read_tsv_pairs, py::arg("path"),
        "Pairs from a file of source<TAB>target lines (ValueError naming a bad line).");
  m.def("write_tsv_pairs", &models::write_tsv_pairs, py::arg("path"), py::arg("pairs"));
  m.def("read_sword_pairs", &models::read_sword_pairs, py::arg("source_module") = "engWEB2015eb",
        py::arg("target_module") = "spaRV1909eb", py::arg("sword_dir") = "/usr/share/sword",
        py::arg("limit") = -1,
        "Verse-aligned pairs of two installed SWORD Bibles (English WEB and Spanish RV1909 by "
        "default), markup stripped; at most `limit` (-1: all).");
  m.def(
      "split_corpus",
      [](const std::vector<models::SentencePair>& pairs, int dev, int test) {
        models::CorpusSplit s = models::split_corpus(pairs, dev, test);
        return py::make_tuple(s.train, s.dev, s.test);
      },
      py::arg("pairs"), py::arg("dev_per_mille") = 20, py::arg("test_per_mille") = 20,
      "(train, dev, test): each pair by a hash of its source, so a test source never trains.");
  py::class_<models::Vocabulary>(m, "Vocabulary", "A SentencePiece vocabulary: 0 pad, 1 end.")
      .def_static("load", &models::Vocabulary::load, py::arg("path"))
      .def_static(
          "train",
          [](const std::vector<std::string>& sentences, int64_t size, const std::string& type,
             const std::string& cache_dir) {
            models::VocabularyOptions o;
            o.size = size;
            o.model_type = type;
            return cache_dir.empty() ? models::train_vocabulary(sentences, o)
                                     : models::cached_vocabulary(sentences, o, cache_dir);
          },
          py::arg("sentences"), py::arg("size") = 8000, py::arg("model_type") = "unigram",
          py::arg("cache_dir") = "",
          "Trains a joint vocabulary on the sentences (both sides); with cache_dir, trains once "
          "and loads the cached model on later calls with the same sentences and options.")
      .def("encode", &models::Vocabulary::encode, py::arg("text"))
      .def("decode", &models::Vocabulary::decode, py::arg("ids"))
      .def_property_readonly("size", &models::Vocabulary::size)
      .def_property_readonly("fingerprint", &models::Vocabulary::fingerprint)
      .def_property_readonly(
          "serialized", [](const models::Vocabulary& v) { return py::bytes(v.serialized()); },
          "The SentencePiece model's bytes (write them to a file for Vocabulary.load).")
      .def("piece", &models::Vocabulary::piece, py::arg("id"));
  py::class_<models::EncodedPair>(m, "EncodedPair", "A pair's ids, each ending with 1.")
      .def_readonly("source", &models::EncodedPair::source)
      .def_readonly("target", &models::EncodedPair::target)
      .def_readonly("index", &models::EncodedPair::index);
  m.def(
      "encode_pairs",
      [](const models::Vocabulary& v, const std::vector<models::SentencePair>& pairs,
         int64_t max_source, int64_t max_target, bool drop_long) {
        int64_t dropped = 0;
        return models::encode_pairs(v, pairs, max_source, max_target, drop_long, &dropped);
      },
      py::arg("vocabulary"), py::arg("pairs"), py::arg("max_source"), py::arg("max_target"),
      py::arg("drop_long") = true,
      "Every pair's ids with the end appended; pairs too long dropped (or cut, keeping the end).");
  py::class_<models::TranslationBatcher>(
      m, "TranslationBatcher",
      "Training batches of encoded pairs, an epoch at a time in a seeded order: one pair a row "
      "padded, or for a packed config as many pairs as fit a row.")
      .def(py::init<std::vector<models::EncodedPair>, const EncDecConfig&, uint64_t>(),
           py::arg("pairs"), py::arg("config"), py::arg("seed") = 1)
      .def(
          "next",
          [](models::TranslationBatcher& b, const TransformerEncDec& t) {
            return feed_dict(b.next(t));
          },
          py::arg("model"), "The next batch's feed dict.")
      .def_property_readonly("last_target_tokens", &models::TranslationBatcher::last_target_tokens);
  m.def(
      "mean_token_loss",
      [](TransformerEncDec& t, const py::object& session,
         const std::vector<models::EncodedPair>& pairs) {
        Session& s = session_of(session);
        return interruptible([&] { return models::mean_token_loss(t, s, pairs); });
      },
      py::arg("model"), py::arg("session"), py::arg("pairs"),
      "The evaluation graph's mean cross-entropy per target token (nats) over the pairs.");
  py::class_<models::BleuScore>(m, "BleuScore")
      .def_readonly("bleu", &models::BleuScore::bleu)
      .def_readonly("brevity_penalty", &models::BleuScore::brevity_penalty)
      .def_property_readonly("precisions",
                             [](const models::BleuScore& b) {
                               return std::vector<double>(b.precisions, b.precisions + 4);
                             })
      .def("__repr__", &models::BleuScore::to_string);
  m.def("corpus_bleu", &models::corpus_bleu_13a, py::arg("hypotheses"), py::arg("references"),
        "Corpus BLEU (0-100) of lines against one reference each, 13a tokenization (as "
        "sacreBLEU's default and NLTK's corpus_bleu on those tokens).");
}

}  // namespace

void bind_translation(py::module_& m) {
  py::module_ models = m.attr("models").cast<py::module_>();
  bind_config_and_model(models);
  bind_decoder(models);
  bind_corpus_and_bleu(models);
}

}  // namespace mtf::python
