// The bindings and push constants of the matmul shaders (matmul_gemm.glsl,
// matmul_rows.glsl), mirrored by MatMulPush in kernels/vulkan/matmul.cc.
layout(std430, set = 0, binding = 0) readonly buffer A { ELEM a_[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { ELEM b_[]; };
layout(std430, set = 0, binding = 2) readonly buffer Bias { ELEM bias_[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Out { ELEM out_[]; };
layout(push_constant) uniform Push {
  uint a_first, b_first, bias_first, out_first;
  uint M, N, K, batch0;
  uint a_sb, a_sm, a_sk;
  uint b_sb, b_sk, b_sn;
  uint o_sb, o_sm, o_sn;
  uint bias_sm, bias_sn, has_bias;
  uint a_k_fast;  // a's k stride is 1: neighbouring threads load neighbouring k
  uint b_n_fast;  // b's n stride is 1: neighbouring threads load neighbouring n
  uint total;     // B * M * N (matmul_rows.glsl only)
} p;
