// mtf/layout.h — meshes of processors and how tensors are laid out on them.
//
// MeshShape: named mesh dimensions ("rows:2;cols:4"); processors are numbered
// row-major over them (last dimension fastest), as in Mesh TensorFlow.
// LayoutRules: pairs (tensor dimension name, mesh dimension name), from
// Mesh TensorFlow's strings ("batch:rows;hidden:cols").
// TensorLayout: an immutable value saying, for each axis of one tensor, which
// mesh axis splits it (or none), with the slice shape and offset of any
// processor. All three validate on construction and throw LayoutError naming
// the tensor, the dimension, the mesh dimension and the sizes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mtf/shape.h"

namespace mtf {

class MeshShape {
 public:
  // The most processors a mesh has (2^24: far beyond any machine simulated).
  static constexpr int64_t kMaxProcessors = int64_t{1} << 24;

  MeshShape() = default;  // one processor, no mesh dimensions
  // Throws LayoutError on a mesh dimension of size < 1, or more than
  // kMaxProcessors processors in all.
  MeshShape(Shape dims);               // NOLINT(runtime/explicit)
  MeshShape(const char* spec);         // NOLINT(runtime/explicit)
  MeshShape(const std::string& spec);  // NOLINT(runtime/explicit)

  const Shape& dims() const { return dims_; }
  int ndims() const { return dims_.ndims(); }
  // Number of processors.
  int64_t size() const { return dims_.num_elements(); }
  // Mesh axis of a named mesh dimension, or -1.
  int axis_of(const std::string& name) const { return dims_.index_of(name); }
  // Coordinates of processor `pnum` (row-major), and back.
  std::vector<int64_t> coordinates(int64_t pnum) const;
  int64_t pnum(const std::vector<int64_t>& coordinates) const;
  // "rows:2;cols:4" (Mesh TensorFlow's flag syntax).
  std::string to_string() const;
  bool operator==(const MeshShape& o) const { return dims_ == o.dims_; }
  bool operator!=(const MeshShape& o) const { return !(*this == o); }

 private:
  Shape dims_;
};

class LayoutRules {
 public:
  LayoutRules() = default;                                              // everything replicated
  LayoutRules(std::vector<std::pair<std::string, std::string>> pairs);  // NOLINT
  LayoutRules(const char* spec);                                        // NOLINT
  LayoutRules(const std::string& spec);                                 // NOLINT

  const std::vector<std::pair<std::string, std::string>>& pairs() const { return pairs_; }
  // Throws LayoutError when a rule names a mesh dimension the mesh lacks.
  void validate(const MeshShape& mesh) const;
  // The mesh axis that splits tensor dimension `name`, if any; throws
  // LayoutError when rules put it on two mesh dimensions of this mesh.
  std::optional<int> mesh_axis_for(const std::string& name, const MeshShape& mesh) const;
  // Tensor dimension names mapped to a mesh dimension.
  std::vector<std::string> tensor_dims_on(const std::string& mesh_dim) const;
  // "batch:rows;hidden:cols"
  std::string to_string() const;
  bool operator==(const LayoutRules& o) const { return pairs_ == o.pairs_; }

 private:
  std::vector<std::pair<std::string, std::string>> pairs_;
};

class TensorLayout {
 public:
  // The layout of a tensor of `shape` (named `tensor_name` in errors) under
  // `rules` on `mesh`. Throws LayoutError when a split dimension is not
  // divisible by its mesh dimension, when two of its dimensions land on one
  // mesh dimension, or when the rules are invalid for the mesh.
  static TensorLayout make(const Shape& shape, const LayoutRules& rules, const MeshShape& mesh,
                           const std::string& tensor_name = "tensor");
  // Fully replicated on `mesh`.
  static TensorLayout replicated(const Shape& shape, const MeshShape& mesh);
  // From an explicit map (per tensor axis: mesh axis or -1), validated like make().
  static TensorLayout with_mesh_axes(const Shape& shape, const MeshShape& mesh,
                                     std::vector<int> tensor_to_mesh);

  const Shape& shape() const { return shape_; }
  const MeshShape& mesh() const { return mesh_; }
  // Per tensor axis: the mesh axis that splits it, or -1.
  const std::vector<int>& tensor_to_mesh() const { return tensor_to_mesh_; }
  // Per mesh axis: the tensor axis it splits, or -1.
  std::vector<int> mesh_to_tensor() const;
  bool is_fully_replicated() const;
  // Shape of every processor's slice (the same on all of them).
  Shape slice_shape() const;
  // Offset of processor pnum's slice along each tensor axis.
  std::vector<int64_t> slice_begin(int64_t pnum) const;
  // Elements per slice.
  int64_t slice_size() const { return slice_shape().num_elements(); }
  // "[batch:100@rows, hidden:1024]"
  std::string to_string() const;
  bool operator==(const TensorLayout& o) const {
    return shape_ == o.shape_ && mesh_ == o.mesh_ && tensor_to_mesh_ == o.tensor_to_mesh_;
  }
  bool operator!=(const TensorLayout& o) const { return !(*this == o); }
  size_t hash() const;

 private:
  TensorLayout(Shape shape, MeshShape mesh, std::vector<int> tensor_to_mesh)
      : shape_(std::move(shape)),
        mesh_(std::move(mesh)),
        tensor_to_mesh_(std::move(tensor_to_mesh)) {}
  Shape shape_;
  MeshShape mesh_;
  std::vector<int> tensor_to_mesh_;
};

// A text picture of how `layout`'s tensor lies over its mesh, as JAX's
// visualize_array_sharding draws one: a grid whose rows are the blocks of
// the first split tensor axis and whose columns those of the second, each
// cell naming the processors that hold that block (replicas together:
// "p1 p5", "p0-p3", "p0,p4..p28 (8)"); a third split axis and more fold into
// the cells. Axes of more than `max_blocks` blocks show the first ones,
// "...", and the last. A title line says how many blocks of which shape,
// each on how many processors.
std::string sharding_picture(const TensorLayout& layout, int max_blocks = 8);

// The windows of a halo exchange along one dimension of `whole` rows split
// in equal blocks over a ring of processors: the processor at position q
// holds rows [q * block, (q + 1) * block); the one at position p needs rows
// [begin[p], begin[p] + extent), which may reach past either end — zeros
// there, or with `wrap` the rows at the other end (row r is row r mod whole:
// a shift with wrap-around) — and into any other processor's block.
// Convolutions and pooling on a split dimension read such windows, and
// shifts.
struct HaloPiece {
  int64_t first = 0, last = 0;  // rows [first, last) of the sender's (whole-dimension numbers)
  int64_t at = 0;               // where they go in the receiver's window
};

struct HaloWindows {
  int64_t whole = 0, block = 0, extent = 0;
  std::vector<int64_t> begin;  // per position
  bool wrap = false;

  int parts() const { return static_cast<int>(begin.size()); }
  // The rows of position `to`'s window that position `from` holds, in
  // window order: at most one piece without wrap, up to three with it.
  std::vector<HaloPiece> pieces(int from, int to) const;
  // True when every window is its own block: nothing to exchange.
  bool is_trivial() const;
  // Rows position p sends to the others.
  int64_t rows_sent(int p) const;
};

}  // namespace mtf
