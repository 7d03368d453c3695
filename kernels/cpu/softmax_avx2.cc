// The AVX2 + FMA (log_)softmax rows (softmax.h), for CPUs without AVX-512:
// softmax_avx512.cc's steps on 8-lane vectors. reduce.cc's RT_AVX2_FMA build
// of softmax_row compiles fast_exp with its NaN and overflow selects; here
// the row's maximum m is finite, so x - m lies in [-inf, 0]: lanes below -104
// (exp rounds to 0 there) are set to 0 without computing them, and 2^n is
// two integer-built factors, both normal for n in [-150, 0], so that results
// down to the subnormals round once. Two rows at once interleave the rows'
// dependent chains (each sum's adds); four, as on AVX-512, spilled the sums
// (ops_bench softmax_12x128x128 best of 4 rounds: 1 row 191 us, 2 rows 187,
// 4 rows 206). A row's values are the same alone or in a pair. Not bit for
// bit the RT_AVX2_FMA row's (its 2^n factors split n by truncation, its sum
// pairs lanes): within its rounding (normalization_test checks both against
// float64). Zen 3, one thread, against that row: ops_bench softmax_256x1000
// 296 -> 237 us, softmax_12x128x128 252 -> 200, its masked form 255 -> 196
// (best of 3 alternating rounds); the BERT-style encoder at batch 8, its
// softmaxes 11.5 -> 9.4 ms a run (per-op minima of 5 alternating runs, both
// orders; ORT's 5.3).
#include "kernels/cpu/softmax.h"

// (GCC: clang, which the fuzz builds use, has no "#pragma GCC target"; there
// every row goes to reduce.cc's own.)
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>

#include <cmath>
#include <limits>

#pragma GCC push_options
#pragma GCC target("avx2,fma")

namespace ember::cpu {
namespace {

// The first n < 8 lanes (kTail + 8 - n: n ones, then zeros).
alignas(32) constexpr int32_t kTail[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};

inline __m256i tail_of(int64_t n) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kTail + 8 - n));
}

// exp(c) for c <= 0 (or -inf): fast_exp's polynomial (vec_math.h) in
// multiply-adds; 0 below -104.
__attribute__((always_inline)) inline __m256 exp_nonpositive(__m256 c) {
  const __m256 zero = _mm256_cmp_ps(c, _mm256_set1_ps(-104.0f), _CMP_LT_OQ);
  c = _mm256_andnot_ps(zero, c);  // those lanes compute exp(0), zeroed below
  const __m256 n = _mm256_floor_ps(_mm256_fmadd_ps(c, _mm256_set1_ps(1.44269504088896341f), _mm256_set1_ps(0.5f)));
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), c);
  r = _mm256_fmadd_ps(n, _mm256_set1_ps(2.12194440e-4f), r);
  __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(1.9875691500e-4f), r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  const __m256 s = _mm256_add_ps(_mm256_fmadd_ps(r, _mm256_mul_ps(p, r), r), _mm256_set1_ps(1.0f));
  // 2^n = 2^h 2^(n - h), h = floor(n / 2): both factors normal, the first product exact.
  const __m256i ni = _mm256_cvtps_epi32(n);
  const __m256i h = _mm256_srai_epi32(ni, 1);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 f1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(h, bias), 23));
  const __m256 f2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(ni, h), bias), 23));
  return _mm256_andnot_ps(zero, _mm256_mul_ps(_mm256_mul_ps(s, f1), f2));
}

// The maximum of a row; *nan: whether it holds a NaN.
__attribute__((always_inline)) inline float row_max(const float* x, int64_t n, bool* nan) {
  const int64_t body = n / 8 * 8;
  const __m256 ninf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  __m256 top = ninf, unordered = _mm256_setzero_ps();
  for (int64_t i = 0; i < body; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    unordered = _mm256_or_ps(unordered, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    top = _mm256_max_ps(top, v);
  }
  if (body < n) {
    const __m256 mask = _mm256_castsi256_ps(tail_of(n - body));
    const __m256 v = _mm256_blendv_ps(ninf, _mm256_maskload_ps(x + body, _mm256_castps_si256(mask)), mask);
    unordered = _mm256_or_ps(unordered, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    top = _mm256_max_ps(top, v);
  }
  *nan = _mm256_movemask_ps(unordered) != 0;
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, top);
  float m = lanes[0];
  for (int j = 1; j < 8; ++j) m = lanes[j] > m ? lanes[j] : m;
  return m;
}

// softmax_rows.inc's vector primitives.
using Vec = __m256;
using VecD = __m256d;
using Tail = __m256i;
constexpr int kL = 8;
// Two rows at a time: with four, the sums' accumulators and the exp's
// temporaries outgrew the 16 registers (the sums went to the stack).
constexpr int kBlockRows = 2;
inline Vec vset1(float f) { return _mm256_set1_ps(f); }
inline Vec vload(const float* p) { return _mm256_loadu_ps(p); }
inline void vstore(float* p, Vec v) { _mm256_storeu_ps(p, v); }
inline Vec vload_tail(const float* p, Tail t) { return _mm256_maskload_ps(p, t); }
inline void vstore_tail(float* p, Tail t, Vec v) { _mm256_maskstore_ps(p, t, v); }
inline VecD low_pd(Vec v) { return _mm256_cvtps_pd(_mm256_castps256_ps128(v)); }
inline VecD high_pd(Vec v) { return _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)); }
inline void vstore_pd(double* p, VecD d) { _mm256_storeu_pd(p, d); }

#include "kernels/cpu/softmax_rows.inc"

}  // namespace
}  // namespace ember::cpu

#pragma GCC pop_options

namespace ember::cpu {

unsigned softmax_rows_avx2(const float* x, float* y, int64_t n, int rows, bool log) {
  return log ? block<true>(x, y, n, rows) : block<false>(x, y, n, rows);
}

}  // namespace ember::cpu

#else

namespace ember::cpu {
unsigned softmax_rows_avx2(const float*, float*, int64_t, int rows, bool) { return (1u << rows) - 1u; }
}  // namespace ember::cpu

#endif
