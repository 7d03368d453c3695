// Recording, the autograd methods of Tensor and their helpers (left out of
// builds with --define autograd=0, where autograd_off.cc stands in).
#include <algorithm>

#include "runtime/autograd/grad_mode.h"
#include "runtime/autograd/node.h"
#include "runtime/ops/ops.h"

namespace ember {
namespace {

AutogradMeta& meta(const Tensor& t) { return ensure_autograd_meta(t); }

const AutogradMeta* meta_or_null(const Tensor& t) { return autograd_meta(t); }

}  // namespace

namespace autograd {
// The node gradients for `t` flow into: its grad_fn, or (for a leaf that
// requires grad) its AccumulateGrad node, created once and cached weakly.
std::shared_ptr<Node> gradient_edge(const Tensor& t) {
  refresh_view(t);
  const AutogradMeta* m = meta_or_null(t);
  if (m == nullptr || !m->requires_grad) return nullptr;
  if (m->grad_fn) return m->grad_fn;
  AutogradMeta& mm = meta(t);
  if (auto acc = mm.grad_accumulator.lock()) return acc;
  auto acc = std::make_shared<Node>(GradRule::AccumulateGrad);
  acc->variable = t;
  mm.grad_accumulator = acc;
  return acc;
}
}  // namespace autograd

namespace autograd {

bool needs_grad(Span<const Tensor> inputs) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor& t : inputs) {
    refresh_view(t);  // a view of memory that started to need gradients since
    const AutogradMeta* m = meta_or_null(t);
    if (m != nullptr && m->requires_grad) return true;
  }
  return false;
}

Node* record(GradRule rule, const Tensor& out, Span<const Tensor> inputs) {
  if (!needs_grad(inputs)) return nullptr;
  auto node = std::make_shared<Node>(rule);
  for (const Tensor& t : inputs) {
    node->next.push_back(Edge{gradient_edge(t)});
    node->shapes.push_back(t.defined() ? t.sizes() : Shape{});
    node->dtypes.push_back(t.defined() ? t.dtype() : DType::Float32);
  }
  AutogradMeta& m = meta(out);
  m.requires_grad = true;
  m.grad_fn = node;
  return node.get();
}

Tensor sum_to(const Tensor& grad, IntArrayRef shape) {
  if (std::equal(grad.sizes().begin(), grad.sizes().end(), shape.begin(), shape.end())) return grad;
  const int64_t lead = grad.dim() - static_cast<int64_t>(shape.size());
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < grad.dim(); ++d) {
    if (d < lead || (shape[d - lead] == 1 && grad.size(d) != 1)) dims.push_back(d);
  }
  Tensor r = dims.empty() ? grad : ember::sum(grad, dims, /*keepdim=*/true);
  return r.reshape(shape);
}

}  // namespace autograd

// --- Tensor's autograd methods ---------------------------------------------------

bool Tensor::requires_grad() const {
  autograd::refresh_view(*this);
  const AutogradMeta* m = meta_or_null(*this);
  return m != nullptr && m->requires_grad;
}

Tensor& Tensor::requires_grad_(bool requires_grad) {
  const AutogradMeta* m = meta_or_null(*this);
  EMBER_ENFORCE(m == nullptr || !m->grad_fn || requires_grad, Status::InvalidState,
              "you can only change requires_grad flags of leaf variables. If you want to use a computed "
              "variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach().");
  EMBER_ENFORCE(!requires_grad || is_floating_point(), Status::DTypeMismatch,
              "only Tensors of floating point and complex dtype can require gradients");
  if (m == nullptr && !requires_grad) return *this;
  meta(*this).requires_grad = requires_grad;
  return *this;
}

Tensor Tensor::grad() const {
  const AutogradMeta* m = meta_or_null(*this);
  return m ? m->grad : Tensor();
}

void Tensor::set_grad(const Tensor& grad) const {
  if (grad.defined()) {
    EMBER_ENFORCE(grad.sizes() == sizes(), Status::ShapeMismatch, "assigned grad has data of a different size");
    EMBER_ENFORCE(grad.dtype() == dtype(), Status::DTypeMismatch, "assigned grad has data of a different type");
    EMBER_ENFORCE(grad.device() == device(), Status::DeviceMismatch,
                "assigned grad has data located on a different device");
  }
  meta(*this).grad = grad;
}

std::shared_ptr<Node> Tensor::grad_fn() const {
  autograd::refresh_view(*this);
  const AutogradMeta* m = meta_or_null(*this);
  return m ? m->grad_fn : nullptr;
}

bool Tensor::is_leaf() const { return grad_fn() == nullptr; }

void Tensor::backward(const Tensor& gradient, bool retain_graph) const {
  autograd::backward(*this, gradient, retain_graph);
}

void Tensor::retain_grad() const {
  EMBER_ENFORCE(requires_grad(), Status::InvalidState, "can't retain_grad on Tensor that has requires_grad=False");
  if (is_leaf()) return;  // leaves keep their grad anyway
  AutogradMeta& m = meta(*this);
  m.retains_grad = true;
  m.grad_fn->retained = impl()->autograd;
}

bool Tensor::retains_grad() const {
  const AutogradMeta* m = meta_or_null(*this);
  return m != nullptr && m->retains_grad;
}

Tensor& Tensor::detach_() {
  if (impl()->autograd) {
    impl()->autograd->grad_fn.reset();
    impl()->autograd->requires_grad = false;
    impl()->autograd->grad_accumulator.reset();
    impl()->autograd->view_base = Tensor();
  }
  return *this;
}

}  // namespace ember
