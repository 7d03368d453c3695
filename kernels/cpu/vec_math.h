// Vectorizable float32 math for the CPU kernels: branch-free scalar code that
// GCC turns into SIMD inside RT_SIMD_CLONES loops.
#pragma once

#include <cstdint>
#include <cstring>

namespace ember::cpu {

// exp(x) to about 1 ulp (Cephes' expf polynomial after a range reduction by
// ln 2). Handles NaN, +-inf, overflow to inf and gradual underflow to 0.
inline float fast_exp(float x) {
  const bool nan = x != x;
  float c = nan ? 0.0f : x;  // NaN lanes compute exp(0) and are replaced at the end
  c = c < -104.0f ? -104.0f : c;
  c = c > 89.0f ? 89.0f : c;
  const float n = __builtin_floorf(c * 1.44269504088896341f + 0.5f);
  float r = c - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  // 2^n in two factors, so results down to the subnormals stay exact.
  const int32_t ni = static_cast<int32_t>(n);
  const int32_t n1 = ni / 2, n2 = ni - n1;
  const uint32_t b1 = static_cast<uint32_t>(n1 + 127) << 23, b2 = static_cast<uint32_t>(n2 + 127) << 23;
  float s1, s2;
  std::memcpy(&s1, &b1, 4);
  std::memcpy(&s2, &b2, 4);
  const float result = p * s1 * s2;
  return nan ? x : result;
}

// x / d with r = 1 / d (rounded to float), bitwise the division wherever the
// quotient is a normal float: the product q = x r, then corrected by its
// residual x - q d, exact as a fused multiply-add (Markstein's theorem: r
// within half an ulp of 1 / d gives the correctly rounded quotient); an
// infinite or NaN x (a NaN residual) gives q, the division's value. Three
// multiply-adds where a vector division takes about 10 cycles; checked
// against the division for every float mantissa over a set of divisors
// (vec_math_test). Not the division's: the sign of a zero quotient, the
// last place of a subnormal one, an overflowing one (NaN).
inline float div_rn(float x, float d, float r) {
  const float q = x * r;
  const float residual = __builtin_fmaf(-q, d, x);
  return residual != residual ? q : __builtin_fmaf(residual, r, q);
}

// erf(x) within 4.5e-7 (absolute and relative) over the float range: Eigen's
// rational approximation (generic_fast_erf_float: odd degree-13 numerator,
// even degree-8 denominator) on x clamped to [-4, 4], where erf rounds to
// +-1. NaN stays NaN (both clamps compare false), +-inf gives +-1.
inline float fast_erf(float x) {
  float c = x < -4.0f ? -4.0f : x;
  c = c > 4.0f ? 4.0f : c;
  const float c2 = c * c;
  float p = -2.72614225801306e-10f;
  p = p * c2 + 2.77068142495902e-08f;
  p = p * c2 + -2.10102402082508e-06f;
  p = p * c2 + -5.69250639462346e-05f;
  p = p * c2 + -7.34990630326855e-04f;
  p = p * c2 + -2.95459980854025e-03f;
  p = p * c2 + -1.60960333262415e-02f;
  float q = -1.45660718464996e-05f;
  q = q * c2 + -2.13374055278905e-04f;
  q = q * c2 + -1.68282697438203e-03f;
  q = q * c2 + -7.37332916720468e-03f;
  q = q * c2 + -1.42647390514189e-02f;
  return c * p / q;
}

// expm1(x) to a few ulp: a degree-9 Taylor polynomial for |x| < 0.5 (its
// truncation is below 3e-10 there), exp(x) - 1 elsewhere (no cancellation
// worth a bit once |x| >= 0.5). NaN, +-inf and overflow as fast_exp.
inline float fast_expm1(float x) {
  float p = 1.0f / 362880;
  p = p * x + 1.0f / 40320;
  p = p * x + 1.0f / 5040;
  p = p * x + 1.0f / 720;
  p = p * x + 1.0f / 120;
  p = p * x + 1.0f / 24;
  p = p * x + 1.0f / 6;
  p = p * x + 0.5f;
  const float small = x * x == 0.0f ? x : x + x * x * p;  // x itself when x * x underflows: -0 kept
  const float big = fast_exp(x) - 1.0f;
  return (x < 0.5f && x > -0.5f) ? small : big;
}

// log1p(x) to a few ulp: u = 1 + x, Cephes' logf polynomial on u's mantissa,
// then the rounding of 1 + x corrected (log(u) - ((u - 1) - x) / u); x itself
// where u rounds to 1 (tiny x, -0 kept). -1 gives -inf, x < -1 and NaN give
// NaN, +inf gives +inf.
inline float fast_log1p(float x) {
  const float u = 1.0f + x;
  const bool finite_pos = u > 0.0f && u < __builtin_inff();
  const float uc = finite_pos ? u : 1.0f;  // other lanes compute log(1) and are replaced at the end
  uint32_t bits;
  std::memcpy(&bits, &uc, 4);
  float e = static_cast<float>(static_cast<int32_t>(bits >> 23) - 126);
  const uint32_t mbits = (bits & 0x007fffffu) | 0x3f000000u;  // mantissa in [0.5, 1)
  float m;
  std::memcpy(&m, &mbits, 4);
  const bool low = m < 0.707106781186547524f;
  e = low ? e - 1.0f : e;
  const float f = low ? m + m - 1.0f : m - 1.0f;
  const float z = f * f;
  float y = 7.0376836292e-2f;
  y = y * f + -1.1514610310e-1f;
  y = y * f + 1.1676998740e-1f;
  y = y * f + -1.2420140846e-1f;
  y = y * f + 1.4249322787e-1f;
  y = y * f + -1.6668057665e-1f;
  y = y * f + 2.0000714765e-1f;
  y = y * f + -2.4999993993e-1f;
  y = y * f + 3.3333331174e-1f;
  y = y * f * z;
  y = y + -2.12194440e-4f * e;
  y = y + -0.5f * z;
  const float log_u = f + y + 0.693359375f * e;
  const float r = log_u - ((uc - 1.0f) - x) / uc;
  const float special = u == 0.0f ? -__builtin_inff() : (u > 0.0f ? u : __builtin_nanf(""));  // -1, +inf, else NaN
  return u == 1.0f ? x : (finite_pos ? r : special);
}

// tanh(x) to a few ulp: Cephes' tanhf (an odd polynomial for |x| < 0.625,
// else 1 - 2 / (exp(2|x|) + 1) with x's sign). +-inf give +-1, NaN stays NaN.
inline float fast_tanh(float x) {
  const float a = x < 0.0f ? -x : x;
  const float s = x * x;
  float p = -5.70498872745e-3f;
  p = p * s + 2.06390887954e-2f;
  p = p * s + -5.37397155531e-2f;
  p = p * s + 1.33314422036e-1f;
  p = p * s + -3.33332819422e-1f;
  const float small = s == 0.0f ? x : x + x * s * p;  // x itself when x * x underflows: -0 kept
  const float t = 1.0f - 2.0f / (fast_exp(a + a) + 1.0f);
  const float big = x < 0.0f ? -t : t;
  return x != x ? x : (a < 0.625f ? small : big);
}

// tanh(x) within 4e-7 absolute (3.6e-7 measured): Eigen's rational approximation
// (generic_fast_tanh_float: odd degree-13 numerator, even degree-6
// denominator) on x clamped to +-7.9053111, where tanh rounds to +-1; x itself
// for |x| < 0.0004 (-0 kept). NaN stays NaN. One division and 11 multiply-adds
// where fast_tanh takes an exp, a division and a polynomial: the recurrent
// cells' gates (kernels/cpu/recurrence.cc) use it.
inline float rational_tanh(float x) {
  float c = x < -7.90531110763549805f ? -7.90531110763549805f : x;
  c = c > 7.90531110763549805f ? 7.90531110763549805f : c;
  const float c2 = c * c;
  float p = -2.76076847742355e-16f;
  p = p * c2 + 2.00018790482477e-13f;
  p = p * c2 + -8.60467152213735e-11f;
  p = p * c2 + 5.12229709037114e-08f;
  p = p * c2 + 1.48572235717979e-05f;
  p = p * c2 + 6.37261928875436e-04f;
  p = p * c2 + 4.89352455891786e-03f;
  float q = 1.19825839466702e-06f;
  q = q * c2 + 1.18534705686654e-04f;
  q = q * c2 + 2.26843463243900e-03f;
  q = q * c2 + 4.89352518554385e-03f;
  const bool small = x < 0.0004f && x > -0.0004f;
  const float t = c * p / q;
  return x != x ? x : (small ? x : t);
}

// The logistic function 1 / (1 + exp(-x)) as 0.5 + 0.5 tanh(x / 2)
// (rational_tanh): within 2e-7 absolute, 0 and 1 at the ends.
inline float rational_sigmoid(float x) { return 0.5f + 0.5f * rational_tanh(0.5f * x); }

}  // namespace ember::cpu
