// Declarations of the CUDA kernels (from kernels/cuda/kernels.inc).
#pragma once

#include <memory>

#include "runtime/backend/backend.h"

namespace ember::cuda {

// The dtypes the CUDA kernels instantiate (PyTorch's CUDA set without the
// barebones unsigned types).
constexpr DTypeSet kCudaFloat = kFloatingTypes;
constexpr DTypeSet kCudaInt = dtype_bit(DType::Int8) | dtype_bit(DType::UInt8) | dtype_bit(DType::Int16) |
                              dtype_bit(DType::Int32) | dtype_bit(DType::Int64);
constexpr DTypeSet kCudaNumeric = kCudaFloat | kCudaInt;
constexpr DTypeSet kCudaAll = kCudaNumeric | dtype_bit(DType::Bool);

#define RT_KERNEL(op, dtypes, fn)                                                      \
  Status fn(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out, \
            const OpParams& params);
#define RT_KERNEL_DENSE(op, dtypes, fn) RT_KERNEL(op, dtypes, fn)
#define RT_KERNEL_WS(op, dtypes, fn, ws)                                        \
  RT_KERNEL(op, dtypes, fn)                                                     \
  size_t ws(Span<const TensorView> in, Span<const TensorView> out, const OpParams& params);
#include "kernels/cuda/kernels.inc"
#undef RT_KERNEL
#undef RT_KERNEL_DENSE
#undef RT_KERNEL_WS

// QLinear's weight on the device (Backend::prepare_weight): int8 [N, K], row sums, scales, bias.
Result<std::shared_ptr<const PreparedWeight>> prepare_qlinear(const WeightDesc& w);
// QConv2d's: int8 [C_out, C_in, kh, kw], row sums, scales, bias and the geometry.
Result<std::shared_ptr<const PreparedWeight>> prepare_qconv2d(const WeightDesc& w);
// SparseLinear's: the COO weight as CSR by output row (float32 or double values).
Result<std::shared_ptr<const PreparedWeight>> prepare_sparse_linear(const WeightDesc& w);

}  // namespace ember::cuda
