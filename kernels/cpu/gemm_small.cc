// The portable (8x8) and AVX2 (6x16) float32 GEMM micro-kernels (gemm_tile.h),
// beside the AVX-512 family of gemm_avx512.cc.
#include "kernels/cpu/gemm_tile.h"
#include "kernels/cpu/gemv.h"  // v4f

namespace ember::cpu::detail {

// --- portable 8x8 (GCC/Clang vector extensions: SSE on x86, NEON on ARM) ----

void ukernel_8x8_portable(int64_t kc, const float* __restrict a, const float* __restrict b, float* c,
                          int64_t rs, int64_t cs, bool accumulate, int64_t mv, int64_t nv,
                          const TileEpilogue* e) {
  EMBER_GEMM_ROWS8(EMBER_GEMM_ZERO, v4f, (v4f{0, 0, 0, 0}))
  for (int64_t p = 0; p < kc; ++p) {
    const v4f b0 = load4(b), b1 = load4(b + 4);
#define EMBER_GEMM_STEP(i, V, unused)         \
  {                                           \
    const v4f ai = v4f{a[i], a[i], a[i], a[i]}; \
    c##i##_0 += ai * b0;                      \
    c##i##_1 += ai * b1;                      \
  }
    EMBER_GEMM_ROWS8(EMBER_GEMM_STEP, , )
#undef EMBER_GEMM_STEP
    a += 8;
    b += 8;
  }
  v4f acc[8][2] = {EMBER_GEMM_ROWS8(EMBER_GEMM_PAIR, , )};
  if (mv == 8 && nv == 8 && cs == 1 && e == nullptr) {
    for (int i = 0; i < 8; ++i) {
      float* ci = c + i * rs;
      if (accumulate) {
        acc[i][0] += load4(ci);
        acc[i][1] += load4(ci + 4);
      }
      store4(ci, acc[i][0]);
      store4(ci + 4, acc[i][1]);
    }
    return;
  }
  alignas(kGemmAlign) float t[8 * 8];
  for (int i = 0; i < 8; ++i) {
    store4(t + i * 8, acc[i][0]);
    store4(t + i * 8 + 4, acc[i][1]);
  }
  store_tile(t, 8, c, rs, cs, accumulate, mv, nv, e);
}

#if RT_GEMM_X86
// --- AVX2 + FMA 6x16: 12 accumulators, 2 B vectors, 1 broadcast --------------
__attribute__((target("avx2,fma"))) void ukernel_6x16_avx2(int64_t kc, const float* __restrict a,
                                                            const float* __restrict b, float* c,
                                                            int64_t rs, int64_t cs, bool accumulate,
                                                            int64_t mv, int64_t nv, const TileEpilogue* e) {
  EMBER_GEMM_ROWS6(EMBER_GEMM_ZERO, __m256, _mm256_setzero_ps())
#pragma GCC unroll 4
  for (int64_t p = 0; p < kc; ++p) {
    const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
#define EMBER_GEMM_STEP(i, V, unused)                  \
  {                                                    \
    const __m256 ai = _mm256_broadcast_ss(a + i);      \
    c##i##_0 = _mm256_fmadd_ps(ai, b0, c##i##_0);      \
    c##i##_1 = _mm256_fmadd_ps(ai, b1, c##i##_1);      \
  }
    EMBER_GEMM_ROWS6(EMBER_GEMM_STEP, , )
#undef EMBER_GEMM_STEP
    a += 6;
    b += 16;
  }
  __m256 acc[6][2] = {EMBER_GEMM_ROWS6(EMBER_GEMM_PAIR, , )};
  if (mv == 6 && nv == 16 && cs == 1) {
    for (int i = 0; i < 6; ++i) {
      float* ci = c + i * rs;
      if (accumulate) {
        acc[i][0] = _mm256_add_ps(acc[i][0], _mm256_loadu_ps(ci));
        acc[i][1] = _mm256_add_ps(acc[i][1], _mm256_loadu_ps(ci + 8));
      }
      if (e != nullptr) epilogue_avx2(acc[i], *e, i);
      _mm256_storeu_ps(ci, acc[i][0]);
      _mm256_storeu_ps(ci + 8, acc[i][1]);
    }
    return;
  }
  alignas(kGemmAlign) float t[6 * 16];
  for (int i = 0; i < 6; ++i) {
    _mm256_store_ps(t + i * 16, acc[i][0]);
    _mm256_store_ps(t + i * 16 + 8, acc[i][1]);
  }
  store_tile(t, 16, c, rs, cs, accumulate, mv, nv, e);
}

#endif  // RT_GEMM_X86

}  // namespace ember::cpu::detail
