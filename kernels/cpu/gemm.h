// Blocked single-precision GEMM: C = A @ B (or C += A @ B) for strided
// matrices. Panels of A and B are packed into contiguous tiles (any strides,
// including 0, are handled while packing), a register-blocked micro-kernel
// chosen at run time by CPU features (AVX-512 12x32, AVX2+FMA 6x16, or a
// portable 8x8 kernel in GCC vector extensions for other targets) runs over
// them, with cache blocking over K, M and N and threads over M x N blocks.
// No allocation: packing buffers come from the caller's workspace. Products
// with few rows of A skip packing when the layout allows (gemv.h): B = W^T
// (b.rs == 1) with A's rows contiguous, up to 64 rows (AVX2: 16); row-major B and C
// (b.cs == c.cs == 1), up to 8 rows. Those need no workspace at all.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/core/weight_memory.h"

namespace ember::cpu {

// A strided matrix: element (i, j) lives at data[i * rs + j * cs].
template <typename T>
struct MatrixRef {
  T* data;
  int64_t rs, cs;
};

// Micro-kernel families. Auto picks the best one the CPU supports.
enum class GemmIsa { Auto, Portable, Avx2, Avx512 };

// Scratch bytes sgemm needs for an m x n x k product on up to `threads` threads.
size_t sgemm_workspace(int64_t m, int64_t n, int64_t k, int threads);

// C (m x n) = A (m x k) @ B (k x n), or C += A @ B when `accumulate`. C must not
// overlap A or B. `threads` caps the threads used (1: run on the calling thread
// only). Returns false only when `workspace_bytes` is too small.
bool sgemm(int64_t m, int64_t n, int64_t k, MatrixRef<const float> a, MatrixRef<const float> b,
           MatrixRef<float> c, bool accumulate, void* workspace, size_t workspace_bytes, int threads);

// What the micro-kernel applies to C as it stores it (sgemm_fused): a bias per
// row (conv weights: one per output channel) or per column (Linear: one per
// output feature) added with the first K block (row) or the last one
// (column: C rounds as the product with the bias added after it), the clamp
// (ReLU: lo 0, hi +inf) with the last one, then HardSwish x * clamp(x + 3, 0,
// 6) / 6 (as the Hardswish op rounds it). C is written once per K block.
struct GemmEpilogue {
  const float* row_bias = nullptr;  // m values, or none
  const float* col_bias = nullptr;  // n values, or none
  bool clamp = false;
  float lo = 0.0f, hi = 0.0f;
  bool hardswish = false;
};

// A constant operand packed once for the micro-kernel in use: K blocks of the
// GEMM's depth KC, each holding MR-tall row panels of A (sgemm_pack_a) or
// NR-wide column panels of B (sgemm_pack_b), zero-padded, exactly as sgemm
// packs them per call. Tied to the kernel that packed it (`isa`, `panel`,
// `kc`): after sgemm_set_isa picks another one it is stale (sgemm_packed_current).
struct PackedOperand {
  GemmIsa isa = GemmIsa::Auto;
  bool is_a = true;          // A panels (else B panels)
  int64_t outer = 0, k = 0;  // rows of A (columns of B); depth
  int64_t panel = 0, kc = 0; // MR (NR); K block
  bool bf16 = false;         // bfloat16 pairs along K (two per float slot): the bf16 kernel reads it
  WeightBuffer data;          // floats (runtime/core/weight_memory.h: on huge pages where it can)
  size_t bytes() const { return data.bytes(); }
};

// Packs A (m x k) / B (k x n), any strides, for the kernel in use. With
// `bf16` (where sgemm_bf16_supported()) the values are rounded to bfloat16
// (to nearest even; denormals to zero) for the bf16 kernel (AVX-512 BF16):
// a product with a bf16-packed operand rounds the other operand to bf16 as it
// packs it and accumulates in float32 (its few-row paths, which do not pack,
// stay float32).
PackedOperand sgemm_pack_a(int64_t m, int64_t k, MatrixRef<const float> a, bool bf16 = false);
PackedOperand sgemm_pack_b(int64_t k, int64_t n, MatrixRef<const float> b, bool bf16 = false);
// The bytes sgemm_pack_a(outer, k) (is_a) or sgemm_pack_b(k, outer) hold.
size_t sgemm_packed_bytes(bool is_a, int64_t outer, int64_t k, bool bf16 = false);
// Whether `p` was packed for the kernel in use (a bf16 one: the CPU runs the bf16 kernel).
bool sgemm_packed_current(const PackedOperand& p);
// Whether this CPU has the bf16 kernel (AVX-512 F, BW and BF16).
bool sgemm_bf16_supported();
// The bf16 products run AMX-BF16 tiles where the CPU has them (the default),
// else the AVX-512 BF16 kernel; `use` false selects the latter (tests and
// benchmarks; operands packed for the other family are then repacked per
// call). False when AMX-BF16 is asked for and missing. Not thread-safe against
// running GEMMs.
bool sgemm_set_bf16_amx(bool use);
// "amx-bf16 16x32", "avx512-bf16 12x32", or "none" without AVX-512 BF16.
const char* sgemm_bf16_kernel_name();

// A GEMM operand: the matrix, and optionally its packed copy (read instead).
// bf16: the product runs on the bf16 kernel (where sgemm_bf16_supported()),
// this operand rounded to bf16 as it is packed per call, as a product with a
// bf16-packed operand does (Precision::BFloat16's products of two
// activations); not on the float32 few-row paths that skip packing.
struct GemmOperand {
  MatrixRef<const float> m;
  const PackedOperand* packed = nullptr;
  bool bf16 = false;
};

// sgemm() reading a pre-packed operand where it would pack that operand per
// call (a stale or mismatched one is ignored). Bitwise the same as sgemm()
// on the matrices: the few-row paths that skip packing still read them.
bool sgemm_packed(int64_t m, int64_t n, int64_t k, GemmOperand a, GemmOperand b, MatrixRef<float> c,
                  bool accumulate, void* workspace, size_t workspace_bytes, int threads);

// C (m x n) = A @ B with the epilogue fused into the micro-kernel's store,
// either operand pre-packed. A packed operand that does not match (stale
// after sgemm_set_isa, other sizes) is ignored and its matrix read instead;
// false when it has none (m.data null) or the workspace (sgemm_workspace) is
// too small. Never takes the unpacked few-row paths of sgemm(), so the result
// is bitwise the same whether an operand comes packed or not.
bool sgemm_fused(int64_t m, int64_t n, int64_t k, GemmOperand a, GemmOperand b, MatrixRef<float> c,
                 const GemmEpilogue& epilogue, void* workspace, size_t workspace_bytes, int threads);

// A Linear's product: sgemm_packed() then, on C, the column bias and the clamp,
// bitwise the same as that product followed by those passes (no row bias):
// the few-row paths of sgemm_packed() apply them as a pass, the blocked
// product in the micro-kernel's store (sgemm_fused). False as sgemm_fused.
bool sgemm_linear(int64_t m, int64_t n, int64_t k, GemmOperand a, GemmOperand b, MatrixRef<float> c,
                  const GemmEpilogue& epilogue, void* workspace, size_t workspace_bytes, int threads);

// Selects the micro-kernel family (for tests and benchmarks); false when the CPU
// lacks it (the selection is then unchanged). Not thread-safe against running GEMMs.
bool sgemm_set_isa(GemmIsa isa);
bool sgemm_isa_supported(GemmIsa isa);
// Every family the CPU supports, Portable first (tests and benchmarks sweep them).
std::vector<GemmIsa> sgemm_supported_isas();
// The family in use (never Auto). The depthwise convolution follows it too.
GemmIsa sgemm_isa();
// "avx512 12x32", "avx2 6x16" or "portable 8x8": the kernel in use.
const char* sgemm_kernel_name();

}  // namespace ember::cpu
