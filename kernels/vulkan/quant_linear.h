// Dynamic int8 Linear and sparse (CSR) Linear on Vulkan, for the executor's
// Linear nodes with int8 or sparse COO weights (not OpKind kernels). Weights
// are packed once onto the device (immutable afterwards: share them), then
// each call records its dispatches on the context's command stream; nothing
// returns to the host until the result is read.
//
// Semantics are quant/dynamic_linear.h's and quant/coo.h's: the activations
// are quantized at run time to uint8 (per tensor, or per row) with ATen's
// ChooseQuantizationParams, the int8 x uint8 products summed in int32, then
// y = act(float(acc - zp * rowsum_w) * (a_scale * w_scale) + bias).
// Target //kernels/vulkan:vulkan_quant (it depends on //quant:sparse; the
// backend target //kernels/vulkan does not).
#pragma once

#include <cstdint>
#include <type_traits>

#include "quant/coo.h"
#include "runtime/core/result.h"
#include "runtime/graph/op_params.h"
#include "runtime/tensor/tensor.h"

namespace ember::vk {

// An int8 [N, K] weight on the device: rows of k4 = ceil(K / 4) uint32 words
// (4 int8 each, little-endian, zero padded), the int32 row sums, the scales
// (1 or N floats) and the optional fp32 bias. Tensors on the Vulkan device.
struct VkQuantLinear {
  int64_t out_features = 0, in_features = 0, k4 = 0;
  bool per_channel = false;
  Tensor weight;   // Int32 [N, k4]
  Tensor row_sums; // Int32 [N]
  Tensor scales;   // Float32 [1] or [N]
  Tensor bias;     // Float32 [N], or undefined
};

// From what Executor::create has at hand (as quant::pack_linear): int8 q
// [out, in] row-major, scales (`out` when per_channel, else 1), bias (out
// floats) or null. Fails (Context::why() says why) without a Vulkan device or
// on bad sizes.
Result<VkQuantLinear> pack_quant_linear(const int8_t* q, int64_t out, int64_t in, const float* scales,
                                        bool per_channel, const float* bias);

struct QuantLinearOptions {
  bool reduce_range = false;        // 7-bit activations (quant::DynamicQuantOptions::reduce_range)
  bool use_dot_product = true;      // OpSUDotKHR when caps().integer_dot_product; false: the portable shader
  bool skew_division = false;       // tests only: every device quotient off by -2 .. 2 ulp before correction
};

// y = act(dynamic_int8(x) @ W^T + b) for x a Vulkan float32 [..., K] tensor
// (its leading dims must collapse into one row dim with a single stride, else
// it is made contiguous first); returns a contiguous Vulkan float32 [..., N].
// per_row: one (scale, zero point) per row of x instead of per tensor.
// 4 dispatches (3 per row), no host round trip. Raises ember::Error.
Tensor dynamic_quant_linear(const Tensor& x, const VkQuantLinear& w, const Activation& act, bool per_row = false,
                            const QuantLinearOptions& options = {});

// The stages, for tests: the quantized activations of x (Int32 [m, k4], four
// uint8 per word) and params (Float32 [(m + 1) * 4]: per row i, at 4i: min,
// max, scale, zero point; the per-tensor ones at 4m), and the raw int32 sums
// acc[i, j] = sum_k q[i, k] * w[j, k] of given quantized activations.
struct QuantizedActivations {
  Tensor q;       // Int32 [m, k4]
  Tensor params;  // Float32 [(m + 1) * 4]
};
QuantizedActivations quantize_activations(const Tensor& x2d, int64_t k4, bool per_row, bool reduce_range = false,
                                          bool skew_division = false);
Tensor quant_linear_accumulators(const Tensor& q, const VkQuantLinear& w, bool use_dot_product = true);

// A CSR [N, K] sparse weight on the device: fp32 values, or int8 values with
// one scale per output row (y[i, j] = row_scale[j] * sum q * x + bias[j]).
struct VkSparseLinear {
  int64_t rows = 0, cols = 0, nnz = 0;
  bool int8 = false;
  Tensor row_ptr;    // Int32 [N + 1]
  Tensor col;        // Int32 [max(nnz, 1)]
  Tensor values;     // Float32 [max(nnz, 1)], or int8: Int32 [max(ceil(nnz / 4), 1)], 4 values per word
  Tensor row_scale;  // Float32 [N] when int8, else undefined
};

// The CSR arrays (what sparse::CsrMatrix holds): cols16 or cols32 (nnz each),
// values (nnz floats) or qvalues (nnz int8) with row_scale (rows floats).
struct CsrArrays {
  int64_t rows = 0, cols = 0, nnz = 0;
  const int64_t* row_ptr = nullptr;  // rows + 1
  const uint16_t* col16 = nullptr;
  const int32_t* col32 = nullptr;
  const float* values = nullptr;
  const int8_t* qvalues = nullptr;
  const float* row_scale = nullptr;
};
Result<VkSparseLinear> pack_sparse_linear_arrays(const CsrArrays& a);

namespace detail {
// Int8 CSR values, where sparse::CsrMatrix has them (qvalues, row_scale, int8:
// feat/spmm); a matrix type without them is fp32.
template <typename M, typename = void>
struct CsrInt8 {
  static const int8_t* q(const M&) { return nullptr; }
  static const float* scale(const M&) { return nullptr; }
  static bool sizes_ok(const M&) { return true; }
};
template <typename M>
struct CsrInt8<M, std::void_t<decltype(M::int8), decltype(M::qvalues), decltype(M::row_scale)>> {
  static const int8_t* q(const M& m) { return m.int8 ? m.qvalues.data() : nullptr; }
  static const float* scale(const M& m) { return m.int8 ? m.row_scale.data() : nullptr; }
  static bool sizes_ok(const M& m) {
    const size_t nnz = m.narrow ? m.col16.size() : m.col32.size();
    return !m.int8 || (m.qvalues.size() == nnz && static_cast<int64_t>(m.row_scale.size()) == m.rows);
  }
};
}  // namespace detail

// From the executor's packed sparse::CsrMatrix (or a type with its members).
// Fails (Context::why() says why) on inconsistent arrays or without a device.
template <typename Csr = sparse::CsrMatrix>
Result<VkSparseLinear> pack_sparse_linear(const Csr& w) {
  CsrArrays a;
  a.rows = w.rows;
  a.cols = w.cols;
  a.nnz = static_cast<int64_t>(w.narrow ? w.col16.size() : w.col32.size());
  a.row_ptr = w.row_ptr.data();
  a.col16 = w.narrow ? w.col16.data() : nullptr;
  a.col32 = w.narrow ? nullptr : w.col32.data();
  a.qvalues = detail::CsrInt8<Csr>::q(w);
  a.row_scale = detail::CsrInt8<Csr>::scale(w);
  a.values = a.qvalues != nullptr ? nullptr : w.values.data();
  const bool ok = static_cast<int64_t>(w.row_ptr.size()) == w.rows + 1 && detail::CsrInt8<Csr>::sizes_ok(w) &&
                  (a.qvalues != nullptr || static_cast<int64_t>(w.values.size()) == a.nnz);
  if (!ok) a.row_ptr = nullptr;  // refused by pack_sparse_linear_arrays
  return pack_sparse_linear_arrays(a);
}

// y = act(x @ W^T + bias) for x a Vulkan float32 [..., K] (strides as
// dynamic_quant_linear), bias a float32 [N] (Vulkan, or CPU: copied over) or
// undefined. Returns a contiguous Vulkan float32 [..., N]. Raises ember::Error.
Tensor sparse_linear(const Tensor& x, const VkSparseLinear& w, const Tensor& bias = Tensor(),
                     const Activation& act = {});

}  // namespace ember::vk
