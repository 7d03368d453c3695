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

}  // namespace ember::cpu
