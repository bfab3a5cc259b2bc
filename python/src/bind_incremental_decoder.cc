// bind_incremental_decoder.cc — mtf.models.IncrementalDecoder: what the LM's
// TransformerDecoder and the encoder-decoder's EncDecDecoder share (one step,
// prefill, reordering, greedy decoding, sampling and beam search), bound
// once as their Python base class.
#include <pybind11/numpy.h>

#include <cstring>

#include "handles.h"
#include "interruptible.h"
#include "models/beam_search.h"
#include "models/incremental_decoder.h"

namespace mtf::python {
namespace {

using models::IncrementalDecoder;

// Logits row by row (batch x vocab) as a float32 [batch, vocab] array.
py::array_t<float> logits_array(const IncrementalDecoder& d, const std::vector<float>& logits) {
  py::array_t<float> out(
      {static_cast<py::ssize_t>(d.batch_size()), static_cast<py::ssize_t>(d.vocab())});
  std::memcpy(out.mutable_data(), logits.data(), logits.size() * sizeof(float));
  return out;
}

models::SamplingOptions sampling_options(double temperature, int64_t top_k, double top_p,
                                         int32_t stop, uint64_t seed) {
  models::SamplingOptions o;
  o.temperature = temperature;
  o.top_k = top_k;
  o.top_p = top_p;
  o.stop = stop;
  o.seed = seed;
  return o;
}

void bind_stepping(py::class_<IncrementalDecoder>& c) {
  c.def(
       "step",
       [](const IncrementalDecoder& d, const py::object& session,
          const std::vector<int32_t>& tokens, int64_t position) {
         Session& s = session_of(session);
         return logits_array(d, interruptible([&] { return d.step(s, tokens, position); }));
       },
       py::arg("session"), py::arg("tokens"), py::arg("position"),
       "Feeds each sequence's token at `position` (0 first; writing that row of the caches) and "
       "returns the next token's logits, float32 [batch, vocab].")
      .def(
          "prefill",
          [](const IncrementalDecoder& d, const py::object& session,
             const std::vector<std::vector<int32_t>>& prompts) {
            Session& s = session_of(session);
            return logits_array(d, interruptible([&] { return d.prefill(s, prompts); }));
          },
          py::arg("session"), py::arg("prompts"),
          "Reads the prompts (one per sequence, all of one length n) in one pass, filling the "
          "caches; returns the logits after position n - 1 ([batch, vocab]). The next step is "
          "at position n.")
      .def(
          "reorder",
          [](const IncrementalDecoder& d, const py::object& session,
             const std::vector<int32_t>& parents) {
            Session& s = session_of(session);
            interruptible([&] {
              d.reorder(s, parents);
              return 0;
            });
          },
          py::arg("session"), py::arg("parents"),
          "Sequence b takes over the caches of sequence parents[b].");
}

void bind_search(py::class_<IncrementalDecoder>& c) {
  c.def(
       "greedy",
       [](const IncrementalDecoder& d, const py::object& session,
          const std::vector<std::vector<int32_t>>& prompts, int64_t steps) {
         Session& s = session_of(session);
         return interruptible([&] { return d.greedy(s, prompts, steps); });
       },
       py::arg("session"), py::arg("prompts"), py::arg("steps"),
       "Feeds the prompts (one per sequence, all of one length >= 1) and appends `steps` "
       "tokens of highest logit, up to the decoder's length; returns each sequence.")
      .def(
          "generate",
          [](const IncrementalDecoder& d, const py::object& session,
             const std::vector<std::vector<int32_t>>& prompts, int64_t steps, double temperature,
             int64_t top_k, double top_p, int32_t stop, uint64_t seed) {
            Session& s = session_of(session);
            const auto o = sampling_options(temperature, top_k, top_p, stop, seed);
            return interruptible([&] { return d.generate(s, prompts, steps, o); });
          },
          py::arg("session"), py::arg("prompts"), py::arg("steps"), py::kw_only(),
          py::arg("temperature") = 0.0, py::arg("top_k") = 0, py::arg("top_p") = 1.0,
          py::arg("stop") = -1, py::arg("seed") = 1,
          "As greedy, with tokens drawn from softmax(logits / temperature) cut to the top_k "
          "highest (0: all) and the nucleus of probability top_p (temperature 0: greedy). A "
          "sequence that emits `stop` ends there.")
      .def(
          "beam_search",
          [](const IncrementalDecoder& d, const py::object& session,
             const std::vector<std::vector<int32_t>>& prompts, int64_t steps, int64_t beams,
             double alpha, int32_t stop) {
            Session& s = session_of(session);
            const models::BeamOptions o{beams, alpha, stop};
            const models::BeamResult r =
                interruptible([&] { return models::beam_search(d, s, prompts, steps, o); });
            py::dict out;
            out["sequences"] = r.sequences;
            out["log_probs"] = r.log_probs;
            out["scores"] = r.scores;
            return out;
          },
          py::arg("session"), py::arg("prompts"), py::arg("steps"), py::kw_only(),
          py::arg("beams") = 4, py::arg("alpha") = 0.6, py::arg("stop") = -1,
          "Beam search: per prompt the best of `beams` hypotheses by log-probability / "
          "((5 + n) / 6)^alpha over their n new tokens; `stop` finishes a hypothesis. The "
          "decoder's batch must be len(prompts) x beams. Returns a dict of sequences (prompt "
          "included), log_probs and scores.");
}

}  // namespace

void bind_incremental_decoder(py::module_& models) {
  py::class_<IncrementalDecoder> c(
      models, "IncrementalDecoder",
      "A model decoded one position at a time over caches (TransformerDecoder, "
      "EncDecDecoder): a batch of sequences stepped together, reordered between steps for "
      "beam search.");
  c.def_property_readonly("batch_size", &IncrementalDecoder::batch_size)
      .def_property_readonly("length", &IncrementalDecoder::length)
      .def_property_readonly("vocab", &IncrementalDecoder::vocab);
  bind_stepping(c);
  bind_search(c);
}

}  // namespace mtf::python
