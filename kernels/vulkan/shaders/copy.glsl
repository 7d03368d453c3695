// Copy: out = src converted to out's dtype (as C++ casts), both strided.
// Bindings: 0 out, 1 src.
#define EMBER_OPERANDS 2
#define EMBER_PUSH_EXTRA
#include "elementwise.glsl"

EMBER_OPERAND(0)
EMBER_OPERAND(1)

void main() {
  const uint i = flat_index();
  if (i >= p.n) return;
  const uvec4 c = coords(i);
  const uint o = offset_of(0u, c), s = offset_of(1u, c);
  if (is_float_type(DT1)) {
    store_f0(o, load_f1(s));
#if EMBER_EXT
  } else if (DT1 == DT_I64) {
    store_l0(o, load_l1(s));
#endif
  } else {
    store_i0(o, load_i1(s));
  }
}
