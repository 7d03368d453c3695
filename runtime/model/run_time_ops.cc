// The run-time ops' runners (op_runner.h): QLinear, QConv2d and SparseLinear,
// which create() makes of a Linear / Conv2d with the weight prepared by the
// backend of the device they run on, and the pair ops Conv2dPair and
// AddLayerNorm (pair_ops). The kernels take float32 (a float16 executor
// converts around them) and apply the fused activation; under the trainer
// (runtime/train) a straight-through estimator gives the int8 and sparse ones
// the float32 layer's gradient.
#include <cmath>
#include <optional>

#include "runtime/autograd/node.h"
#include "runtime/core/error.h"
#include "runtime/model/model_access.h"
#include "runtime/model/op_runner.h"
#include "runtime/ops/ops.h"
#include "runtime/ops/qlinear.h"
#include "quant/coo.h"

namespace ember {

Result<Tensor> dequantize_weight(const Model& m, int t) {
  const fb::QuantParams* q = m.tensor(t).quant();
  const Tensor& w = m.weight(t);
  EMBER_CHECK(q != nullptr && q->scales() != nullptr && q->scales()->size() > 0, Status::InvalidModel,
              "int8 weight '", m.tensor_name(t), "' has no scales");
  Shape along(static_cast<size_t>(w.dim()), 1);
  const int64_t n = q->scales()->size();
  const int64_t axis = q->axis() < 0 ? 0 : q->axis();
  EMBER_CHECK(n == 1 || (axis < w.dim() && w.sizes()[static_cast<size_t>(axis)] == n), Status::InvalidModel,
              "int8 weight '", m.tensor_name(t), "': ", n, " scales along axis ", q->axis(), " of a ",
              shape_str(w.sizes()), " weight");
  if (n > 1) along[static_cast<size_t>(axis)] = n;
  Tensor scale = empty({n}, DType::Float32), zero = zeros({n}, DType::Float32);
  for (int64_t i = 0; i < n; ++i) {
    scale.data_ptr<float>()[i] = q->scales()->Get(static_cast<uint32_t>(i));
    if (q->zero_points() != nullptr && q->zero_points()->size() == static_cast<uint32_t>(n))
      zero.data_ptr<float>()[i] = static_cast<float>(q->zero_points()->Get(static_cast<uint32_t>(i)));
  }
  EMBER_ASSIGN_OR_RETURN(Tensor wf, core::to(w, DType::Float32));
  EMBER_ASSIGN_OR_RETURN(wf, core::sub(wf, zero.reshape(along)));
  return core::mul(wf, scale.reshape(along));
}

namespace {

// y = f(x as float32), in x's dtype.
template <typename F>
Result<Tensor> in_float32(const Tensor& x, F f) {
  if (x.dtype() == DType::Float32) return f(x);
  EMBER_ASSIGN_OR_RETURN(const Tensor xf, core::to(x, DType::Float32));
  EMBER_ASSIGN_OR_RETURN(const Tensor y, f(xf));
  return core::to(y, x.dtype());
}

// The float32 weight an int8 op approximates (dequantize_weight).
Result<Tensor> dequantized_weight(const OpContext& c) {
  return dequantize_weight(c.model, c.model.op(c.index).inputs()->Get(1));
}

// An int8 or sparse kernel has no backward. When x carries a gradient (the
// trainer), y keeps the kernel's values and gets the gradient of the float32
// layer `f` it approximates (a straight-through estimator):
//   y = kernel(x) + (f(x) - f(x).detach())
template <typename F>
Result<Tensor> straight_through(const Tensor& y, const Tensor& x, F f) {
  if (!x.requires_grad()) return y;
  EMBER_ASSIGN_OR_RETURN(const Tensor fx, f(x));
  EMBER_ASSIGN_OR_RETURN(const Tensor delta, core::sub(fx, fx.detach()));
  return core::add(y, delta);
}

Tensor detached(const Tensor& t) { return t.defined() ? t.detach() : t; }

// When the trainer trains op c's bias (input 2: its copy requires grad), the
// trained value minus the file's, else undefined. The int8 kernels hold the
// file's bias in their prepared weight: adding this puts the trained one in
// its place, with its gradient.
Result<Tensor> trained_bias_delta(const OpContext& c) {
  const Tensor& b = c.opt(2);
  if (!b.defined() || !b.requires_grad()) return Tensor();
  return core::sub(b, c.model.weight(c.model.op(c.index).inputs()->Get(2)));
}

// The dense float32 weight of a SparseLinear op from its COO values ([nnz]: the
// file's, or the trainer's copy), differentiable in the values: a trained
// sparse weight keeps the file's sparsity pattern.
Result<Tensor> coo_weight(const OpContext& c, const Tensor& values) {
  const int32_t t = c.model.op(c.index).inputs()->Get(1);
  EMBER_CHECK(values.is_floating_point(), Status::NotSupported, "no gradient flows back through the ",
              dtype_name(values.dtype()), " sparse COO weight '", c.model.tensor_name(t), "'");
  const Tensor& indices = c.model.weight(c.model.tensor(t).sparse()->indices());
  const Shape shape = c.model.tensor_shape(t);
  Tensor flat = empty({values.numel()}, DType::Int64);
  for (int64_t k = 0; k < values.numel(); ++k) {
    int64_t at = 0;
    for (size_t d = 0; d < shape.size(); ++d) at = at * shape[d] + sparse::coo_index(indices, static_cast<int64_t>(d), k);
    flat.data_ptr<int64_t>()[k] = at;
  }
  EMBER_ASSIGN_OR_RETURN(const Tensor zero, core::zeros(shape));
  EMBER_ASSIGN_OR_RETURN(const Tensor v, core::to(values, DType::Float32));
  EMBER_ASSIGN_OR_RETURN(const Tensor dense, core::scatter(zero.reshape({-1}), 0, flat, v));
  return core::reshape(dense, shape);
}

}  // namespace

Status run_QLinear(OpContext& c) {
  EMBER_ASSIGN_OR_RETURN(const Tensor x, c.need(0, "data"));
  QLinearParams p = c.params<QLinearParams>();
  const Activation act = p.activation;
  EMBER_ASSIGN_OR_RETURN(const Tensor db, trained_bias_delta(c));
  const bool act_after = c.lora != nullptr || db.defined();  // after what is added to the kernel's output
  if (act_after) p.activation = {};
  EMBER_ASSIGN_OR_RETURN(Tensor y, in_float32(x, [&](const Tensor& v) { return core::qlinear(v, p); }));
  EMBER_ASSIGN_OR_RETURN(y, straight_through(y, x, [&](const Tensor& v) -> Result<Tensor> {
                           EMBER_ASSIGN_OR_RETURN(const Tensor w, dequantized_weight(c));
                           EMBER_ASSIGN_OR_RETURN(const Tensor f, core::linear(v, w, detached(c.opt(2))));
                           return activate(f, p.activation);
                         }));
  if (db.defined()) {
    EMBER_ASSIGN_OR_RETURN(y, core::add(y, db));
  }
  if (c.lora != nullptr) {
    EMBER_ASSIGN_OR_RETURN(y, add_lora(y, *c.lora, x));
  }
  return c.set(0, act_after ? activate(y, act) : y);
}

Status run_QConv2d(OpContext& c) {
  EMBER_ASSIGN_OR_RETURN(Tensor x, c.need(0, "data"));
  // (The CPU kernel transposes an image's few channels as it quantizes them.)
  EMBER_ASSIGN_OR_RETURN(const MemoryFormat out_format, channels_last_input(c.state, true, &x));
  QConv2dParams p = c.params<QConv2dParams>();
  const Activation act = p.conv.activation;
  EMBER_ASSIGN_OR_RETURN(const Tensor db, trained_bias_delta(c));
  const Tensor residual = c.opt(3);  // the Conv2d's fused residual Add (or none)
  const bool act_after = db.defined() || residual.defined();  // after what is added to the kernel's output
  if (act_after) p.conv.activation = {};
  EMBER_ASSIGN_OR_RETURN(Tensor y,
                         in_float32(x, [&](const Tensor& v) { return core::qconv2d(v, p, out_format); }));
  EMBER_ASSIGN_OR_RETURN(y, straight_through(y, x, [&](const Tensor& v) -> Result<Tensor> {
                           EMBER_ASSIGN_OR_RETURN(const Tensor w, dequantized_weight(c));
                           EMBER_ASSIGN_OR_RETURN(
                               const Tensor f,
                               core::conv2d(v, w, detached(c.opt(2)), {p.conv.stride[0], p.conv.stride[1]},
                                            {p.conv.padding[0], p.conv.padding[1]},
                                            {p.conv.dilation[0], p.conv.dilation[1]}, p.conv.groups));
                           return activate(f, p.conv.activation);
                         }));
  if (db.defined()) {
    EMBER_ASSIGN_OR_RETURN(y, core::add(y, db.reshape({db.numel(), 1, 1})));
  }
  if (residual.defined()) {
    EMBER_ASSIGN_OR_RETURN(y, core::add(y, residual));
  }
  return c.set(0, act_after ? activate(y, act) : y);
}

Status run_SparseLinear(OpContext& c) {
  EMBER_ASSIGN_OR_RETURN(const Tensor x, c.need(0, "data"));
  EMBER_ASSIGN_OR_RETURN(const Tensor values, c.need(1, "weight"));
  const auto& p = c.params<QLinearParams>();
  const auto dense = [&](const Tensor& v) -> Result<Tensor> {
    EMBER_ASSIGN_OR_RETURN(const Tensor w, coo_weight(c, values));
    EMBER_ASSIGN_OR_RETURN(const Tensor y, core::linear(v, w, c.opt(2)));
    return activate(y, p.activation);
  };
  // Trained: the prepared weight holds the file's values.
  if (values.requires_grad() || c.opt(2).requires_grad()) return c.set(0, dense(x));
  EMBER_ASSIGN_OR_RETURN(const Tensor y,
                         in_float32(x, [&](const Tensor& v) { return core::sparse_linear(v, p, c.opt(2)); }));
  return c.set(0, straight_through(y, x, dense));
}

// The pair's kernel where it runs float32 with no gradient to record; else
// (the trainer) its two convolutions as run_Conv2d runs them.
Status run_Conv2dPair(OpContext& c) {
  const auto& p = c.params<Conv2dPairParams>();
  EMBER_ASSIGN_OR_RETURN(const Tensor x, c.need(0, "data"));
  EMBER_ASSIGN_OR_RETURN(const Tensor w1, c.need(1, "weight"));
  EMBER_ASSIGN_OR_RETURN(const Tensor w2, c.need(3, "depthwise weight"));
  const Tensor &b1 = c.opt(2), &b2 = c.opt(4);
  if (x.dtype() == DType::Float32 && x.device().is_cpu() && !autograd::needs_grad({x, w1, b1, w2, b2}))
    return c.set(0, core::conv2d_pair(x, w1, b1, w2, b2, p));
  EMBER_ASSIGN_OR_RETURN(const Tensor y, conv2d_step(x, w1, b1, p.pointwise));
  return c.set(0, conv2d_step(y, w2, b2, p.depthwise));
}

// The pair's kernel for float32 CPU inputs of one shape with no gradient to
// record; else (broadcasting, the trainer) add, then layer_norm, as the two
// ops run.
Status run_AddLayerNorm(OpContext& c) {
  const auto& p = c.params<NormParams>();
  EMBER_ASSIGN_OR_RETURN(const Tensor a, c.need(0, "input"));
  EMBER_ASSIGN_OR_RETURN(const Tensor b, c.need(1, "other"));
  const Tensor &w = c.opt(2), &bias = c.opt(3);
  if (a.dtype() == DType::Float32 && b.dtype() == DType::Float32 && a.sizes() == b.sizes() && a.device().is_cpu() &&
      b.device().is_cpu() && !autograd::needs_grad({a, b, w, bias}))
    return c.set(0, core::add_layer_norm(a, b, w, bias, p));
  EMBER_ASSIGN_OR_RETURN(const Tensor sum, core::add(a, b));
  return c.set(0, layer_norm_step(sum, w, bias, p));
}

}  // namespace ember
