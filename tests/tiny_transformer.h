// tiny_transformer.h — the small Transformer LM configuration the tests train
// (2 layers, d_model 16, 4 heads, vocab 64, 4 x 8 tokens), a few training
// steps, and the whole window's logits the decoding tests compare with.
#pragma once

#include <vector>

#include "models/transformer.h"

namespace mtf::testing {

inline models::TransformerConfig tiny_transformer_config() {
  models::TransformerConfig c;
  c.layers = 2;
  c.d_model = 16;
  c.d_ff = 32;
  c.heads = 4;
  c.d_kv = 4;
  c.vocab = 64;
  c.length = 8;
  c.batch = 4;
  return c;
}

// Four Adafactor steps so that the weights are not the initial ones.
inline void train_a_little(models::TransformerLm& lm, Session& s) {
  HostTensor in(lm.inputs.shape(), int32), tg(lm.targets.shape(), int32);
  for (int step = 0; step < 4; ++step) {
    for (int64_t i = 0; i < in.num_elements(); ++i) {
      in.data<int32_t>()[i] = static_cast<int32_t>((i * 7 + step * 3) % 64);
      tg.data<int32_t>()[i] = static_cast<int32_t>((i * 7 + step * 3 + 1) % 64);
    }
    s.run({lm.loss}, {{lm.inputs, in}, {lm.targets, tg}}, lm.train_ops);
  }
}

// The whole window's logits [batch, length, vocab] for `windows`.
inline std::vector<float> window_logits(models::TransformerLm& lm, Session& s,
                                        const std::vector<int32_t>& windows) {
  const HostTensor in = HostTensor::from_ints(lm.inputs.shape(), windows);
  return s.run(lm.eval_logits, {{lm.inputs, in}, {lm.targets, in}}).to_floats();
}

}  // namespace mtf::testing
