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

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include <cmath>
#include <limits>

// GCC 12's intrinsics headers (max, scalef, roundscale, cvtps_pd) trip
// -Wmaybe-uninitialized on their own undefined operands, as in depthwise.cc.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace ember::cpu {
namespace {

#define RT_AVX512 __attribute__((target("avx512f")))

// exp(c) for c <= 0 (or -inf) as fast_exp computes it. fast_exp clamps c
// at -104, where its result, 0.97 * 2^-150, rounds to 0: those lanes are set
// to 0 here without computing them, as an instruction whose result underflows
// takes a microcode assist: rows with BERT's masked scores (-10000) ran 3x
// slower (ops_bench softmax_masked_12x128x128, one thread: 330 -> 113 us).
RT_AVX512 __attribute__((always_inline)) inline __m512 exp_nonpositive(__m512 c) {
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

// The lanes [0, 8) and [8, 16) of v in double.
RT_AVX512 __attribute__((always_inline)) inline __m512d low_pd(__m512 v) {
  return _mm512_cvtps_pd(_mm512_castps512_ps256(v));
}
RT_AVX512 __attribute__((always_inline)) inline __m512d high_pd(__m512 v) {
  return _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
}

// The maximum of a row; *nan: whether it holds a NaN.
RT_AVX512 __attribute__((always_inline)) inline float row_max(const float* x, int64_t n, bool* nan) {
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

// R rows of n values (x and y rows n apart) whose maxima m[] are finite, the
// rows' steps interleaved: one row's steps are chains of dependent adds (its
// sum's lanes, then the 16 lanes in order) that left the core mostly idle.
// ops_bench softmax_12x128x128 on a Xeon, one thread: 101 us a row at a
// time, 86 two rows, 80 four, 80 eight. Each row's values are those of one
// row alone.
template <int R, bool kLog>
RT_AVX512 void rows(const float* __restrict x, float* __restrict y, int64_t n, const float* m) {
  const int64_t body = n / 16 * 16;
  const __mmask16 tail = static_cast<__mmask16>((1u << (n - body)) - 1u);
  // y = exp(x - m); the sum in double, lane j adding the values at j mod 16
  // in order, the lanes then added in order and the tail after them (row_sum).
  __m512 vm[R];
  __m512d lo[R], hi[R];
  for (int q = 0; q < R; ++q) {
    vm[q] = _mm512_set1_ps(m[q]);
    lo[q] = hi[q] = _mm512_setzero_pd();
  }
  for (int64_t i = 0; i < body; i += 16) {
    for (int q = 0; q < R; ++q) {
      const __m512 e = exp_nonpositive(_mm512_sub_ps(_mm512_loadu_ps(x + q * n + i), vm[q]));
      _mm512_storeu_ps(y + q * n + i, e);
      lo[q] = _mm512_add_pd(lo[q], low_pd(e));
      hi[q] = _mm512_add_pd(hi[q], high_pd(e));
    }
  }
  alignas(64) double lanes[R][16];
  double sum[R];
  for (int q = 0; q < R; ++q) {
    _mm512_store_pd(lanes[q], lo[q]);
    _mm512_store_pd(lanes[q] + 8, hi[q]);
    sum[q] = 0;
  }
  for (int j = 0; j < 16; ++j) {
    for (int q = 0; q < R; ++q) sum[q] += lanes[q][j];
  }
  if (tail != 0) {
    for (int q = 0; q < R; ++q) {
      alignas(64) float t[16];
      _mm512_store_ps(t, exp_nonpositive(_mm512_sub_ps(_mm512_maskz_loadu_ps(tail, x + q * n + body), vm[q])));
      _mm512_mask_storeu_ps(y + q * n + body, tail, _mm512_load_ps(t));
      for (int64_t j = 0; j < n - body; ++j) sum[q] += static_cast<double>(t[j]);
    }
  }

  if (kLog) {
    for (int q = 0; q < R; ++q) {
      const __m512 shift = _mm512_set1_ps(static_cast<float>(std::log(sum[q])));
      const float* xq = x + q * n;
      float* yq = y + q * n;
      for (int64_t i = 0; i < body; i += 16)
        _mm512_storeu_ps(yq + i, _mm512_sub_ps(_mm512_sub_ps(_mm512_loadu_ps(xq + i), vm[q]), shift));
      if (tail != 0) {
        const __m512 v = _mm512_maskz_loadu_ps(tail, xq + body);
        _mm512_mask_storeu_ps(yq + body, tail, _mm512_sub_ps(_mm512_sub_ps(v, vm[q]), shift));
      }
    }
  } else {
    __m512 inv[R];
    for (int q = 0; q < R; ++q) inv[q] = _mm512_set1_ps(static_cast<float>(1.0 / sum[q]));
    for (int64_t i = 0; i < body; i += 16) {
      for (int q = 0; q < R; ++q) {
        _mm512_storeu_ps(y + q * n + i, _mm512_mul_ps(_mm512_loadu_ps(y + q * n + i), inv[q]));
      }
    }
    if (tail != 0) {
      for (int q = 0; q < R; ++q) {
        float* yq = y + q * n + body;
        _mm512_mask_storeu_ps(yq, tail, _mm512_mul_ps(_mm512_maskz_loadu_ps(tail, yq), inv[q]));
      }
    }
  }
}

// Up to kSoftmaxRows rows; the mask of those left to the caller (a NaN, or no finite maximum).
template <bool kLog>
RT_AVX512 unsigned block(const float* x, float* y, int64_t n, int count) {
  float m[kSoftmaxRows];
  unsigned left = 0;
  for (int q = 0; q < count; ++q) {
    bool nan = false;
    m[q] = row_max(x + q * n, n, &nan);
    if (nan || !std::isfinite(m[q])) left |= 1u << q;
  }
  if (left == 0 && count == kSoftmaxRows) {
    rows<kSoftmaxRows, kLog>(x, y, n, m);
    return 0;
  }
  for (int q = 0; q < count; ++q) {
    if ((left >> q & 1) == 0) rows<1, kLog>(x + q * n, y + q * n, n, m + q);
  }
  return left;
}

}  // namespace

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
