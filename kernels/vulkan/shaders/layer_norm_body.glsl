// LayerNorm of ELEM values (float32 or float16, arithmetic in float32) over the trailing n elements of each row
// (biased variance, two passes): one workgroup per row. x and y are addressed
// through their merged dims (kernels/vulkan/norm.cc) by the flat index
// row * n + k; weight and bias are contiguous, optional (flags bit 0 / 1).
#include "common.glsl"

layout(std430, set = 0, binding = 0) readonly buffer In { ELEM x[]; };
layout(std430, set = 0, binding = 1) readonly buffer Weight { ELEM w[]; };
layout(std430, set = 0, binding = 2) readonly buffer Bias { ELEM b[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Out { ELEM y[]; };
layout(push_constant) uniform Push {
  uint x_first, w_first, b_first, y_first;
  uint n, rows;
  uint flags;
  float eps;
  uint rank;
  uint size[6];
  uint x_stride[6];
  uint y_stride[6];
} p;

shared float s[256];

uint x_offset(uint f) {
  uint off = 0;
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    off += (f % p.size[d]) * p.x_stride[d];
    f /= p.size[d];
  }
  return p.x_first + off;
}

uint y_offset(uint f) {
  uint off = 0;
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    off += (f % p.size[d]) * p.y_stride[d];
    f /= p.size[d];
  }
  return p.y_first + off;
}

float workgroup_sum(float v, uint tid) {
  s[tid] = v;
  for (uint h = gl_WorkGroupSize.x / 2; h > 0; h >>= 1) {
    barrier();
    if (tid < h) s[tid] += s[tid + h];
  }
  barrier();
  const float r = s[0];
  barrier();
  return r;
}

void main() {
  const uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (row >= p.rows) return;  // the whole workgroup leaves together
  const uint tid = gl_LocalInvocationID.x;
  const uint L = gl_WorkGroupSize.x;
  const uint base = row * p.n;
  float acc = 0.0;
  for (uint k = tid; k < p.n; k += L) acc += float(x[x_offset(base + k)]);
  const float mean = workgroup_sum(acc, tid) / float(p.n);
  acc = 0.0;
  for (uint k = tid; k < p.n; k += L) {
    const float d = float(x[x_offset(base + k)]) - mean;
    acc += d * d;
  }
  const float rstd = 1.0 / sqrt(workgroup_sum(acc, tid) / float(p.n) + p.eps);
  for (uint k = tid; k < p.n; k += L) {
    float v = (float(x[x_offset(base + k)]) - mean) * rstd;
    if ((p.flags & 1u) != 0u) v *= float(w[p.w_first + k]);
    if ((p.flags & 2u) != 0u) v += float(b[p.b_first + k]);
    y[y_offset(base + k)] = ELEM(v);
  }
}
