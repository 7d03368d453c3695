// Declarations of every reference kernel (from kernels.inc).
#pragma once

#include "runtime/backend/backend.h"

namespace ember::ref {

#define RT_KERNEL(op, dtypes, fn)                                                      \
  Status fn(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out, \
            const OpParams& params);
#define RT_KERNEL_WS(op, dtypes, fn, ws)                                               \
  RT_KERNEL(op, dtypes, fn)                                                            \
  size_t ws(Span<const TensorView> in, Span<const TensorView> out, const OpParams& params);
#include "kernels/ref/kernels.inc"
#undef RT_KERNEL
#undef RT_KERNEL_WS

// ConvTranspose's operands agree with its params (shared with the CPU kernel).
bool conv_transpose_shapes_ok(const TensorView& x, const TensorView& w, const TensorView& bias, const TensorView& o,
                              const ConvTransposeParams& p);

// The weights of the reference QLinear / QConv2d kernels: kept unpacked.
Result<std::shared_ptr<const PreparedWeight>> prepare_weight(OpKind op, const WeightDesc& w);

}  // namespace ember::ref
