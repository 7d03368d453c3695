// Declarations of the CPU kernels (from kernels/cpu/kernels.inc).
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/cpu/depthwise.h"
#include "kernels/cpu/gemm.h"
#include "runtime/backend/backend.h"

// Compiles a function for several x86 ISAs and picks one at load time by CPU
// features (GCC function multi-versioning). Other targets build the default.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define RT_SIMD_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define RT_SIMD_CLONES
#endif

// GCC's "avx2" clone has no FMA (GCC 12 builds no clone for
// "arch=x86-64-v3"): a __builtin_fmaf there is a libm call per value, which
// keeps the loop scalar, and a * b + c stays two operations. Loops whose math
// needs FMA have a second build, RT_AVX2_FMA, run where avx2_fma_variant()
// (AVX2 and FMA, no AVX-512F); the body is shared as an always-inline template.
#if defined(__x86_64__) && defined(__GNUC__)
#define RT_X86_VARIANTS 1
#define RT_AVX2_FMA __attribute__((target("avx2,fma")))
#else
#define RT_X86_VARIANTS 0
#endif

namespace ember::cpu {

#if RT_X86_VARIANTS
bool avx2_fma_variant();
#endif

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
// prepare_weight only decides the layout: the packing runs when a kernel first
// asks for it (gemm_operand, winograd; thread-safe, once), so loading a model
// stays O(1) in its size; then `release_source` (if set) is called, so the
// file's pages of the weight can be dropped. The kernel reads it only while
// its op's weight is still `source` (the data it was packed from) and it is
// current (sgemm_packed_current); else it reads the weight itself.
struct CpuPackedWeight final : PreparedWeight {
  // ConvB (WeightDesc::channels_last): the B panels of conv_b_weight, for channels_last activations;
  // DepthwiseCl: a depthwise Conv2d's weight for channels_last activations (depthwise_cl_weight).
  enum class Layout { ConvA, Winograd, LinearB, MatMulB, ConvB, DepthwiseCl };
  Layout layout = Layout::ConvA;
  const void* source = nullptr;
  int64_t rows = 0, depth = 0;  // the weight as [rows, depth] (Winograd: C_out, C_in)
  int64_t rs = 0, cs = 0;       // the packed B operand's strides in `source` (weight^T or MatMul's b)
  bool bf16 = false;            // packed as bfloat16 (WeightDesc::bf16): the GEMM runs its bf16 kernel
  std::function<void()> release_source;

  // The packed GEMM operand, or null for a Winograd weight; packs on first use.
  const PackedOperand* gemm_operand() const;
  // The 36 packed U operands, or null unless Winograd; packs on first use.
  const PackedOperand* winograd() const;
  // The depthwise weight's channels_last layout, or null unless DepthwiseCl; packs on first use.
  const DepthwiseClWeight* depthwise_cl() const;
  // What the packed form holds (before it is packed too).
  size_t bytes() const override;

 private:
  void pack() const;
  mutable std::once_flag once_;
  mutable PackedOperand packed_;
  mutable std::vector<PackedOperand> winograd_u_;
  mutable DepthwiseClWeight depthwise_;
};

// The B operand of a channels_last Conv2d's product (kernels/cpu/conv2d.cc),
// packed: W'[(i*KW + j)*C_in + ci, co] = w[co, ci, i, j] of a contiguous
// [C_out, C_in, KH, KW] weight (taps = KH*KW).
PackedOperand conv_b_weight(const float* w, int64_t cout, int64_t cin, int64_t taps, bool bf16);

// The packed weight a Conv2d kernel may read: packed from this weight (groups
// 1) in `layout` (ConvA: the A panels of the NCHW product; ConvB: the B panels
// of the channels-last one), else null.
const PackedOperand* packed_weight(const Conv2dParams& prm, const TensorView& wt,
                                   CpuPackedWeight::Layout layout = CpuPackedWeight::Layout::ConvA);

// Whether t ([N, C, H, W]) is dense channels_last: strides [H*W*C, 1, W*C, C].
bool dense_channels_last(const TensorView& t);

// The GEMM epilogue of a fused activation (Conv2dParams, LinearParams; no bias).
inline GemmEpilogue activation_epilogue(const Activation& a) {
  GemmEpilogue e;
  e.clamp = a.kind == ActivationKind::Relu || a.kind == ActivationKind::Clamp;
  e.lo = a.kind == ActivationKind::Relu ? 0.0f : static_cast<float>(a.min);
  e.hi = a.kind == ActivationKind::Relu ? __builtin_inff() : static_cast<float>(a.max);
  e.hardswish = a.kind == ActivationKind::HardSwish;
  return e;
}

// Why this thread's last prepare_weight failed ("" when it did not).
std::string last_prepare_error();

// Elements per parallel_for chunk for cheap elementwise work. At two threads
// the op before wrote half of its output from each core, so even small ops
// split: 32768 left MobileNetV3's residual Adds and squeeze-excite Muls (31k
// to 94k values) on one thread, reading half their input from the other
// core's cache (per-op minima, two threads: adds 0.203 -> 0.176 ms, muls
// 0.286 -> 0.229 with 8192; the transformer's medians 1-2 % lower).
constexpr int64_t kElementwiseGrain = 8192;

}  // namespace ember::cpu
