// bind_models.cc — mtf.models: the project's Transformer language model and
// its incremental decoder, so Python can train, checkpoint and decode the
// same model as the C++ examples (the decode graph shares the LM's graph and
// variables, and runs in any Session of that graph, on any mesh).
#include "array_convert.h"
#include "config_kwargs.h"
#include "handles.h"
#include "interruptible.h"
#include "learning_rate_arg.h"
#include "models/transformer.h"
#include "models/transformer_decoder.h"

namespace mtf::python {
namespace {

using models::TransformerConfig;
using models::TransformerDecoder;
using models::TransformerLm;

// The fields TransformerConfig(**kwargs) accepts (and binds as attributes).
template <typename Class>
void config_fields(Class& c) {
  c.def_readwrite("layers", &TransformerConfig::layers)
      .def_readwrite("d_model", &TransformerConfig::d_model)
      .def_readwrite("d_ff", &TransformerConfig::d_ff)
      .def_readwrite("heads", &TransformerConfig::heads)
      .def_readwrite("d_kv", &TransformerConfig::d_kv)
      .def_readwrite("vocab", &TransformerConfig::vocab)
      .def_readwrite("length", &TransformerConfig::length)
      .def_readwrite("batch", &TransformerConfig::batch)
      .def_readwrite("dropout", &TransformerConfig::dropout)
      .def_readwrite("z_loss", &TransformerConfig::z_loss)
      .def_readwrite("recompute", &TransformerConfig::recompute)
      .def_readwrite("moe_experts", &TransformerConfig::moe_experts)
      .def_readwrite("clip_norm", &TransformerConfig::clip_norm)
      .def_readwrite("microbatches", &TransformerConfig::microbatches)
      .def_readwrite("seed", &TransformerConfig::seed);
  learning_rate_property(c, "learning_rate", &TransformerConfig::learning_rate);
}
const std::vector<const char*> kConfigFields = {
    "layers",       "d_model",   "d_ff",        "heads",  "d_kv",          "vocab",
    "length",       "batch",     "dropout",     "z_loss", "learning_rate", "clip_norm",
    "microbatches", "recompute", "moe_experts", "seed"};

void bind_lm(py::module_& models) {
  py::class_<TransformerConfig> config(
      models, "TransformerConfig",
      "Sizes and training settings of the Transformer LM; TransformerConfig(d_model=256, ...) "
      "sets any field by name.");
  config.def(py::init([](const py::kwargs& kwargs) {
    return config_from_kwargs<TransformerConfig>(kwargs, kConfigFields, "TransformerConfig");
  }));
  config_fields(config);
  config.def("validate", &TransformerConfig::validate)
      .def_static("paper", &TransformerConfig::paper, py::arg("d_ff"), py::arg("heads"),
                  "The paper's language model at one of its d_ff/heads sizes.")
      .def_property_readonly("num_parameters", &TransformerConfig::num_parameters)
      .def("__repr__", [](const TransformerConfig& c) {
        return config_repr(c, kConfigFields, "TransformerConfig");
      });

  py::class_<TransformerLm, std::shared_ptr<TransformerLm>>(
      models, "TransformerLm",
      "The decoder-only Transformer LM: a training graph (dropout, Adafactor updates in "
      "train_ops) and an evaluation graph sharing its variables. inputs and targets are int32 "
      "[batch, length] placeholders (targets: the inputs shifted by one).")
      .def(py::init([](const TransformerConfig& c) {
             return make_graph_owner<TransformerLm>(
                 [](TransformerLm& lm) -> Graph& { return lm.graph(); }, c);
           }),
           py::arg("config"))
      .def_property_readonly("graph", [](TransformerLm& lm) { return owner_of(lm.graph()); })
      .def_property_readonly("config", &TransformerLm::config)
      .def_readonly("batch", &TransformerLm::batch)
      .def_readonly("length", &TransformerLm::length)
      .def_readonly("memory_length", &TransformerLm::memory_length)
      .def_readonly("d_model", &TransformerLm::d_model)
      .def_readonly("d_ff", &TransformerLm::d_ff)
      .def_readonly("heads", &TransformerLm::heads)
      .def_readonly("d_kv", &TransformerLm::d_kv)
      .def_readonly("vocab", &TransformerLm::vocab)
      .def_readonly("inputs", &TransformerLm::inputs)
      .def_readonly("targets", &TransformerLm::targets)
      .def_readonly("loss", &TransformerLm::loss)
      .def_readonly("gradient_norm", &TransformerLm::gradient_norm)
      .def_readonly("eval_loss", &TransformerLm::eval_loss)
      .def_readonly("eval_logits", &TransformerLm::eval_logits)
      .def_readonly("moe_loss", &TransformerLm::moe_loss)
      .def_property_readonly("train_ops", [](TransformerLm& lm) { return wrap(lm.train_ops); })
      .def_property_readonly("apply_ops", [](TransformerLm& lm) { return wrap(lm.apply_ops); });
}

void bind_lm_decoder(py::module_& models) {
  py::class_<TransformerDecoder, models::IncrementalDecoder>(
      models, "TransformerDecoder",
      "Incremental decoding of a TransformerLm: a graph added to the LM's that takes one token "
      "per sequence at a fed position and keeps each layer's keys and values in cache "
      "variables (laid out like any tensor). Run it in a Session of lm.graph; restore the "
      "LM's variables from a checkpoint first to decode a trained model.")
      .def(py::init<TransformerLm&, int64_t, const std::string&>(), py::arg("lm"), py::arg("batch"),
           py::arg("batch_name") = "batch", py::keep_alive<1, 2>())
      .def_readonly("batch", &TransformerDecoder::batch)
      .def_readonly("token", &TransformerDecoder::token)
      .def_readonly("position", &TransformerDecoder::position)
      .def_readonly("logits", &TransformerDecoder::logits)
      .def_property_readonly("write_caches",
                             [](const TransformerDecoder& d) { return wrap(d.write_caches); })
      .def_readonly("prompt", &TransformerDecoder::prompt)
      .def_readonly("prompt_end", &TransformerDecoder::prompt_end)
      .def_readonly("prompt_logits", &TransformerDecoder::prompt_logits)
      .def_property_readonly("prefill_caches",
                             [](const TransformerDecoder& d) { return wrap(d.prefill_caches); })
      .def_readonly("parents", &TransformerDecoder::parents)
      .def_property_readonly("reorder_caches",
                             [](const TransformerDecoder& d) { return wrap(d.reorder_caches); })
      .def_property_readonly("caches", &TransformerDecoder::caches);
}

}  // namespace

void bind_models(py::module_& m) {
  py::module_ models = m.def_submodule(
      "models",
      "The project's models: the paper's Transformer LM and its decoder; the "
      "sequence-to-sequence Transformer, its decoder and translation's data and BLEU.");
  bind_lm(models);
  bind_incremental_decoder(models);
  bind_lm_decoder(models);
}

}  // namespace mtf::python
