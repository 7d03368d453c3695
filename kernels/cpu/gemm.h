// Blocked single-precision GEMM: C = A @ B (or C += A @ B) for strided
// matrices. Panels of A and B are packed into contiguous tiles (any strides,
// including 0, are handled while packing), a register-blocked micro-kernel
// chosen at run time by CPU features (AVX-512 12x32, AVX2+FMA 6x16, or a
// portable 8x8 kernel in GCC vector extensions for other targets) runs over
// them, with cache blocking over K, M and N and threads over M x N blocks.
// No allocation: packing buffers come from the caller's workspace. Products
// with few rows of A skip packing when the layout allows (gemv.h): B = W^T
// (b.rs == 1) with A's rows contiguous, up to 64 rows; row-major B and C
// (b.cs == c.cs == 1), up to 8 rows. Those need no workspace at all.
#pragma once

#include <cstddef>
#include <cstdint>

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

// Selects the micro-kernel family (for tests and benchmarks); false when the CPU
// lacks it (the selection is then unchanged). Not thread-safe against running GEMMs.
bool sgemm_set_isa(GemmIsa isa);
bool sgemm_isa_supported(GemmIsa isa);
// The family in use (never Auto). The depthwise convolution follows it too.
GemmIsa sgemm_isa();
// "avx512 12x32", "avx2 6x16" or "portable 8x8": the kernel in use.
const char* sgemm_kernel_name();

}  // namespace ember::cpu
