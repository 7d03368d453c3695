// The autograd graph: one Node per recorded op output. A node holds its rule
// (grad_rules.def), the edges to the nodes of its inputs, the tensors its rule
// needs (saved with their version) and a few shapes and numbers; the rule
// turns the gradient of the output into gradients of the inputs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/graph/op_params.h"
#include "runtime/tensor/tensor.h"

namespace ember {

enum class GradRule : uint16_t {
#define RT_GRAD(rule, name) rule,
#include "runtime/autograd/grad_rules.def"
#undef RT_GRAD
};

std::string_view grad_rule_name(GradRule rule);

class Node;

// A tensor a backward rule needs, detached (no graph cycle through outputs)
// with the version it had when saved, so in-place changes are caught.
class SavedTensor {
 public:
  SavedTensor() = default;
  SavedTensor(const Tensor& t, std::string producer);
  // The saved value; raises PyTorch's errors after an in-place change or release.
  Tensor unpack() const;
  void release() {
    data_ = Tensor();
    released_ = true;
  }
  bool defined() const { return data_.defined() || released_; }

 private:
  Tensor data_;
  uint64_t version_ = 0;
  std::string producer_;  // "ReluBackward0" when it is an op's output, empty for leaves
  bool released_ = false;
};

struct Edge {
  std::shared_ptr<Node> fn;  // null when that input needs no gradient
};

class Node {
 public:
  explicit Node(GradRule rule);

  GradRule rule;
  std::vector<Edge> next;          // one per input of the op
  std::vector<SavedTensor> saved;  // what the rule reads
  std::vector<Shape> shapes;       // input sizes and other geometry
  std::vector<DType> dtypes;       // input dtypes
  std::vector<int64_t> ints;       // dims, flags
  std::vector<double> reals;       // scalar operands, eps, p
  OpParams params;
  uint64_t sequence_nr;
  Tensor variable;                            // AccumulateGrad: the leaf
  std::weak_ptr<AutogradMeta> retained;       // the output, if it retains its grad

  std::string_view name() const { return grad_rule_name(rule); }
  Node& save(const Tensor& t);
  Tensor saved_at(size_t i) const { return saved[i].unpack(); }
  void release_saved();
};

struct AutogradMeta {
  bool requires_grad = false;
  bool retains_grad = false;
  Tensor grad;
  std::shared_ptr<Node> grad_fn;             // null for leaves
  std::weak_ptr<Node> grad_accumulator;      // leaves: their AccumulateGrad node
};

// The tensor's autograd state, or null.
inline AutogradMeta* autograd_meta(const Tensor& t) { return t.defined() ? t.impl()->autograd.get() : nullptr; }

namespace autograd {

// True when grad mode is on and some input requires grad.
bool needs_grad(Span<const Tensor> inputs);

// Makes `out` the output of a new node for `rule` whose inputs are `inputs`
// (their sizes and dtypes are recorded), when needs_grad(inputs); returns the
// node so the caller can save what the rule needs, or nullptr.
Node* record(GradRule rule, const Tensor& out, Span<const Tensor> inputs);

// Gives `self` the history of `result` (in-place ops: the node computed the
// new value of self from its old history).
void rebase_history(const Tensor& self, const Tensor& result);

// PyTorch's check before an in-place op on `self` (not a leaf that requires grad).
void check_inplace(const Tensor& self);

// Sums `grad` down to `shape` (undoing broadcasting).
Tensor sum_to(const Tensor& grad, IntArrayRef shape);

// The node gradients for `t` flow into (its grad_fn or its leaf's
// AccumulateGrad node), or null when it does not require grad.
std::shared_ptr<Node> gradient_edge(const Tensor& t);

// Runs backward from `root` (engine.cc).
void backward(const Tensor& root, const Tensor& gradient, bool retain_graph);

}  // namespace autograd
}  // namespace ember
