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

// kernels/vulkan/elementwise.cc: UnaryOp
const uint OP_NEG = 0u;
const uint OP_ABS = 1u;
const uint OP_EXP = 2u;
const uint OP_LOG = 3u;
const uint OP_SQRT = 4u;
const uint OP_RSQRT = 5u;
const uint OP_SIN = 6u;
const uint OP_COS = 7u;
const uint OP_TANH = 8u;
const uint OP_SIGMOID = 9u;
const uint OP_RELU = 10u;
const uint OP_GELU = 11u;
const uint OP_GELU_TANH = 12u;
const uint OP_SILU = 13u;
const uint OP_ERF = 14u;
const uint OP_CLAMP = 15u;

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

float unary_f(float x) {
  if (OP == OP_NEG) return 0.0 - x;
  if (OP == OP_ABS) return abs(x);
  if (OP == OP_EXP) return exp(x);
  if (OP == OP_LOG) return log(x);
  if (OP == OP_SQRT) return sqrt(x);
  if (OP == OP_RSQRT) return 1.0 / sqrt(x);
  if (OP == OP_SIN) return sin(x);
  if (OP == OP_COS) return cos(x);
  if (OP == OP_TANH) return tanh_(x);
  if (OP == OP_SIGMOID) return 1.0 / (1.0 + exp(-x));
  if (OP == OP_RELU) return isnan(x) || x > 0.0 ? x : 0.0;
  if (OP == OP_GELU) return 0.5 * x * (1.0 + erf_(x * 0.70710678118654752));
  if (OP == OP_GELU_TANH) return 0.5 * x * (1.0 + tanh_(0.79788456080286536 * (x + 0.044715 * x * x * x)));
  if (OP == OP_SILU) return x / (1.0 + exp(-x));
  if (OP == OP_ERF) return erf_(x);
  if (OP == OP_CLAMP) {
    if (isnan(x)) return x;
    if (p.has_min != 0u && x < uintBitsToFloat(p.min_lo)) x = uintBitsToFloat(p.min_lo);
    if (p.has_max != 0u && x > uintBitsToFloat(p.max_lo)) x = uintBitsToFloat(p.max_lo);
    return x;
  }
  return x;
}

int unary_i(int x) {
  if (OP == OP_NEG) return 0 - x;
  if (OP == OP_ABS) return x < 0 ? 0 - x : x;
  if (OP == OP_RELU) return x > 0 ? x : 0;
  if (OP == OP_CLAMP) {
    if (p.has_min != 0u && x < int(p.min_lo)) x = int(p.min_lo);
    if (p.has_max != 0u && x > int(p.max_lo)) x = int(p.max_lo);
    return x;
  }
  return x;
}

#if EMBER_EXT
int64_t unary_l(int64_t x) {
  if (OP == OP_NEG) return 0 - x;
  if (OP == OP_ABS) return x < 0 ? 0 - x : x;
  if (OP == OP_RELU) return x > 0 ? x : 0;
  if (OP == OP_CLAMP) {
    const int64_t lo = int64_t((uint64_t(p.min_hi) << 32) | uint64_t(p.min_lo));
    const int64_t hi = int64_t((uint64_t(p.max_hi) << 32) | uint64_t(p.max_lo));
    if (p.has_min != 0u && x < lo) x = lo;
    if (p.has_max != 0u && x > hi) x = hi;
    return x;
  }
  return x;
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
