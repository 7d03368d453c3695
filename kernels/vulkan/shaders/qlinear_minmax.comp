#version 450
// Dynamic int8 Linear, step 1: min and max of each row of x [m, k] (any
// strides); per-row quantization also computes the row's (scale, zero point).
// One workgroup per row (a 2-D grid of them). params: 4 floats per row
// (min, max, scale, zero point).
#include "common.glsl"
#include "qlinear_qparams.glsl"

layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) buffer Params { float params[]; };
layout(push_constant) uniform Push {
  uint m;
  uint k;
  uint x_first;
  uint x_row_stride;
  uint x_col_stride;
  uint params_first;
  uint per_row;
  float qmax;
} p;

shared float s_min[256];
shared float s_max[256];

void main() {
  const uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (row >= p.m) return;  // uniform across the workgroup
  const uint t = gl_LocalInvocationID.x;
  float lo = 1.0 / 0.0, hi = -1.0 / 0.0;
  const uint base = p.x_first + row * p.x_row_stride;
  for (uint i = t; i < p.k; i += gl_WorkGroupSize.x) {
    const float v = x[base + i * p.x_col_stride];
    lo = min(lo, v);
    hi = max(hi, v);
  }
  s_min[t] = lo;
  s_max[t] = hi;
  barrier();
  for (uint s = gl_WorkGroupSize.x / 2; s > 0; s >>= 1) {
    if (t < s) {
      s_min[t] = min(s_min[t], s_min[t + s]);
      s_max[t] = max(s_max[t], s_max[t + s]);
    }
    barrier();
  }
  if (t == 0) {
    const uint o = p.params_first + row * 4;
    params[o] = s_min[0];
    params[o + 1] = s_max[0];
    if (p.per_row != 0) {
      const vec2 q = choose_qparams(s_min[0], s_max[0], p.qmax);
      params[o + 2] = q.x;
      params[o + 3] = q.y;
    }
  }
}
