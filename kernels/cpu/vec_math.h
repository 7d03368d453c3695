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

}  // namespace ember::cpu
