#version 450
// Sparse Linear: y[i, j] = act(sum over row j of W (CSR) of W[j, c] * x[i, c]
// (times row_scale[j] for int8 values) + bias[j]). Values: fp32, or int8
// packed four per word (value e is byte e % 4 of word e / 4) with a scale per row. A workgroup takes one output column j and 4
// rows of x: its invocations stride over row j's nonzeros, then a tree sum in
// shared memory. x any strides; y contiguous [m, n].
#include "common.glsl"

layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) readonly buffer RowPtr { int row_ptr[]; };
layout(std430, set = 0, binding = 2) readonly buffer Col { int col[]; };
layout(std430, set = 0, binding = 3) readonly buffer Val { uint val[]; };
layout(std430, set = 0, binding = 4) readonly buffer RowScale { float row_scale[]; };
layout(std430, set = 0, binding = 5) readonly buffer Bias { float bias[]; };
layout(std430, set = 0, binding = 6) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push {
  uint m;
  uint n;
  uint row0;  // first row of x in this dispatch
  uint col0;  // first output column of this dispatch
  uint x_first;
  uint x_row_stride;
  uint x_col_stride;
  uint row_ptr_first;
  uint col_first;
  uint val_first;
  uint row_scale_first;
  uint bias_first;
  uint y_first;
  uint int8;
  uint has_bias;
  uint act;  // 0 none, 1 relu, 2 clamp
  float act_lo;
  float act_hi;
} p;

const uint MB = 4;
shared float s_sum[MB][256];

void main() {
  const uint j = p.col0 + gl_WorkGroupID.x;
  const uint i0 = p.row0 + gl_WorkGroupID.y * MB;
  const uint t = gl_LocalInvocationID.x;
  const int begin = row_ptr[p.row_ptr_first + j], end = row_ptr[p.row_ptr_first + j + 1];
  float acc[MB];
  for (uint r = 0; r < MB; ++r) acc[r] = 0.0;
  for (int e = begin + int(t); e < end; e += int(gl_WorkGroupSize.x)) {
    const float v = p.int8 != 0 ? float(bitfieldExtract(int(val[p.val_first + uint(e) / 4]), 8 * (e % 4), 8))
                                : uintBitsToFloat(val[p.val_first + e]);
    const uint c = uint(col[p.col_first + e]);
    for (uint r = 0; r < MB; ++r) {
      if (i0 + r < p.m) acc[r] += v * x[p.x_first + (i0 + r) * p.x_row_stride + c * p.x_col_stride];
    }
  }
  for (uint r = 0; r < MB; ++r) s_sum[r][t] = acc[r];
  barrier();
  for (uint s = gl_WorkGroupSize.x / 2; s > 0; s >>= 1) {
    if (t < s) {
      for (uint r = 0; r < MB; ++r) s_sum[r][t] += s_sum[r][t + s];
    }
    barrier();
  }
  if (t < MB && i0 + t < p.m) {
    float o = s_sum[t][0];
    if (p.int8 != 0) o *= row_scale[p.row_scale_first + j];
    if (p.has_bias != 0) o += bias[p.bias_first + j];
    if (p.act == 1) {
      o = o < 0.0 ? 0.0 : o;
    } else if (p.act == 2) {
      o = o < p.act_lo ? p.act_lo : (o > p.act_hi ? p.act_hi : o);
    } else if (p.act == 3) {  // HardSwish: x * clamp(x + 3, 0, 6) / 6
      const float t = o + 3.0;
      o = o * (t < 0.0 ? 0.0 : (t > 6.0 ? 6.0 : t)) / 6.0;
    }
    y[p.y_first + (i0 + t) * p.n + j] = o;
  }
}
