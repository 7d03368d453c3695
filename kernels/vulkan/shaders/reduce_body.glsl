// Sum, Mean, Var, Norm, Prod, Max/Min (value and index) of ELEM values (float32 or
// float16; arithmetic in float32, reduce.comp / reduce_f16.comp). Two modes:
//  - tree (flags bit 2 clear): one workgroup per output element (a position
//    of the kept dims), its threads striding over the reduced elements, then
//    a shared-memory tree;
//  - serial (bit 2 set): one invocation per output element, looping over the
//    reduced elements; kernels/vulkan/reduce.cc picks it when the kept dims
//    are the contiguous ones (neighbouring invocations read neighbouring
//    elements) and there are enough of them to fill the device.
// The reduced elements are addressed through up to 4 (size, stride) dims, the
// kept ones through up to 4 more (reduce.cc merges what it can). Outputs are
// contiguous: output element `row` is the row-th kept position. Indices
// (int64) are written as two 32-bit words, low first.
#include "common.glsl"

layout(std430, set = 0, binding = 0) readonly buffer In { ELEM x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Out { ELEM y[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Idx { uint idx[]; };
layout(push_constant) uniform Push {
  uint x_first, y_first, i_first;
  uint op;     // 0 sum, 1 mean, 2 var, 3 norm, 4 max, 5 min, 6 prod
  uint flags;  // bit 0: write values, bit 1: write indices, bit 2: serial mode
  uint outer_numel, inner_numel;
  uint outer_rank, inner_rank;
  float p;        // norm order
  float divisor;  // var: N - correction, or 0
  uint pad;
  uint outer_size[4];
  uint outer_stride[4];
  uint inner_size[4];
  uint inner_stride[4];
} p;

const uint kNone = 0xFFFFFFFFu;
shared float s_v[256];
shared uint s_i[256];

uint inner_offset(uint i) {
  uint off = 0;
  for (int d = int(p.inner_rank) - 1; d >= 0; --d) {
    const uint s = p.inner_size[d];
    off += (i % s) * p.inner_stride[d];
    i /= s;
  }
  return off;
}

uint outer_offset(uint i) {
  uint off = 0;
  for (int d = int(p.outer_rank) - 1; d >= 0; --d) {
    const uint s = p.outer_size[d];
    off += (i % s) * p.outer_stride[d];
    i /= s;
  }
  return off;
}

// The max (or min) of |values| with NaN winning.
float pick_abs(float a, float b, bool is_max) {
  if (isnan(a)) return a;
  if (isnan(b)) return b;
  return is_max ? (b > a ? b : a) : (b < a ? b : a);
}

// (value, index) pairs: whether b beats a (the extreme, NaN first, ties to
// the lower index; kNone: no element).
bool take(float av, uint ai, float bv, uint bi, bool is_max) {
  if (bi == kNone) return false;
  if (ai == kNone) return true;
  const bool an = isnan(av), bn = isnan(bv);
  if (an || bn) return bn && (!an || bi < ai);
  if (bv == av) return bi < ai;
  return is_max ? bv > av : bv < av;
}

// pow with a zero base defined as C's (GLSL leaves pow(0, y <= 0) undefined).
float pow0(float a, float e) {
  if (a == 0.0) return e > 0.0 ? 0.0 : e == 0.0 ? 1.0 : uintBitsToFloat(0x7f800000u);
  return pow(a, e);
}

// The workgroup's sum of v (tree mode), for every invocation; v itself in serial mode.
float total(float v, uint tid, bool serial) {
  if (serial) return v;
  s_v[tid] = v;
  for (uint h = gl_WorkGroupSize.x / 2; h > 0; h >>= 1) {
    barrier();
    if (tid < h) s_v[tid] += s_v[tid + h];
  }
  barrier();
  const float r = s_v[0];
  barrier();  // s_v is free again
  return r;
}

void main() {
  const bool serial = (p.flags & 4u) != 0u;
  const uint row = serial ? flat_index() : gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (row >= p.outer_numel) return;  // tree mode: the whole workgroup leaves together
  const uint tid = serial ? 0u : gl_LocalInvocationID.x;
  const uint L = serial ? 1u : gl_WorkGroupSize.x;
  const uint n = p.inner_numel;
  const uint base = p.x_first + outer_offset(row);
  if (n == 0u) {  // nothing reduced: sum and norm 0, prod 1, mean and var NaN (max/min never get here)
    if (tid == 0) {
      y[p.y_first + row] = ELEM(p.op == 1u || p.op == 2u ? uintBitsToFloat(0x7fc00000u) : p.op == 6u ? 1.0 : 0.0);
    }
    return;
  }

  if (p.op == 6u) {
    float acc = 1.0;
    for (uint i = tid; i < n; i += L) acc *= float(x[base + inner_offset(i)]);
    if (!serial) {
      s_v[tid] = acc;
      for (uint h = L / 2; h > 0; h >>= 1) {
        barrier();
        if (tid < h) s_v[tid] *= s_v[tid + h];
      }
      barrier();
      acc = s_v[0];
    }
    if (tid == 0) y[p.y_first + row] = ELEM(acc);
    return;
  }

  if (p.op == 4u || p.op == 5u) {
    const bool is_max = p.op == 4u;
    float bv = 0.0;
    uint bi = kNone;
    for (uint i = tid; i < n; i += L) {
      const float v = float(x[base + inner_offset(i)]);
      if (isnan(v)) {  // this invocation's first NaN: nothing later can win
        bv = v;
        bi = i;
        break;
      }
      if (bi == kNone || (is_max ? v > bv : v < bv)) {
        bv = v;
        bi = i;
      }
    }
    if (!serial) {
      s_v[tid] = bv;
      s_i[tid] = bi;
      for (uint h = L / 2; h > 0; h >>= 1) {
        barrier();
        if (tid < h && take(s_v[tid], s_i[tid], s_v[tid + h], s_i[tid + h], is_max)) {
          s_v[tid] = s_v[tid + h];
          s_i[tid] = s_i[tid + h];
        }
      }
      barrier();
      bv = s_v[0];
      bi = s_i[0];
    }
    if (tid == 0) {
      if ((p.flags & 1u) != 0u) y[p.y_first + row] = ELEM(bv);
      if ((p.flags & 2u) != 0u) {
        idx[2u * (p.i_first + row)] = bi;
        idx[2u * (p.i_first + row) + 1u] = 0u;
      }
    }
    return;
  }

  if (p.op == 3u && isinf(p.p)) {  // max / min of |x|
    const bool is_max = p.p > 0.0;
    float acc = is_max ? 0.0 : uintBitsToFloat(0x7f800000u);
    for (uint i = tid; i < n; i += L) acc = pick_abs(acc, abs(float(x[base + inner_offset(i)])), is_max);
    if (!serial) {
      s_v[tid] = acc;
      for (uint h = L / 2; h > 0; h >>= 1) {
        barrier();
        if (tid < h) s_v[tid] = pick_abs(s_v[tid], s_v[tid + h], is_max);
      }
      barrier();
      acc = s_v[0];
    }
    if (tid == 0) y[p.y_first + row] = ELEM(acc);
    return;
  }

  float acc = 0.0;
  if (p.op == 3u) {
    for (uint i = tid; i < n; i += L) {
      const float v = float(x[base + inner_offset(i)]);
      if (p.p == 0.0) acc += v != 0.0 ? 1.0 : 0.0;
      else if (p.p == 1.0) acc += abs(v);
      else if (p.p == 2.0) acc += v * v;
      else acc += pow0(abs(v), p.p);
    }
  } else {
    for (uint i = tid; i < n; i += L) acc += float(x[base + inner_offset(i)]);
  }
  float r = total(acc, tid, serial);
  if (p.op == 1u) {
    r /= float(n);
  } else if (p.op == 3u) {
    if (p.p == 2.0) r = sqrt(r);
    else if (p.p != 0.0 && p.p != 1.0) r = pow0(r, 1.0 / p.p);
  } else if (p.op == 2u) {  // second pass: squared deviations from the mean
    const float mean = r / float(n);
    float m2 = 0.0;
    for (uint i = tid; i < n; i += L) {
      const float d = float(x[base + inner_offset(i)]) - mean;
      m2 += d * d;
    }
    m2 = total(m2, tid, serial);
    if (p.divisor == 0.0) {
      r = m2 > 0.0 ? uintBitsToFloat(0x7f800000u) : uintBitsToFloat(0x7fc00000u);
    } else {
      r = m2 / p.divisor;
    }
  }
  if (tid == 0) y[p.y_first + row] = ELEM(r);
}
