#include "models/transformer_decoder.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

namespace mtf::models {

void SamplingOptions::validate(int64_t vocab) const {
  if (!(temperature >= 0))
    throw ValueError("sampling: temperature must be >= 0, got " + std::to_string(temperature));
  if (top_k < 0) throw ValueError("sampling: top_k must be >= 0, got " + std::to_string(top_k));
  if (!(top_p > 0 && top_p <= 1))
    throw ValueError("sampling: top_p must be in (0, 1], got " + std::to_string(top_p));
  if (stop < -1 || stop >= vocab) {
    throw ValueError("sampling: stop token " + std::to_string(stop) +
                     " is outside the vocabulary of " + std::to_string(vocab) + " (-1: none)");
  }
}

int32_t choose_next(const float* row, int64_t vocab, const SamplingOptions& o,
                    std::mt19937_64& rng) {
  const int32_t best = static_cast<int32_t>(std::max_element(row, row + vocab) - row);
  if (o.temperature == 0) return best;
  // Ids by decreasing logit (ties: lower id first), cut to top_k.
  std::vector<int32_t> ids(vocab);
  std::iota(ids.begin(), ids.end(), 0);
  std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return row[a] > row[b]; });
  if (o.top_k > 0 && o.top_k < vocab) ids.resize(o.top_k);
  std::vector<double> p(ids.size());
  double z = 0;
  for (size_t i = 0; i < ids.size(); ++i)
    z += p[i] = std::exp((double(row[ids[i]]) - row[best]) / o.temperature);
  // The nucleus: the fewest highest whose probability reaches top_p.
  size_t keep = ids.size();
  if (o.top_p < 1) {
    double mass = 0;
    for (keep = 0; keep < ids.size();) {
      mass += p[keep++] / z;
      if (mass >= o.top_p) break;
    }
  }
  double total = 0;
  for (size_t i = 0; i < keep; ++i) total += p[i];
  double u = std::uniform_real_distribution<double>(0, total)(rng);
  for (size_t i = 0; i + 1 < keep; ++i)
    if ((u -= p[i]) < 0) return ids[i];
  return ids[keep - 1];
}

namespace {

// ValueError naming `what` and the token for a token outside the vocabulary.
void check_tokens(const std::vector<int32_t>& tokens, int64_t vocab, const std::string& what) {
  for (int32_t t : tokens) {
    if (t < 0 || t >= vocab) {
      throw ValueError(what + std::to_string(t) + " is outside the vocabulary of " +
                       std::to_string(vocab));
    }
  }
}

Shape join(const Shape& a, std::initializer_list<Dimension> more) {
  std::vector<Dimension> dims = a.dims();
  dims.insert(dims.end(), more);
  return Shape(dims);
}

}  // namespace

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
  const Shape rows = ids.shape();  // [batch] or [batch, length]
  const Shape cache_shape({batch, lm.heads, memory, lm.d_kv});
  const Shape head_shape = join(rows, {lm.heads, lm.d_kv});
  Tensor x =
      layers::embedding(ids, lm.vocab, d_model, "embedding", 1.0f, lm.config().variable_dtype) +
      pos_emb;
  // Memory rows after a query's position are masked, as the window's causal
  // mask masks them (their cache rows are stale, padding or zero).
  const Tensor mask = cast(greater(range(mesh, memory), pos), x.dtype()) * -1e9f;
  // A step writes its row in one pass over the cache; the prefill writes
  // every row, each from its own position.
  const bool one_position = pos.shape().empty();
  const Tensor others = not_equal(range(mesh, memory), pos);        // int32 [memory] (a step)
  const Tensor here = one_hot(pos, memory, 1.0f, 0.0f, x.dtype());  // [length, memory] (prefill)
  for (int64_t l = 0; l < lm.config().layers; ++l) {
    const std::string name = "layer_" + std::to_string(l);
    Tensor h = layers::layer_norm(x, d_model, name + "/attention_norm");
    const Shape proj({d_model, lm.heads, lm.d_kv});
    auto weight = [&](const char* w, const Shape& s) {
      // Created by the LM already: the initializer is not used.
      return layers::get_or_create_variable(mesh, name + "/attention/" + w, s, Initializer::zeros(),
                                            layers::variable_dtype_for(h));
    };
    const Tensor q = einsum({h, weight("q", proj)}, head_shape);
    std::vector<Tensor> kv;
    for (int i = 0; i < 2; ++i) {
      const Tensor& cache = caches_[2 * l + i];
      const Tensor value = einsum({h, weight(i == 0 ? "k" : "v", proj)}, head_shape);
      const Tensor written =
          one_position ? where(others, cache, value) : einsum({value, here}, cache_shape);
      writes.push_back(assign(cache, written));
      kv.push_back(written);
    }
    const Tensor scores = einsum({q, kv[0]}, join(rows, {lm.heads, memory})) + mask;
    const Tensor o = einsum({softmax(scores, memory), kv[1]}, head_shape);
    x = x + einsum({o, weight("o", Shape({lm.heads, lm.d_kv, d_model}))}, join(rows, {d_model}));
    h = layers::layer_norm(x, d_model, name + "/ffn_norm");
    x = x + layers::dense_relu_dense(h, lm.d_ff, name + "/ffn");
  }
  return x;
}

Tensor TransformerDecoder::vocab_logits(TransformerLm& lm, const Tensor& x) {
  layers::DenseOptions no_bias;
  no_bias.use_bias = false;
  const Tensor logits = layers::dense(layers::layer_norm(x, lm.d_model, "final_norm"), {lm.vocab},
                                      {lm.d_model}, "logits", no_bias);
  return logits.dtype() == float32 ? logits : cast(logits, float32);  // read as floats
}

std::vector<float> TransformerDecoder::step(Session& session, const std::vector<int32_t>& tokens,
                                            int64_t p) const {
  if (static_cast<int64_t>(tokens.size()) != batch.size) {
    throw ValueError("TransformerDecoder::step: " + std::to_string(tokens.size()) +
                     " tokens for a batch of " + std::to_string(batch.size));
  }
  if (p < 0 || p >= length_) {
    throw ValueError("TransformerDecoder::step: position " + std::to_string(p) +
                     " is outside the model's length " + std::to_string(length_));
  }
  check_tokens(tokens, vocab_, "TransformerDecoder::step: token ");
  const Feeds feeds = {{token, HostTensor::from_ints(Shape({batch}), tokens)},
                       {position, HostTensor::from_ints(Shape(), {static_cast<int32_t>(p)})}};
  return session.run({logits}, feeds, write_caches)[0].to_floats();
}

void TransformerDecoder::check_prompts(const std::vector<std::vector<int32_t>>& prompts,
                                       const char* who) const {
  const std::string where = std::string("TransformerDecoder::") + who + ": ";
  if (static_cast<int64_t>(prompts.size()) != batch.size) {
    throw ValueError(where + std::to_string(prompts.size()) + " prompts for a batch of " +
                     std::to_string(batch.size) + " (one prompt per sequence)");
  }
  const size_t n = prompts[0].size();
  for (const auto& p : prompts) {
    if (p.empty() || p.size() != n) throw ValueError(where + "prompts must share one length >= 1");
    check_tokens(p, vocab_, where + "prompt token ");
  }
  if (static_cast<int64_t>(n) > length_) {
    throw ValueError(where + "a prompt of " + std::to_string(n) +
                     " tokens exceeds the model's length " + std::to_string(length_));
  }
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
  if (static_cast<int64_t>(from.size()) != batch.size) {
    throw ValueError("TransformerDecoder::reorder: " + std::to_string(from.size()) +
                     " parents for a batch of " + std::to_string(batch.size));
  }
  for (int32_t f : from) {
    if (f < 0 || f >= batch.size) {
      throw ValueError("TransformerDecoder::reorder: parent " + std::to_string(f) +
                       " is outside the batch of " + std::to_string(batch.size));
    }
  }
  session.run(std::vector<Tensor>{}, {{parents, HostTensor::from_ints(parents.shape(), from)}},
              reorder_caches);
}

std::vector<std::vector<int32_t>> TransformerDecoder::greedy(
    Session& session, const std::vector<std::vector<int32_t>>& prompts, int64_t steps) const {
  return generate(session, prompts, steps, SamplingOptions());
}

std::vector<std::vector<int32_t>> TransformerDecoder::generate(
    Session& session, const std::vector<std::vector<int32_t>>& prompts, int64_t steps,
    const SamplingOptions& options) const {
  options.validate(vocab_);
  check_prompts(prompts, "generate");
  const int64_t n = static_cast<int64_t>(prompts[0].size());
  std::mt19937_64 rng(options.seed);
  std::vector<std::vector<int32_t>> out = prompts;
  std::vector<bool> done(batch.size, false);
  const int64_t total = std::min<int64_t>(n + std::max<int64_t>(steps, 0), length_);
  // The prompts in one pass, then a step per new token (an ended sequence
  // is fed its stop token again, and keeps its length).
  std::vector<float> next;
  for (int64_t p = n - 1; p + 1 < total; ++p) {
    if (std::all_of(done.begin(), done.end(), [](bool d) { return d; })) break;
    if (p == n - 1) {
      next = prefill(session, prompts);
    } else {
      std::vector<int32_t> tokens;
      for (const auto& s : out) tokens.push_back(s.back());
      next = step(session, tokens, p);
    }
    for (int64_t b = 0; b < batch.size; ++b) {
      if (done[b]) continue;
      const int32_t t = choose_next(next.data() + b * vocab_, vocab_, options, rng);
      out[b].push_back(t);
      done[b] = t == options.stop;
    }
  }
  return out;
}

}  // namespace mtf::models
