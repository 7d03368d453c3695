// BatchNorm, inference form, ELEM values and PARAM statistics, float32
// arithmetic: y = (x - mean) / sqrt(var + eps) * w + b per channel (dim 1),
// one invocation per element. x and y are addressed
// through their merged dims (kernels/vulkan/norm.cc) by the flat index; the
// per-channel vectors are contiguous; weight and bias optional (flags bit 0 / 1).
#include "common.glsl"

layout(std430, set = 0, binding = 0) readonly buffer In { ELEM x[]; };
layout(std430, set = 0, binding = 1) readonly buffer Mean { PARAM mean[]; };
layout(std430, set = 0, binding = 2) readonly buffer Var { PARAM var_[]; };
layout(std430, set = 0, binding = 3) readonly buffer Weight { PARAM w[]; };
layout(std430, set = 0, binding = 4) readonly buffer Bias { PARAM b[]; };
layout(std430, set = 0, binding = 5) writeonly buffer Out { ELEM y[]; };
layout(push_constant) uniform Push {
  uint x_first, m_first, v_first, w_first, b_first, y_first;
  uint total;
  uint channels;
  uint inner;  // elements per channel per batch item
  uint flags;
  float eps;
  uint rank;
  uint size[6];
  uint x_stride[6];
  uint y_stride[6];
} p;

void main() {
  const uint f = flat_index();
  if (f >= p.total) return;
  const uint c = (f / p.inner) % p.channels;
  const float scale = ((p.flags & 1u) != 0u ? float(w[p.w_first + c]) : 1.0) / sqrt(float(var_[p.v_first + c]) + p.eps);
  const float shift = ((p.flags & 2u) != 0u ? float(b[p.b_first + c]) : 0.0) - float(mean[p.m_first + c]) * scale;
  uint xo = p.x_first, yo = p.y_first, r = f;
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    const uint i = r % p.size[d];
    r /= p.size[d];
    xo += i * p.x_stride[d];
    yo += i * p.y_stride[d];
  }
  y[yo] = ELEM(float(x[xo]) * scale + shift);
}
