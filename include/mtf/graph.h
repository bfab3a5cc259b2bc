// mtf/graph.h — the shape-level graph: Graph, Mesh, Operation, Tensor.
//
// A Graph owns its Operations; an Operation owns its output tensors. Tensor is
// a cheap handle (a pointer into the graph) and is valid as long as its Graph
// lives. Nothing here holds data: data lives in a Session (mtf/session.h).
// A Mesh names a set of processors; every tensor lives on one mesh. Graphs are
// built from one thread; a finished graph may be read from many.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "mtf/dtype.h"
#include "mtf/reduce_op.h"
#include "mtf/shape.h"

namespace mtf {

class Graph;
class Operation;
class KernelContext;  // defined by the kernels layer (src/kernels/)

namespace detail {
struct TensorNode {
  Operation* op = nullptr;
  int index = 0;
  int64_t id = 0;  // unique within the graph; slot number in programs
  Shape shape;
  DType dtype = DType::kFloat32;
};
}  // namespace detail

// A named set of processors inside a graph. Value type.
class Mesh {
 public:
  Mesh() = default;
  Mesh(Graph& graph, std::string name) : graph_(&graph), name_(std::move(name)) {}
  Graph& graph() const { return *graph_; }
  const std::string& name() const { return name_; }
  bool operator==(const Mesh& o) const { return graph_ == o.graph_ && name_ == o.name_; }
  bool operator!=(const Mesh& o) const { return !(*this == o); }

 private:
  Graph* graph_ = nullptr;
  std::string name_;
};

// Handle to one output of an Operation.
class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(const detail::TensorNode* node) : node_(node) {}

  bool valid() const { return node_ != nullptr; }
  const Shape& shape() const;
  DType dtype() const;
  Operation& op() const;
  const Mesh& mesh() const;
  Graph& graph() const;
  int64_t id() const;
  // "<op name>:<output index>"
  std::string name() const;
  // "<name> [dims] dtype", for error messages.
  std::string describe() const;

  bool operator==(const Tensor& o) const { return node_ == o.node_; }
  bool operator!=(const Tensor& o) const { return node_ != o.node_; }
  bool operator<(const Tensor& o) const { return node_ < o.node_; }

 private:
  const detail::TensorNode* node_ = nullptr;
};

// One node of the graph. Subclasses (in src/ops/) define output shapes in
// their constructor, a slice-wise CPU kernel in compute(), and their gradient
// as more graph ops.
class Operation {
 public:
  virtual ~Operation();
  Operation(const Operation&) = delete;
  Operation& operator=(const Operation&) = delete;

  const std::string& name() const { return name_; }
  const std::string& type() const { return type_; }
  const Mesh& mesh() const { return mesh_; }
  Graph& graph() const { return mesh_.graph(); }
  const std::vector<Tensor>& inputs() const { return inputs_; }
  int num_outputs() const { return static_cast<int>(outputs_.size()); }
  Tensor output(int i) const;
  std::vector<Tensor> outputs() const;

  // Runs the op on one processor's slices.
  virtual void compute(KernelContext& ctx) const = 0;
  // True when compute() reads and writes bfloat16 slices itself; otherwise
  // the executor hands it float32 copies of its bfloat16 inputs, lets it
  // allocate float32 for its bfloat16 outputs, and rounds those (and new
  // values of bfloat16 variables) to bfloat16 afterwards: every op computes
  // in float32 and stores bfloat16, rounded once. Likewise for bool: int32
  // 0 / 1 copies in, int32 outputs narrowed to bool ("nonzero"); an op that
  // returns true here receives and must write bool slices as they are.
  virtual bool computes_bfloat16() const { return false; }
  // False for ops through which no gradient flows (comparisons, one_hot,
  // random draws, integer outputs, stop_gradient).
  virtual bool differentiable() const { return true; }
  // Gradients with respect to each input (an invalid Tensor where none),
  // given gradients of each output (an invalid Tensor where none). Built from
  // graph ops. REQUIRES: differentiable().
  virtual std::vector<Tensor> gradient(const std::vector<Tensor>& grad_outputs) const;
  // Floating-point operations the op performs over its whole logical shape.
  virtual double flops() const;
  // ---- how the op runs on a mesh (used by the lowering) ----
  // Dimensions the op needs whole on every processor: inputs split along
  // them are gathered first, and outputs are computed whole along them, then
  // split by their layout.
  virtual std::vector<std::string> unsplittable_dims() const { return {}; }
  // Input dimensions the op combines away (einsum, reductions) and how; when
  // one is split, the partial results are allreduced over its mesh axis.
  virtual std::vector<std::string> reduced_dims() const { return {}; }
  virtual ReduceOp reduction() const { return ReduceOp::kSum; }
  // Dimensions the op reads through a sliding window (convolutions,
  // pooling). When dimension `dim` of input `input` is split in `parts`
  // equal blocks over a mesh axis, the processor at `position` along that
  // axis needs its rows [*begin, *end) (reaching past the ends is fine:
  // zeros there); return true. The lowering then brings every processor its
  // window from the processors that hold it (a halo exchange) instead of
  // gathering the dimension, and compute() sees the window as that input's
  // slice, with input_slice_offset() giving *begin. Default: false (the
  // dimension is read block by block).
  virtual bool input_window(int input, const std::string& dim, int64_t position, int64_t parts,
                            int64_t* begin, int64_t* end) const;
  // True when input `input`'s windows wrap around the dimension's ends (row
  // r is row r mod size: a shift with wrap-around) instead of reading zeros.
  virtual bool input_window_wraps(int /*input*/) const { return false; }
  // False for an input the op takes for the graph's sake (gradients) and
  // never reads: the lowering moves nothing for it (recompute_grad's op).
  virtual bool reads_input(int /*input*/) const { return true; }
  // True for ops whose effect is a side effect (assignments): they run only
  // when named as targets, and after every read of the variables they write.
  virtual bool is_assignment() const { return false; }
  // One line: "name = type(inputs) -> outputs".
  std::string to_string() const;
  // The user-level call that made this op when the user did not make it
  // directly (e.g. `softmax on "logits:0"`, `the gradient of ...`): the
  // graph's outermost OriginScope when the op was created; empty otherwise.
  const std::string& origin() const { return origin_; }
  // For error messages: `op "exp_3" (exp)`, plus `, made by <origin>`.
  std::string attribution() const;

 protected:
  // Registers a unique name derived from `name` (or `type` when empty).
  // Throws ValueError when an input is invalid or lives on another mesh.
  Operation(const Mesh& mesh, std::string type, std::vector<Tensor> inputs,
            const std::string& name);
  Tensor add_output(Shape shape, DType dtype);

 private:
  Mesh mesh_;
  std::string type_;
  std::string name_;
  std::string origin_;
  std::vector<Tensor> inputs_;
  std::vector<std::unique_ptr<detail::TensorNode>> outputs_;
};

// A graph of operations; owns them. Not copyable.
class Graph {
 public:
  Graph();
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Creates an op of type T in this graph and returns it.
  template <typename T, typename... Args>
  T* add(Args&&... args) {
    auto op = std::make_unique<T>(std::forward<Args>(args)...);
    T* raw = op.get();
    register_op(std::move(op));
    return raw;
  }

  // Mesh TensorFlow's unique names: case-insensitive, "name", "name_1", ...
  std::string unique_name(const std::string& name, bool mark_as_used = true);
  const std::vector<std::unique_ptr<Operation>>& operations() const { return ops_; }
  // Finds an operation by exact name, or nullptr.
  Operation* find_operation(const std::string& name) const;

  // Variables (value tensors of variable ops), in creation order.
  const std::vector<Tensor>& all_variables() const { return all_variables_; }
  const std::vector<Tensor>& trainable_variables() const { return trainable_variables_; }
  void add_variable(const Tensor& value, bool trainable);

  // Seed for random ops and initializers given no seed of their own.
  uint64_t seed() const { return seed_; }
  void set_seed(uint64_t seed) { seed_ = seed; }
  // The slice dtype of the variables layers create when given none (float32
  // unless set; Mesh TensorFlow passes a variable_dtype to every layer): a
  // model sets it once from its VariableDType.
  DType layer_slice_dtype() const { return layer_slice_dtype_; }
  void set_layer_slice_dtype(DType dtype) { layer_slice_dtype_ = dtype; }

  // The outermost live OriginScope's description, or empty.
  const std::string& origin() const;

  // recompute_grad's replay of a function: while seeds are queued, each
  // random op made takes the next one instead of its own, so that the
  // recomputation draws the numbers the original did.
  void queue_random_seeds(std::vector<uint64_t> seeds);
  // The next queued seed, or 0 (none queued: the op keeps its own).
  uint64_t take_random_seed();

  int64_t next_tensor_id() { return next_tensor_id_++; }
  int64_t num_tensor_ids() const { return next_tensor_id_; }
  // One line per operation.
  std::string to_string() const;

 private:
  friend class OriginScope;
  void register_op(std::unique_ptr<Operation> op);
  std::vector<std::unique_ptr<Operation>> ops_;
  std::vector<std::string> origins_;    // live OriginScopes, outermost first
  std::vector<uint64_t> random_seeds_;  // queued by queue_random_seeds, next last
  std::map<std::string, int64_t> names_in_use_;
  std::map<std::string, Operation*> by_name_;
  std::vector<Tensor> all_variables_;
  std::vector<Tensor> trainable_variables_;
  uint64_t seed_ = 0x6d7466;  // "mtf"
  DType layer_slice_dtype_ = DType::kFloat32;
  int64_t next_tensor_id_ = 0;
};

// While one is alive, the ops added to `graph` record `what` as their
// origin: the user-level call that made them (a composition such as
// softmax, a layer, a gradient). Nested scopes keep the outermost, so an
// error about an op inside softmax inside layer_norm names layer_norm.
class OriginScope {
 public:
  OriginScope(Graph& graph, std::string what);
  ~OriginScope();
  OriginScope(const OriginScope&) = delete;
  OriginScope& operator=(const OriginScope&) = delete;

 private:
  Graph& graph_;
};

}  // namespace mtf
