#include "runtime/ops/qlinear.h"

#include "runtime/backend/backend.h"
#include "runtime/core/error.h"
#include "runtime/ops/dispatch.h"

namespace ember {

namespace {

// The weight was prepared by the backend of x's device.
void check_weight_device(const PreparedWeight& w, const Tensor& x, const char* op) {
  EMBER_ENFORCE(w.device == x.device().type(), Status::DeviceMismatch, op, ": the weight was prepared for ",
              device_type_name(w.device), ", the input is on ", x.device());
}

}  // namespace

Tensor qlinear(const Tensor& x, const QLinearParams& params) {
  EMBER_ASSERT(params.weight != nullptr && params.weight->shape.size() == 2, "qlinear without a prepared weight");
  const int64_t n = params.weight->shape[0], k = params.weight->shape[1];
  check_weight_device(*params.weight, x, "int8 linear");
  EMBER_ENFORCE(x.dtype() == DType::Float32, Status::DTypeMismatch, "int8 linear: expected a float32 input, got ",
              dtype_name(x.dtype()));
  EMBER_ENFORCE(x.dim() >= 1 && x.size(-1) == k, Status::ShapeMismatch, "int8 linear: the input's last dimension ",
              x.dim() >= 1 ? x.size(-1) : 0, " does not match the weight's ", k);
  const Tensor xc = x.contiguous();
  Shape shape = xc.sizes();
  shape.back() = n;
  Tensor y = empty(shape, TensorOptions(DType::Float32).device(x.device()));
  unwrap(run_kernel(OpKind::QLinear, {xc, Tensor(), Tensor()}, {y}, params));
  return y;
}

namespace {

int64_t conv_out_size(const Conv2dParams& c, int d, int64_t in, int64_t k) {
  const int64_t span = c.dilation[d] * (k - 1) + 1;
  const int64_t padded = in + 2 * c.padding[d];
  return padded < span ? 0 : (padded - span) / c.stride[d] + 1;
}

}  // namespace

Tensor qconv2d(const Tensor& x, const QConv2dParams& params) {
  EMBER_ASSERT(params.weight != nullptr && params.weight->shape.size() == 4, "qconv2d without a prepared weight");
  const std::vector<int64_t>& ws = params.weight->shape;
  check_weight_device(*params.weight, x, "int8 conv2d");
  EMBER_ENFORCE(x.dtype() == DType::Float32, Status::DTypeMismatch, "int8 conv2d: expected a float32 input, got ",
              dtype_name(x.dtype()));
  EMBER_ENFORCE(x.dim() == 4 && x.size(1) == ws[1], Status::ShapeMismatch, "int8 conv2d: expected an input [N, ",
              ws[1], ", H, W]");
  const Tensor xc = x.contiguous();
  const int64_t oh = conv_out_size(params.conv, 0, x.size(2), ws[2]);
  const int64_t ow = conv_out_size(params.conv, 1, x.size(3), ws[3]);
  EMBER_ENFORCE(oh > 0 && ow > 0, Status::ShapeMismatch, "int8 conv2d: the input ", x.size(2), "x", x.size(3),
              " is smaller than the kernel");
  Tensor y = empty({x.size(0), ws[0], oh, ow}, TensorOptions(DType::Float32).device(x.device()));
  unwrap(run_kernel(OpKind::QConv2d, {xc, Tensor(), Tensor()}, {y}, params));
  return y;
}

Tensor sparse_linear(const Tensor& x, const QLinearParams& params, const Tensor& bias) {
  EMBER_ASSERT(params.weight != nullptr && params.weight->shape.size() == 2, "sparse_linear without a prepared weight");
  const int64_t n = params.weight->shape[0], k = params.weight->shape[1];
  check_weight_device(*params.weight, x, "sparse linear");
  EMBER_ENFORCE(x.dtype() == DType::Float32, Status::DTypeMismatch, "sparse linear needs a float32 input, got ",
              dtype_name(x.dtype()));
  EMBER_ENFORCE(x.dim() >= 1 && x.size(-1) == k, Status::ShapeMismatch, "sparse linear: input ", shape_str(x.sizes()),
              " does not end in ", k, " (weight [", n, ", ", k, "])");
  Tensor b;
  if (bias.defined()) {
    EMBER_ENFORCE(bias.dim() == 1 && bias.size(0) == n, Status::ShapeMismatch, "sparse linear: bias ",
                shape_str(bias.sizes()), " is not [", n, "]");
    b = bias.to(DType::Float32).contiguous();
  }
  const Tensor xc = x.contiguous();
  Shape shape = x.sizes();
  shape.back() = n;
  Tensor y = empty(shape, TensorOptions(DType::Float32).device(x.device()));
  unwrap(run_kernel(OpKind::SparseLinear, {xc, Tensor(), b}, {y}, params));
  return y;
}

}  // namespace ember
