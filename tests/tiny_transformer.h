// tiny_transformer.h — the small Transformer LM configuration the tests train
// (2 layers, d_model 16, 4 heads, vocab 64, 4 x 8 tokens).
#pragma once

#include "models/transformer.h"

namespace mtf::testing {

inline examples::TransformerConfig tiny_transformer_config() {
  examples::TransformerConfig c;
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

}  // namespace mtf::testing
