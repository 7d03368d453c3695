// Quantization schemes and their parameters, computed exactly as PyTorch does
// (torch 1.13, torch.ao.quantization and ATen's quantized CPU kernels):
//  * weights: symmetric int8 (zero point 0), per tensor or per output channel
//    (axis 0), as the MinMax / PerChannelMinMax observers with qint8 and
//    per_tensor_symmetric / per_channel_symmetric compute them:
//      scale = max(-min(w_min, 0), max(w_max, 0)) / ((qmax - qmin) / 2),
//      clamped below by float32 epsilon; qmin = -128, qmax = 127;
//  * activations at run time: asymmetric uint8 over the tensor's (or a row's)
//    min and max, by ATen's quant_utils::ChooseQuantizationParams (what
//    quantized::linear_dynamic calls). reduce_range halves [qmin, qmax] as the
//    fbgemm / onednn engines do; qnnpack (and ONNX Runtime) use the full range.
//  * quantize: q = clamp(nearbyint(x * (1.0f / scale)) + zero_point, qmin, qmax)
//    (round half to even, the float reciprocal as ATen's quantize_val).
// Plain C++17, no dependency on the tensor library: it builds everywhere
// (choose_qparams also in CUDA device code: kernels/cuda/qlinear.cu.cc).
#pragma once

#include <cmath>
#include <cstdint>

#include "runtime/core/host_device.h"

namespace ember::quant {

struct QParams {
  float scale = 1.0f;
  int32_t zero_point = 0;
};

constexpr float kSmallScale = 6.1e-5f;  // ATen's SMALL_SCALE_THRESHOLD

// ATen's ChooseQuantizationParams (preserve_sparsity and power-of-two off).
// Requires min <= max (NaN-free inputs).
EMBER_HD inline QParams choose_qparams(float min, float max, int32_t qmin, int32_t qmax, bool reduce_range = false) {
  if (reduce_range) {
    qmin /= 2;
    qmax /= 2;
  }
  min = 0.0f < min ? 0.0f : min;  // std::min(min, 0.0f), std::max(max, 0.0f)
  max = max < 0.0f ? 0.0f : max;
  double scale = (static_cast<double>(max) - min) / (qmax - qmin);
  if (static_cast<float>(scale) == 0.0f || std::isinf(1.0f / static_cast<float>(scale))) scale = 0.1;
  if (scale < kSmallScale) {
    const float org_scale = static_cast<float>(scale);
    scale = kSmallScale;
    if (min == 0.0f) {
      max = kSmallScale * (qmax - qmin);
    } else if (max == 0.0f) {
      min = -kSmallScale * (qmax - qmin);
    } else {
      const float amplifier = kSmallScale / org_scale;
      min *= amplifier;
      max *= amplifier;
    }
  }
  const double s = static_cast<float>(scale);  // the scale used is the float one
  const double zp_from_min = qmin - min / s;
  const double zp_from_max = qmax - max / s;
  const double zp_from_min_error = std::fabs(static_cast<double>(qmin)) - std::fabs(min / s);
  const double zp_from_max_error = std::fabs(static_cast<double>(qmax)) - std::fabs(max / s);
  const double initial = zp_from_min_error < zp_from_max_error ? zp_from_min : zp_from_max;
  if (initial < qmin) return QParams{static_cast<float>(scale), qmin};
  if (initial > qmax) return QParams{static_cast<float>(scale), qmax};
  return QParams{static_cast<float>(scale), static_cast<int32_t>(std::nearbyint(initial))};
}

// The symmetric observer scale for [min, max] (zero point 0).
float symmetric_scale(float min, float max, int32_t qmin = -128, int32_t qmax = 127);

// One value: clamp(nearbyint(x * inv_scale) + zero_point, qmin, qmax).
inline int32_t quantize_val(float x, float inv_scale, int32_t zero_point, int32_t qmin, int32_t qmax) {
  float v = std::nearbyint(x * inv_scale) + static_cast<float>(zero_point);
  v = v < static_cast<float>(qmin) ? static_cast<float>(qmin) : v;
  v = v > static_cast<float>(qmax) ? static_cast<float>(qmax) : v;
  return static_cast<int32_t>(v);
}

// Symmetric int8 weight quantization of W (n x k, row-major): per channel
// writes n scales (one per row), per tensor one. reduce_range: over [-64, 64]
// (ONNX Runtime's reduce_range for int8 weights) instead of [-128, 127].
void quantize_weight_int8(const float* w, int64_t n, int64_t k, bool per_channel, int8_t* q, float* scales,
                          bool reduce_range = false);

// Dynamic activation quantization of X (m rows of k floats at stride ldx) to
// uint8 rows of stride ldq (>= k; bytes k .. ldq-1 are set to zero). Per tensor:
// one (scale, zero point) into scales[0] / zero_points[0]; per row: m of them.
void quantize_activations_u8(const float* x, int64_t m, int64_t k, int64_t ldx, bool per_row,
                             bool reduce_range, uint8_t* q, int64_t ldq, float* scales,
                             int32_t* zero_points);

}  // namespace ember::quant
