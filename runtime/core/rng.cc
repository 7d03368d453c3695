#include "runtime/core/rng.h"

#include <cmath>
#include <cstring>

namespace ember {

double Generator::normal_double() {
  if (next_double_normal_) {
    const double v = *next_double_normal_;
    next_double_normal_.reset();
    return v;
  }
  const double u1 = uniform_double();
  const double u2 = uniform_double();
  const double r = std::sqrt(-2.0 * std::log(1.0 - u2));
  const double theta = 2.0 * M_PI * u1;
  next_double_normal_ = r * std::sin(theta);
  return r * std::cos(theta);
}

namespace {

// One lane of PyTorch's vector code, operation for operation: GCC built it
// with -mfma, fusing each multiply whose only use is an add or subtract (the
// first such multiply when two feed one add) into an FMA; std::fma stands for
// those, and no other contraction may happen (fp-contract=off).
#if defined(__GNUC__) && !defined(__clang__)
#define EMBER_NO_CONTRACT __attribute__((optimize("fp-contract=off")))
#else
#define EMBER_NO_CONTRACT
#endif

uint32_t bits_of(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}
float float_of(uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

// Cephes logf for x in (0, 1] (the uniforms' complement).
EMBER_NO_CONTRACT float cephes_log(float x) {
  x = std::fmax(x, float_of(0x00800000u));  // no denormals
  const int32_t exponent = static_cast<int32_t>(bits_of(x) >> 23) - 0x7f;
  x = float_of((bits_of(x) & ~0x7f800000u) | bits_of(0.5f));  // mantissa in [0.5, 1)
  float e = static_cast<float>(exponent) + 1.0f;
  const bool low = x < 0.707106781186547524f;
  const float tmp = low ? x : 0.0f;
  x = x - 1.0f;
  e = e - (low ? 1.0f : 0.0f);
  x = x + tmp;
  const float z = x * x;
  static const float p[] = {7.0376836292E-2f,  -1.1514610310E-1f, 1.1676998740E-1f,
                            -1.2420140846E-1f, 1.4249322787E-1f,  -1.6668057665E-1f,
                            2.0000714765E-1f,  -2.4999993993E-1f, 3.3333331174E-1f};
  float y = p[0];
  for (int i = 1; i < 9; ++i) y = std::fma(y, x, p[i]);
  y = y * x;
  const float e_q1 = e * -2.12194440e-4f;
  y = std::fma(y, z, e_q1);
  y = std::fma(-z, 0.5f, y);
  const float sum = x + y;
  return std::fma(e, 0.693359375f, sum);
}

// Cephes sinf and cosf of x >= 0 (x = 2 pi u, below 8192), one reduction.
EMBER_NO_CONTRACT void cephes_sincos(float x, float* s, float* c) {
  const float scaled = x * 1.27323954473516f;  // 4 / pi
  int32_t j = static_cast<int32_t>(scaled);
  j = (j + 1) & ~1;
  const float y = static_cast<float>(j);
  const bool sin_negative = (j & 4) != 0;
  const bool sin_from_sin_poly = (j & 2) == 0;
  const bool cos_negative = ((~(j - 2)) & 4) != 0;
  x = std::fma(y, -0.78515625f, x);  // extended-precision reduction
  x = std::fma(y, -2.4187564849853515625e-4f, x);
  x = std::fma(y, -3.77489497744594108e-8f, x);
  const float z = x * x;
  float p1 = std::fma(2.443315711809948E-005f, z, -1.388731625493765E-003f);  // cos on [0, pi/4]
  p1 = std::fma(p1, z, 4.166664568298827E-002f);
  p1 = p1 * z;
  const float half_z = z * 0.5f;
  p1 = std::fma(p1, z, -half_z);
  p1 = p1 + 1.0f;
  float p2 = std::fma(-1.9515295891E-4f, z, 8.3321608736E-3f);  // sin on [0, pi/4]
  p2 = std::fma(p2, z, -1.6666654611E-1f);
  p2 = p2 * z;
  p2 = std::fma(p2, x, x);
  // (The vector code selects with masks and adds zeros: the same values.)
  const float sin_v = sin_from_sin_poly ? p2 : p1;
  const float cos_v = sin_from_sin_poly ? p1 : p2;
  *s = float_of(bits_of(sin_v + 0.0f) ^ (sin_negative ? 0x80000000u : 0u));
  *c = float_of(bits_of(cos_v + 0.0f) ^ (cos_negative ? 0x80000000u : 0u));
}

}  // namespace

EMBER_NO_CONTRACT void normal_fill_16(float* d) {
  for (int j = 0; j < 8; ++j) {
    const float u1 = 1.0f - d[j];
    const float u2 = d[j + 8];
    const float radius = std::sqrt(-2.0f * cephes_log(u1));
    const float theta = static_cast<float>(2.0 * M_PI) * u2;
    float s, c;
    cephes_sincos(theta, &s, &c);
    d[j] = radius * c + 0.0f;  // fmadd(n, std 1, mean 0): -0 becomes +0
    d[j + 8] = radius * s + 0.0f;
  }
}

Generator& default_generator() {
  static Generator g;
  return g;
}

void manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(default_generator().mutex());
  default_generator().manual_seed(seed);
}

}  // namespace ember
