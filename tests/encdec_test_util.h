// encdec_test_util.h — the small encoder-decoder the tests build: d_model 16,
// 2 heads of 8, a 12-piece vocabulary, batch 4, no dropout or label
// smoothing (so losses and logits are deterministic), 8 relative buckets.
#pragma once

#include <cstdint>

#include "models/transformer_encdec.h"

namespace mtf::models {

inline EncDecConfig tiny_encdec(int64_t layers, int64_t input_length, int64_t target_length) {
  EncDecConfig c;
  c.encoder_layers = c.decoder_layers = layers;
  c.d_model = 16;
  c.d_ff = 32;
  c.heads = 2;
  c.d_kv = 8;
  c.vocab = 12;
  c.batch = 4;
  c.input_length = input_length;
  c.target_length = target_length;
  c.dropout = 0.0f;
  c.label_smoothing = 0.0f;
  c.relative_buckets = 8;
  c.relative_max_distance = 16;
  return c;
}

}  // namespace mtf::models
