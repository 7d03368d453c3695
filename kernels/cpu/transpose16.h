// Float transposes shared by the depthwise kernel's channel lanes, the Winograd output tiles, the int8
// GEMM's transposed stores and the int8 convolution's channels-last input: a
// scalar one (any target), and on x86 (GCC or Clang) a 16 x 16 transpose in
// AVX-512 registers (callers compile it inside functions built for avx512f):
// pairs of rows interleaved, then 64-bit pairs, then 128-bit lanes twice.
#pragma once

#include <algorithm>
#include <cstdint>

namespace ember::cpu {

// dst[c * ldd + r] = src[r * lds + c] for r < rows, c < cols, in 32 x 32
// blocks (both sides stay within a few cache lines per block).
inline void transpose_scalar(const float* src, int64_t rows, int64_t cols, int64_t lds, float* dst, int64_t ldd) {
  constexpr int64_t kB = 32;
  for (int64_t r0 = 0; r0 < rows; r0 += kB) {
    const int64_t r1 = std::min(rows, r0 + kB);
    for (int64_t c0 = 0; c0 < cols; c0 += kB) {
      const int64_t c1 = std::min(cols, c0 + kB);
      for (int64_t c = c0; c < c1; ++c) {
        for (int64_t r = r0; r < r1; ++r) dst[c * ldd + r] = src[r * lds + c];
      }
    }
  }
}

}  // namespace ember::cpu

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

namespace ember::cpu {

// r[0 .. 16) as a 16 x 16 matrix (row i in r[i]), transposed in place.
// (GCC 12's headers trip -Wmaybe-uninitialized in these shuffles.)
#if !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
__attribute__((target("avx512f"), always_inline)) inline void transpose16x16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {
    r[4 * i] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 4; ++j) {
      t[8 * i + j] = _mm512_shuffle_f32x4(r[8 * i + j], r[8 * i + j + 4], 0x88);
      t[8 * i + j + 4] = _mm512_shuffle_f32x4(r[8 * i + j], r[8 * i + j + 4], 0xdd);
    }
  }
  for (int j = 0; j < 8; ++j) {
    r[j] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0x88);
    r[j + 8] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0xdd);
  }
}

// transpose_scalar's result in 16 x 16 blocks through transpose16x16, a
// partial block's rows loaded and its columns stored under masks.
__attribute__((target("avx512f"))) inline void transpose_block16(const float* src, int64_t rows, int64_t cols,
                                                                  int64_t lds, float* dst, int64_t ldd) {
  for (int64_t r0 = 0; r0 < rows; r0 += 16) {
    const int64_t nr = rows - r0 < 16 ? rows - r0 : 16;
    const __mmask16 rmask = static_cast<__mmask16>((1u << nr) - 1);
    for (int64_t c0 = 0; c0 < cols; c0 += 16) {
      const int64_t nc = cols - c0 < 16 ? cols - c0 : 16;
      const __mmask16 cmask = static_cast<__mmask16>((1u << nc) - 1);
      __m512 r[16];
      for (int i = 0; i < 16; ++i) {
        r[i] = i < nr ? _mm512_maskz_loadu_ps(cmask, src + (r0 + i) * lds + c0) : _mm512_setzero_ps();
      }
      transpose16x16(r);
      for (int64_t j = 0; j < nc; ++j) _mm512_mask_storeu_ps(dst + (c0 + j) * ldd + r0, rmask, r[j]);
    }
  }
}
#if !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace ember::cpu
#endif
