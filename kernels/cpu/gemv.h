// Unpacked small-M SGEMM paths used by sgemm (gemm.h) when A has few rows: the
// packing of B that the blocked GEMM does on every call costs more than the
// product itself there (a batch-1 Linear reads each weight once). Two layouts:
//   Dot:  B's columns are contiguous (b.cs arbitrary, b.rs == 1: B = W^T with W
//         row-major [N, K], the Linear case) and A's rows are contiguous: each
//         C[i, j] is a vectorized dot product of row i of A and column j of B.
//   Axpy: B's rows and C's rows are contiguous (x @ W with W row-major [K, N]):
//         rows of C accumulate A[i, p] * B[p, :] in registers, A of any strides.
// Internal to kernels/cpu: sgemm picks the path, the ISA and the threads.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/cpu/gemm.h"

namespace ember::cpu::detail {

// 4 floats in a GCC/Clang vector (SSE on x86, NEON on ARM): the portable
// kernels of gemm.cc and gemv.cc use it; loads and stores need no alignment.
typedef float v4f __attribute__((vector_size(16)));
inline v4f load4(const float* p) {
  v4f v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
inline void store4(float* p, v4f v) { std::memcpy(p, &v, sizeof(v)); }

// Four rows of four floats transposed in place (GCC/clang vector shuffles:
// SSE on x86, NEON on ARM).
#if defined(__clang__)
#define RT_SHUFFLE2(a, b, i0, i1, i2, i3) __builtin_shufflevector(a, b, i0, i1, i2, i3)
#else
typedef int32_t v4i __attribute__((vector_size(16)));
#define RT_SHUFFLE2(a, b, i0, i1, i2, i3) __builtin_shuffle(a, b, v4i{i0, i1, i2, i3})
#endif
inline void transpose4(v4f* r) {
  const v4f t0 = RT_SHUFFLE2(r[0], r[1], 0, 4, 1, 5), t1 = RT_SHUFFLE2(r[2], r[3], 0, 4, 1, 5);
  const v4f t2 = RT_SHUFFLE2(r[0], r[1], 2, 6, 3, 7), t3 = RT_SHUFFLE2(r[2], r[3], 2, 6, 3, 7);
  r[0] = RT_SHUFFLE2(t0, t1, 0, 1, 4, 5);
  r[1] = RT_SHUFFLE2(t0, t1, 2, 3, 6, 7);
  r[2] = RT_SHUFFLE2(t2, t3, 0, 1, 4, 5);
  r[3] = RT_SHUFFLE2(t2, t3, 2, 3, 6, 7);
}
// lo = a0 b0 a1 b1, hi = a2 b2 a3 b3: a 2 x 4 block transposed into pairs.
inline void zip4(v4f a, v4f b, v4f* lo, v4f* hi) {
  *lo = RT_SHUFFLE2(a, b, 0, 4, 1, 5);
  *hi = RT_SHUFFLE2(a, b, 2, 6, 3, 7);
}
#undef RT_SHUFFLE2

enum class DirectKind { None, Dot, Axpy };

// Which unpacked path fits these operands (None: use the packed GEMM).
DirectKind sgemm_direct_kind(MatrixRef<const float> a, MatrixRef<const float> b, MatrixRef<float> c);

// Columns [j0, j1) of C (m x n) = A (m x k) @ B (k x n) (C += when accumulate)
// on the calling thread, with the `isa` family (Avx512, Avx2 or Portable; the
// CPU must support it). k >= 1; `kind` is what sgemm_direct_kind returned.
void sgemm_direct(GemmIsa isa, DirectKind kind, int64_t m, int64_t j0, int64_t j1, int64_t k,
                  MatrixRef<const float> a, MatrixRef<const float> b, MatrixRef<float> c, bool accumulate);

}  // namespace ember::cpu::detail
