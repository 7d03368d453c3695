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

// The input index read for output index o along dim d; -1: the constant value.
int source(int d, int o) {
  const int size = p.isize[d];
  const int b = p.before[d];
  const int a = p.osize[d] - size - b;
  const int x = o - b;
  if (p.mode == 0u) return x >= 0 && x < size ? x : -1;
  if (p.mode == 1u) {
    int r = abs(x);
    if (r >= size) r = 2 * (size - 1) - r;
    return r;
  }
  if (p.mode == 2u) return clamp(x, 0, size - 1);
  const int crop_l = max(-b, 0);
  const int kept = size - crop_l - max(-a, 0);
  const int j = o - max(b, 0);
  return crop_l + ((j % kept) + kept) % kept;
}

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
