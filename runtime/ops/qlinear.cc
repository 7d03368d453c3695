#include "runtime/ops/qlinear.h"

#include "runtime/autograd/node.h"
#include "runtime/backend/backend.h"
#include "runtime/core/error.h"
#include "runtime/ops/dispatch.h"

namespace ember {

namespace {

// The weight was prepared by the backend of x's device.
Status check_weight_device(const PreparedWeight& w, const Tensor& x, const char* op) {
  EMBER_CHECK(w.device == x.device().type(), Status::DeviceMismatch, op, ": the weight was prepared for ",
              device_type_name(w.device), ", the input is on ", x.device());
  return Status::Ok;
}

}  // namespace

Result<Tensor> core::qlinear(const Tensor& x, const QLinearParams& params) {
  EMBER_ASSERT(params.weight != nullptr && params.weight->shape.size() == 2, "qlinear without a prepared weight");
  const int64_t n = params.weight->shape[0], k = params.weight->shape[1];
  EMBER_TRY(check_weight_device(*params.weight, x, "int8 linear"));
  EMBER_CHECK(x.dtype() == DType::Float32, Status::DTypeMismatch, "int8 linear: expected a float32 input, got ",
              dtype_name(x.dtype()));
  EMBER_CHECK(x.dim() >= 1 && x.size(-1) == k, Status::ShapeMismatch, "int8 linear: the input's last dimension ",
              x.dim() >= 1 ? x.size(-1) : 0, " does not match the weight's ", k);
  EMBER_ASSIGN_OR_RETURN(const Tensor xc, core::contiguous(x));
  Shape shape = xc.sizes();
  shape.back() = n;
  EMBER_ASSIGN_OR_RETURN(Tensor y, core::empty(shape, TensorOptions(DType::Float32).device(x.device())));
  EMBER_TRY(run_kernel(OpKind::QLinear, {xc, Tensor(), Tensor()}, {y}, params));
  return y;
}

namespace {

int64_t conv_out_size(const Conv2dParams& c, int d, int64_t in, int64_t k) {
  const int64_t span = c.dilation[d] * (k - 1) + 1;
  const int64_t padded = in + 2 * c.padding[d];
  return padded < span ? 0 : (padded - span) / c.stride[d] + 1;
}

}  // namespace

Result<Tensor> core::qconv2d(const Tensor& x, const QConv2dParams& params, MemoryFormat out_format) {
  EMBER_ASSERT(params.weight != nullptr && params.weight->shape.size() == 4, "qconv2d without a prepared weight");
  const std::vector<int64_t>& ws = params.weight->shape;
  EMBER_TRY(check_weight_device(*params.weight, x, "int8 conv2d"));
  EMBER_CHECK(x.dtype() == DType::Float32, Status::DTypeMismatch, "int8 conv2d: expected a float32 input, got ",
              dtype_name(x.dtype()));
  EMBER_CHECK(x.dim() == 4 && x.size(1) == ws[1], Status::ShapeMismatch, "int8 conv2d: expected an input [N, ",
              ws[1], ", H, W]");
  // The output in the input's memory format (as PyTorch's convolutions) unless
  // out_format says: channels_last or contiguous.
  const MemoryFormat format = x.suggest_memory_format();
  EMBER_ASSIGN_OR_RETURN(const Tensor xc, core::contiguous(x, format));
  const MemoryFormat y_format = out_format == MemoryFormat::Preserve ? format : out_format;
  const int64_t oh = conv_out_size(params.conv, 0, x.size(2), ws[2]);
  const int64_t ow = conv_out_size(params.conv, 1, x.size(3), ws[3]);
  EMBER_CHECK(oh > 0 && ow > 0, Status::ShapeMismatch, "int8 conv2d: the input ", x.size(2), "x", x.size(3),
              " is smaller than the kernel");
  EMBER_ASSIGN_OR_RETURN(
      Tensor y, core::empty({x.size(0), ws[0], oh, ow}, TensorOptions(DType::Float32).device(x.device()), y_format));
  EMBER_TRY(run_kernel(OpKind::QConv2d, {xc, Tensor(), Tensor()}, {y}, params));
  return y;
}

Result<Tensor> core::sparse_linear(const Tensor& x, const QLinearParams& params, const Tensor& bias) {
  EMBER_ASSERT(params.weight != nullptr && params.weight->shape.size() == 2, "sparse_linear without a prepared weight");
  const int64_t n = params.weight->shape[0], k = params.weight->shape[1];
  EMBER_TRY(check_weight_device(*params.weight, x, "sparse linear"));
  EMBER_CHECK(x.dtype() == DType::Float32, Status::DTypeMismatch, "sparse linear needs a float32 input, got ",
              dtype_name(x.dtype()));
  EMBER_CHECK(x.dim() >= 1 && x.size(-1) == k, Status::ShapeMismatch, "sparse linear: input ", shape_str(x.sizes()),
              " does not end in ", k, " (weight [", n, ", ", k, "])");
  Tensor b;
  if (bias.defined()) {
    EMBER_CHECK(bias.dim() == 1 && bias.size(0) == n, Status::ShapeMismatch, "sparse linear: bias ",
                shape_str(bias.sizes()), " is not [", n, "]");
    EMBER_ASSIGN_OR_RETURN(const Tensor bias_f32, core::to(bias, DType::Float32));
    EMBER_ASSIGN_OR_RETURN(b, core::contiguous(bias_f32));
  }
  EMBER_ASSIGN_OR_RETURN(const Tensor xc, core::contiguous(x));
  Shape shape = x.sizes();
  shape.back() = n;
  EMBER_ASSIGN_OR_RETURN(Tensor y, core::empty(shape, TensorOptions(DType::Float32).device(x.device())));
  EMBER_TRY(run_kernel(OpKind::SparseLinear, {xc, Tensor(), b}, {y}, params));
  return y;
}

Result<Tensor> core::conv2d_pair(const Tensor& x, const Tensor& w1, const Tensor& b1, const Tensor& w2,
                                 const Tensor& b2, const Conv2dPairParams& p) {
  EMBER_TRY(check_defined(x, "conv2d_pair", "input"));
  EMBER_TRY(check_defined(w1, "conv2d_pair", "weight"));
  EMBER_TRY(check_defined(w2, "conv2d_pair", "depthwise weight"));
  EMBER_CHECK(!autograd::needs_grad({x, w1, b1, w2, b2}), Status::NotSupported,
              "conv2d_pair has no backward: run its two convolutions to record a gradient");
  EMBER_TRY(check_same_device({x, w1, b1, w2, b2}));
  for (const Tensor* t : {&x, &w1, &b1, &w2, &b2}) {
    EMBER_CHECK(!t->defined() || t->dtype() == DType::Float32, Status::DTypeMismatch,
                "conv2d_pair: expected float32 tensors, got ", dtype_name(t->dtype()));
  }
  EMBER_CHECK(x.device().is_cpu(), Status::NotSupported, "conv2d_pair: CPU tensors only, got ", x.device());
  const int64_t e = w1.dim() == 4 ? w1.size(0) : -1;
  EMBER_CHECK(x.dim() == 4 && w1.dim() == 4 && w1.size(1) == x.size(1) && w1.size(2) == 1 && w1.size(3) == 1 &&
                  w2.dim() == 4 && w2.size(0) == e && w2.size(1) == 1 && p.depthwise.groups == e &&
                  p.pointwise.groups == 1 && (!b1.defined() || b1.sizes() == Shape{e}) &&
                  (!b2.defined() || b2.sizes() == Shape{e}),
              Status::ShapeMismatch, "conv2d_pair: expected x [N, C, H, W], a 1x1 weight [E, C, 1, 1] and a ",
              "depthwise weight [E, 1, KH, KW] (groups E), biases [E]; got x ", shape_str(x.sizes()), ", ",
              shape_str(w1.sizes()), ", ", shape_str(w2.sizes()), " with groups ", p.depthwise.groups);
  const int64_t oh = conv_out_size(p.depthwise, 0, x.size(2), w2.size(2));
  const int64_t ow = conv_out_size(p.depthwise, 1, x.size(3), w2.size(3));
  EMBER_CHECK(oh > 0 && ow > 0, Status::ShapeMismatch, "conv2d_pair: the input ", x.size(2), "x", x.size(3),
              " is smaller than the depthwise kernel");
  EMBER_ASSIGN_OR_RETURN(const Tensor xc, core::contiguous(x, MemoryFormat::ChannelsLast));
  EMBER_ASSIGN_OR_RETURN(const Tensor w1c, core::contiguous(w1));
  EMBER_ASSIGN_OR_RETURN(const Tensor w2c, core::contiguous(w2));
  EMBER_ASSIGN_OR_RETURN(Tensor y, core::empty({x.size(0), e, oh, ow}, TensorOptions(DType::Float32),
                                               MemoryFormat::ChannelsLast));
  EMBER_TRY(run_kernel(OpKind::Conv2dPair, {xc, w1c, b1, w2c, b2}, {y}, p));
  return y;
}

Tensor conv2d_pair(const Tensor& x, const Tensor& w1, const Tensor& b1, const Tensor& w2, const Tensor& b2,
                   const Conv2dPairParams& p) {
  return unwrap(core::conv2d_pair(x, w1, b1, w2, b2, p));
}

Result<Tensor> core::add_layer_norm(const Tensor& a, const Tensor& b, const Tensor& weight, const Tensor& bias,
                                    const NormParams& p) {
  EMBER_TRY(check_defined(a, "add_layer_norm", "input"));
  EMBER_TRY(check_defined(b, "add_layer_norm", "other"));
  EMBER_CHECK(!autograd::needs_grad({a, b, weight, bias}), Status::NotSupported,
              "add_layer_norm has no backward: run add and layer_norm to record a gradient");
  EMBER_TRY(check_same_device({a, b, weight, bias}));
  for (const Tensor* t : {&a, &b, &weight, &bias}) {
    EMBER_CHECK(!t->defined() || t->dtype() == DType::Float32, Status::DTypeMismatch,
                "add_layer_norm: expected float32 tensors, got ", dtype_name(t->dtype()));
  }
  EMBER_CHECK(a.device().is_cpu(), Status::NotSupported, "add_layer_norm: CPU tensors only, got ", a.device());
  EMBER_CHECK(p.normalized_rank >= 1 && p.normalized_rank <= a.dim(), Status::InvalidArgument, "add_layer_norm ",
              "normalizes ", p.normalized_rank, " dims of an input of rank ", a.dim());
  const Shape normalized(a.sizes().end() - p.normalized_rank, a.sizes().end());
  EMBER_CHECK(b.sizes() == a.sizes() && (!weight.defined() || weight.sizes() == normalized) &&
                  (!bias.defined() || bias.sizes() == normalized),
              Status::ShapeMismatch, "add_layer_norm: expected two inputs of one shape and a weight and bias ",
              shape_str(normalized), "; got ", shape_str(a.sizes()), ", ", shape_str(b.sizes()), ", ",
              shape_str(weight.defined() ? weight.sizes() : Shape{}), ", ",
              shape_str(bias.defined() ? bias.sizes() : Shape{}));
  Tensor in[4] = {a, b, weight, bias};
  for (Tensor& t : in) {
    if (t.defined()) {
      EMBER_ASSIGN_OR_RETURN(t, core::contiguous(t));
    }
  }
  EMBER_ASSIGN_OR_RETURN(Tensor y, core::empty(a.sizes(), TensorOptions(DType::Float32)));
  EMBER_TRY(run_kernel(OpKind::AddLayerNorm, {in[0], in[1], in[2], in[3]}, {y}, p));
  return y;
}

Tensor add_layer_norm(const Tensor& a, const Tensor& b, const Tensor& weight, const Tensor& bias, const NormParams& p) {
  return unwrap(core::add_layer_norm(a, b, weight, bias, p));
}

Tensor qlinear(const Tensor& x, const QLinearParams& params) { return unwrap(core::qlinear(x, params)); }

Tensor qconv2d(const Tensor& x, const QConv2dParams& params) { return unwrap(core::qconv2d(x, params)); }

Tensor sparse_linear(const Tensor& x, const QLinearParams& params, const Tensor& bias) {
  return unwrap(core::sparse_linear(x, params, bias));
}

}  // namespace ember
