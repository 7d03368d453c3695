// The Vulkan backend's run-time ops (ops.def): QLinear (dynamic int8 Linear)
// and SparseLinear (CSR Linear). Backend::prepare_weight packs the weight onto
// the device once (prepare_weight below: immutable afterwards, shared by every
// run); the kernels (kernels.inc: qlinear, sparse_linear) record their
// dispatches on the context's command stream; nothing returns to the host
// until the result is read.
//
// Semantics are quant/dynamic_linear.h's and quant/csr.h's: the activations
// are quantized at run time to uint8 (per tensor, or per row) with ATen's
// ChooseQuantizationParams, the int8 x uint8 products summed in int32, then
// y = act(float(acc - zp * rowsum_w) * (a_scale * w_scale) + bias); the sparse
// Linear is y = act(x @ W^T + bias) with W in CSR (fp32 values, or int8 values
// with one scale per output row).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "quant/csr.h"
#include "runtime/backend/backend.h"

namespace ember::vk {

// Device memory a prepared weight owns: released with it.
class DeviceArray {
 public:
  DeviceArray() = default;
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  DeviceArray(DeviceArray&& o) noexcept { *this = std::move(o); }
  DeviceArray& operator=(DeviceArray&& o) noexcept;
  ~DeviceArray();
  // Uploads `count` elements of `dtype` from `src`; fails (Context::why()) without a device.
  static Result<DeviceArray> upload(const void* src, int64_t count, DType dtype);
  bool defined() const { return address_ != 0; }
  int64_t numel() const { return numel_; }
  size_t bytes() const { return static_cast<size_t>(numel_) * element_size(dtype_); }
  // A contiguous rank-1 view of it (undefined view when not defined).
  TensorView view() const;

 private:
  uint64_t address_ = 0;
  int64_t numel_ = 0;
  DType dtype_ = DType::Float32;
};

// An int8 [N, K] weight on the device: rows of k4 = ceil(K / 4) uint32 words
// (4 int8 each, little-endian, zero padded), the int32 row sums, the scales
// (1 or N floats) and the optional fp32 bias.
struct VkQuantLinear final : PreparedWeight {
  int64_t out_features = 0, in_features = 0, k4 = 0;
  bool per_channel = false;
  DeviceArray weight;    // Int32 [N * k4]
  DeviceArray row_sums;  // Int32 [N]
  DeviceArray scales;    // Float32 [1] or [N]
  DeviceArray bias;      // Float32 [N], or undefined
  size_t bytes() const override { return weight.bytes() + row_sums.bytes() + scales.bytes() + bias.bytes(); }
};

// A CSR [N, K] sparse weight on the device: fp32 values, or int8 values with
// one scale per output row (y[i, j] = row_scale[j] * sum q * x + bias[j]).
struct VkSparseLinear final : PreparedWeight {
  int64_t rows = 0, cols = 0, nnz = 0;
  bool int8 = false;
  DeviceArray row_ptr;    // Int32 [N + 1]
  DeviceArray col;        // Int32 [max(nnz, 1)]
  DeviceArray values;     // Float32 [max(nnz, 1)], or int8: Int32 [max(ceil(nnz / 4), 1)], 4 values per word
  DeviceArray row_scale;  // Float32 [N] when int8, else undefined
  size_t bytes() const override { return row_ptr.bytes() + col.bytes() + values.bytes() + row_scale.bytes(); }
};

// Backend::prepare_weight for QLinear and SparseLinear (NotSupported for the
// other ops); failures say why in Context::why().
Result<std::shared_ptr<const PreparedWeight>> prepare_weight(OpKind op, const WeightDesc& w);

// The packing steps prepare_weight runs (tests call them directly): int8 q
// [out, in] row-major, scales (`out` when per_channel, else 1), bias (`out`
// floats) or null; a packed CSR matrix (quant/csr.h).
Result<std::shared_ptr<const VkQuantLinear>> pack_quant_linear(const int8_t* q, int64_t out, int64_t in,
                                                               const float* scales, bool per_channel,
                                                               const float* bias);
Result<std::shared_ptr<const VkSparseLinear>> pack_sparse_linear(const sparse::CsrMatrix& csr);

// Switches for tests (process-wide; the kernels read them).
struct QuantLinearTestOptions {
  bool use_dot_product = true;  // OpSUDotKHR when caps().integer_dot_product; false: the portable shader
  bool skew_division = false;   // every device quotient off by -2 .. 2 ulp before correction
  bool reduce_range = false;    // 7-bit activations (quant::DynamicQuantOptions::reduce_range)
};
QuantLinearTestOptions& quant_linear_test_options();

// The QLinear kernel's stages on device views, for tests: the quantized
// activations of x2d (float32 [m, K], one row stride) into q (Int32 [m, k4],
// four uint8 per word) and params (Float32 [(m + 1) * 4]: per row i, at 4i:
// min, max, scale, zero point; the per-tensor ones at 4m); and the raw int32
// sums acc[i, j] = sum_k q[i, k] * w[j, k] (Int32 [m, N]).
Status quantize_activations(const TensorView& x2d, const TensorView& q, const TensorView& params, bool per_row);
Status quant_linear_accumulators(const TensorView& q, const VkQuantLinear& w, const TensorView& acc);

}  // namespace ember::vk
