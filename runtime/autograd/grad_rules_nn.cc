// Backward rules of the neural-network ops (softmax, normalization, conv2d,
// pooling, embedding) and of joining and padding (cat, stack, pad). Written
// with forward ops where that is natural; pooling, embedding and non-constant
// padding scatter through their backward kernels (runtime/ops/nn_backward.cc).
// Rules run with grad mode off.
#include "runtime/autograd/grad_rules_nn.h"

#include <algorithm>

#include "runtime/autograd/grad_mode.h"
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

// 16-bit floats compute their gradients in float32.
DType compute_dtype(DType d) { return d == DType::Float16 || d == DType::BFloat16 ? DType::Float32 : d; }

std::vector<int64_t> range(int64_t begin, int64_t end) {
  std::vector<int64_t> r;
  for (int64_t d = begin; d < end; ++d) r.push_back(d);
  return r;
}

Grads softmax_rule(const Node& n, const Tensor& g) {
  const Tensor y = n.saved_at(0);
  const int64_t d = n.ints[0];
  if (y.dim() == 0) return {as_input(n, 0, zeros_like(g))};
  if (base_rule(n.rule) == GradRule::Softmax) return {as_input(n, 0, y * (g - sum(g * y, {d}, /*keepdim=*/true)))};
  return {as_input(n, 0, g - exp(y) * sum(g, {d}, /*keepdim=*/true))};
}

// layer_norm: recomputes mean and rstd over the normalized (trailing) dims.
Grads layer_norm_rule(const Node& n, const Tensor& grad) {
  const DType cd = compute_dtype(n.dtypes[0]);
  const Tensor x = n.saved_at(0).to(cd), w = n.saved_at(1), g = grad.to(cd);
  const int64_t nr = n.ints[0];
  const std::vector<int64_t> dims = range(x.dim() - nr, x.dim()), lead = range(0, x.dim() - nr);
  Grads out(3);
  if (x.numel() == 0) {
    for (size_t i = 0; i < 3; ++i) {
      if (wants(n, i)) out[i] = zeros(n.shapes[i], TensorOptions(n.dtypes[i]).device(g.device()));
    }
    return out;
  }
  const Tensor mu = mean(x, dims, /*keepdim=*/true);
  const Tensor rstd = rsqrt(var(x, dims, /*correction=*/0, /*keepdim=*/true) + n.reals[0]);
  const Tensor xhat = (x - mu) * rstd;
  if (wants(n, 0)) {
    const Tensor gxhat = w.defined() ? g * w.to(cd) : g;
    const Tensor gx = rstd * (gxhat - mean(gxhat, dims, true) - xhat * mean(gxhat * xhat, dims, true));
    out[0] = as_input(n, 0, gx);
  }
  auto over_lead = [&](const Tensor& t) { return lead.empty() ? t : sum(t, lead); };
  if (wants(n, 1)) out[1] = as_input(n, 1, over_lead(g * xhat));
  if (wants(n, 2)) out[2] = as_input(n, 2, over_lead(g));
  return out;
}

// batch_norm with running statistics: an affine map per channel (dim 1).
Grads batch_norm_rule(const Node& n, const Tensor& grad) {
  const DType cd = compute_dtype(n.dtypes[0]);
  const Tensor x = n.saved_at(0).to(cd), rm = n.saved_at(1), rv = n.saved_at(2), w = n.saved_at(3);
  const Tensor g = grad.to(cd);
  Shape bshape(static_cast<size_t>(x.dim()), 1);
  bshape[1] = x.size(1);
  std::vector<int64_t> red = range(0, x.dim());
  red.erase(red.begin() + 1);
  const Tensor rstd = rsqrt(rv.reshape(bshape).to(cd) + n.reals[0]);
  Grads out(5);
  if (wants(n, 0)) out[0] = as_input(n, 0, w.defined() ? g * (rstd * w.reshape(bshape).to(cd)) : g * rstd);
  if (wants(n, 3)) out[3] = as_input(n, 3, sum(g * ((x - rm.reshape(bshape).to(cd)) * rstd), red));
  if (wants(n, 4)) out[4] = as_input(n, 4, sum(g, red));
  return out;
}

// w [O, I, kh, kw] with both spatial dims reversed.
Tensor flip_hw(const Tensor& w) {
  Tensor r = empty_like(w);
  const int64_t kh = w.size(2), kw = w.size(3);
  for (int64_t a = 0; a < kh; ++a) {
    for (int64_t b = 0; b < kw; ++b) {
      r.narrow(2, kh - 1 - a, 1).narrow(3, kw - 1 - b, 1).copy_(w.narrow(2, a, 1).narrow(3, b, 1));
    }
  }
  return r;
}

// conv2d: grad_input is the transposed convolution of grad (a convolution of
// the stride-dilated, padded grad with the flipped, group-transposed weight);
// grad_weight a convolution of input and grad with the roles of stride and
// dilation swapped; grad_bias the sum of grad over N, H, W.
Grads conv2d_rule(const Node& n, const Tensor& g) {
  const Tensor x = n.saved_at(0), w = n.saved_at(1);
  const int64_t s[2] = {n.ints[0], n.ints[1]}, p[2] = {n.ints[2], n.ints[3]}, dl[2] = {n.ints[4], n.ints[5]};
  const int64_t groups = n.ints[6];
  const int64_t N = x.size(0), Cin = x.size(1), Cout = w.size(0), Cg = w.size(1);
  const int64_t k[2] = {w.size(2), w.size(3)}, in[2] = {x.size(2), x.size(3)}, o[2] = {g.size(2), g.size(3)};
  const TensorOptions opts = TensorOptions(g.dtype()).device(g.device());
  Grads out(3);
  if (wants(n, 2)) out[2] = as_input(n, 2, sum(g, {0, 2, 3}));
  const bool empty = g.numel() == 0 || x.numel() == 0 || w.numel() == 0;
  if (wants(n, 0)) {
    if (empty) {
      out[0] = zeros(n.shapes[0], opts);
    } else {
      int64_t lo[2], hi[2], len[2];
      for (int i = 0; i < 2; ++i) {
        lo[i] = dl[i] * (k[i] - 1) - p[i];
        hi[i] = lo[i] + (in[i] + 2 * p[i] - dl[i] * (k[i] - 1) - 1) % s[i];
        len[i] = std::max<int64_t>(lo[i], 0) + (o[i] - 1) * s[i] + 1 + std::max<int64_t>(hi[i], 0);
      }
      Tensor z = zeros({N, Cout, len[0], len[1]}, opts);
      const int64_t b0 = std::max<int64_t>(lo[0], 0), b1 = std::max<int64_t>(lo[1], 0);
      z.slice(2, b0, b0 + (o[0] - 1) * s[0] + 1, s[0]).slice(3, b1, b1 + (o[1] - 1) * s[1] + 1, s[1]).copy_(g);
      for (int i = 0; i < 2; ++i) {
        const int64_t crop_lo = std::max<int64_t>(-lo[i], 0), crop_hi = std::max<int64_t>(-hi[i], 0);
        z = z.narrow(2 + i, crop_lo, len[i] - crop_lo - crop_hi);
      }
      // [Cout, Cg, kh, kw] -> [G * Cg, Cout / G, kh, kw], flipped.
      const Tensor wt =
          w.reshape({groups, Cout / groups, Cg, k[0], k[1]}).transpose(1, 2).reshape({Cin, Cout / groups, k[0], k[1]});
      const int64_t one = 1, zero = 0;
      out[0] = as_input(n, 0,
                        conv2d(z, flip_hw(wt.contiguous()), Tensor(), IntArrayRef(&one, 1), IntArrayRef(&zero, 1),
                               IntArrayRef(dl, 2), groups));
    }
  }
  if (wants(n, 1)) {
    if (empty) {
      out[1] = zeros(n.shapes[1], TensorOptions(n.dtypes[1]).device(g.device()));
    } else {
      const Tensor xs = x.reshape({N, groups, Cg, in[0], in[1]}).permute({2, 1, 0, 3, 4}).reshape(
          {Cg, groups * N, in[0], in[1]});
      const Tensor r = conv2d(xs, g.transpose(0, 1), Tensor(), IntArrayRef(dl, 2), IntArrayRef(p, 2),
                              IntArrayRef(s, 2), groups);
      out[1] = as_input(n, 1, r.narrow(2, 0, k[0]).narrow(3, 0, k[1]).transpose(0, 1));
    }
  }
  return out;
}

Grads pool_rule(const Node& n, const Tensor& g) {
  const Tensor x = n.saved_at(0);
  if (base_rule(n.rule) == GradRule::AdaptiveAvgPool2d) return {as_input(n, 0, adaptive_avg_pool2d_backward(g, x))};
  const auto& p = std::get<Pool2dParams>(n.params);
  const int64_t kernel[2] = {p.kernel[0], p.kernel[1]}, stride[2] = {p.stride[0], p.stride[1]};
  const int64_t padding[2] = {p.padding[0], p.padding[1]}, dilation[2] = {p.dilation[0], p.dilation[1]};
  if (base_rule(n.rule) == GradRule::MaxPool2d) {
    return {as_input(n, 0, max_pool2d_backward(g, x, kernel, stride, padding, dilation, p.ceil_mode))};
  }
  const std::optional<int64_t> divisor =
      p.divisor_override > 0 ? std::optional<int64_t>(p.divisor_override) : std::nullopt;
  return {as_input(n, 0, avg_pool2d_backward(g, x, kernel, stride, padding, p.ceil_mode, p.count_include_pad, divisor))};
}

// cat: ints = {dim, length of input i along dim or -1 when cat skipped it}.
Grads cat_rule(const Node& n, const Tensor& g) {
  const int64_t dim = n.ints[0];
  Grads out(n.next.size());
  int64_t offset = 0;
  for (size_t i = 0; i < n.next.size(); ++i) {
    const int64_t length = n.ints[i + 1];
    if (length < 0) {
      if (wants(n, i)) out[i] = zeros(n.shapes[i], TensorOptions(n.dtypes[i]).device(g.device()));
      continue;
    }
    if (wants(n, i)) out[i] = as_input(n, i, g.narrow(dim, offset, length));
    offset += length;
  }
  return out;
}

Grads stack_rule(const Node& n, const Tensor& g) {
  Grads out(n.next.size());
  for (size_t i = 0; i < n.next.size(); ++i) {
    if (wants(n, i)) out[i] = as_input(n, i, g.select(n.ints[0], static_cast<int64_t>(i)));
  }
  return out;
}

// Constant padding: the input's (uncropped part of the) values sit in a box
// of the output; ints = the pad list.
Grads constant_pad_rule(const Node& n, const Tensor& g) {
  const Shape& in = n.shapes[0];
  const int64_t rank = static_cast<int64_t>(in.size());
  const size_t n_pad = n.ints.size() / 2;
  Tensor src = g;
  bool cropped = false;
  int64_t in_start[kMaxRank] = {}, in_len[kMaxRank] = {};
  for (int64_t d = 0; d < rank; ++d) in_len[d] = in[static_cast<size_t>(d)];
  for (size_t i = 0; i < n_pad; ++i) {
    const int64_t d = rank - 1 - static_cast<int64_t>(i);
    const int64_t before = n.ints[2 * i], after = n.ints[2 * i + 1];
    in_start[d] = std::max<int64_t>(-before, 0);
    in_len[d] = in[static_cast<size_t>(d)] - in_start[d] - std::max<int64_t>(-after, 0);
    cropped = cropped || before < 0 || after < 0;
    src = src.narrow(d, std::max<int64_t>(before, 0), std::max<int64_t>(in_len[d], 0));
  }
  if (!cropped) return {as_input(n, 0, src)};
  Tensor r = zeros(in, TensorOptions(g.dtype()).device(g.device()));
  Tensor dst = r;
  for (int64_t d = 0; d < rank; ++d) dst = dst.narrow(d, in_start[d], std::max<int64_t>(in_len[d], 0));
  if (dst.numel() > 0) dst.copy_(src);
  return {as_input(n, 0, r)};
}

}  // namespace

namespace {
// The losses' rules (runtime/nn/loss.cc records them). ints[...]: the
// reduction (0 none, 1 mean, 2 sum, as nn::Reduction).
std::vector<Tensor> loss_rule(const Node& n, const Tensor& g) {
  const int64_t reduction = n.ints[base_rule(n.rule) == GradRule::NllLoss ? 1 : 0];
  // The loss gradient per element: g itself (none), or g spread evenly (mean).
  const auto per_element = [&](int64_t count) { return reduction == 1 ? g / static_cast<double>(count) : g; };
  std::vector<Tensor> out(n.next.size());
  switch (base_rule(n.rule)) {
    case GradRule::NllLoss: {  // -w[t] at the picked classes
      const Tensor mask = n.saved_at(0), weights = n.saved_at(1);
      const int64_t class_dim = n.ints[0];
      Tensor ge = reduction == 1 ? g / weights.sum() : g;
      if (reduction == 0) ge = ge.unsqueeze(class_dim);
      out[0] = as_input(n, 0, where(mask, -(weights.unsqueeze(class_dim) * ge), 0.0));
      break;
    }
    case GradRule::MseLoss: {
      const Tensor diff = n.saved_at(0) - n.saved_at(1);
      const Tensor d = 2 * diff * per_element(diff.numel());
      if (n.next[0].fn) out[0] = as_input(n, 0, autograd::sum_to(d, n.shapes[0]));
      if (n.next[1].fn) out[1] = as_input(n, 1, autograd::sum_to(-d, n.shapes[1]));
      break;
    }
    case GradRule::BceWithLogits: {  // torch's binary_cross_entropy_with_logits(_target)_backward
      const Tensor x = n.saved_at(0), t = n.saved_at(1), w = n.saved_at(2), pw = n.saved_at(3);
      Tensor ge = per_element(x.numel());
      if (w.defined()) ge = ge * w;
      const Tensor s = sigmoid(x);
      if (n.next[0].fn) {
        out[0] = as_input(n, 0, (pw.defined() ? (pw * t + 1 - t) * s - pw * t : s - t) * ge);
      }
      if (n.next[1].fn) {  // log_sigmoid(-x) - pw * log_sigmoid(x), or -x without pos_weight
        out[1] = as_input(n, 1, (pw.defined() ? pw * softplus(-x) - softplus(x) : -x) * ge);
      }
      break;
    }
    default: EMBER_ASSERT(false, "not a loss rule");
  }
  return out;
}
}  // namespace

std::vector<Tensor> apply_nn_grad_rule(Node& n, const Tensor& g) {
  switch (base_rule(n.rule)) {
    case GradRule::Softmax:
    case GradRule::LogSoftmax:
      return softmax_rule(n, g);
    case GradRule::LayerNorm:
      return layer_norm_rule(n, g);
    case GradRule::BatchNorm:
      return batch_norm_rule(n, g);
    case GradRule::Conv2d:
      return conv2d_rule(n, g);
    case GradRule::MaxPool2d:
    case GradRule::AvgPool2d:
    case GradRule::AdaptiveAvgPool2d:
      return pool_rule(n, g);
    case GradRule::Embedding: {
      Tensor dweight = embedding_backward(g, n.saved_at(0), n.ints[0]);
      if (n.ints[1] >= 0) dweight.select(0, n.ints[1]).zero_();  // the padding row learns nothing
      return {as_input(n, 0, dweight)};
    }
    case GradRule::NllLoss: case GradRule::MseLoss: case GradRule::BceWithLogits:
      return loss_rule(n, g);
    case GradRule::Cat:
      return cat_rule(n, g);
    case GradRule::Stack:
      return stack_rule(n, g);
    case GradRule::ConstantPad:
      return constant_pad_rule(n, g);
    case GradRule::ReflectionPad1d: case GradRule::ReflectionPad2d: case GradRule::ReflectionPad3d:
    case GradRule::ReplicationPad1d: case GradRule::ReplicationPad2d: case GradRule::ReplicationPad3d:
    case GradRule::CircularPad: {
      const char* mode = base_rule(n.rule) == GradRule::CircularPad ? "circular"
                         : (base_rule(n.rule) == GradRule::ReflectionPad1d || base_rule(n.rule) == GradRule::ReflectionPad2d ||
                            base_rule(n.rule) == GradRule::ReflectionPad3d)
                             ? "reflect"
                             : "replicate";
      return {as_input(n, 0, pad_backward(g, n.shapes[0], n.ints, mode))};
    }
    default:
      return apply_index_grad_rule(n, g);
  }
  EMBER_ASSERT(false, "apply_grad_rule: unhandled rule");
  return {};
}

}  // namespace ember
