// Pad of ELEM values (float32 or float16; pad.comp / pad_f16.comp): one
// invocation per output element, any strides in and out, up to 5 dims. Each
// output index maps to one input index per dimension as
// kernels/ref/pad_index.h (reflect, replicate, circular; constant mode writes
// the value where an index falls outside the input).
#include "common.glsl"

layout(std430, set = 0, binding = 0) readonly buffer In { ELEM x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Out { ELEM y[]; };
layout(push_constant) uniform Push {
  uint x_first, y_first;
  uint total;
  uint mode;  // 0 constant, 1 reflect, 2 replicate, 3 circular (PadMode)
  int rank;
  int osize[5];
  int isize[5];
  int before[5];
  int xs[5];
  int ys[5];
  float value;
} p;

#include "pad_source.glsl"

void main() {
  const uint f = flat_index();
  if (f >= p.total) return;
  int rest = int(f);
  int x_off = 0, y_off = 0;
  bool inside = true;
  for (int d = p.rank - 1; d >= 0; --d) {
    const int o = rest % p.osize[d];
    rest /= p.osize[d];
    const int i = source(d, o);
    inside = inside && i >= 0;
    x_off += i * p.xs[d];
    y_off += o * p.ys[d];
  }
  if (inside) {
    y[p.y_first + uint(y_off)] = x[p.x_first + uint(x_off)];
  } else {
    y[p.y_first + uint(y_off)] = ELEM(p.value);
  }
}
