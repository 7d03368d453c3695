// Fill: every element of a strided tensor set to one value: the float32 bits
// of the value for the floating types (float16 rounds exactly: the host passes
// a value float16 can hold), else its integer bits (lo, hi for int64).
// Binding 0: out.
#define EMBER_OPERANDS 1
#define EMBER_PUSH_EXTRA \
  uint lo;               \
  uint hi;
#include "elementwise.glsl"

EMBER_OPERAND(0)

void main() {
  const uint i = flat_index();
  if (i >= p.n) return;
  const uint o = offset_of(0u, coords(i));
  if (is_float_type(DT0)) {
    store_f0(o, uintBitsToFloat(p.lo));
#if EMBER_EXT
  } else if (DT0 == DT_I64) {
    store_l0(o, int64_t((uint64_t(p.hi) << 32) | uint64_t(p.lo)));
#endif
  } else {
    store_i0(o, int(p.lo));
  }
}
