// The AVX-512 (log_)softmax row (softmax.h). reduce.cc's ISA clones of
// softmax_row compile fast_exp (vec_math.h) to about 45 instructions a vector:
// NaN and overflow selects, and 2^n as two integer-built factors. Here the
// row's maximum m is finite, so x - m lies in [-inf, 0]: no NaN or overflow
// lanes, and vscalefps multiplies by 2^n in one instruction, rounding once as
// the two exact-then-rounding factors do. The same steps as fast_exp, fused
// where the avx512f clone fuses them: y bit for bit as that clone computes
// the rows' 16-value vectors (its loop over the last n mod 16 values rounds
// without fused multiply-adds; here they are one more masked vector).
// ops_bench softmax_12x128x128, one thread, Xeon: 188 -> 113 us (80 with
// four rows at once, rows()).
#include "kernels/cpu/softmax.h"

// (GCC: clang, which the fuzz builds use, has no "#pragma GCC target"; there
// every row goes to reduce.cc's own.)
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>

#include <cmath>
#include <limits>

// GCC 12's intrinsics headers (max, scalef, roundscale, cvtps_pd) trip
// -Wmaybe-uninitialized on their own undefined operands, as in depthwise.cc.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#pragma GCC push_options
#pragma GCC target("avx512f")

namespace ember::cpu {
namespace {

// exp(c) for c <= 0 (or -inf) as fast_exp computes it. fast_exp clamps c
// at -104, where its result, 0.97 * 2^-150, rounds to 0: those lanes are set
// to 0 here without computing them, as an instruction whose result underflows
// takes a microcode assist: rows with BERT's masked scores (-10000) ran 3x
// slower (ops_bench softmax_masked_12x128x128, one thread: 330 -> 113 us).
__attribute__((always_inline)) inline __m512 exp_nonpositive(__m512 c) {
  const __mmask16 zero = _mm512_cmp_ps_mask(c, _mm512_set1_ps(-104.0f), _CMP_LT_OQ);
  c = _mm512_mask_blend_ps(zero, c, _mm512_setzero_ps());
  const __m512 n = _mm512_roundscale_ps(
      _mm512_fmadd_ps(c, _mm512_set1_ps(1.44269504088896341f), _mm512_set1_ps(0.5f)),
      _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), c);
  r = _mm512_fmadd_ps(n, _mm512_set1_ps(2.12194440e-4f), r);
  __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(1.9875691500e-4f), r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  const __m512 s = _mm512_add_ps(_mm512_fmadd_ps(r, _mm512_mul_ps(p, r), r), _mm512_set1_ps(1.0f));
  return _mm512_maskz_scalef_ps(static_cast<__mmask16>(~zero), s, n);
}

// The maximum of a row; *nan: whether it holds a NaN.
__attribute__((always_inline)) inline float row_max(const float* x, int64_t n, bool* nan) {
  const int64_t body = n / 16 * 16;
  const __mmask16 tail = static_cast<__mmask16>((1u << (n - body)) - 1u);
  __m512 top = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __mmask16 unordered = 0;
  for (int64_t i = 0; i < body; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    unordered |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    top = _mm512_max_ps(top, v);
  }
  if (tail != 0) {
    const __m512 v = _mm512_maskz_loadu_ps(tail, x + body);
    unordered |= _mm512_mask_cmp_ps_mask(tail, v, v, _CMP_UNORD_Q);
    top = _mm512_mask_max_ps(top, tail, top, v);
  }
  *nan = unordered != 0;
  return _mm512_reduce_max_ps(top);
}

// softmax_rows.inc's vector primitives.
using Vec = __m512;
using Tail = __mmask16;
constexpr int kL = 16;
constexpr int kBlockRows = kSoftmaxRows;  // ops_bench softmax_12x128x128, Xeon: 101 us a row at a time, 86 two, 80 four
inline Tail tail_of(int64_t t) { return static_cast<__mmask16>((1u << t) - 1u); }
inline Vec vset1(float f) { return _mm512_set1_ps(f); }
inline Vec vload(const float* p) { return _mm512_loadu_ps(p); }
inline void vstore(float* p, Vec v) { _mm512_storeu_ps(p, v); }
inline Vec vload_tail(const float* p, Tail t) { return _mm512_maskz_loadu_ps(t, p); }
inline void vstore_tail(float* p, Tail t, Vec v) { _mm512_mask_storeu_ps(p, t, v); }
// A row's sum: lane j adds the values at j mod 16 in order in float (as
// PyTorch's vectorized softmax sums), then the lanes in order in double.
struct Sum {
  Vec acc{};
  void add(Vec e) { acc = _mm512_add_ps(acc, e); }
  double total() const {
    alignas(64) float lanes[16];
    _mm512_storeu_ps(lanes, acc);
    double s = 0;
    for (int j = 0; j < 16; ++j) s += static_cast<double>(lanes[j]);
    return s;
  }
};

#include "kernels/cpu/softmax_rows.inc"

}  // namespace
}  // namespace ember::cpu

#pragma GCC pop_options

namespace ember::cpu {

unsigned softmax_rows_avx512(const float* x, float* y, int64_t n, int rows, bool log) {
  static const bool usable = __builtin_cpu_supports("avx512f");
  if (!usable) return (1u << rows) - 1u;
  return log ? block<true>(x, y, n, rows) : block<false>(x, y, n, rows);
}

}  // namespace ember::cpu

#pragma GCC diagnostic pop

#else

namespace ember::cpu {
unsigned softmax_rows_avx512(const float*, float*, int64_t, int rows, bool) { return (1u << rows) - 1u; }
}  // namespace ember::cpu

#endif
