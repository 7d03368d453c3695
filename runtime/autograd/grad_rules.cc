// One backward rule per entry of grad_rules.def, written with forward ops (so
// every backend with those kernels gets backward for free). A rule returns one
// gradient per recorded input; an undefined tensor means "no gradient" (zero).
// Rules run with grad mode off.
#include <cmath>
#include <numeric>

#include "runtime/autograd/grad_rules_nn.h"
#include "runtime/autograd/node.h"
#include "runtime/ops/ops.h"

namespace ember {
namespace {

using Grads = std::vector<Tensor>;

bool wants(const Node& n, size_t i) { return i < n.next.size() && n.next[i].fn != nullptr; }

// The gradient for input i: summed back to its shape and cast to its dtype.
Tensor to_input(const Node& n, size_t i, const Tensor& g) {
  Tensor r = autograd::sum_to(g, n.shapes[i]);
  return r.dtype() == n.dtypes[i] ? r : r.to(n.dtypes[i]);
}

// Reverses a reduction: puts back the reduced dims (when !keepdim) and expands
// the gradient to the input's shape.
Tensor unreduce(const Tensor& g, uint32_t mask, bool keepdim, IntArrayRef in_shape) {
  Tensor r = g;
  if (!keepdim) {
    for (size_t d = 0; d < in_shape.size(); ++d) {
      if ((mask >> d) & 1u) r = r.unsqueeze(static_cast<int64_t>(d));
    }
  }
  return r.expand(in_shape);
}

int64_t reduced_count(uint32_t mask, IntArrayRef shape) {
  int64_t n = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if ((mask >> d) & 1u) n *= shape[d];
  }
  return n;
}

Grads unary(const Node& n, const Tensor& dx) { return {wants(n, 0) ? to_input(n, 0, dx) : Tensor()}; }

Grads binary_rule(const Node& n, const Tensor& g) {
  Grads out(2);
  switch (base_rule(n.rule)) {
    case GradRule::Add:
      if (wants(n, 0)) out[0] = to_input(n, 0, g);
      if (wants(n, 1)) out[1] = to_input(n, 1, g);
      break;
    case GradRule::Sub:
      if (wants(n, 0)) out[0] = to_input(n, 0, g);
      if (wants(n, 1)) out[1] = to_input(n, 1, -g);
      break;
    case GradRule::Mul:  // each side reads only the other operand
      if (wants(n, 0)) out[0] = to_input(n, 0, g * n.saved_at(1));
      if (wants(n, 1)) out[1] = to_input(n, 1, g * n.saved_at(0));
      break;
    case GradRule::Div: {
      const Tensor b = n.saved_at(1);
      if (wants(n, 0)) out[0] = to_input(n, 0, g / b);
      if (wants(n, 1)) out[1] = to_input(n, 1, -g * n.saved_at(0) / (b * b));
      break;
    }
#define RT_OP(Name, name, n_in, n_out, Params)
#define RT_BINARY(Name, name, dtypes, formula, grad_fn, backward_a, backward_b) \
  case GradRule::Name: {                                                         \
    [[maybe_unused]] const Tensor a = n.saved_at(0), b = n.saved_at(1);          \
    if (wants(n, 0)) out[0] = to_input(n, 0, backward_a);                        \
    if (wants(n, 1)) out[1] = to_input(n, 1, backward_b);                        \
    break;                                                                       \
  }
#include "runtime/graph/ops.def"
#undef RT_BINARY
#undef RT_OP
    case GradRule::Pow: {
      const Tensor a = n.saved_at(0), b = n.saved_at(1);
      if (wants(n, 0)) out[0] = to_input(n, 0, where(b == 0, 0.0, g * b * pow(a, b - 1)));
      if (wants(n, 1)) {
        // d/db a^b = a^b log a, defined as 0 where a == 0 and b >= 0 (PyTorch).
        const Tensor mask = (a == 0) * (b >= 0);
        out[1] = to_input(n, 1, where(mask, 0.0, g * pow(a, b) * log(a)));
      }
      break;
    }
    case GradRule::Maximum:
    case GradRule::Minimum: {
      const Tensor a = n.saved_at(0), b = n.saved_at(1);
      const Tensor half = where(a == b, g / 2, g);
      const bool is_max = base_rule(n.rule) == GradRule::Maximum;
      if (wants(n, 0)) out[0] = to_input(n, 0, where(is_max ? a < b : a > b, 0.0, half));
      if (wants(n, 1)) out[1] = to_input(n, 1, where(is_max ? a > b : a < b, 0.0, half));
      break;
    }
    case GradRule::Where: {
      const Tensor c = n.saved_at(0);
      if (wants(n, 0)) out[0] = to_input(n, 0, where(c, g, 0.0));
      if (wants(n, 1)) out[1] = to_input(n, 1, where(c, 0.0, g));
      break;
    }
    default:
      EMBER_ASSERT(false, "not a binary rule");
  }
  return out;
}

Grads unary_rule(const Node& n, const Tensor& g) {
  switch (base_rule(n.rule)) {
#define RT_OP(Name, name, n_in, n_out, Params)
#define RT_UNARY(Name, name, dtypes, inputs, formula, onnx, grad_fn, saved, backward) \
  case GradRule::Name: {                                                             \
    const Tensor saved = n.saved_at(0);                                              \
    return unary(n, backward);                                                       \
  }
#define RT_UNARY_P(Name, name, dtypes, formula, onnx, attr_a, default_a, attr_b, default_b, grad_fn, saved, backward) \
  case GradRule::Name: {                                                                                        \
    const Tensor saved = n.saved_at(0);                                                                         \
    [[maybe_unused]] const double a = n.reals[0], b = n.reals[1];                                               \
    return unary(n, backward);                                                                                  \
  }
#include "runtime/graph/ops.def"
#undef RT_UNARY_P
#undef RT_UNARY
#undef RT_OP
    case GradRule::Gelu: {
      const Tensor x = n.saved_at(0);
      if (n.ints[0] == 0) {  // exact: Phi(x) + x phi(x)
        const Tensor cdf = 0.5 * (1 + erf(x * M_SQRT1_2));
        const Tensor pdf = exp(-0.5 * x * x) * (0.5 * M_2_SQRTPI * M_SQRT1_2);
        return unary(n, g * (cdf + x * pdf));
      }
      // tanh approximation, as PyTorch differentiates it.
      const double beta = M_SQRT2 * M_2_SQRTPI * 0.5, kappa = 0.044715;
      const Tensor x_sq = x * x;
      const Tensor t = tanh(beta * (x + kappa * x_sq * x));
      const Tensor left_derivative = 0.5 * (1 + t);
      const Tensor right_derivative = 0.5 * x * (1 - t * t) * beta * (1 + 3 * kappa * x_sq);
      return unary(n, g * (left_derivative + right_derivative));
    }
    case GradRule::Clamp: {
      const Tensor x = n.saved_at(0);
      Tensor keep = ones_like(x, DType::Bool);
      if (n.ints[0]) keep = keep * (x >= n.reals[0]);
      if (n.ints[1]) keep = keep * (x <= n.reals[1]);
      return unary(n, where(keep, g, 0.0));
    }
    case GradRule::ToCopy: {  // Tensor::to(Device) records the source's device in ints: the gradient goes back
      if (n.ints.size() != 2) return unary(n, g);
      return unary(n, g.to(Device(static_cast<DeviceType>(n.ints[0]), static_cast<int>(n.ints[1]))));
    }
    case GradRule::Clone: return unary(n, g);
    default:
      EMBER_ASSERT(false, "not a unary rule");
  }
  return {};
}

Grads view_rule(const Node& n, const Tensor& g) {
  const Shape& in = n.shapes[0];
  switch (base_rule(n.rule)) {
    case GradRule::View: return {g.reshape(in)};
    case GradRule::Expand: return {autograd::sum_to(g, in)};
    case GradRule::Transpose: return {g.transpose(n.ints[0], n.ints[1])};
    case GradRule::Permute: {
      std::vector<int64_t> inverse(n.ints.size());
      for (size_t i = 0; i < n.ints.size(); ++i) inverse[n.ints[i]] = static_cast<int64_t>(i);
      return {g.permute(inverse)};
    }
    case GradRule::Slice: {
      Tensor r = zeros(in, TensorOptions(g.dtype()).device(g.device()));
      r.slice(n.ints[0], n.ints[1], n.ints[2], n.ints[3]).copy_(g);
      return {r};
    }
    case GradRule::Select: {
      Tensor r = zeros(in, TensorOptions(g.dtype()).device(g.device()));
      r.select(n.ints[0], n.ints[1]).copy_(g);
      return {r};
    }
    case GradRule::Unfold: {
      // Window w, element k of the unfolded dim came from x[w * step + k].
      const int64_t dim = n.ints[0], size = n.ints[1], step = n.ints[2];
      Tensor r = zeros(in, TensorOptions(g.dtype()).device(g.device()));
      if (in.empty()) return {g.sum().reshape({})};
      const int64_t windows = g.size(dim);
      for (int64_t k = 0; k < size && windows > 0; ++k) {
        Tensor dst = r.slice(dim, k, k + step * (windows - 1) + 1, step);
        dst.add_(g.select(-1, k));
      }
      return {r};
    }
    case GradRule::AsStrided: {
      // Every output element adds into the memory element it reads (the view
      // may overlap itself: repeats accumulate); the input reads its
      // elements back from that memory (as_strided_geometry's ints).
      const size_t r = (n.ints.size() - 3 - in.size()) / 2;
      const Shape sizes(n.ints.begin(), n.ints.begin() + r), strides(n.ints.begin() + r, n.ints.begin() + 2 * r);
      const Shape in_strides(n.ints.begin() + 2 * r + 3, n.ints.end());
      const int64_t extent = n.ints[2 * r + 2];
      const Tensor index =
          arange(extent, TensorOptions(DType::Int64).device(g.device())).as_strided(sizes, strides, n.ints[2 * r]);
      const int64_t count = index.numel();
      const Tensor memory = embedding_backward(g.reshape({count, 1}), index.reshape({count}), extent).view({extent});
      return {memory.as_strided(in, in_strides, n.ints[2 * r + 1]).contiguous()};
    }
    default:
      EMBER_ASSERT(false, "not a view rule");
  }
  return {};
}

Grads reduce_rule(const Node& n, const Tensor& g) {
  const Shape& in = n.shapes[0];
  const uint32_t mask = static_cast<uint32_t>(n.ints[0]);
  const bool keepdim = n.ints[1] != 0;
  switch (base_rule(n.rule)) {
    case GradRule::Sum: return {to_input(n, 0, unreduce(g, mask, keepdim, in))};
    case GradRule::Mean:
      return {to_input(n, 0, unreduce(g, mask, keepdim, in) / static_cast<double>(reduced_count(mask, in)))};
    case GradRule::Prod: {
      const Tensor x = n.saved_at(0), y = n.saved_at(1);
      return {to_input(n, 0, unreduce(g * y, mask, keepdim, in) / x)};
    }
    case GradRule::Var:
    case GradRule::Std: {
      const Tensor x = n.saved_at(0);
      // std = sqrt(var): var's gradient is g / (2 std), 0 where std is 0 (torch's std_backward).
      const Tensor gv = n.rule == GradRule::Std ? where(n.saved_at(1) == 0, 0.0, g / (2 * n.saved_at(1))) : g;
      const int64_t correction = n.ints[2];
      std::vector<int64_t> dims;
      for (size_t d = 0; d < in.size(); ++d) {
        if ((mask >> d) & 1u) dims.push_back(static_cast<int64_t>(d));
      }
      const double denom = static_cast<double>(reduced_count(mask, in) - correction);
      return {unreduce(gv, mask, keepdim, in) * (2.0 / denom) * (x - mean(x, dims, /*keepdim=*/true))};
    }
    case GradRule::Norm: {
      const Tensor x = n.saved_at(0), y = unreduce(n.saved_at(1), mask, keepdim, in);
      const Tensor ge = unreduce(g, mask, keepdim, in);
      const double p = n.reals[0];
      if (p == 0.0) return {zeros_like(x)};
      if (p == 1.0) return {ge * sign(x)};
      if (std::isinf(p)) {
        const Tensor hit = (abs(x) == y).to(x.dtype());
        std::vector<int64_t> dims;
        for (size_t d = 0; d < in.size(); ++d) {
          if ((mask >> d) & 1u) dims.push_back(static_cast<int64_t>(d));
        }
        return {ge * sign(x) * hit / sum(hit, dims, /*keepdim=*/true)};
      }
      if (p == 2.0) return {where(y == 0, 0.0, ge * x / y)};
      return {where(y == 0, 0.0, ge * sign(x) * pow(abs(x), p - 1) / pow(y, p - 1))};
    }
    case GradRule::MaxDim:
    case GradRule::MinDim: {
      // The gradient goes to the element the index names (its first occurrence).
      const int64_t dim = n.ints[2];
      Tensor idx = n.saved_at(0);
      Tensor ge = g;
      if (!keepdim && !in.empty()) {
        idx = idx.unsqueeze(dim);
        ge = ge.unsqueeze(dim);
      }
      if (in.empty()) return {g.reshape({})};
      Shape pos_shape(in.size(), 1);
      pos_shape[dim] = in[dim];
      const Tensor positions = arange(in[dim], TensorOptions(DType::Int64).device(g.device())).view(pos_shape);
      return {where(positions == idx, ge, 0.0).to(n.dtypes[0])};
    }
    case GradRule::MaxAll:
    case GradRule::MinAll: {
      // Ties share the gradient evenly (PyTorch's evenly_distribute_backward).
      const Tensor x = n.saved_at(0), y = n.saved_at(1);
      const Tensor hit = (x == y).to(x.dtype());
      return {hit * (g / hit.sum())};
    }
    default:
      EMBER_ASSERT(false, "not a reduction rule");
  }
  return {};
}

// torch.matmul's gradient for any ranks: 1-D operands become matrices, batch
// dims are summed back by sum_to.
Grads matmul_rule(const Node& n, const Tensor& g) {
  const Tensor a = n.saved_at(0), b = n.saved_at(1);
  const Tensor a2 = a.dim() == 1 ? a.unsqueeze(0) : a;
  const Tensor b2 = b.dim() == 1 ? b.unsqueeze(1) : b;
  Tensor g2 = g;
  if (a.dim() == 1) g2 = g2.unsqueeze(-1 - (b.dim() == 1 ? 0 : 1));
  if (b.dim() == 1) g2 = g2.unsqueeze(-1);
  Grads out(2);
  // Matrices: an operand that is a transposed view (a Linear's weight.t())
  // gets its gradient in that layout, as PyTorch's mm_mat1/mat2_backward do,
  // so that it reaches the leaf contiguous instead of through a transposing copy.
  const bool matrices = a.dim() == 2 && b.dim() == 2;
  auto transposed = [](const Tensor& t) {
    return t.size(0) > 1 && t.size(1) > 1 && t.stride(0) == 1 && t.stride(1) == t.size(0);
  };
  if (wants(n, 0)) {
    out[0] = matrices && transposed(a) ? matmul(b, g.t()).t()
                                       : autograd::sum_to(matmul(g2, b2.transpose(-1, -2)), a2.sizes()).reshape(a.sizes());
  }
  if (wants(n, 1)) {
    out[1] = matrices && transposed(b) ? matmul(g.t(), a).t()
                                       : autograd::sum_to(matmul(a2.transpose(-1, -2), g2), b2.sizes()).reshape(b.sizes());
  }
  return out;
}

}  // namespace

std::vector<Tensor> apply_grad_rule(Node& n, const Tensor& g);

namespace {
// CopySlices: the base's gradient with the view's part replaced by what the
// in-place op's rule gives its first input (zero when nothing), plus that
// rule's gradients for the op's other inputs.
Grads copy_slices_rule(Node& n, const Tensor& g) {
  const Shape& base_sizes = n.shapes[0];
  const size_t r = (n.ints.size() - 3 - base_sizes.size()) / 2;
  const Shape sizes(n.ints.begin(), n.ints.begin() + r), strides(n.ints.begin() + r, n.ints.begin() + 2 * r);
  const Shape base_strides(n.ints.begin() + 2 * r + 3, n.ints.end());
  Tensor memory = zeros({n.ints[2 * r + 2]}, TensorOptions(g.dtype()).device(g.device()));
  Tensor result = memory.as_strided(base_sizes, base_strides, n.ints[2 * r + 1]);
  result.copy_(g);
  Tensor grad_slice = memory.as_strided(sizes, strides, n.ints[2 * r]);
  Grads res = apply_grad_rule(*n.wrapped, grad_slice.clone());
  if (!res.empty() && res[0].defined()) {
    grad_slice.copy_(res[0]);
  } else {
    grad_slice.zero_();
  }
  Grads out(n.next.size());
  out[0] = result.contiguous();
  for (size_t i = 1; i < out.size() && i < res.size(); ++i) out[i] = res[i];
  return out;
}
}  // namespace

std::vector<Tensor> apply_grad_rule(Node& n, const Tensor& g) {
  switch (base_rule(n.rule)) {
    case GradRule::Add: case GradRule::Sub: case GradRule::Mul: case GradRule::Div:
    case GradRule::Pow: case GradRule::Maximum: case GradRule::Minimum: case GradRule::Where:
#define RT_OP(Name, name, n_in, n_out, Params)
#define RT_BINARY(Name, ...) case GradRule::Name:
#include "runtime/graph/ops.def"
#undef RT_BINARY
#undef RT_OP
      return binary_rule(n, g);
#define RT_OP(Name, name, n_in, n_out, Params)
#define RT_UNARY(Name, ...) case GradRule::Name:
#define RT_UNARY_P(Name, ...) case GradRule::Name:
#include "runtime/graph/ops.def"
#undef RT_UNARY_P
#undef RT_UNARY
#undef RT_OP
    case GradRule::Gelu: case GradRule::Clamp: case GradRule::ToCopy: case GradRule::Clone:
      return unary_rule(n, g);
    case GradRule::Copy: {
      Grads out(2);  // the overwritten value gets no gradient
      if (wants(n, 1)) out[1] = to_input(n, 1, g);
      return out;
    }
    case GradRule::Fill:
    case GradRule::Zero:
      return {Tensor()};
    case GradRule::CopySlices:
      return copy_slices_rule(n, g);
    case GradRule::View: case GradRule::Expand: case GradRule::Transpose: case GradRule::Permute:
    case GradRule::Slice: case GradRule::Select: case GradRule::Unfold: case GradRule::AsStrided:
      return view_rule(n, g);
    case GradRule::Sum: case GradRule::Mean: case GradRule::Prod: case GradRule::Var: case GradRule::Std:
    case GradRule::Norm: case GradRule::MaxDim: case GradRule::MinDim: case GradRule::MaxAll:
    case GradRule::MinAll:
      return reduce_rule(n, g);
    case GradRule::MatMul:
      return matmul_rule(n, g);
    case GradRule::AccumulateGrad:
      break;
    default: return apply_nn_grad_rule(n, g);
  }
  EMBER_ASSERT(false, "apply_grad_rule: unhandled rule");
  return {};
}

}  // namespace ember
