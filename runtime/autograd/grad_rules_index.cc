// Backward rules of the indexing, selection, scan and reordering ops
// (runtime/ops/index.cc, sort.cc, reorder.cc), written with forward ops.
// Rules run with grad mode off.
#include "runtime/autograd/grad_rules_nn.h"
#include "runtime/core/error.h"
#include "runtime/ops/ops.h"

namespace ember {

namespace {

using Grads = std::vector<Tensor>;

bool wants(const Node& n, size_t i) { return i < n.next.size() && n.next[i].fn != nullptr; }

// g reshaped to input i's sizes and cast to its dtype.
Tensor as_input(const Node& n, size_t i, const Tensor& g) {
  Tensor r = g.sizes() == n.shapes[i] ? g : g.reshape(n.shapes[i]);
  return r.dtype() == n.dtypes[i] ? r : r.to(n.dtypes[i]);
}

Tensor zeros_of_input(const Node& n, size_t i, const Tensor& g) {
  return zeros(n.shapes[i], TensorOptions(g.dtype()).device(g.device()));
}

// g.gather(dim, index) for a src that may be larger than index (zeros outside).
Tensor src_grad(const Node& n, const Tensor& g, int64_t d, const Tensor& index) {
  const Tensor picked = gather(g, d, index);
  if (picked.sizes() == n.shapes[1]) return as_input(n, 1, picked);
  Tensor r = zeros_of_input(n, 1, g), dst = r;
  for (int64_t k = 0; k < index.dim(); ++k) dst = dst.narrow(k, 0, index.size(k));
  dst.copy_(picked);
  return as_input(n, 1, r);
}

Grads scatter_rule(const Node& n, const Tensor& g) {
  const Tensor index = n.saved_at(0);
  const int64_t d = n.ints[0];
  // scatter with reduce= has no derivative in PyTorch either (scatter_add's reduction is its own rule).
  EMBER_ENFORCE(base_rule(n.rule) == GradRule::ScatterAdd || n.ints[1] == 0, Status::NotSupported,
              "derivative for aten::scatter is not implemented");
  Grads out(2);
  if (wants(n, 0)) out[0] = base_rule(n.rule) == GradRule::ScatterAdd ? as_input(n, 0, g) : as_input(n, 0, scatter(g, d, index, 0));
  if (wants(n, 1)) out[1] = src_grad(n, g, d, index);
  return out;
}

Grads masked_fill_rule(const Node& n, const Tensor& g) {
  const Tensor mask = n.saved_at(0);
  const Tensor zero = scalar_tensor(0, TensorOptions(g.dtype()).device(g.device()));
  Grads out(2);
  if (wants(n, 0)) out[0] = as_input(n, 0, autograd::sum_to(where(mask, zero, g), n.shapes[0]));
  if (wants(n, 1)) out[1] = as_input(n, 1, sum(where(mask, g, zero)));
  return out;
}

// The gradient of a selection (topk, sort): g scattered back to the selected positions.
Tensor selection_grad(const Node& n, const Tensor& g) {
  const Tensor idx = n.saved_at(0);
  if (n.shapes[0].empty()) return as_input(n, 0, g);
  return as_input(n, 0, scatter_add(zeros_of_input(n, 0, g), n.ints[0], idx, g));
}

Tensor index_select_grad(const Node& n, const Tensor& g) {
  const Tensor index = n.saved_at(0).to(DType::Int64);
  const int64_t d = n.ints[0];
  if (n.shapes[0].empty()) return as_input(n, 0, g);
  Shape at(n.shapes[0].size(), 1);
  at[static_cast<size_t>(d)] = index.numel();
  return as_input(n, 0, scatter_add(zeros_of_input(n, 0, g), d, index.reshape(at).expand(g.sizes()), g));
}

Tensor cumprod_grad(const Node& n, const Tensor& g) {
  const Tensor x = n.saved_at(0), y = n.saved_at(1);
  EMBER_ENFORCE(!(x == 0).to(DType::Int64).sum().item<int64_t>(), Status::NotSupported,
              "cumprod backward of an input with zeros is not supported");
  return as_input(n, 0, cumulative(g * y, n.ints[0], false, false, true) / x);
}

// repeat: the copies of each element summed ([r0, s0, r1, s1, ...] summed over the r dims).
Tensor repeat_grad(const Node& n, const Tensor& g) {
  const Shape& in = n.shapes[0];
  const size_t lead = n.ints.size() - in.size();
  Shape inter;
  std::vector<int64_t> summed;
  for (size_t i = 0; i < n.ints.size(); ++i) {
    inter.push_back(n.ints[i]);
    inter.push_back(i < lead ? 1 : in[i - lead]);
    summed.push_back(static_cast<int64_t>(2 * i));
  }
  return as_input(n, 0, sum(g.reshape(inter), summed));
}

}  // namespace

std::vector<Tensor> apply_index_grad_rule(Node& n, const Tensor& g) {
  switch (base_rule(n.rule)) {
    case GradRule::Gather:
      return {as_input(n, 0, scatter_add(zeros_of_input(n, 0, g), n.ints[0], n.saved_at(0), g))};
    case GradRule::Scatter:
    case GradRule::ScatterValue:
    case GradRule::ScatterAdd:
      return scatter_rule(n, g);
    case GradRule::IndexSelect:
      return {index_select_grad(n, g)};
    case GradRule::MaskedFill:
      return masked_fill_rule(n, g);
    case GradRule::TopK:
    case GradRule::Sort:
      return {selection_grad(n, g)};
    case GradRule::Cumsum:
      return {as_input(n, 0, cumulative(g, n.ints[0], false, false, true))};
    case GradRule::Cumprod:
      return {cumprod_grad(n, g)};
    case GradRule::Flip:
      return {as_input(n, 0, flip(g, n.ints))};
    case GradRule::Roll: {
      std::vector<int64_t> back;
      for (int64_t s : n.ints) back.push_back(-s);
      return {as_input(n, 0, roll(g, back, n.shapes[1]))};
    }
    case GradRule::Repeat:
      return {repeat_grad(n, g)};
    case GradRule::Tril:
      return {as_input(n, 0, tril(g, n.ints[0]))};
    case GradRule::Triu:
      return {as_input(n, 0, triu(g, n.ints[0]))};
    default:
      break;
  }
  EMBER_ASSERT(false, "apply_grad_rule: unhandled rule");
  return {};
}

}  // namespace ember
