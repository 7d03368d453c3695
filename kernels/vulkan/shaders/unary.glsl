// Unary elementwise ops, one per specialization (OP); input and output share
// a dtype. Floating types compute in float32 (float16 too); int32 and the
// 8-bit types in int32 (stores wrap), int64 in int64.
// Bindings: 0 out, 1 in.
#define EMBER_OPERANDS 2
#define EMBER_PUSH_EXTRA \
  uint has_min;          \
  uint has_max;          \
  uint min_lo;           \
  uint min_hi;           \
  uint max_lo;           \
  uint max_hi;
#include "elementwise.glsl"

EMBER_OPERAND(0)
EMBER_OPERAND(1)

// erf: the Taylor series below 0.5 (relative error < 1e-8 there), else
// 1 - erfc with Numerical Recipes' erfcc (fractional error < 1.2e-7).
float erf_(float x) {
  const float a = abs(x);
  if (a < 0.5) {
    const float z = x * x;
    return x * 1.1283791670955126 *
           (1.0 + z * (-1.0 / 3.0 + z * (1.0 / 10.0 + z * (-1.0 / 42.0 + z * (1.0 / 216.0 +
           z * (-1.0 / 1320.0 + z * (1.0 / 9360.0)))))));
  }
  const float t = 1.0 / (1.0 + 0.5 * a);
  const float erfc = t * exp(-a * a - 1.26551223 +
      t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (0.27886807 +
      t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))));
  const float r = 1.0 - erfc;
  return x < 0.0 ? -r : r;
}

// tanh as Cephes' tanhf: a polynomial below 0.625, else 1 - 2 / (e^2|x| + 1)
// (no inf / inf for large |x|, no cancellation near 0).
float tanh_(float x) {
  const float a = abs(x);
  if (a >= 0.625) {
    const float r = 1.0 - 2.0 / (exp(2.0 * a) + 1.0);
    return x < 0.0 ? -r : r;
  }
  const float z = x * x;
  return x + x * z *
         ((((-5.70498872745e-3 * z + 2.06390887954e-2) * z - 5.37397155531e-2) * z + 1.33314422036e-1) * z -
          3.33332819422e-1);
}

// log1p: 2 atanh(x / (2 + x)) as a series for |x| < 0.5 (|s| <= 1/3: relative
// error < 1e-8 after 8 terms), else log(1 + x) (no cancellation there).
float log1p(float x) {
  if (abs(x) >= 0.5 || isnan(x)) return log(1.0 + x);
  const float s = x / (2.0 + x), z = s * s;
  return 2.0 * s * (1.0 + z * (1.0 / 3.0 + z * (1.0 / 5.0 + z * (1.0 / 7.0 + z * (1.0 / 9.0 +
         z * (1.0 / 11.0 + z * (1.0 / 13.0 + z * (1.0 / 15.0))))))));
}

// exp as Cephes' expf: x = n ln2 + r with ln2 in two parts, a polynomial for
// e^r, then 2^n (about 1 ulp; lavapipe's exp, exp2(x log2 e), is 12 ulp off at
// x = 30, beyond the suite's bound for sinh, cosh, expm1).
float exp_(float x) {
  if (isnan(x)) return x;
  if (x > 88.72283905206835) return uintBitsToFloat(0x7f800000u);  // inf
  if (x < -103.97208) return 0.0;
  const float n = floor(1.44269504088896341 * x + 0.5);
  const float r = (x - n * 0.693359375) - n * -2.12194440e-4;
  const float p = (((((1.9875691500e-4 * r + 1.3981999507e-3) * r + 8.3334519073e-3) * r + 4.1665795894e-2) * r +
                    1.6666665459e-1) * r + 5.0000001201e-1) * r * r + r + 1.0;
  const int k = int(n), h = k / 2;
  return ldexp(ldexp(p, h), k - h);  // two steps: 2^128 itself is not a float
}

// expm1: Taylor to x^10 / 10! for |x| < 0.5 (relative error < 3e-10), else exp(x) - 1.
float expm1(float x) {
  if (abs(x) >= 0.5 || isnan(x)) return exp_(x) - 1.0;
  return x * (1.0 + x * (1.0 / 2.0 + x * (1.0 / 6.0 + x * (1.0 / 24.0 + x * (1.0 / 120.0 + x * (1.0 / 720.0 +
         x * (1.0 / 5040.0 + x * (1.0 / 40320.0 + x * (1.0 / 362880.0 + x * (1.0 / 3628800.0))))))))));
}

// sinh, cosh: glibc's forms on exp_ / expm1 (no cancellation near 0; e^(|x|/2)
// squared where e^|x| alone would overflow but the result does not).
float sinh_(float x) {
  const float a = abs(x);
  float s;
  if (a < 1.0) {
    const float t = expm1(a);
    s = 0.5 * (t + t / (t + 1.0));
  } else if (a < 88.0) {
    const float e = exp_(a);
    s = 0.5 * e - 0.5 / e;
  } else {
    const float e = exp_(0.5 * a);
    s = (0.5 * e) * e;
  }
  return x < 0.0 ? -s : s;
}
float cosh_(float x) {
  const float a = abs(x);
  if (a >= 88.0) {
    const float e = exp_(0.5 * a);
    return (0.5 * e) * e;
  }
  const float e = exp_(a);
  return 0.5 * e + 0.5 / e;
}

// asin, acos, atan as Cephes' asinf, acosf, atanf (relative error ~ 2e-7;
// the GLSL built-ins may be coarse polynomials).
float asin_(float x) {
  const float a = abs(x);
  if (a > 1.0) return uintBitsToFloat(0x7fc00000u);  // NaN
  float z, r;
  const bool big = a > 0.5;
  if (big) {
    z = 0.5 * (1.0 - a);
    r = sqrt(z);
  } else {
    z = a * a;
    r = a;
  }
  float p = ((((4.2163199048e-2 * z + 2.4181311049e-2) * z + 4.5470025998e-2) * z + 7.4953002686e-2) * z +
             1.6666752422e-1) * z * r + r;
  if (big) p = 1.5707963267948966 - 2.0 * p;
  return x < 0.0 ? -p : p;
}
float acos_(float x) {
  if (x < -0.5) return 3.14159265358979324 - 2.0 * asin_(sqrt(0.5 * (1.0 + x)));
  if (x > 0.5) return 2.0 * asin_(sqrt(0.5 * (1.0 - x)));
  return 1.5707963267948966 - asin_(x);
}
float atan_(float x) {
  float a = abs(x), y = 0.0;
  if (a > 2.414213562373095) {
    y = 1.5707963267948966;
    a = -1.0 / a;
  } else if (a > 0.4142135623730950) {
    y = 0.78539816339744831;
    a = (a - 1.0) / (a + 1.0);
  }
  const float z = a * a;
  y += (((8.05374449538e-2 * z - 1.38776856032e-1) * z + 1.99777106478e-1) * z - 3.33329491539e-1) * z * a + a;
  return x < 0.0 ? -y : y;
}

// The helpers ops.def's RT_UNARY formulas call (see the C++ ones in
// kernels/ref/elementwise_ops.h), then the formulas (ops.glsl, generated).
bool is_nan(float x) { return isnan(x); }
bool is_nan(int x) { return false; }
float wrap_sub(float a, float b) { return a - b; }
int wrap_sub(int a, int b) { return a - b; }
float abs_value(float x) { return abs(x); }
int abs_value(int x) { return x < 0 ? 0 - x : x; }
// floor, ceil, round (half to even): integers as they are; sign: NaN and -0 give +0.
float floor_value(float x) { return floor(x); }
int floor_value(int x) { return x; }
float ceil_value(float x) { return ceil(x); }
int ceil_value(int x) { return x; }
float round_even(float x) { return roundEven(x); }
int round_even(int x) { return x; }
float sign_value(float x) { return x > 0.0 ? 1.0 : (x < 0.0 ? -1.0 : 0.0); }
int sign_value(int x) { return x > 0 ? 1 : (x < 0 ? -1 : 0); }
#if EMBER_EXT
bool is_nan(int64_t x) { return false; }
int64_t wrap_sub(int64_t a, int64_t b) { return a - b; }
int64_t abs_value(int64_t x) { return x < 0 ? 0 - x : x; }
int64_t floor_value(int64_t x) { return x; }
int64_t ceil_value(int64_t x) { return x; }
int64_t round_even(int64_t x) { return x; }
int64_t sign_value(int64_t x) { return x > 0 ? 1 : (x < 0 ? -1 : 0); }
#endif
#define erf erf_
#define tanh tanh_
#define asin asin_
#define acos acos_
#define atan atan_
#define sinh sinh_
#define cosh cosh_
#define EMBER_UNARY_FORMULAS
#include "ops.glsl"
#undef cosh
#undef sinh
#undef atan
#undef acos
#undef asin
#undef tanh
#undef erf

// GeluParams::tanh_approximation: gelu's second code (kernels/vulkan/elementwise.cc).
const uint OP_GELU_TANH = OP_COUNT;

float unary_f(float x) {
  if (OP == OP_GELU) return 0.5 * x * (1.0 + erf_(x * 0.70710678118654752));
  if (OP == OP_GELU_TANH) return 0.5 * x * (1.0 + tanh_(0.79788456080286536 * (x + 0.044715 * x * x * x)));
  if (OP == OP_CLAMP) {
    if (isnan(x)) return x;
    if (p.has_min != 0u && x < uintBitsToFloat(p.min_lo)) x = uintBitsToFloat(p.min_lo);
    if (p.has_max != 0u && x > uintBitsToFloat(p.max_lo)) x = uintBitsToFloat(p.max_lo);
    return x;
  }
  return unary_formula_f(x);
}

int unary_i(int x) {
  if (OP == OP_CLAMP) {
    if (p.has_min != 0u && x < int(p.min_lo)) x = int(p.min_lo);
    if (p.has_max != 0u && x > int(p.max_lo)) x = int(p.max_lo);
    return x;
  }
  return unary_formula_i(x);
}

#if EMBER_EXT
int64_t unary_l(int64_t x) {
  if (OP == OP_CLAMP) {
    const int64_t lo = int64_t((uint64_t(p.min_hi) << 32) | uint64_t(p.min_lo));
    const int64_t hi = int64_t((uint64_t(p.max_hi) << 32) | uint64_t(p.max_lo));
    if (p.has_min != 0u && x < lo) x = lo;
    if (p.has_max != 0u && x > hi) x = hi;
    return x;
  }
  return unary_formula_l(x);
}
#endif

void main() {
  const uint i = flat_index();
  if (i >= p.n) return;
  const uvec4 c = coords(i);
  const uint o = offset_of(0u, c), s = offset_of(1u, c);
  if (is_float_type(DT1)) {
    store_f0(o, unary_f(load_f1(s)));
#if EMBER_EXT
  } else if (DT1 == DT_I64) {
    store_l0(o, unary_l(load_l1(s)));
#endif
  } else {
    store_i0(o, unary_i(load_i1(s)));
  }
}
