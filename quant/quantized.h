// The eager quantization API (PyTorch's names): quantized tensors, dynamic int8
// Linear, and quantize_dynamic for ember's nn modules. Errors throw ember::Error.
//
//   QTensor q = quantize_per_tensor(x, 0.05, 3, DType::Int8);   // torch.qint8
//   Tensor r = dequantize(q), i = q.int_repr();
//   auto qm = quantize_dynamic(model, {"Linear"});              // a new module
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "quant/dynamic_linear.h"
#include "runtime/ember.h"
#include "runtime/nn/module.h"

namespace ember {

enum class QScheme { PerTensorAffine, PerChannelAffine };

// A quantized tensor: integer values (Int8 = torch.qint8, UInt8 = torch.quint8)
// and affine parameters, real = scale * (q - zero_point).
class QTensor {
 public:
  QTensor() = default;
  QTensor(Tensor int_repr, QScheme scheme, std::vector<float> scales, std::vector<int64_t> zero_points,
          int64_t axis)
      : int_repr_(std::move(int_repr)), scheme_(scheme), scales_(std::move(scales)),
        zero_points_(std::move(zero_points)), axis_(axis) {}

  const Tensor& int_repr() const { return int_repr_; }
  DType dtype() const { return int_repr_.dtype(); }
  const Shape& sizes() const { return int_repr_.sizes(); }
  QScheme qscheme() const { return scheme_; }
  double q_scale() const;                 // per tensor only
  int64_t q_zero_point() const;           // per tensor only
  Tensor q_per_channel_scales() const;    // float32 [channels]; per channel only
  Tensor q_per_channel_zero_points() const;  // int64 [channels]; per channel only
  int64_t q_per_channel_axis() const;     // per channel only
  const std::vector<float>& scales() const { return scales_; }
  const std::vector<int64_t>& zero_points() const { return zero_points_; }

 private:
  Tensor int_repr_;
  QScheme scheme_ = QScheme::PerTensorAffine;
  std::vector<float> scales_;
  std::vector<int64_t> zero_points_;
  int64_t axis_ = -1;
};

// q = clamp(nearbyint(x / scale) + zero_point, qmin, qmax) of the dtype (Int8 or
// UInt8); x float32. Raises on scale <= 0 or NaN, zero points out of range.
QTensor quantize_per_tensor(const Tensor& x, double scale, int64_t zero_point, DType dtype);
// scales (float) and zero_points (integer) are 1-D of x.size(axis) entries.
QTensor quantize_per_channel(const Tensor& x, const Tensor& scales, const Tensor& zero_points, int64_t axis,
                             DType dtype);
// float32: (q - zero_point) * scale.
Tensor dequantize(const QTensor& q);
inline Tensor int_repr(const QTensor& q) { return q.int_repr(); }

// A dynamic int8 Linear (torch.ao.nn.quantized.dynamic.Linear): weights
// symmetric int8 (per tensor or per output channel), activations quantized to
// uint8 at every call. Input [..., in_features] float32.
class DynamicQuantizedLinear : public nn::Module {
 public:
  // Quantizes `weight` [out, in] (float32) and keeps `bias` ([out] or undefined).
  DynamicQuantizedLinear(const Tensor& weight, const Tensor& bias, bool per_channel = false,
                         quant::DynamicQuantOptions options = {});
  Tensor forward(const Tensor& input) override;
  const QTensor& weight() const { return weight_; }
  const Tensor& bias() const { return bias_; }
  const quant::PackedLinear& packed() const { return packed_; }
  int64_t in_features, out_features;

 private:
  QTensor weight_;
  Tensor bias_;
  quant::PackedLinear packed_;
  quant::DynamicQuantOptions options_;
};

// The functional form: y = dynamic-int8 linear of x with prepacked weights.
Tensor linear_dynamic(const Tensor& x, const quant::PackedLinear& w, const Activation& act = {},
                      const quant::DynamicQuantOptions& options = {});

struct QuantizeDynamicOptions {
  bool per_channel = false;  // torch's per_channel_dynamic_qconfig
  quant::DynamicQuantOptions activations;
};

// torch.ao.quantization.quantize_dynamic(module, {Linear}, dtype=qint8): returns
// a new module in which every module whose class name is in `types` (only
// "Linear" is supported) is a DynamicQuantizedLinear; Sequential containers are
// rebuilt (the other modules are shared with `module`, not copied). dtype must
// be Int8. A Linear inside any other container raises (its children cannot be
// replaced from outside).
std::shared_ptr<nn::Module> quantize_dynamic(const std::shared_ptr<nn::Module>& module,
                                             const std::set<std::string>& types = {"Linear"},
                                             DType dtype = DType::Int8,
                                             const QuantizeDynamicOptions& options = {});

}  // namespace ember
