// The tiled matrix product shared by matmul_f32.comp and matmul_f16.comp
// (which define ELEM, the storage type, before including this file):
//   out[b, m, n] = sum_k a[b, m, k] * b[b, k, n]  (+ bias[m * bias_sm + n * bias_sn])
// Any strides (0 for broadcast batches). Each 16x16 workgroup computes a 64x64
// output tile: thread (tx, ty) owns rows ty + 16 i and columns tx + 16 j
// (i, j < 4), K is stepped by 16 through shared memory, accumulating in fp32.
// Edges are bounds-checked (out-of-range loads read 0, stores are skipped).
// Workgroup (x, y, z) = (column tile, row tile, batch - batch0).
layout(local_size_x = 16, local_size_y = 16, local_size_z = 1) in;

#include "matmul_iface.glsl"

const uint TM = 64, TN = 64, TK = 16;
shared float As[TK][TM];
shared float Bs[TK][TN];

void main() {
  const uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
  const uint t = ty * 16u + tx;
  const uint batch = gl_WorkGroupID.z + p.batch0;
  const uint m0 = gl_WorkGroupID.y * TM, n0 = gl_WorkGroupID.x * TN;
  const uint a_base = p.a_first + batch * p.a_sb;
  const uint b_base = p.b_first + batch * p.b_sb;

  float acc[4][4];
  for (uint i = 0; i < 4; ++i) {
    for (uint j = 0; j < 4; ++j) acc[i][j] = 0.0;
  }
  for (uint k0 = 0; k0 < p.K; k0 += TK) {
    for (uint r = 0; r < 4; ++r) {
      const uint idx = t + 256u * r;
      uint m, k;
      if (p.a_k_fast != 0) {
        k = idx % TK;
        m = idx / TK;
      } else {
        m = idx % TM;
        k = idx / TM;
      }
      uint gm = m0 + m, gk = k0 + k;
      As[k][m] = (gm < p.M && gk < p.K) ? float(a_[a_base + gm * p.a_sm + gk * p.a_sk]) : 0.0;
      uint n;
      if (p.b_n_fast != 0) {
        n = idx % TN;
        k = idx / TN;
      } else {
        k = idx % TK;
        n = idx / TK;
      }
      const uint gn = n0 + n;
      gk = k0 + k;
      Bs[k][n] = (gn < p.N && gk < p.K) ? float(b_[b_base + gk * p.b_sk + gn * p.b_sn]) : 0.0;
    }
    barrier();
    for (uint k = 0; k < TK; ++k) {
      float av[4], bv[4];
      for (uint i = 0; i < 4; ++i) av[i] = As[k][ty + 16u * i];
      for (uint j = 0; j < 4; ++j) bv[j] = Bs[k][tx + 16u * j];
      for (uint i = 0; i < 4; ++i) {
        for (uint j = 0; j < 4; ++j) acc[i][j] += av[i] * bv[j];
      }
    }
    barrier();
  }
  const uint o_base = p.out_first + batch * p.o_sb;
  for (uint i = 0; i < 4; ++i) {
    const uint gm = m0 + ty + 16u * i;
    if (gm >= p.M) continue;
    for (uint j = 0; j < 4; ++j) {
      const uint gn = n0 + tx + 16u * j;
      if (gn >= p.N) continue;
      float v = acc[i][j];
      if (p.has_bias != 0) v += float(bias_[p.bias_first + gm * p.bias_sm + gn * p.bias_sn]);
      out_[o_base + gm * p.o_sm + gn * p.o_sn] = ELEM(v);
    }
  }
}
