#include "models/encdec_decoder.h"

#include <algorithm>
#include <limits>
#include <string>

#include "models/transformer_blocks.h"

namespace mtf::models {
namespace {

// What encoding `source` (int32 [rows, inputs_length]) leaves for the steps:
// the sources' padding as an attention bias, then each decoder layer's
// encoder-decoder keys and values. With `sequence_row` (int32 [batch]), each
// is gathered from source's rows into the sequences' (beams sharing a
// sentence); without it the rows are the sequences.
std::vector<Tensor> encoder_state(TransformerEncDec& model, const Blocks& blocks,
                                  const Tensor& source, const Tensor& sequence_row) {
  const Dimension& rows = source.shape()[0];
  const Tensor encoded =
      model.encode(source, Tensor(), range(model.mesh(), model.inputs_length), false);
  std::vector<Tensor> state = {layers::attention_mask_ignore_padding(source)};
  for (int64_t l = 0; l < model.config().decoder_layers; ++l) {
    const std::string name = "decoder/layer_" + std::to_string(l) + "/encdec_attention";
    for (const char* w : {"k", "v"}) state.push_back(blocks.project(encoded, name, w));
  }
  if (sequence_row.valid())
    for (Tensor& t : state) t = gather(t, sequence_row, rows);
  return state;
}

}  // namespace

EncDecDecoder::EncDecDecoder(TransformerEncDec& model, int64_t batch_size,
                             const std::string& batch_name, int64_t beams)
    : batch{batch_name, batch_size},
      sentences{batch_name + "_sentences", beams > 0 ? batch_size / beams : 0},
      inputs_(model.inputs_length.size),
      targets_(model.targets_length.size),
      vocab_(model.vocab.size),
      beams_(beams) {
  if (batch_size < 1) throw ValueError("EncDecDecoder: batch must be at least 1");
  if (beams < 1 || batch_size % beams != 0) {
    throw ValueError("EncDecDecoder: beams must be a divisor of the batch (" +
                     std::to_string(batch_size) + "), not " + std::to_string(beams));
  }
  const EncDecConfig& c = model.config();
  const Blocks blocks{c.norm,        c.ffn,        model.d_model, model.d_ff(),
                      model.heads(), model.d_kv(), 1.0f};
  prefix_ = "encdec_decode_" + (batch_name == "batch" ? std::string("b") : batch_name + "_") +
            std::to_string(batch_size) + "/";
  const std::vector<Tensor> encoder_caches = build_encoding(model, blocks);
  build_reordering(build_step(model, blocks, encoder_caches));
}

Tensor EncDecDecoder::state_variable(const Mesh& mesh, const std::string& name, const Shape& shape,
                                     DType dtype) {
  caches_.push_back(layers::get_or_create_variable(mesh, prefix_ + name, shape,
                                                   Initializer::zeros(), VariableDType::of(dtype),
                                                   /*trainable=*/false));
  return caches_.back();
}

// Encoding: the sources' padding as an attention bias, and the encoder's
// output projected to each layer's keys and values — from one source per
// sequence, or (beams > 1) per sentence, gathered into its beams' rows.
std::vector<Tensor> EncDecDecoder::build_encoding(TransformerEncDec& model, const Blocks& blocks) {
  const Mesh& mesh = model.mesh();
  const DType state_dtype = model.config().variable_dtype.activation;
  source = placeholder(mesh, Shape({batch, model.inputs_length}), int32, prefix_ + "source");
  const std::vector<Tensor> encoded = encoder_state(model, blocks, source, Tensor());
  std::vector<Tensor> caches = {
      state_variable(mesh, "source_bias", encoded[0].shape(), float32)};  // then k, v per layer
  for (int64_t l = 0; l < model.config().decoder_layers; ++l)
    for (const char* w : {"k", "v"})
      caches.push_back(state_variable(mesh, "layer_" + std::to_string(l) + "/encdec_" + w,
                                      encoded[caches.size()].shape(), state_dtype));
  for (size_t i = 0; i < encoded.size(); ++i) encode_ops.push_back(assign(caches[i], encoded[i]));
  if (beams_ > 1) {
    sentence_source = placeholder(mesh, Shape({sentences, model.inputs_length}), int32,
                                  prefix_ + "sentence_source");
    const Tensor sentence_of_row =
        floordiv(range(mesh, batch), constant(mesh, static_cast<float>(beams_), Shape(), int32));
    const std::vector<Tensor> shared =
        encoder_state(model, blocks, sentence_source, sentence_of_row);
    for (size_t i = 0; i < shared.size(); ++i)
      encode_sentence_ops.push_back(assign(caches[i], transpose(shared[i], encoded[i].shape())));
  }
  return caches;
}

// One step: causal over the self-attention caches (rows after the position
// are stale or zero), relative positions as in training; returns the
// self-attention caches.
std::vector<Tensor> EncDecDecoder::build_step(TransformerEncDec& model, const Blocks& blocks,
                                              const std::vector<Tensor>& encoder_caches) {
  const EncDecConfig& c = model.config();
  const Mesh& mesh = model.mesh();
  const Dimension memory{"targets_memory_length", targets_};
  token = placeholder(mesh, Shape({batch}), int32, prefix_ + "token");
  position = placeholder(mesh, Shape(), int32, prefix_ + "position");
  Tensor self_bias = cast(greater(range(mesh, memory), position), float32) * -1e9f;
  if (c.position == "relative") {
    self_bias =
        self_bias + layers::relative_position_bias(position, range(mesh, memory), model.heads(),
                                                   false, "decoder/relative_bias",
                                                   c.relative_buckets, c.relative_max_distance);
  }
  const Tensor others = not_equal(range(mesh, memory), position);  // bool [memory]
  const Shape cache_shape({batch, model.heads(), memory, model.d_kv()});
  const Tensor& source_bias = encoder_caches[0];
  std::vector<Tensor> self_caches;
  Tensor y = model.embed(token, position, "decoder");
  for (int64_t l = 0; l < c.decoder_layers; ++l) {
    const std::string name = "decoder/layer_" + std::to_string(l);
    const std::string self = name + "/self_attention", encdec = name + "/encdec_attention";
    const Tensor h = blocks.norm(y, self + "_norm");
    std::vector<Tensor> kv;
    for (const char* w : {"k", "v"}) {
      const Tensor cache = state_variable(mesh, "layer_" + std::to_string(l) + "/self_" + w,
                                          cache_shape, c.variable_dtype.activation);
      self_caches.push_back(cache);
      const Tensor written = where(others, cache, blocks.project(h, self, w));
      write_caches.push_back(assign(cache, written));
      kv.push_back(written);
    }
    y = y + blocks.attention_over(h, kv[0], kv[1], memory, self_bias, self);
    y = y + blocks.attention_over(blocks.norm(y, encdec + "_norm"), encoder_caches[1 + 2 * l],
                                  encoder_caches[2 + 2 * l], model.inputs_length, source_bias,
                                  encdec);
    y = blocks.feed_forward(y, name + "/ffn");
  }
  logits = model.output_logits(blocks.norm(y, "decoder/final_norm"));
  if (logits.dtype() != float32) logits = cast(logits, float32);
  return self_caches;
}

// Beam search's reordering, along a renamed batch dimension (the
// encoder-decoder caches stay: parents decode the same source).
void EncDecDecoder::build_reordering(const std::vector<Tensor>& self_caches) {
  parents = placeholder(self_caches.at(0).mesh(), Shape({batch}), int32, prefix_ + "parents");
  for (const Tensor& cache : self_caches) {
    const Tensor from = rename_dimension(cache, batch.name, "parent");
    reorder_caches.push_back(assign(cache, gather(from, parents, "parent")));
  }
}

HostTensor EncDecDecoder::source_rows(const std::vector<std::vector<int32_t>>& sources,
                                      const Tensor& placeholder,
                                      std::vector<std::vector<int32_t>>* kept) const {
  std::vector<int32_t> rows(sources.size() * inputs_, 0);
  for (size_t b = 0; b < sources.size(); ++b) {
    const auto& s = sources[b];
    kept->emplace_back(s.begin(), s.begin() + std::min<int64_t>(inputs_, s.size()));
    for (size_t i = 0; i < kept->back().size(); ++i) {
      const int32_t id = kept->back()[i];
      if (id < 0 || id >= vocab_) {
        throw ValueError("EncDecDecoder::encode: source " + std::to_string(b) + " holds id " +
                         std::to_string(id) + ", outside the vocabulary of " +
                         std::to_string(vocab_));
      }
      rows[b * inputs_ + static_cast<int64_t>(i)] = id;
    }
  }
  return HostTensor::from_ints(placeholder.shape(), rows);
}

void EncDecDecoder::encode(Session& session, const std::vector<std::vector<int32_t>>& sources) {
  const int64_t n = static_cast<int64_t>(sources.size());
  const bool per_sentence = beams_ > 1 && n == sentences.size;
  if (n != batch.size && !per_sentence) {
    throw ValueError("EncDecDecoder::encode: " + std::to_string(n) + " sources for a batch of " +
                     std::to_string(batch.size) + " (one source per sequence" +
                     (beams_ > 1 ? ", or one per sentence of " + std::to_string(beams_) +
                                       " beams: " + std::to_string(sentences.size)
                                 : std::string()) +
                     ")");
  }
  std::vector<std::vector<int32_t>> kept;
  const Tensor& input = per_sentence ? sentence_source : source;
  const HostTensor rows = source_rows(sources, input, &kept);
  session.run(std::vector<Tensor>{}, {{input, rows}},
              per_sentence ? encode_sentence_ops : encode_ops);
  encoded_.clear();
  for (int64_t b = 0; b < batch.size; ++b) encoded_.push_back(kept[per_sentence ? b / beams_ : b]);
}

std::vector<float> EncDecDecoder::step(Session& session, const std::vector<int32_t>& tokens,
                                       int64_t p) const {
  check_step(tokens, p, "step");
  if (p >= targets_) {
    throw ValueError("EncDecDecoder::step: position " + std::to_string(p) +
                     " is past the targets' length " + std::to_string(targets_));
  }
  if (encoded_.empty())
    throw ValueError("EncDecDecoder::step: nothing encoded yet: call encode() with the sources");
  const Feeds feeds = {{token, HostTensor::from_ints(Shape({batch}), tokens)},
                       {position, HostTensor::from_ints(Shape(), {static_cast<int32_t>(p)})}};
  std::vector<float> out = session.run({logits}, feeds, write_caches)[0].to_floats();
  for (int64_t b = 0; b < batch.size; ++b)
    out[b * vocab_] = -std::numeric_limits<float>::infinity();  // padding
  return out;
}

std::vector<float> EncDecDecoder::prefill(Session& session,
                                          const std::vector<std::vector<int32_t>>& prompts) const {
  check_prompts(prompts, "prefill");
  std::vector<float> out;
  for (size_t p = 0; p < prompts[0].size(); ++p) {
    std::vector<int32_t> column;
    for (const auto& prompt : prompts) column.push_back(prompt[p]);
    out = step(session, column, static_cast<int64_t>(p));
  }
  return out;
}

void EncDecDecoder::reorder(Session& session, const std::vector<int32_t>& from) const {
  check_parents(from);
  for (int64_t b = 0; b < batch.size; ++b) {
    if (!encoded_.empty() && encoded_[from[b]] != encoded_[b]) {
      throw ValueError("EncDecDecoder::reorder: sequence " + std::to_string(b) +
                       " would take over sequence " + std::to_string(from[b]) +
                       ", which decodes another source (reorder among one source's beams)");
    }
  }
  session.run(std::vector<Tensor>{}, {{parents, HostTensor::from_ints(parents.shape(), from)}},
              reorder_caches);
}

std::vector<std::vector<int32_t>> translate(EncDecDecoder& decoder, Session& session,
                                            const std::vector<std::vector<int32_t>>& sources,
                                            const BeamOptions& options) {
  BeamOptions o = options;
  o.stop = 1;  // the end id
  o.validate(decoder.vocab());
  const int64_t rows = decoder.batch_size();
  if (rows % o.beams != 0) {
    throw ValueError("translate: a decoder of batch " + std::to_string(rows) +
                     " cannot hold whole sentences of " + std::to_string(o.beams) +
                     " beams (make its batch a multiple of the beams)");
  }
  const size_t per_call = static_cast<size_t>(rows / o.beams);
  const int64_t steps = decoder.length() - 1;
  std::vector<std::vector<int32_t>> out;
  for (size_t first = 0; first < sources.size(); first += per_call) {
    // A short last batch is filled with empty sources, translated and
    // dropped.
    std::vector<std::vector<int32_t>> chunk, rows_in;
    for (size_t i = first; i < first + per_call; ++i)
      chunk.push_back(i < sources.size() ? sources[i] : std::vector<int32_t>{1});
    if (o.beams > 1 && decoder.beams() == o.beams) {
      decoder.encode(session, chunk);  // once per sentence
    } else {
      for (const auto& s : chunk) rows_in.insert(rows_in.end(), o.beams, s);
      decoder.encode(session, rows_in);
    }
    std::vector<std::vector<int32_t>> found;
    if (o.beams == 1) {
      SamplingOptions greedy;
      greedy.stop = 1;
      found =
          decoder.generate(session, std::vector<std::vector<int32_t>>(rows, {0}), steps, greedy);
    } else {
      found =
          beam_search(decoder, session, std::vector<std::vector<int32_t>>(per_call, {0}), steps, o)
              .sequences;
    }
    for (size_t i = 0; i < per_call && first + i < sources.size(); ++i) {
      std::vector<int32_t> ids(found[i].begin() + 1, found[i].end());  // after the start id
      if (!ids.empty() && ids.back() == 1) ids.pop_back();
      out.push_back(std::move(ids));
    }
  }
  return out;
}

}  // namespace mtf::models
