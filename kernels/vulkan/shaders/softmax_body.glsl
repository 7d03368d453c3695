// Softmax / LogSoftmax of ELEM values (float32 or float16, arithmetic in
// float32) along one dim: max, then sum of exp(x - max), then the outputs.
// Tree mode: one workgroup per row (a position of the other dims), each pass a
// strided loop plus a shared-memory tree. Serial mode (`serial` set, chosen
// by kernels/vulkan/norm.cc when the other dims are the contiguous ones, as
// for a channel softmax of NCHW): one invocation per row. A NaN anywhere in
// a row makes the row NaN (as the reference). The other dims arrive merged,
// with x's and y's strides.
#include "common.glsl"

layout(std430, set = 0, binding = 0) readonly buffer In { ELEM x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Out { ELEM y[]; };
layout(push_constant) uniform Push {
  uint x_first, y_first;
  uint n;        // size of the softmax dim
  uint xs, ys;   // its strides
  uint rows;
  uint rank;     // merged other dims
  uint log_softmax;
  uint serial;  // one invocation per row
  uint size[6];
  uint x_stride[6];
  uint y_stride[6];
} p;

shared float s[256];

void main() {
  const bool serial = p.serial != 0u;
  const uint row = serial ? flat_index() : gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (row >= p.rows) return;  // tree mode: the whole workgroup leaves together
  const uint tid = serial ? 0u : gl_LocalInvocationID.x;
  const uint L = serial ? 1u : gl_WorkGroupSize.x;
  uint xo = p.x_first, yo = p.y_first;
  uint r = row;
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    const uint i = r % p.size[d];
    r /= p.size[d];
    xo += i * p.x_stride[d];
    yo += i * p.y_stride[d];
  }

  float m = uintBitsToFloat(0xff800000u);  // -inf
  for (uint i = tid; i < p.n; i += L) {
    const float v = float(x[xo + i * p.xs]);
    if (isnan(v) || (!isnan(m) && v > m)) m = v;
  }
  if (!serial) {
    s[tid] = m;
    for (uint h = L / 2; h > 0; h >>= 1) {
      barrier();
      if (tid < h) {
        const float a = s[tid], b = s[tid + h];
        if (!isnan(a) && (isnan(b) || b > a)) s[tid] = b;
      }
    }
    barrier();
    m = s[0];
    barrier();
  }

  float sum = 0.0;
  for (uint i = tid; i < p.n; i += L) sum += exp(float(x[xo + i * p.xs]) - m);
  if (!serial) {
    s[tid] = sum;
    for (uint h = L / 2; h > 0; h >>= 1) {
      barrier();
      if (tid < h) s[tid] += s[tid + h];
    }
    barrier();
    sum = s[0];
  }

  if (p.log_softmax != 0u) {
    const float shift = m + log(sum);
    for (uint i = tid; i < p.n; i += L) y[yo + i * p.ys] = ELEM(float(x[xo + i * p.xs]) - shift);
  } else {
    const float inv = 1.0 / sum;
    for (uint i = tid; i < p.n; i += L) y[yo + i * p.ys] = ELEM(exp(float(x[xo + i * p.xs]) - m) * inv);
  }
}
