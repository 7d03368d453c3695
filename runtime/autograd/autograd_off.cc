// Stands in for autograd.cc, engine.cc and the rules in inference-only builds
// (--define autograd=0): nothing is recorded, and asking for gradients says
// how the binary was built.
#include "runtime/autograd/node.h"

namespace ember {
namespace {
constexpr const char* kOff = "ember was built without autograd (--define autograd=0)";
}  // namespace

namespace autograd {
bool needs_grad(Span<const Tensor>) { return false; }
Node* record(GradRule, const Tensor&, Span<const Tensor>) { return nullptr; }
std::shared_ptr<Node> gradient_edge(const Tensor&) { return nullptr; }
Node* record_view(GradRule, const Tensor&, const Tensor&) { return nullptr; }
Node* record_inplace(GradRule, const Tensor&, Span<const Tensor>) { return nullptr; }
void rebase_history(const Tensor&, const Tensor&) {}
void unshare_saved(const Tensor&, const Tensor&) {}
void refresh_view(const Tensor&) {}
void check_inplace(const Tensor&) {}
Tensor sum_to(const Tensor&, IntArrayRef) { raise_error(Status::NotSupported, kOff); }
void backward(const Tensor&, const Tensor&, bool) { raise_error(Status::NotSupported, kOff); }
}  // namespace autograd

bool Tensor::requires_grad() const { return false; }
Tensor& Tensor::requires_grad_(bool requires_grad) {
  EMBER_ENFORCE(!requires_grad, Status::NotSupported, kOff);
  return *this;
}
Tensor Tensor::grad() const { return Tensor(); }
void Tensor::set_grad(const Tensor&) const { raise_error(Status::NotSupported, kOff); }
std::shared_ptr<Node> Tensor::grad_fn() const { return nullptr; }
bool Tensor::is_leaf() const { return true; }
void Tensor::backward(const Tensor&, bool) const { raise_error(Status::NotSupported, kOff); }
void Tensor::retain_grad() const { raise_error(Status::NotSupported, kOff); }
bool Tensor::retains_grad() const { return false; }
Tensor& Tensor::detach_() { return *this; }

}  // namespace ember
