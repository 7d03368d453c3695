// The AVX2 + FMA (log_)softmax rows (softmax.h), for CPUs without AVX-512:
// softmax_avx512.cc's steps on 8-lane vectors. reduce.cc's RT_AVX2_FMA build
// of softmax_row compiles fast_exp with its NaN and overflow selects; here
// the row's maximum m is finite, so x - m lies in [-inf, 0] (or is NaN). A
// vector whose lanes are all at least -87 (the common case) gets 2^n from
// one shift; one with a lower lane goes to exp_low, which keeps subnormal
// results exact. The row's sum is in float, as PyTorch's. Two rows at once
// interleave the rows' dependent chains (each sum's adds); four, as on
// AVX-512, spilled the sums (ops_bench softmax_12x128x128 best of 4 rounds: 1
// row 191 us, 2 rows 187, 4 rows 206). A row's values are the same alone or
// in a pair. Not bit for bit the RT_AVX2_FMA row's: within its rounding
// (normalization_test checks both against float64). Zen 3, one thread,
// ops_bench (minima of 8 repetitions, 2 alternating rounds): softmax_12x128x128
// 201-214 -> 145-152 us, softmax_256x1000 244-305 -> 169-247, the masked form
// 207-259 -> 139-152; with the double sum and the two-factor 2^n everywhere it
// was 252 -> 200 against the RT_AVX2_FMA row. ORT: about 110 (BERT at batch
// 8, 5.3 ms for 48 such softmaxes).
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

// exp(c) for c <= 0, -inf or NaN (NaN stays NaN): fast_exp's polynomial in
// multiply-adds, n = round(c / ln 2) read off the low bits of
// c / ln 2 + 1.5 * 2^23 + 127 (which hold n + 127).
__attribute__((always_inline)) inline __m256 exp_poly(__m256 c, __m256 t, __m256 magic) {
  const __m256 n = _mm256_sub_ps(t, magic);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), c);
  r = _mm256_fmadd_ps(n, _mm256_set1_ps(2.12194440e-4f), r);
  __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(1.9875691500e-4f), r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  return _mm256_add_ps(_mm256_fmadd_ps(r, _mm256_mul_ps(p, r), r), _mm256_set1_ps(1.0f));
}

// A vector with a lane below -87, whose result may be subnormal: lanes below
// -104 (exp rounds to 0 there) are set to 0 without computing them (a
// vector of them is BERT's masked scores), and 2^n is two factors, both
// normal for n in [-150, 0], so that subnormal results round once.
__attribute__((noinline)) __m256 exp_low(__m256 c) {
  const __m256 zero = _mm256_cmp_ps(c, _mm256_set1_ps(-104.0f), _CMP_LT_OQ);
  if (_mm256_movemask_ps(zero) == 0xFF) return _mm256_setzero_ps();
  c = _mm256_andnot_ps(zero, c);  // those lanes compute exp(0), zeroed below
  const __m256 magic = _mm256_set1_ps(12583039.0f);
  const __m256 t = _mm256_fmadd_ps(c, _mm256_set1_ps(1.44269504088896341f), magic);
  const __m256 s = exp_poly(c, t, magic);
  const __m256i ni = _mm256_sub_epi32(_mm256_castps_si256(t), _mm256_castps_si256(magic));  // n
  const __m256i h = _mm256_srai_epi32(ni, 1);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 f1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(h, bias), 23));
  const __m256 f2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(ni, h), bias), 23));
  return _mm256_andnot_ps(zero, _mm256_mul_ps(_mm256_mul_ps(s, f1), f2));
}

// Every lane at or above -87 (or NaN): the result is normal (exp(-87) is
// above 2^-126), so n >= -126 and 2^n is (n + 127) << 23, t's bits shifted.
__attribute__((always_inline)) inline __m256 exp_nonpositive(__m256 c) {
  if (_mm256_movemask_ps(_mm256_cmp_ps(c, _mm256_set1_ps(-87.0f), _CMP_LT_OQ)) != 0) return exp_low(c);
  const __m256 magic = _mm256_set1_ps(12583039.0f);
  const __m256 t = _mm256_fmadd_ps(c, _mm256_set1_ps(1.44269504088896341f), magic);
  return _mm256_mul_ps(exp_poly(c, t, magic), _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_castps_si256(t), 23)));
}

// The maximum of a row; *nan false: a NaN (which max may drop) makes the
// row's sum NaN, and so every value of the row, as the caller's row would.
__attribute__((always_inline)) inline float row_max(const float* x, int64_t n, bool* nan) {
  const int64_t body = n / 8 * 8;
  const __m256 ninf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  __m256 top = ninf;
  for (int64_t i = 0; i < body; i += 8) top = _mm256_max_ps(top, _mm256_loadu_ps(x + i));
  if (body < n) {
    const __m256 mask = _mm256_castsi256_ps(tail_of(n - body));
    top = _mm256_max_ps(top, _mm256_blendv_ps(ninf, _mm256_maskload_ps(x + body, _mm256_castps_si256(mask)), mask));
  }
  *nan = false;
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, top);
  float m = lanes[0];
  for (int j = 1; j < 8; ++j) m = lanes[j] > m ? lanes[j] : m;
  return m;
}

// softmax_rows.inc's vector primitives.
using Vec = __m256;
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
// A row's sum in float, as PyTorch's: lane j adds the values at j mod 8, then
// the lanes in order (the double sum's two conversions and two adds a vector
// were a fifth of the row's instructions).
struct Sum {
  Vec v{};
  void add(Vec e) { v = _mm256_add_ps(v, e); }
  double total() const {
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, v);
    float s = lanes[0];
    for (int j = 1; j < 8; ++j) s += lanes[j];
    return s;
  }
};

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
