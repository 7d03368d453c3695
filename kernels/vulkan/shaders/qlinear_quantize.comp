#version 450
// Dynamic int8 Linear, step 3: x [m, k] (any strides) to uint8, four per
// uint32 (little-endian: byte j of word w is column 4w + j), rows of k4 words,
// the bytes past k zero. q = clamp(nearbyint(x * (1 / scale)) + zp, 0, qmax)
// with the correctly rounded reciprocal, as quant/qscheme.cc.
#include "common.glsl"
#include "qlinear_qparams.glsl"

layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) readonly buffer Params { float params[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Q { uint q[]; };
layout(push_constant) uniform Push {
  uint m;
  uint k;
  uint k4;
  uint x_first;
  uint x_row_stride;
  uint x_col_stride;
  uint params_first;
  uint q_first;
  uint per_row;
  float qmax;
} p;

void main() {
  const uint i = flat_index();
  if (i >= p.m * p.k4) return;
  const uint row = i / p.k4;
  const uint word = i - row * p.k4;
  const uint o = p.params_first + (p.per_row != 0 ? row : p.m) * 4;
  const float scale = params[o + 2];
  const float zp = params[o + 3];
  const float inv = cr_div(1.0, scale);
  const float lo = -zp, hi = p.qmax - zp;
  uint packed = 0u;
  for (uint j = 0; j < 4; ++j) {
    const uint c = word * 4 + j;
    if (c >= p.k) break;
    precise float t = x[p.x_first + row * p.x_row_stride + c * p.x_col_stride] * inv;
    t = clamp(t, lo, hi);
    packed |= uint(roundEven(t) + zp) << (8 * j);
  }
  q[p.q_first + i] = packed;
}
