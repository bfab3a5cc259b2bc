// bind_local_attention.cc — Mesh TensorFlow's local-attention layers
// (mtf.layers.masked_local_attention_1d and the rest) and its halo
// exchanges (mtf.halo_exchange, mtf.left_halo_exchange), with its call
// shapes. master_dtype / slice_dtype are accepted and left to the
// variables' dtype rules (mtf.layers.VariableDType), as in the other layers.
#include "handles.h"

namespace mtf::python {

void bind_local_attention(py::module_& m, py::module_& l) {
  using Halo = Tensor (*)(const Tensor&, const DimRef&, const DimRef&, int64_t, bool);
  m.def("halo_exchange", static_cast<Halo>(&halo_exchange), py::arg("x"), py::arg("blocks_dim"),
        py::arg("block_size_dim"), py::arg("halo_size"), py::arg("wrap") = false,
        "Each block (along blocks_dim) gets the halo_size positions before and after it, "
        "concatenated along block_size_dim (zeros past the ends, unless wrap).");
  m.def("left_halo_exchange", static_cast<Halo>(&left_halo_exchange), py::arg("x"),
        py::arg("blocks_dim"), py::arg("block_size_dim"), py::arg("halo_size"),
        py::arg("wrap") = false, "halo_exchange with the positions before each block only.");
  l.def(
      "attention_bias_local_block",
      [](const PyMesh& mesh, const Dimension& block_length, const Dimension& memory_length,
         const py::object&) {
        return layers::attention_bias_local_block(mesh.mesh, block_length, memory_length);
      },
      py::arg("mesh"), py::arg("block_length"), py::arg("memory_length"),
      py::arg("dtype") = py::none());
  l.def(
      "attention_bias_local_2d_block",
      [](const PyMesh& mesh, const Dimension& h, const Dimension& w, const Dimension& mh,
         const Dimension& mw, const py::object&) {
        return layers::attention_bias_local_2d_block(mesh.mesh, h, w, mh, mw);
      },
      py::arg("mesh"), py::arg("h_dim"), py::arg("w_dim"), py::arg("memory_h_dim"),
      py::arg("memory_w_dim"), py::arg("dtype") = py::none());
  l.def(
      "masked_local_attention_1d",
      [](const Tensor& x, const Dimension& kv, const Dimension& heads, int64_t window_size,
         const py::object&, const py::object&, const std::optional<int64_t>& length_per_split,
         const std::optional<std::string>& name) {
        return layers::masked_local_attention_1d(x, kv, heads, window_size,
                                                 name.value_or("masked_local_attention_1d"),
                                                 length_per_split.value_or(0));
      },
      py::arg("x"), py::arg("kv_channels"), py::arg("heads"), py::arg("window_size") = 128,
      py::arg("master_dtype") = py::none(), py::arg("slice_dtype") = py::none(),
      py::arg("length_per_split") = py::none(), py::arg("name") = py::none());
  l.def(
      "masked_local_attention_1d_incremental",
      [](const Tensor& x, const Tensor& prev_k, const Tensor& prev_v, const Tensor& step_num,
         const py::object&, const py::object&, const std::optional<std::string>& name) {
        const layers::LocalAttentionStep s = layers::masked_local_attention_1d_incremental(
            x, prev_k, prev_v, step_num, name.value_or("masked_local_attention_1d"));
        return std::make_tuple(s.y, s.k, s.v);
      },
      py::arg("x"), py::arg("prev_k"), py::arg("prev_v"), py::arg("step_num"),
      py::arg("master_dtype") = py::none(), py::arg("slice_dtype") = py::none(),
      py::arg("name") = py::none(), "One decoding step: (y, new_k, new_v).");
  l.def(
      "local_self_attention_spatial_blocks",
      [](const Tensor& x, const Dimension& kv, const Dimension& heads, const py::object&,
         bool mask_right, const py::object&, const py::object&,
         const std::optional<std::string>& name) {
        return layers::local_self_attention_spatial_blocks(x, kv, heads, mask_right,
                                                           name.value_or("multihead_attention"));
      },
      py::arg("query_antecedent"), py::arg("kv_channels"), py::arg("heads"),
      py::arg("memory_w_dim") = py::none(), py::arg("mask_right") = false,
      py::arg("master_dtype") = py::none(), py::arg("slice_dtype") = py::none(),
      py::arg("name") = py::none());
  l.def(
      "local_2d_self_attention_spatial_blocks",
      [](const Tensor& x, const Dimension& kv, const Dimension& heads, const py::object&,
         const py::object&, bool mask_right, const py::object&, const py::object&,
         const std::optional<std::string>& name) {
        return layers::local_2d_self_attention_spatial_blocks(x, kv, heads, mask_right,
                                                              name.value_or("multihead_attention"));
      },
      py::arg("query_antecedent"), py::arg("kv_channels"), py::arg("heads"),
      py::arg("memory_h_dim") = py::none(), py::arg("memory_w_dim") = py::none(),
      py::arg("mask_right") = false, py::arg("master_dtype") = py::none(),
      py::arg("slice_dtype") = py::none(), py::arg("name") = py::none());
  l.def(
      "multihead_self_attention_memory_compressed",
      [](const Tensor& x, bool mask_right, int64_t factor, const Dimension& kv,
         const Dimension& heads, float dropout, const py::object& broadcast_dims, const py::object&,
         const py::object&, const std::string& name) {
        if (!broadcast_dims.is_none() && dropout != 0.0f)
          throw ValueError(
              "multihead_self_attention_memory_compressed: dropout_broadcast_dims is not "
              "supported (dropout draws one mask element per attention weight)");
        return layers::multihead_self_attention_memory_compressed(x, mask_right, factor, kv, heads,
                                                                  name, 1.0f - dropout);
      },
      py::arg("x"), py::arg("mask_right"), py::arg("compression_factor"), py::arg("kv_channels"),
      py::arg("heads"), py::arg("dropout") = 0.0f, py::arg("dropout_broadcast_dims") = py::none(),
      py::arg("master_dtype") = py::none(), py::arg("slice_dtype") = py::none(),
      py::arg("name") = "multihead_attention");
  l.def("compress_mean", &layers::compress_mean, py::arg("x"), py::arg("dim"),
        py::arg("compression_factor"));
}

}  // namespace mtf::python
