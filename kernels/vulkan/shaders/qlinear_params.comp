#version 450
// Dynamic int8 Linear, step 2 (per-tensor quantization): the min and max over
// the m rows' (qlinear_minmax), and the tensor's (scale, zero point) into
// params[4m .. 4m + 4). One workgroup.
#include "common.glsl"
#include "qlinear_qparams.glsl"

layout(std430, set = 0, binding = 0) buffer Params { float params[]; };
layout(push_constant) uniform Push {
  uint m;
  uint params_first;
  float qmax;
} p;

shared float s_min[256];
shared float s_max[256];

void main() {
  const uint t = gl_LocalInvocationID.x;
  float lo = 1.0 / 0.0, hi = -1.0 / 0.0;
  for (uint r = t; r < p.m; r += gl_WorkGroupSize.x) {
    lo = min(lo, params[p.params_first + r * 4]);
    hi = max(hi, params[p.params_first + r * 4 + 1]);
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
    const uint o = p.params_first + p.m * 4;
    const vec2 q = choose_qparams(s_min[0], s_max[0], p.qmax);
    params[o] = s_min[0];
    params[o + 1] = s_max[0];
    params[o + 2] = q.x;
    params[o + 3] = q.y;
  }
}
