// Binary elementwise ops with broadcasting by strides (a broadcast operand has
// stride 0), one per specialization (OP); a and b share a dtype, the output
// has it too, or bool for the comparisons. Floating types compute in float32
// (float16 too); int32, bool and the 8-bit types in int32 (stores wrap; bool
// stores `!= 0`, so add is or, mul is and); int64 in int64.
// Bindings: 0 out, 1 a, 2 b.
#define EMBER_OPERANDS 3
#define EMBER_PUSH_EXTRA
#include "elementwise.glsl"

EMBER_OPERAND(0)
EMBER_OPERAND(1)
EMBER_OPERAND(2)

// OP_<NAME>: the OpKind ids (ops.glsl, generated from runtime/graph/ops.def).
#include "ops.glsl"

bool is_compare() { return OP >= OP_EQ && OP <= OP_GE; }

// std::pow's special cases (C99 F.9.4.4), else exp2(b * log2|a|).
float pow_f(float a, float b) {
  if (b == 0.0 || a == 1.0) return 1.0;
  if (isnan(a) || isnan(b)) return a + b;
  const bool b_integer = floor(b) == b && !isinf(b);
  const bool b_odd = b_integer && mod(b, 2.0) == 1.0;
  const float inf = uintBitsToFloat(0x7f800000u);
  if (isinf(b)) {
    const float m = abs(a);
    if (m == 1.0) return 1.0;
    return (m < 1.0) == (b > 0.0) ? 0.0 : inf;
  }
  if (a == 0.0) return b > 0.0 ? (b_odd ? a : 0.0) : (b_odd ? 1.0 / a : inf);
  if (isinf(a)) {
    const float r = b > 0.0 ? inf : 0.0;
    return a < 0.0 && b_odd ? -r : r;
  }
  if (a < 0.0) {
    if (!b_integer) return uintBitsToFloat(0x7fc00000u);
    const float r = exp2(b * log2(-a));
    return b_odd ? -r : r;
  }
  return exp2(b * log2(a));
}

float binary_f(float a, float b) {
  if (OP == OP_ADD) return a + b;
  if (OP == OP_SUB) return a - b;
  if (OP == OP_MUL) return a * b;
  if (OP == OP_DIV) return a / b;
  if (OP == OP_POW) return pow_f(a, b);
  if (OP == OP_MAXIMUM) return isnan(a) ? a : isnan(b) ? b : a > b ? a : b;
  if (OP == OP_MINIMUM) return isnan(a) ? a : isnan(b) ? b : a < b ? a : b;
  return 0.0;
}

bool compare_f(float a, float b) {
  if (OP == OP_EQ) return a == b;
  if (OP == OP_NE) return !(a == b);
  if (OP == OP_LT) return a < b;
  if (OP == OP_LE) return a <= b;
  if (OP == OP_GT) return a > b;
  return a >= b;
}

// Integer powers as kernels/ref (a negative exponent: 1, +-1 or 0).
int pow_i(int a, int b) {
  if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) != 0 ? -1 : 1) : 0;
  int r = 1;
  while (b != 0) {
    if ((b & 1) != 0) r *= a;
    a *= a;
    b >>= 1;
  }
  return r;
}

int binary_i(int a, int b) {
  if (OP == OP_ADD) return a + b;
  if (OP == OP_SUB) return a - b;
  if (OP == OP_MUL) return a * b;
  if (OP == OP_POW) return pow_i(a, b);
  if (OP == OP_MAXIMUM) return max(a, b);
  if (OP == OP_MINIMUM) return min(a, b);
  return 0;
}

bool compare_i(int a, int b) {
  if (OP == OP_EQ) return a == b;
  if (OP == OP_NE) return a != b;
  if (OP == OP_LT) return a < b;
  if (OP == OP_LE) return a <= b;
  if (OP == OP_GT) return a > b;
  return a >= b;
}

#if EMBER_EXT
int64_t pow_l(int64_t a, int64_t b) {
  if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) != 0 ? -1 : 1) : 0;
  int64_t r = 1;
  while (b != 0) {
    if ((b & 1) != 0) r *= a;
    a *= a;
    b >>= 1;
  }
  return r;
}

int64_t binary_l(int64_t a, int64_t b) {
  if (OP == OP_ADD) return a + b;
  if (OP == OP_SUB) return a - b;
  if (OP == OP_MUL) return a * b;
  if (OP == OP_POW) return pow_l(a, b);
  if (OP == OP_MAXIMUM) return max(a, b);
  if (OP == OP_MINIMUM) return min(a, b);
  return 0;
}

bool compare_l(int64_t a, int64_t b) {
  if (OP == OP_EQ) return a == b;
  if (OP == OP_NE) return a != b;
  if (OP == OP_LT) return a < b;
  if (OP == OP_LE) return a <= b;
  if (OP == OP_GT) return a > b;
  return a >= b;
}
#endif

void main() {
  const uint i = flat_index();
  if (i >= p.n) return;
  const uvec4 c = coords(i);
  const uint o = offset_of(0u, c), ia = offset_of(1u, c), ib = offset_of(2u, c);
  if (is_float_type(DT1)) {
    const float a = load_f1(ia), b = load_f2(ib);
    if (is_compare()) {
      store_i0(o, compare_f(a, b) ? 1 : 0);
    } else {
      store_f0(o, binary_f(a, b));
    }
#if EMBER_EXT
  } else if (DT1 == DT_I64) {
    const int64_t a = load_l1(ia), b = load_l2(ib);
    if (is_compare()) {
      store_i0(o, compare_l(a, b) ? 1 : 0);
    } else {
      store_l0(o, binary_l(a, b));
    }
#endif
  } else {
    const int a = load_i1(ia), b = load_i2(ib);
    if (is_compare()) {
      store_i0(o, compare_i(a, b) ? 1 : 0);
    } else {
      store_i0(o, binary_i(a, b));
    }
  }
}
