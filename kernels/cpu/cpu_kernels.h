// Declarations of the CPU kernels (from kernels/cpu/kernels.inc).
#pragma once

#include <string>
#include <vector>

#include "kernels/cpu/gemm.h"
#include "runtime/backend/backend.h"

// Compiles a function for several x86 ISAs and picks one at load time by CPU
// features (GCC function multi-versioning). Other targets build the default.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define RT_SIMD_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define RT_SIMD_CLONES
#endif

namespace ember::cpu {

#define RT_KERNEL(op, dtypes, fn)                                                      \
  Status fn(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out, \
            const OpParams& params);
#define RT_KERNEL_WS(op, dtypes, fn, ws)                                               \
  RT_KERNEL(op, dtypes, fn)                                                            \
  size_t ws(Span<const TensorView> in, Span<const TensorView> out, const OpParams& params);
#include "kernels/cpu/kernels.inc"
#undef RT_KERNEL
#undef RT_KERNEL_WS

// Backend::prepare_weight of the CPU backend (kernels/cpu/qlinear.cc).
Result<std::shared_ptr<const PreparedWeight>> prepare_weight(OpKind op, const WeightDesc& w);
// A float32 weight packed once for the GEMM (prepare_weight for Conv2d: the A
// panels of weight [C_out, C_in*kh*kw]; for Linear: the B panels of weight^T;
// for MatMul: the B panels of its constant b [K, N]). A 3x3 stride-1 Conv2d
// whose output size the model fixes and for which Winograd beats im2col
// (winograd_profitable, pretransformed) holds the Winograd-transformed weight
// U (winograd_pack_weight: packed per frequency) instead of the panels.
// The kernel reads it only while its op's weight is still `source` (the data
// it was packed from) and it is current (sgemm_packed_current); else it reads
// the weight itself.
struct CpuPackedWeight final : PreparedWeight {
  PackedOperand packed;
  std::vector<PackedOperand> winograd_u;  // U (winograd_pack_weight: 36 A operands), or empty
  const void* source = nullptr;
  int64_t rs = 0, cs = 0;  // the packed operand's strides in `source` (B: weight^T or MatMul's b)
  size_t bytes() const override {
    size_t n = packed.bytes();
    for (const PackedOperand& q : winograd_u) n += q.bytes();
    return n;
  }
};

// Why this thread's last prepare_weight failed ("" when it did not).
std::string last_prepare_error();

// Elements per parallel_for chunk for cheap elementwise work.
constexpr int64_t kElementwiseGrain = 32768;

}  // namespace ember::cpu
