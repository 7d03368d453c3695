// The tiled matrix product (the body of matmul_f32.comp, matmul_f16.comp and
// conv2d_gemm.glsl):  out[b, m, n] = sum_k A(b, m, k) * B(b, k, n)
// Each 16x16 workgroup computes a 64x64 output tile: thread (tx, ty) owns rows
// ty + 16 i and columns tx + 16 j (i, j < 4); K is stepped by 16 through
// shared memory, accumulating in fp32. Edges are bounds-checked (loads out of
// range read 0, stores are skipped). Workgroup (x, y, z) = (column tile, row
// tile, batch - TILED_BATCH0).
// The including shader defines, before including this file:
//   TILED_M, TILED_N, TILED_K, TILED_BATCH0   uint expressions
//   TILED_A_K_FAST, TILED_B_N_FAST            bool expressions: neighbouring
//     threads load neighbouring k of A (n of B), for coalesced loads
//   float load_a(uint batch, uint m, uint k)  (m < M, k < K)
//   float load_b(uint batch, uint k, uint n)  (k < K, n < N)
//   void store_out(uint batch, uint m, uint n, float v)
layout(local_size_x = 16, local_size_y = 16, local_size_z = 1) in;

const uint TM = 64, TN = 64, TK = 16;
shared float As[TK][TM];
shared float Bs[TK][TN];

void main() {
  const uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
  const uint t = ty * 16u + tx;
  const uint batch = gl_WorkGroupID.z + TILED_BATCH0;
  const uint m0 = gl_WorkGroupID.y * TM, n0 = gl_WorkGroupID.x * TN;
  const uint M = TILED_M, N = TILED_N, K = TILED_K;

  float acc[4][4];
  for (uint i = 0; i < 4; ++i) {
    for (uint j = 0; j < 4; ++j) acc[i][j] = 0.0;
  }
  for (uint k0 = 0; k0 < K; k0 += TK) {
    for (uint r = 0; r < 4; ++r) {
      const uint idx = t + 256u * r;
      uint m, k;
      if (TILED_A_K_FAST) {
        k = idx % TK;
        m = idx / TK;
      } else {
        m = idx % TM;
        k = idx / TM;
      }
      As[k][m] = (m0 + m < M && k0 + k < K) ? load_a(batch, m0 + m, k0 + k) : 0.0;
      uint n;
      if (TILED_B_N_FAST) {
        n = idx % TN;
        k = idx / TN;
      } else {
        k = idx % TK;
        n = idx / TK;
      }
      Bs[k][n] = (n0 + n < N && k0 + k < K) ? load_b(batch, k0 + k, n0 + n) : 0.0;
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
  for (uint i = 0; i < 4; ++i) {
    const uint gm = m0 + ty + 16u * i;
    if (gm >= M) continue;
    for (uint j = 0; j < 4; ++j) {
      const uint gn = n0 + tx + 16u * j;
      if (gn < N) store_out(batch, gm, gn, acc[i][j]);
    }
  }
}
