#include "quant/quantized.h"

#include <algorithm>
#include <cmath>

#include "quant/qscheme.h"

namespace ember {
namespace {

void qrange(DType dtype, const char* fn, int32_t* qmin, int32_t* qmax) {
  if (dtype == DType::Int8) {
    *qmin = -128;
    *qmax = 127;
  } else if (dtype == DType::UInt8) {
    *qmin = 0;
    *qmax = 255;
  } else {
    raise_error(Status::NotSupported,
                str_cat(fn, ": dtype must be int8 (qint8) or uint8 (quint8), got ", dtype_name(dtype)));
  }
}

void check_scale(double scale, const char* fn) {
  EMBER_ENFORCE(std::isfinite(scale) && scale > 0.0 && static_cast<float>(scale) > 0.0f, Status::InvalidArgument,
              fn, ": scale must be positive and finite, got ", scale);
}

void check_zero_point(int64_t zp, int32_t qmin, int32_t qmax, const char* fn) {
  EMBER_ENFORCE(zp >= qmin && zp <= qmax, Status::InvalidArgument, fn, ": zero_point ", zp,
              " is out of range [", qmin, ", ", qmax, "] for the dtype");
}

Tensor float_input(const Tensor& x, const char* fn) {
  EMBER_ENFORCE(x.defined(), Status::InvalidArgument, fn, ": the input is undefined");
  EMBER_ENFORCE(x.dtype() == DType::Float32, Status::DTypeMismatch, fn, ": expected a float32 input, got ",
              dtype_name(x.dtype()));
  return x.contiguous();
}

template <typename T>
void quantize_loop(const float* x, T* q, int64_t n, int64_t inner, int64_t channels, const std::vector<float>& scales,
                   const std::vector<int64_t>& zps, int32_t qmin, int32_t qmax) {
  for (int64_t i = 0; i < n; ++i) {
    const size_t c = channels > 1 ? static_cast<size_t>((i / inner) % channels) : 0;
    q[i] = static_cast<T>(quant::quantize_val(x[i], 1.0f / scales[c], static_cast<int32_t>(zps[c]), qmin, qmax));
  }
}

template <typename T>
void dequantize_loop(const T* q, float* y, int64_t n, int64_t inner, int64_t channels,
                     const std::vector<float>& scales, const std::vector<int64_t>& zps) {
  for (int64_t i = 0; i < n; ++i) {
    const size_t c = channels > 1 ? static_cast<size_t>((i / inner) % channels) : 0;
    y[i] = static_cast<float>(static_cast<int64_t>(q[i]) - zps[c]) * scales[c];
  }
}

int64_t inner_size(const Shape& sizes, int64_t axis) {
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(axis) + 1; d < sizes.size(); ++d) inner *= sizes[d];
  return inner;
}

QTensor quantize_impl(const Tensor& xc, QScheme scheme, std::vector<float> scales, std::vector<int64_t> zps,
                      int64_t axis, DType dtype, int32_t qmin, int32_t qmax) {
  Tensor q = empty(xc.sizes(), TensorOptions(dtype));
  const int64_t n = xc.numel();
  const int64_t channels = scheme == QScheme::PerChannelAffine ? xc.size(axis) : 1;
  const int64_t inner = scheme == QScheme::PerChannelAffine ? inner_size(xc.sizes(), axis) : 1;
  if (dtype == DType::Int8) {
    quantize_loop(xc.data_ptr<float>(), q.data_ptr<int8_t>(), n, inner, channels, scales, zps, qmin, qmax);
  } else {
    quantize_loop(xc.data_ptr<float>(), q.data_ptr<uint8_t>(), n, inner, channels, scales, zps, qmin, qmax);
  }
  return QTensor(q, scheme, std::move(scales), std::move(zps), axis);
}

}  // namespace

double QTensor::q_scale() const {
  EMBER_ENFORCE(scheme_ == QScheme::PerTensorAffine, Status::InvalidState,
              "q_scale: the tensor is quantized per channel (use q_per_channel_scales)");
  return scales_[0];
}

int64_t QTensor::q_zero_point() const {
  EMBER_ENFORCE(scheme_ == QScheme::PerTensorAffine, Status::InvalidState,
              "q_zero_point: the tensor is quantized per channel (use q_per_channel_zero_points)");
  return zero_points_[0];
}

Tensor QTensor::q_per_channel_scales() const {
  EMBER_ENFORCE(scheme_ == QScheme::PerChannelAffine, Status::InvalidState,
              "q_per_channel_scales: the tensor is quantized per tensor (use q_scale)");
  return tensor(scales_, {static_cast<int64_t>(scales_.size())});
}

Tensor QTensor::q_per_channel_zero_points() const {
  EMBER_ENFORCE(scheme_ == QScheme::PerChannelAffine, Status::InvalidState,
              "q_per_channel_zero_points: the tensor is quantized per tensor (use q_zero_point)");
  return tensor(zero_points_, {static_cast<int64_t>(zero_points_.size())});
}

int64_t QTensor::q_per_channel_axis() const {
  EMBER_ENFORCE(scheme_ == QScheme::PerChannelAffine, Status::InvalidState,
              "q_per_channel_axis: the tensor is quantized per tensor");
  return axis_;
}

QTensor quantize_per_tensor(const Tensor& x, double scale, int64_t zero_point, DType dtype) {
  const char* fn = "quantize_per_tensor";
  int32_t qmin, qmax;
  qrange(dtype, fn, &qmin, &qmax);
  check_scale(scale, fn);
  check_zero_point(zero_point, qmin, qmax, fn);
  const Tensor xc = float_input(x, fn);
  return quantize_impl(xc, QScheme::PerTensorAffine, {static_cast<float>(scale)}, {zero_point}, -1, dtype, qmin,
                       qmax);
}

QTensor quantize_per_channel(const Tensor& x, const Tensor& scales, const Tensor& zero_points, int64_t axis,
                             DType dtype) {
  const char* fn = "quantize_per_channel";
  int32_t qmin, qmax;
  qrange(dtype, fn, &qmin, &qmax);
  const Tensor xc = float_input(x, fn);
  EMBER_ENFORCE(axis >= 0 && axis < xc.dim(), Status::OutOfRange, fn, ": axis ", axis,
              " is out of range for a tensor of ", xc.dim(), " dimensions");
  const int64_t c = xc.size(axis);
  EMBER_ENFORCE(scales.defined() && scales.dim() == 1 && scales.numel() == c, Status::ShapeMismatch, fn,
              ": expected ", c, " scales (the size of axis ", axis, ")");
  EMBER_ENFORCE(zero_points.defined() && zero_points.dim() == 1 && zero_points.numel() == c,
              Status::ShapeMismatch, fn, ": expected ", c, " zero points (the size of axis ", axis, ")");
  EMBER_ENFORCE(!zero_points.is_floating_point(), Status::DTypeMismatch, fn, ": zero_points must be integers");
  const std::vector<double> sv = scales.to(DType::Float64).contiguous().to_vector<double>();
  const std::vector<int64_t> zv = zero_points.to(DType::Int64).contiguous().to_vector<int64_t>();
  std::vector<float> sf;
  for (size_t i = 0; i < sv.size(); ++i) {
    check_scale(sv[i], fn);
    check_zero_point(zv[i], qmin, qmax, fn);
    sf.push_back(static_cast<float>(sv[i]));
  }
  return quantize_impl(xc, QScheme::PerChannelAffine, std::move(sf), zv, axis, dtype, qmin, qmax);
}

Tensor dequantize(const QTensor& q) {
  const Tensor& r = q.int_repr();
  EMBER_ENFORCE(r.defined(), Status::InvalidArgument, "dequantize: the quantized tensor is empty");
  const Tensor rc = r.contiguous();
  Tensor y = empty(rc.sizes(), TensorOptions(DType::Float32));
  const bool pc = q.qscheme() == QScheme::PerChannelAffine;
  const int64_t axis = pc ? q.q_per_channel_axis() : 0;
  const int64_t channels = pc ? rc.size(axis) : 1;
  const int64_t inner = pc ? inner_size(rc.sizes(), axis) : 1;
  if (rc.dtype() == DType::Int8) {
    dequantize_loop(rc.data_ptr<int8_t>(), y.data_ptr<float>(), rc.numel(), inner, channels, q.scales(),
                    q.zero_points());
  } else {
    dequantize_loop(rc.data_ptr<uint8_t>(), y.data_ptr<float>(), rc.numel(), inner, channels, q.scales(),
                    q.zero_points());
  }
  return y;
}

Tensor linear_dynamic(const Tensor& x, const quant::PackedLinear& w, const Activation& act,
                      const quant::DynamicQuantOptions& options) {
  const char* fn = "linear_dynamic";
  const Tensor xc = float_input(x, fn);
  EMBER_ENFORCE(xc.dim() >= 1 && xc.size(-1) == w.in_features, Status::ShapeMismatch, fn,
              ": the input's last dimension must be in_features = ", w.in_features);
  Shape out_shape = xc.sizes();
  out_shape.back() = w.out_features;
  Tensor y = empty(out_shape, TensorOptions(DType::Float32));
  const int64_t m = w.in_features > 0 ? xc.numel() / w.in_features : 0;
  if (w.in_features == 0) {
    // No depth: the product is zero, the output is act(bias).
    float* py = y.data_ptr<float>();
    for (int64_t i = 0; i < y.numel(); ++i) {
      float v = w.bias.empty() ? 0.0f : w.bias[static_cast<size_t>(i % w.out_features)];
      py[i] = activate(v, act);
    }
    return y;
  }
  quant::dynamic_linear(xc.data_ptr<float>(), m, w.in_features, w, y.data_ptr<float>(), w.out_features, act,
                        options, 0);
  return y;
}

DynamicQuantizedLinear::DynamicQuantizedLinear(const Tensor& weight, const Tensor& bias, bool per_channel,
                                               quant::DynamicQuantOptions options)
    : Module("DynamicQuantizedLinear"), options_(options) {
  const char* fn = "DynamicQuantizedLinear";
  EMBER_ENFORCE(weight.defined() && weight.dim() == 2, Status::ShapeMismatch, fn, ": weight must be 2-D [out, in]");
  const Tensor w = float_input(weight.detach(), fn);
  out_features = w.size(0);
  in_features = w.size(1);
  Tensor q = empty(w.sizes(), TensorOptions(DType::Int8));
  std::vector<float> scales(static_cast<size_t>(per_channel ? out_features : 1));
  quant::quantize_weight_int8(w.data_ptr<float>(), out_features, in_features, per_channel, q.data_ptr<int8_t>(),
                              scales.data());
  std::vector<int64_t> zps(scales.size(), 0);
  if (bias.defined()) {
    EMBER_ENFORCE(bias.dim() == 1 && bias.numel() == out_features, Status::ShapeMismatch, fn,
                ": bias must be 1-D of out_features = ", out_features);
    bias_ = float_input(bias.detach(), fn).clone();
  }
  packed_ = quant::pack_linear(q.data_ptr<int8_t>(), out_features, in_features, scales.data(), per_channel,
                               bias_.defined() ? bias_.data_ptr<float>() : nullptr);
  weight_ = QTensor(q, per_channel ? QScheme::PerChannelAffine : QScheme::PerTensorAffine, std::move(scales),
                    std::move(zps), per_channel ? 0 : -1);
}

Tensor DynamicQuantizedLinear::forward(const Tensor& input) {
  return linear_dynamic(input, packed_, Activation{}, options_);
}

std::shared_ptr<nn::Module> quantize_dynamic(const std::shared_ptr<nn::Module>& module,
                                             const std::set<std::string>& types, DType dtype,
                                             const QuantizeDynamicOptions& options) {
  EMBER_ENFORCE(module != nullptr, Status::InvalidArgument, "quantize_dynamic: the module is null");
  EMBER_ENFORCE(dtype == DType::Int8, Status::NotSupported,
              "quantize_dynamic: only dtype int8 (torch.qint8) is supported, got ", dtype_name(dtype));
  for (const auto& t : types) {
    EMBER_ENFORCE(t == "Linear", Status::NotSupported, "quantize_dynamic: module type '", t,
                "' is not supported (only Linear)");
  }
  const bool linear = types.count("Linear") > 0;
  if (linear && module->name() == "Linear") {
    auto* l = static_cast<nn::Linear*>(module.get());
    return std::make_shared<DynamicQuantizedLinear>(l->weight, l->bias, options.per_channel, options.activations);
  }
  if (module->name() == "Sequential") {
    auto seq = std::make_shared<nn::Sequential>();
    for (const auto& [name, child] : module->named_children()) {
      (void)name;
      seq->push_back(quantize_dynamic(child, types, dtype, options));
    }
    return seq;
  }
  for (const auto& [name, child] : module->named_children()) {
    // A Linear below another container cannot be replaced from outside.
    std::vector<std::pair<std::string, std::shared_ptr<nn::Module>>> stack{{name, child}};
    while (!stack.empty()) {
      auto [n, m] = stack.back();
      stack.pop_back();
      EMBER_ENFORCE(!(linear && m->name() == "Linear"), Status::NotSupported, "quantize_dynamic: cannot replace '", n,
                  "' inside a ", module->name(), " (only Sequential containers are rebuilt)");
      for (const auto& [cn, c] : m->named_children()) stack.push_back({n + "." + cn, c});
    }
  }
  return module;
}

}  // namespace ember
