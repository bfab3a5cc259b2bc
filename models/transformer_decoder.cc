#include "models/transformer_decoder.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "models/transformer_blocks.h"

namespace mtf::models {

TransformerDecoder::TransformerDecoder(TransformerLm& lm, int64_t batch_size,
                                       const std::string& batch_name)
    : batch{batch_name, batch_size}, length_(lm.length.size), vocab_(lm.vocab.size) {
  const TransformerConfig& c = lm.config();
  if (c.moe_experts > 0) {
    throw ValueError(
        "TransformerDecoder: a mixture-of-experts LM routes one-token steps differently from "
        "whole windows (expert capacity is per sequence); decode a dense LM");
  }
  if (batch_size < 1) throw ValueError("TransformerDecoder: batch must be at least 1");
  const Mesh mesh(lm.graph(), lm.inputs.mesh().name());
  prefix_ = "decode_" + (batch_name == "batch" ? std::string("b") : batch_name + "_") +
            std::to_string(batch_size) + "/";
  const Shape cache_shape({batch, lm.heads, lm.memory_length, lm.d_kv});
  for (int64_t l = 0; l < c.layers; ++l) {
    for (const char* kv : {"k", "v"}) {
      caches_.push_back(layers::get_or_create_variable(
          mesh, prefix_ + "layer_" + std::to_string(l) + "/" + kv + "_cache", cache_shape,
          Initializer::zeros(), VariableDType::of(c.variable_dtype.activation),
          /*trainable=*/false));
    }
  }
  const Tensor position_embeddings =
      layers::get_or_create_variable(mesh, "positions", Shape({lm.length, lm.d_model}),
                                     Initializer::normal(0.0f, 1.0f), c.variable_dtype);

  // One step: one token per sequence at `position`.
  token = placeholder(mesh, Shape({batch}), int32, prefix_ + "token");
  position = placeholder(mesh, Shape(), int32, prefix_ + "position");
  logits =
      vocab_logits(lm, layers_over(lm, token, position,
                                   gather(position_embeddings, position, lm.length), write_caches));

  // The prefill: every position of the window, the logits of one.
  prompt = placeholder(mesh, Shape({batch, lm.length}), int32, prefix_ + "prompt");
  prompt_end = placeholder(mesh, Shape(), int32, prefix_ + "prompt_end");
  const Tensor x =
      layers_over(lm, prompt, range(mesh, lm.length), position_embeddings, prefill_caches);
  prompt_logits = vocab_logits(lm, gather(x, prompt_end, lm.length));

  // Beam search's reordering, along a renamed batch dimension.
  parents = placeholder(mesh, Shape({batch}), int32, prefix_ + "parents");
  for (const Tensor& cache : caches_) {
    const Tensor from = rename_dimension(cache, batch.name, "parent");
    reorder_caches.push_back(assign(cache, gather(from, parents, "parent")));
  }
}

Tensor TransformerDecoder::layers_over(TransformerLm& lm, const Tensor& ids, const Tensor& pos,
                                       const Tensor& pos_emb, std::vector<Operation*>& writes) {
  const Mesh mesh = ids.mesh();
  const Dimension& d_model = lm.d_model;
  const Dimension& memory = lm.memory_length;
  const Shape cache_shape({batch, lm.heads, memory, lm.d_kv});
  Tensor x =
      layers::embedding(ids, lm.vocab, d_model, "embedding", 1.0f, lm.config().variable_dtype) +
      pos_emb;
  // Memory rows after a query's position are masked, as the window's causal
  // mask masks them (their cache rows are stale, padding or zero).
  const Tensor mask = cast(greater(range(mesh, memory), pos), x.dtype()) * -1e9f;
  // A step writes its row in one pass over the cache; the prefill writes
  // every row, each from its own position.
  const bool one_position = pos.shape().empty();
  const Tensor others = not_equal(range(mesh, memory), pos);        // bool [memory] (a step)
  const Tensor here = one_hot(pos, memory, 1.0f, 0.0f, x.dtype());  // [length, memory] (prefill)
  const Blocks blocks = lm.blocks(1.0f);
  for (int64_t l = 0; l < lm.config().layers; ++l) {
    const std::string name = "layer_" + std::to_string(l);
    const Tensor h = blocks.norm(x, name + "/attention_norm");
    std::vector<Tensor> kv;
    for (int i = 0; i < 2; ++i) {
      const Tensor& cache = caches_[2 * l + i];
      const Tensor value = blocks.project(h, name + "/attention", i == 0 ? "k" : "v");
      const Tensor written =
          one_position ? where(others, cache, value) : einsum({value, here}, cache_shape);
      writes.push_back(assign(cache, written));
      kv.push_back(written);
    }
    x = x + blocks.attention_over(h, kv[0], kv[1], memory, mask, name + "/attention");
    x = blocks.feed_forward(x, name + "/ffn");
  }
  return x;
}

Tensor TransformerDecoder::vocab_logits(TransformerLm& lm, const Tensor& x) {
  layers::DenseOptions no_bias;
  no_bias.use_bias = false;
  const Tensor logits = layers::dense(lm.blocks(1.0f).norm(x, "final_norm"), {lm.vocab},
                                      {lm.d_model}, "logits", no_bias);
  return logits.dtype() == float32 ? logits : cast(logits, float32);  // read as floats
}

std::vector<float> TransformerDecoder::step(Session& session, const std::vector<int32_t>& tokens,
                                            int64_t p) const {
  check_step(tokens, p, "step");
  const Feeds feeds = {{token, HostTensor::from_ints(Shape({batch}), tokens)},
                       {position, HostTensor::from_ints(Shape(), {static_cast<int32_t>(p)})}};
  return session.run({logits}, feeds, write_caches)[0].to_floats();
}

std::vector<float> TransformerDecoder::prefill(
    Session& session, const std::vector<std::vector<int32_t>>& prompts) const {
  check_prompts(prompts, "prefill");
  std::vector<int32_t> window(batch.size * length_, 0);
  for (int64_t b = 0; b < batch.size; ++b)
    std::copy(prompts[b].begin(), prompts[b].end(), window.begin() + b * length_);
  const int32_t end = static_cast<int32_t>(prompts[0].size()) - 1;
  const Feeds feeds = {{prompt, HostTensor::from_ints(prompt.shape(), window)},
                       {prompt_end, HostTensor::from_ints(Shape(), {end})}};
  return session.run({prompt_logits}, feeds, prefill_caches)[0].to_floats();
}

void TransformerDecoder::reorder(Session& session, const std::vector<int32_t>& from) const {
  check_parents(from);
  session.run(std::vector<Tensor>{}, {{parents, HostTensor::from_ints(parents.shape(), from)}},
              reorder_caches);
}

}  // namespace mtf::models
