// GELU (erf form) on AVX-512 (gelu.h): elementwise.cc's GeluF, x * (erf(x /
// sqrt 2) + 1) / 2 with fast_erf's rational approximation (vec_math.h), in
// fewer multiplies (the pipes' limit here): x / sqrt 2 as a product, not
// div_rn's correctly rounded quotient (an ulp of erf's argument), the
// rational's division as a reciprocal estimate and one Newton step (vrcp14ps:
// 2^-14, then about 2^-28 relative), x / 2 * erf + x / 2 in one multiply-add.
// ops_bench gelu_128x1536, one thread, Zen 4: 92.8 -> 76 us.
#include "kernels/cpu/gelu.h"

// (GCC: clang, which the fuzz builds use, has no "#pragma GCC target"; there
// every element goes to elementwise.cc's own.)
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC push_options
#pragma GCC target("avx512f")

namespace ember::cpu {
namespace {

__attribute__((always_inline)) inline __m512 gelu16(__m512 x) {
  // fast_erf of x / sqrt 2, as x times 1 / sqrt 2, clamped to [-4, 4] (max
  // and min return their second operand, u, where it is NaN).
  const __m512 u = _mm512_mul_ps(x, _mm512_set1_ps(0.707106769f));
  const __m512 c = _mm512_min_ps(_mm512_set1_ps(4.0f), _mm512_max_ps(_mm512_set1_ps(-4.0f), u));
  const __m512 c2 = _mm512_mul_ps(c, c);
  __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(-2.72614225801306e-10f), c2, _mm512_set1_ps(2.77068142495902e-08f));
  p = _mm512_fmadd_ps(p, c2, _mm512_set1_ps(-2.10102402082508e-06f));
  p = _mm512_fmadd_ps(p, c2, _mm512_set1_ps(-5.69250639462346e-05f));
  p = _mm512_fmadd_ps(p, c2, _mm512_set1_ps(-7.34990630326855e-04f));
  p = _mm512_fmadd_ps(p, c2, _mm512_set1_ps(-2.95459980854025e-03f));
  p = _mm512_fmadd_ps(p, c2, _mm512_set1_ps(-1.60960333262415e-02f));
  __m512 den = _mm512_fmadd_ps(_mm512_set1_ps(-1.45660718464996e-05f), c2, _mm512_set1_ps(-2.13374055278905e-04f));
  den = _mm512_fmadd_ps(den, c2, _mm512_set1_ps(-1.68282697438203e-03f));
  den = _mm512_fmadd_ps(den, c2, _mm512_set1_ps(-7.37332916720468e-03f));
  den = _mm512_fmadd_ps(den, c2, _mm512_set1_ps(-1.42647390514189e-02f));
  __m512 inv = _mm512_rcp14_ps(den);
  inv = _mm512_mul_ps(inv, _mm512_fnmadd_ps(den, inv, _mm512_set1_ps(2.0f)));  // one Newton step
  __m512 erf = _mm512_mul_ps(_mm512_mul_ps(c, p), inv);
  // Clamped lanes (c is +-4) exactly +-1, as the division gives them (the
  // estimate's last place would leave x / 2 * (erf + 1) a huge x's sliver, not 0).
  erf = _mm512_mask_mul_ps(erf, _mm512_cmp_ps_mask(c, u, _CMP_NEQ_UQ), c, _mm512_set1_ps(0.25f));
  const __m512 half = _mm512_mul_ps(x, _mm512_set1_ps(0.5f));
  return _mm512_fmadd_ps(half, erf, half);  // x / 2 * (erf + 1)
}

}  // namespace
}  // namespace ember::cpu

#pragma GCC pop_options

namespace ember::cpu {

#pragma GCC push_options
#pragma GCC target("avx512f")
static void gelu_rows(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, gelu16(_mm512_loadu_ps(x + i)));
  if (i < n) {
    const __mmask16 tail = static_cast<__mmask16>((1u << (n - i)) - 1u);
    _mm512_mask_storeu_ps(y + i, tail, gelu16(_mm512_maskz_loadu_ps(tail, x + i)));
  }
}
#pragma GCC pop_options

bool gelu_avx512(const float* x, float* y, int64_t n) {
  static const bool usable = __builtin_cpu_supports("avx512f");
  if (!usable) return false;
  gelu_rows(x, y, n);
  return true;
}

}  // namespace ember::cpu

#pragma GCC diagnostic pop

#else

namespace ember::cpu {
bool gelu_avx512(const float*, float*, int64_t) { return false; }
}  // namespace ember::cpu

#endif
