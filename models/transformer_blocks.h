// transformer_blocks.h — the pieces both Transformers are made of (the
// decoder-only LM, models/transformer.h, and the encoder-decoder,
// models/transformer_encdec.h): the norm, the feed-forward block, attention
// as a pre-normalized residual branch, and the same attention over cached
// keys and values for decoding one position at a time. Every piece makes or
// finds its variables by name, so each model's training graph and its
// decoder share them. The LM is the configuration layer norm + ReLU, its
// attention self-attention under a causal mask. Internal to models/.
#pragma once

#include <string>

#include "mtf/mtf.h"

namespace mtf::models {

// The pieces every block is made of, with the model's choices: norm_type
// "rms" or "layer", ffn_type "relu" or "gated_gelu".
struct Blocks {
  std::string norm_type, ffn_type;
  Dimension d_model, d_ff, heads, d_kv;
  float keep_prob;

  Tensor norm(const Tensor& x, const std::string& name) const {
    return norm_type == "rms" ? layers::rms_norm(x, d_model, name)
                              : layers::layer_norm(x, d_model, name);
  }
  Tensor ffn(const Tensor& x, const std::string& name) const {
    if (ffn_type == "relu") return layers::dense_relu_dense(x, d_ff, name, keep_prob);
    layers::DenseOptions no_bias;
    no_bias.use_bias = false;
    const Tensor gate = gelu(layers::dense(x, {d_ff}, {d_model}, name + "/wi_0", no_bias));
    const Tensor linear = layers::dense(x, {d_ff}, {d_model}, name + "/wi_1", no_bias);
    const Tensor h = layers::dropout_if(gate * linear, keep_prob);
    return layers::dense(h, {d_model}, {d_ff}, name + "/wo", no_bias);
  }
  // x + dropout(attention(norm(x), memory(norm(x)) or `memory`)).
  Tensor attention(const Tensor& x, const Tensor* memory, const Dimension& length,
                   const Dimension& memory_length, const Tensor& bias,
                   const std::string& name) const {
    const Tensor h = norm(x, name + "_norm");
    const Tensor m = memory ? *memory : rename_dimension(h, length.name, memory_length.name);
    const Tensor a =
        layers::multihead_attention(h, m, bias, {heads, d_kv, memory_length}, name, keep_prob);
    return x + layers::dropout_if(a, keep_prob);
  }
  // The projection of h by multihead_attention's weight "<name>/<w>" (q, k
  // or v; made by the model already): h's shape with d_model replaced by
  // heads and d_kv.
  Tensor project(const Tensor& h, const std::string& name, const char* w) const {
    const Tensor weight =
        layers::get_or_create_variable(h.mesh(), name + "/" + w, Shape({d_model, heads, d_kv}),
                                       Initializer::zeros(), layers::variable_dtype_for(h));
    return einsum({h, weight}, h.shape().minus(Shape({d_model})).union_with(Shape({heads, d_kv})));
  }
  // The attention branch of attention(..., name) (before the residual) for
  // queries h = norm(x) over keys and values projected already (caches):
  // decoding one position at a time.
  Tensor attention_over(const Tensor& h, const Tensor& k, const Tensor& v,
                        const Dimension& memory_length, const Tensor& bias,
                        const std::string& name) const {
    const Tensor o =
        layers::dot_product_attention(project(h, name, "q"), k, v, bias, d_kv, memory_length);
    const Tensor wo =
        layers::get_or_create_variable(h.mesh(), name + "/o", Shape({heads, d_kv, d_model}),
                                       Initializer::zeros(), layers::variable_dtype_for(h));
    return einsum({o, wo}, h.shape());
  }
  Tensor feed_forward(const Tensor& x, const std::string& name) const {
    return x + layers::dropout_if(ffn(norm(x, name + "_norm"), name), keep_prob);
  }
};

}  // namespace mtf::models
