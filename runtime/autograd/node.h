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
#define RT_GRAD_ALIAS(rule, name, base) RT_GRAD(rule, name)
#include "runtime/autograd/grad_rules.def"
#undef RT_GRAD_ALIAS
#undef RT_GRAD
};

std::string_view grad_rule_name(GradRule rule);
// The rule an RT_GRAD_ALIAS line runs (the rule itself for RT_GRAD lines).
GradRule base_rule(GradRule rule);

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
  // Replaces a saved tensor that shares `storage` (about to be overwritten in
  // place) by a copy of its current value.
  void unshare(const Storage& storage);

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
  std::shared_ptr<Node> wrapped;              // CopySlices: the in-place op's node
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
  // Views made in grad mode from floating tensors: the tensor whose memory
  // they view (never itself a view) and the storage version grad_fn was made
  // for; a view whose storage changed since gets a fresh AsStridedBackward0
  // from its base's history when asked (PyTorch's view version check).
  Tensor view_base;
  uint64_t view_version = 0;
};

// The tensor's autograd state, created when missing.
AutogradMeta& ensure_autograd_meta(const Tensor& t);

// The ints of an AsStrided / CopySlices node for the view (sizes, strides,
// offset) of `base`'s storage: sizes (rank r), strides (r), the view's and the
// base's offsets and the extent both span (relative to the lowest element),
// then the base's strides.
std::vector<int64_t> as_strided_geometry(const Tensor& base, IntArrayRef sizes, IntArrayRef strides,
                                         int64_t offset);

// The tensor's autograd state, or null.
inline AutogradMeta* autograd_meta(const Tensor& t) { return t.defined() ? t.impl()->autograd.get() : nullptr; }

namespace autograd {

// True when grad mode is on and some input requires grad.
bool needs_grad(Span<const Tensor> inputs);

// Makes `out` the output of a new node for `rule` whose inputs are `inputs`
// (their sizes and dtypes are recorded), when needs_grad(inputs); returns the
// node so the caller can save what the rule needs, or nullptr.
Node* record(GradRule rule, const Tensor& out, Span<const Tensor> inputs);

// A view op: `out` views `self`'s memory. In grad mode, for floating
// tensors, remembers out's base (for in-place ops on views), then records.
Node* record_view(GradRule rule, const Tensor& out, const Tensor& self);

// An in-place op on `self` whose new value `rule` computes from `inputs`
// (self's old value first): records the node (returned, or null) and makes it
// self's history (rebase_history). Call after the write.
Node* record_inplace(GradRule rule, const Tensor& self, Span<const Tensor> inputs);

// Gives `self` the history of `result` (in-place ops: the node computed the
// new value of self from its old history). When self is a view, its base's
// history becomes CopySlices (the base with the view's part replaced by the
// node's output) and self's grad_fn an AsStridedBackward0 of the base.
void rebase_history(const Tensor& self, const Tensor& result);

// Before `self` is overwritten with `result` (computed out of place from it):
// result's node keeps a copy of self's old value when it saved it (its first
// saved tensor), as PyTorch's in-place rules keep the original self.
void unshare_saved(const Tensor& result, const Tensor& self);

// PyTorch's check before an in-place op on `self` in grad mode: not a leaf
// that requires grad, nor a view of one.
void check_inplace(const Tensor& self);

// A view whose storage was changed in place since its grad_fn was made gets
// a fresh AsStridedBackward0 from its base's history (done by grad_fn(),
// requires_grad() and gradient_edge()).
void refresh_view(const Tensor& t);

// Shows `out`'s fresh node under the RT_GRAD_ALIAS name `alias` (which runs
// the node's rule), as PyTorch names that overload.
void rename_grad_fn(const Tensor& out, GradRule alias);

// Sums `grad` down to `shape` (undoing broadcasting).
Tensor sum_to(const Tensor& grad, IntArrayRef shape);

// The node gradients for `t` flow into (its grad_fn or its leaf's
// AccumulateGrad node), or null when it does not require grad.
std::shared_ptr<Node> gradient_edge(const Tensor& t);

// Runs backward from `root` (engine.cc).
void backward(const Tensor& root, const Tensor& gradient, bool retain_graph);

}  // namespace autograd
}  // namespace ember
