// The matrix product for few rows (M < 16: Linear on a batch of one, mv,
// dot), shared by matmul_rows_f32.comp and matmul_rows_f16.comp (which define
// ELEM): one invocation per output element, n fastest, walking K with
// four fp32 accumulators (no shared memory, no 64-row tile of which M would
// use one). Same bindings and push constants as matmul_gemm.glsl; 1-D grid
// of local_size_x invocations over p.total = B * M * N outputs.
#include "common.glsl"
#include "matmul_iface.glsl"

void main() {
  const uint i = flat_index();
  if (i >= p.total) return;
  const uint n = i % p.N;
  const uint t = i / p.N;
  const uint m = t % p.M;
  const uint batch = t / p.M + p.batch0;
  uint ai = p.a_first + batch * p.a_sb + m * p.a_sm;
  uint bi = p.b_first + batch * p.b_sb + n * p.b_sn;
  vec4 acc = vec4(0.0);
  uint k = 0;
  for (; k + 4u <= p.K; k += 4u) {
    const vec4 av = vec4(float(a_[ai]), float(a_[ai + p.a_sk]), float(a_[ai + 2u * p.a_sk]), float(a_[ai + 3u * p.a_sk]));
    const vec4 bv = vec4(float(b_[bi]), float(b_[bi + p.b_sk]), float(b_[bi + 2u * p.b_sk]), float(b_[bi + 3u * p.b_sk]));
    acc += av * bv;
    ai += 4u * p.a_sk;
    bi += 4u * p.b_sk;
  }
  float v = (acc.x + acc.y) + (acc.z + acc.w);
  for (; k < p.K; ++k, ai += p.a_sk, bi += p.b_sk) v += float(a_[ai]) * float(b_[bi]);
  if (p.has_bias != 0) v += float(bias_[p.bias_first + m * p.bias_sm + n * p.bias_sn]);
  out_[p.out_first + batch * p.o_sb + m * p.o_sm + n * p.o_sn] = ELEM(v);
}
