// Where: out = cond ? a : b, every operand strided (broadcasts have stride 0);
// a, b and out share a dtype, cond is bool (1 byte: the ext variant only).
// Bindings: 0 out, 1 a, 2 b, 3 cond.
#define EMBER_OPERANDS 4
#define EMBER_PUSH_EXTRA
#include "elementwise.glsl"

EMBER_OPERAND(0)
EMBER_OPERAND(1)
EMBER_OPERAND(2)
EMBER_OPERAND(3)

void main() {
  const uint i = flat_index();
  if (i >= p.n) return;
  const uvec4 c = coords(i);
  const uint o = offset_of(0u, c);
  const bool take_a = load_i3(offset_of(3u, c)) != 0;
  const uint s = offset_of(take_a ? 1u : 2u, c);
  if (is_float_type(DT1)) {
    store_f0(o, take_a ? load_f1(s) : load_f2(s));
#if EMBER_EXT
  } else if (DT1 == DT_I64) {
    store_l0(o, take_a ? load_l1(s) : load_l2(s));
#endif
  } else {
    store_i0(o, take_a ? load_i1(s) : load_i2(s));
  }
}
