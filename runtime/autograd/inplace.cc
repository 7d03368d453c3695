// In-place ops and views, as PyTorch's autograd handles them: a view made in
// grad mode remembers its base; an in-place op on it rewrites the base's
// history as CopySlices (the base with the view's part computed by the op),
// and every view of that memory made before the change regenerates its
// grad_fn (AsStridedBackward0 of the base) the next time it is asked.
#include "runtime/autograd/grad_mode.h"
#include "runtime/autograd/node.h"
#include "runtime/ops/ops.h"

namespace ember {
namespace autograd {
namespace {

// A fresh AsStridedBackward0 for the view `t` of `base`, whose history is `edge`.
std::shared_ptr<Node> view_node(const Tensor& t, const Tensor& base, std::shared_ptr<Node> edge) {
  auto node = std::make_shared<Node>(GradRule::AsStrided);
  node->next.push_back(Edge{std::move(edge)});
  node->shapes.push_back(base.sizes());
  node->dtypes.push_back(base.dtype());
  node->ints = as_strided_geometry(base, t.sizes(), t.strides(), t.storage_offset());
  return node;
}

// Makes `node` the history of `self` (the in-place op's output).
void install(const Tensor& self, std::shared_ptr<Node> node) {
  AutogradMeta& m = ensure_autograd_meta(self);
  if (!m.view_base.defined()) {
    m.requires_grad = true;
    m.grad_fn = std::move(node);
    m.grad_accumulator.reset();
    return;
  }
  // A view: the base's new value is its old one with the view's elements
  // replaced by the node's output. The node's first edge (the view's old
  // history) is reached through the base's old history instead.
  const Tensor base = m.view_base;
  auto copy_slices = std::make_shared<Node>(GradRule::CopySlices);
  copy_slices->next.push_back(Edge{gradient_edge(base)});
  for (size_t i = 1; i < node->next.size(); ++i) copy_slices->next.push_back(node->next[i]);
  copy_slices->shapes.push_back(base.sizes());
  copy_slices->dtypes.push_back(base.dtype());
  copy_slices->ints = as_strided_geometry(base, self.sizes(), self.strides(), self.storage_offset());
  copy_slices->wrapped = std::move(node);
  AutogradMeta& bm = ensure_autograd_meta(base);
  bm.requires_grad = true;
  bm.grad_fn = copy_slices;
  bm.grad_accumulator.reset();
  m.requires_grad = true;
  m.grad_fn = view_node(self, base, copy_slices);
  m.grad_accumulator.reset();
  m.view_version = self.version();
}

}  // namespace

void refresh_view(const Tensor& t) {
  AutogradMeta* m = autograd_meta(t);
  if (m == nullptr || !m->view_base.defined() || m->view_version == t.version()) return;
  m->view_version = t.version();
  std::shared_ptr<Node> edge = gradient_edge(m->view_base);
  if (!edge) return;  // the base needs no gradient: the view keeps what it has
  std::shared_ptr<Node> node = view_node(t, m->view_base, std::move(edge));
  if (m->retains_grad) node->retained = t.impl()->autograd;
  m->grad_fn = std::move(node);
  m->requires_grad = true;
  m->grad_accumulator.reset();
}

Node* record_view(GradRule rule, const Tensor& out, const Tensor& self) {
  if (!GradMode::is_enabled() || !self.is_floating_point()) return nullptr;
  const AutogradMeta* sm = autograd_meta(self);
  AutogradMeta& m = ensure_autograd_meta(out);
  m.view_base = sm != nullptr && sm->view_base.defined() ? sm->view_base : self;
  m.view_version = out.version();
  return record(rule, out, {self});
}

Node* record_inplace(GradRule rule, const Tensor& self, Span<const Tensor> inputs) {
  if (!needs_grad(inputs)) return nullptr;
  auto node = std::make_shared<Node>(rule);
  for (const Tensor& t : inputs) {
    node->next.push_back(Edge{gradient_edge(t)});
    node->shapes.push_back(t.defined() ? t.sizes() : Shape{});
    node->dtypes.push_back(t.defined() ? t.dtype() : DType::Float32);
  }
  Node* raw = node.get();
  install(self, std::move(node));
  return raw;
}

void rebase_history(const Tensor& self, const Tensor& result) {
  const AutogradMeta* r = autograd_meta(result);
  if (r == nullptr || !r->grad_fn) return;
  install(self, r->grad_fn);
}

void unshare_saved(const Tensor& result, const Tensor& self) {
  const AutogradMeta* r = autograd_meta(result);
  if (r == nullptr || !r->grad_fn) return;
  NoGradGuard no_grad;
  // By convention the first saved tensor is the op's first input (self);
  // other operands that share self's memory stay as they are, so their
  // change is caught at backward time, as in PyTorch.
  if (!r->grad_fn->saved.empty()) r->grad_fn->saved[0].unshare(self.storage());
}

void check_inplace(const Tensor& self) {
  if (!GradMode::is_enabled()) return;
  const AutogradMeta* m = autograd_meta(self);
  if (m == nullptr) return;
  if (m->view_base.defined()) {
    const Tensor& base = m->view_base;
    EMBER_ENFORCE(!(base.requires_grad() && base.is_leaf()), Status::InvalidState,
                "a view of a leaf Variable that requires grad is being used in an in-place operation.");
  }
  EMBER_ENFORCE(!(self.requires_grad() && self.is_leaf()), Status::InvalidState,
              "a leaf Variable that requires grad is being used in an in-place operation.");
}

}  // namespace autograd
}  // namespace ember
