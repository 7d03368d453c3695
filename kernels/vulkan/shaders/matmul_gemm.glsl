// matmul_tiled.glsl over strided [B, M, K] x [B, K, N] operands (the matmul
// push constants, matmul_iface.glsl), with the optional bias added at the
// store; matmul_f32.comp and matmul_f16.comp define ELEM first.
#include "matmul_iface.glsl"

float load_a(uint batch, uint m, uint k) { return float(a_[p.a_first + batch * p.a_sb + m * p.a_sm + k * p.a_sk]); }
float load_b(uint batch, uint k, uint n) { return float(b_[p.b_first + batch * p.b_sb + k * p.b_sk + n * p.b_sn]); }
void store_out(uint batch, uint m, uint n, float v) {
  if (p.has_bias != 0) v += float(bias_[p.bias_first + m * p.bias_sm + n * p.bias_sn]);
  out_[p.out_first + batch * p.o_sb + m * p.o_sm + n * p.o_sn] = ELEM(v);
}

#define TILED_M p.M
#define TILED_N p.N
#define TILED_K p.K
#define TILED_BATCH0 p.batch0
#define TILED_A_K_FAST (p.a_k_fast != 0)
#define TILED_B_N_FAST (p.b_n_fast != 0)
#include "matmul_tiled.glsl"
