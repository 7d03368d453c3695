// The vectorizable float32 math of the CPU kernels (kernels/cpu/vec_math.h:
// fast_tanh, fast_expm1, fast_log1p, behind the float32 Tanh, Expm1, Log1p,
// Elu, Selu, Celu, Softplus and Mish loops) against libm in double precision,
// rounded to float: every 251st float of each function's domain (about 17
// million inputs, both signs, subnormals to the largest finite float), the
// largest relative error in ulp of the rounded result, and the special values
// exactly (NaN, +-inf, +-0, -1 and below for log1p). Measured: tanh 1.29,
// expm1 1.68, log1p 1.44 ulp. div_rn: bitwise the division over every
// mantissa, for a set of divisors.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/cpu/vec_math.h"
#include "tests/harness/testing.h"

using namespace ember::cpu;

namespace {

float from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

// The error of got against the float-rounded want, in units of want's last
// place (want's float spacing; the smallest normal's for subnormal want).
double ulp_error(float got, double want_d) {
  const float want = static_cast<float>(want_d);
  if (std::isinf(want) || want == 0.0f) return got == want ? 0.0 : INFINITY;
  const float mag = std::max(std::fabs(want), std::numeric_limits<float>::min());
  const double ulp = std::nextafter(mag, INFINITY) - mag;
  return std::fabs(static_cast<double>(got) - want_d) / ulp;
}

// The largest ulp error of f against ref over every 251st finite float
// (both signs) inside [lo, hi].
template <typename F, typename R>
double sweep(F f, R ref, double lo, double hi) {
  double worst = 0.0;
  for (uint64_t b = 0; b < 0x7f800000u; b += 251) {
    for (const float x : {from_bits(static_cast<uint32_t>(b)), -from_bits(static_cast<uint32_t>(b))}) {
      if (x < lo || x > hi) continue;
      worst = std::max(worst, ulp_error(f(x), ref(static_cast<double>(x))));
    }
  }
  return worst;
}

constexpr float kInf = std::numeric_limits<float>::infinity();

// The largest absolute error of f against ref over every 251st finite float.
template <typename F, typename R>
double sweep_abs(F f, R ref) {
  double worst = 0.0;
  for (uint64_t b = 0; b < 0x7f800000u; b += 251) {
    for (const float x : {from_bits(static_cast<uint32_t>(b)), -from_bits(static_cast<uint32_t>(b))})
      worst = std::max(worst, std::fabs(static_cast<double>(f(x)) - ref(static_cast<double>(x))));
  }
  return worst;
}

bool same(float a, float b) { return (std::isnan(a) && std::isnan(b)) || (a == b && std::signbit(a) == std::signbit(b)); }

}  // namespace

TEST_CASE("fast_tanh: within 2 ulp of tanh over every float; +-inf, +-0, NaN") {
  const double worst = sweep(fast_tanh, [](double x) { return std::tanh(x); }, -kInf, kInf);
  MESSAGE("fast_tanh: max error " << worst << " ulp");
  CHECK(worst <= 2.0);  // measured: see the MESSAGE
  CHECK(fast_tanh(kInf) == 1.0f);
  CHECK(fast_tanh(-kInf) == -1.0f);
  CHECK(fast_tanh(100.0f) == 1.0f);
  CHECK(same(fast_tanh(-0.0f), -0.0f));
  CHECK(std::isnan(fast_tanh(std::nanf(""))));
}

TEST_CASE("rational_tanh and rational_sigmoid: within 4e-7 absolute over every float; +-inf, +-0, NaN") {
  const double tanh_worst = sweep_abs(rational_tanh, [](double x) { return std::tanh(x); });
  const double sigmoid_worst = sweep_abs(rational_sigmoid, [](double x) { return 1.0 / (1.0 + std::exp(-x)); });
  MESSAGE("rational_tanh: max abs error " << tanh_worst << ", rational_sigmoid: " << sigmoid_worst);
  CHECK(tanh_worst <= 4e-7);  // measured: see the MESSAGE
  CHECK(sigmoid_worst <= 2e-7);
  CHECK(rational_tanh(kInf) == 1.0f);
  CHECK(rational_tanh(-kInf) == -1.0f);
  CHECK(same(rational_tanh(-0.0f), -0.0f));
  CHECK(rational_tanh(1e-30f) == 1e-30f);
  CHECK(std::isnan(rational_tanh(std::nanf(""))));
  CHECK(rational_sigmoid(kInf) == 1.0f);
  CHECK(rational_sigmoid(-kInf) == 0.0f);
  CHECK(rational_sigmoid(0.0f) == 0.5f);
  CHECK(std::isnan(rational_sigmoid(std::nanf(""))));
}

TEST_CASE("fast_expm1: within 2 ulp of expm1 where the result is finite; overflow to inf, -1 below") {
  const double worst = sweep(fast_expm1, [](double x) { return std::expm1(x); }, -kInf, 88.0);
  MESSAGE("fast_expm1: max error " << worst << " ulp");
  CHECK(worst <= 2.0);  // measured: see the MESSAGE
  CHECK(fast_expm1(kInf) == kInf);
  CHECK(fast_expm1(100.0f) == kInf);
  CHECK(fast_expm1(-kInf) == -1.0f);
  CHECK(fast_expm1(-100.0f) == -1.0f);
  CHECK(same(fast_expm1(-0.0f), -0.0f));
  CHECK(fast_expm1(1e-30f) == 1e-30f);
  CHECK(std::isnan(fast_expm1(std::nanf(""))));
}

TEST_CASE("fast_log1p: within 2 ulp of log1p over (-1, inf); -1 gives -inf, below -1 NaN") {
  const double worst = sweep(fast_log1p, [](double x) { return std::log1p(x); }, -1.0 + 0x1p-24, kInf);
  MESSAGE("fast_log1p: max error " << worst << " ulp");
  CHECK(worst <= 2.0);  // measured: see the MESSAGE
  CHECK(fast_log1p(kInf) == kInf);
  CHECK(fast_log1p(-1.0f) == -kInf);
  CHECK(std::isnan(fast_log1p(-1.5f)));
  CHECK(std::isnan(fast_log1p(-kInf)));
  CHECK(std::isnan(fast_log1p(std::nanf(""))));
  CHECK(same(fast_log1p(-0.0f), -0.0f));
  CHECK(fast_log1p(1e-30f) == 1e-30f);
  CHECK(fast_log1p(3.0e38f) == static_cast<float>(std::log1p(3.0e38)));
}

TEST_CASE("div_rn: bitwise x / d for every float mantissa, over normal quotients, for a set of divisors") {
  // x in [1, 2), every mantissa (scaling x by a power of two scales both
  // results alike while the quotient stays normal), against the division,
  // for GELU's sqrt 2, attention's sqrt 32, divisors whose reciprocal rounds
  // up or down, mantissas of all ones and of one ulp over 1, and 32 more
  // spread over the mantissas; then both signs of x and d.
  std::vector<float> divisors = {1.41421354f, 5.65685415f, 3.0f, 7.0f, 0.1f, 1.99999988f, 1.00000012f, 1.5f, 8.0f,
                                 0.333333313f, 1e-30f, 3e30f};
  for (uint32_t i = 0; i < 32; ++i) divisors.push_back(from_bits(0x3f800000u | (i * 0x1fffffu % 0x800000u)));
  int64_t wrong = 0;
  for (const float d : divisors) {
    const float r = 1.0f / d;
    for (uint32_t m = 0; m < (1u << 23); ++m) {
      const float x = from_bits(127u << 23 | m);
      const float want = x / d;
      if (std::fabs(want) < std::numeric_limits<float>::min() || std::isinf(want)) continue;
      wrong += !same(div_rn(x, d, r), want);
    }
  }
  CHECK(wrong == 0);
  for (const float x : {2.5f, -2.5f}) {
    for (const float d : {1.41421354f, -1.41421354f}) CHECK(same(div_rn(x, d, 1.0f / d), x / d));
  }
  CHECK(std::isnan(div_rn(std::nanf(""), 1.41421354f, 1.0f / 1.41421354f)));
  CHECK(div_rn(kInf, 1.41421354f, 1.0f / 1.41421354f) == kInf);
  CHECK(div_rn(-kInf, 1.41421354f, 1.0f / 1.41421354f) == -kInf);
}
