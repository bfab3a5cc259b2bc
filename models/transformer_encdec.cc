#include "models/transformer_encdec.h"

#include <cmath>
#include <memory>
#include <string>
#include <utility>

#include "models/config_checks.h"
#include "models/transformer.h"
#include "models/transformer_blocks.h"

namespace mtf::models {

namespace {

// The keep probabilities of a training graph's dropout (1 in other
// graphs): in the blocks, and at the stacks' edges (their input embeddings
// and final norm's output).
struct KeepProbs {
  float blocks = 1.0f, edges = 1.0f;
};

KeepProbs keep_probs(const EncDecConfig& c, bool training) {
  if (!training) return {};
  return {1.0f - c.dropout, 1.0f - (c.stack_dropout < 0 ? c.dropout : c.stack_dropout)};
}

}  // namespace

void EncDecConfig::validate() const {
  check_sizes("transformer_encdec", {{"encoder_layers", encoder_layers},
                                     {"decoder_layers", decoder_layers},
                                     {"d_model", d_model},
                                     {"d_ff", d_ff},
                                     {"heads", heads},
                                     {"d_kv", d_kv},
                                     {"batch", batch},
                                     {"input_length", input_length},
                                     {"target_length", target_length}});
  if (vocab < 3) {
    throw ValueError("transformer_encdec: vocab must be at least 3 (padding, end, unknown), got " +
                     std::to_string(vocab));
  }
  check_rate("transformer_encdec", "dropout", dropout);
  check_rate("transformer_encdec", "label_smoothing", label_smoothing);
  if (stack_dropout >= 0) check_rate("transformer_encdec", "stack_dropout", stack_dropout);
  auto one_of = [](const char* name, const std::string& v, const char* a, const char* b) {
    if (v != a && v != b) {
      throw ValueError(std::string("transformer_encdec: ") + name + " must be " + a + " or " + b +
                       ", not \"" + v + "\"");
    }
  };
  one_of("norm", norm, "rms", "layer");
  one_of("ffn", ffn, "relu", "gated_gelu");
  one_of("position", position, "relative", "absolute");
  one_of("optimizer", optimizer, "adafactor", "adam");
  if (optimizer == "adam" && learning_rate.is_constant() && !(learning_rate.constant_value() > 0)) {
    throw ValueError(
        "transformer_encdec: optimizer adam needs a learning rate above 0 (it has no default "
        "schedule); give e.g. \"0.02*warmup(4000)*rsqrt(4000)\" or 0.001");
  }
  if (microbatches < 1 || batch % microbatches != 0) {
    throw ValueError("transformer_encdec: " + std::to_string(microbatches) +
                     " microbatches do not divide the batch of " + std::to_string(batch) +
                     " rows into equal parts; give a divisor of it");
  }
}

EncDecConfig encdec_config_like(const TransformerConfig& lm) {
  EncDecConfig c;
  c.encoder_layers = c.decoder_layers = lm.layers;
  c.d_model = lm.d_model;
  c.d_ff = lm.d_ff;
  c.heads = lm.heads;
  c.d_kv = lm.d_kv;
  c.vocab = lm.vocab;
  c.batch = lm.batch;
  c.input_length = c.target_length = lm.length;
  c.variable_dtype = lm.variable_dtype;
  return c;
}

TransformerEncDec::TransformerEncDec(const EncDecConfig& config)
    : batch{"batch", config.rows_per_run()},
      inputs_length{"inputs_length", config.input_length},
      targets_length{"targets_length", config.target_length},
      d_model{"d_model", config.d_model},
      vocab{"vocab", config.vocab},
      config_(config),
      mesh_(graph_, "mesh"),
      d_ff_{"d_ff", config.d_ff},
      heads_{"heads", config.heads},
      d_kv_{"d_kv", config.d_kv} {
  config.validate();
  graph_.set_seed(config.seed);
  graph_.set_layer_slice_dtype(config.variable_dtype.slice);
  const Shape in_shape({batch, inputs_length}), tg_shape({batch, targets_length});
  inputs = placeholder(mesh_, in_shape, int32, "inputs");
  targets = placeholder(mesh_, tg_shape, int32, "targets");
  if (config.packed) {
    inputs_segmentation = placeholder(mesh_, in_shape, int32, "inputs_segmentation");
    inputs_position = placeholder(mesh_, in_shape, int32, "inputs_position");
    targets_segmentation = placeholder(mesh_, tg_shape, int32, "targets_segmentation");
    targets_position = placeholder(mesh_, tg_shape, int32, "targets_position");
  }
  const Tensor weights = cast(not_equal(targets, targets * 0.0f), float32);  // not padding
  const Tensor tokens = reduce_sum(weights);

  // Training: label smoothing spreads epsilon over the other ids, and a small
  // z-loss keeps the softmax normalizer near 1 (as Mesh TensorFlow trains).
  Tensor logits = logits_of(true);
  if (logits.dtype() != float32) logits = cast(logits, float32);
  const float eps = config.label_smoothing;
  const Tensor soft = one_hot(targets, vocab, 1.0f - eps, eps / static_cast<float>(vocab.size - 1));
  const Tensor per_token = softmax_cross_entropy_with_logits(logits, soft, vocab, 1e-4f);
  loss = reduce_sum(per_token * weights) / maximum(tokens, constant(mesh_, 1.0f));
  std::unique_ptr<Optimizer> made;
  if (config.optimizer == "adam") {
    made = std::make_unique<AdamOptimizer>(config.learning_rate, 0.9f, 0.98f, 1e-9f);
  } else {
    AdafactorOptions opt;
    opt.learning_rate = config.learning_rate;
    made = std::make_unique<AdafactorOptimizer>(opt);
  }
  Optimizer& optimizer = *made;
  optimizer.set_clip_norm(config.clip_norm);
  const GradientAccumulation steps(optimizer, loss, config.microbatches,
                                   config.microbatches > 1 ? tokens : Tensor());
  train_ops = steps.accumulate_ops();
  apply_ops = steps.apply_ops();

  const KeepProbs training_keep = keep_probs(config, true);
  const bool training_drops = training_keep.blocks < 1.0f || training_keep.edges < 1.0f;
  eval_logits = training_drops ? logits_of(false) : logits;
  if (eval_logits.dtype() != float32) eval_logits = cast(eval_logits, float32);
  const Tensor eval_per_token =
      softmax_cross_entropy_with_logits(eval_logits, one_hot(targets, vocab), vocab);
  eval_loss_sum = reduce_sum(eval_per_token * weights);
  eval_tokens = tokens;
  // Made last (a run that does not fetch it skips it), so that the graph's
  // other ops keep their names.
  gradient_norm = optimizer.gradient_norm();
}

LearningRate EncDecConfig::effective_learning_rate() const {
  if (optimizer == "adam") return learning_rate;
  AdafactorOptions opt;
  opt.learning_rate = learning_rate;
  return opt.effective_learning_rate();
}

Tensor TransformerEncDec::embed(const Tensor& ids, const Tensor& positions,
                                const std::string& stack) {
  const VariableDType& vd = config_.variable_dtype;
  const Tensor table = layers::get_or_create_variable(
      mesh_, "shared/embedding", Shape({vocab, d_model}), Initializer::normal(0.0f, 1.0f), vd);
  Tensor x = gather(table, ids, vocab);
  if (config_.position == "absolute") {
    const Dimension max_positions{"max_positions",
                                  std::max(inputs_length.size, targets_length.size)};
    const Tensor pos_table =
        layers::get_or_create_variable(mesh_, stack + "/positions", Shape({max_positions, d_model}),
                                       Initializer::normal(0.0f, 1.0f), vd);
    x = x + gather(pos_table, positions, max_positions);
  }
  return x;
}

Tensor TransformerEncDec::logits_of(bool training) {
  const EncDecConfig& c = config_;
  const KeepProbs keep = keep_probs(c, training);
  const Blocks blocks{c.norm, c.ffn, d_model, d_ff_, heads_, d_kv_, keep.blocks};
  const Dimension tg_memory{"targets_memory_length", targets_length.size};
  const bool relative = c.position == "relative";
  auto as_memory = [](const Tensor& t, const Dimension& from, const Dimension& to) {
    return rename_dimension(t, from.name, to.name);
  };
  const Tensor in_pos = c.packed ? inputs_position : range(mesh_, inputs_length);
  const Tensor tg_pos = c.packed ? targets_position : range(mesh_, targets_length);

  const Tensor encoded =
      encode(inputs, c.packed ? inputs_segmentation : Tensor(), in_pos, training);

  // The decoder reads the targets shifted right: 0 first, and at the start
  // of every pair in a packed row.
  Tensor decoder_ids = shift(targets, 1, targets_length, false);
  if (c.packed) {
    decoder_ids = decoder_ids * cast(equal(shift(targets_segmentation, 1, targets_length, false),
                                           targets_segmentation),
                                     int32);
  }
  Tensor self_bias = layers::attention_mask_autoregressive(mesh_, targets_length, tg_memory);
  if (c.packed) {
    self_bias = self_bias + layers::attention_mask_same_segment(
                                targets_segmentation,
                                as_memory(targets_segmentation, targets_length, tg_memory));
  }
  if (relative) {
    self_bias = self_bias +
                layers::relative_position_bias(tg_pos, as_memory(tg_pos, targets_length, tg_memory),
                                               heads_, false, "decoder/relative_bias",
                                               c.relative_buckets, c.relative_max_distance);
  }
  const Tensor cross_bias =
      c.packed ? layers::attention_mask_same_segment(targets_segmentation, inputs_segmentation)
               : layers::attention_mask_ignore_padding(inputs);
  Tensor y = layers::dropout_if(embed(decoder_ids, tg_pos, "decoder"), keep.edges);
  for (int64_t l = 0; l < c.decoder_layers; ++l) {
    const std::string name = "decoder/layer_" + std::to_string(l);
    y = blocks.attention(y, nullptr, targets_length, tg_memory, self_bias,
                         name + "/self_attention");
    y = blocks.attention(y, &encoded, targets_length, inputs_length, cross_bias,
                         name + "/encdec_attention");
    y = blocks.feed_forward(y, name + "/ffn");
  }
  y = layers::dropout_if(blocks.norm(y, "decoder/final_norm"), keep.edges);

  return output_logits(y);
}

Tensor TransformerEncDec::encode(const Tensor& ids, const Tensor& segmentation,
                                 const Tensor& positions, bool training) {
  const EncDecConfig& c = config_;
  const KeepProbs keep = keep_probs(c, training);
  const Blocks blocks{c.norm, c.ffn, d_model, d_ff_, heads_, d_kv_, keep.blocks};
  const Dimension length = ids.shape()[ids.shape().ndims() - 1];
  const Dimension memory{"inputs_memory_length", length.size};
  auto as_memory = [&](const Tensor& t) { return rename_dimension(t, length.name, memory.name); };
  // Padding (or other pairs' tokens) masked, positions relative.
  Tensor bias = segmentation.valid()
                    ? layers::attention_mask_same_segment(segmentation, as_memory(segmentation))
                    : layers::attention_mask_ignore_padding(as_memory(ids));
  if (c.position == "relative") {
    bias = bias + layers::relative_position_bias(positions, as_memory(positions), heads_, true,
                                                 "encoder/relative_bias", c.relative_buckets,
                                                 c.relative_max_distance);
  }
  Tensor x = layers::dropout_if(embed(ids, positions, "encoder"), keep.edges);
  for (int64_t l = 0; l < c.encoder_layers; ++l) {
    const std::string name = "encoder/layer_" + std::to_string(l);
    x = blocks.attention(x, nullptr, length, memory, bias, name + "/self_attention");
    x = blocks.feed_forward(x, name + "/ffn");
  }
  return layers::dropout_if(blocks.norm(x, "encoder/final_norm"), keep.edges);
}

Tensor TransformerEncDec::output_logits(const Tensor& y) {
  // The embedding table, scaled as T5 scales it.
  const Tensor table =
      layers::get_or_create_variable(mesh_, "shared/embedding", Shape({vocab, d_model}),
                                     Initializer::normal(0.0f, 1.0f), config_.variable_dtype);
  return einsum({y, table}, y.shape().minus(Shape({d_model})).union_with(Shape({vocab}))) *
         (1.0f / std::sqrt(static_cast<float>(d_model.size)));
}

Feeds TransformerEncDec::feeds(const HostTensor& input_ids, const HostTensor& target_ids) const {
  Feeds f = {{inputs, input_ids}, {targets, target_ids}};
  if (!config_.packed) return f;
  auto segments_and_positions = [](const HostTensor& ids, bool all) {
    HostTensor seg = HostTensor::zeros(ids.shape(), int32);
    HostTensor pos = HostTensor::zeros(ids.shape(), int32);  // not a copy: that would share
    const int64_t length = ids.shape()[1].size;
    for (int64_t i = 0; i < ids.num_elements(); ++i) {
      seg.data<int32_t>()[i] = all || ids.data<int32_t>()[i] != 0;
      pos.data<int32_t>()[i] = static_cast<int32_t>(i % length);
    }
    return std::pair(seg, pos);
  };
  // Every decoder position is the sentence's (those after the last id are
  // never read by earlier ones: the mask is causal).
  const auto [in_seg, in_pos] = segments_and_positions(input_ids, false);
  const auto [tg_seg, tg_pos] = segments_and_positions(target_ids, true);
  f.emplace_back(inputs_segmentation, in_seg);
  f.emplace_back(inputs_position, in_pos);
  f.emplace_back(targets_segmentation, tg_seg);
  f.emplace_back(targets_position, tg_pos);
  return f;
}

std::vector<std::vector<int32_t>> translate_greedy(
    TransformerEncDec& model, Session& session, const std::vector<std::vector<int32_t>>& sources) {
  const EncDecConfig& c = model.config();
  if (static_cast<int64_t>(sources.size()) > c.rows_per_run()) {
    throw ValueError("translate_greedy: " + std::to_string(sources.size()) +
                     " sentences but the model's batch is " + std::to_string(c.rows_per_run()) +
                     "; translate them in batches");
  }
  HostTensor in = HostTensor::zeros(model.inputs.shape(), int32);
  HostTensor tg = HostTensor::zeros(model.targets.shape(), int32);
  for (size_t b = 0; b < sources.size(); ++b) {
    for (size_t i = 0; i < sources[b].size() && static_cast<int64_t>(i) < c.input_length; ++i) {
      const int32_t id = sources[b][i];
      if (id < 0 || id >= c.vocab) {
        throw ValueError("translate_greedy: sentence " + std::to_string(b) + " holds id " +
                         std::to_string(id) + ", outside the vocabulary of " +
                         std::to_string(c.vocab));
      }
      in.data<int32_t>()[b * c.input_length + i] = id;
    }
  }
  std::vector<std::vector<int32_t>> out(sources.size());
  std::vector<bool> done(sources.size(), false);
  for (int64_t t = 0; t < c.target_length; ++t) {
    const HostTensor logits = session.run(model.eval_logits, model.feeds(in, tg));
    const float* p = logits.data<float>();
    bool all = true;
    for (size_t b = 0; b < sources.size(); ++b) {
      if (done[b]) continue;
      const float* row = p + (static_cast<int64_t>(b) * c.target_length + t) * c.vocab;
      int32_t best = 1;  // padding (0) is never written
      for (int32_t v = 2; v < c.vocab; ++v)
        if (row[v] > row[best]) best = v;
      tg.data<int32_t>()[b * c.target_length + t] = best;
      if (best == 1) {
        done[b] = true;
      } else {
        out[b].push_back(best);
        all = false;
      }
    }
    if (all) break;
  }
  return out;
}

}  // namespace mtf::models
