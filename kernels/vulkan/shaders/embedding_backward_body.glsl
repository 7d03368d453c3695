// EmbeddingBackward of ELEM values (float32 or float16:
// embedding_backward.comp / embedding_backward_f16.comp; float32
// arithmetic): grad_weight[v, k] += sum of grad[i..., k] over the index
// positions i... holding v. One invocation per grad_weight element, looping
// over every index in kernels/ref/embedding_backward.cc's order: no atomics,
// deterministic. The indices (int32, or int64 read as two 32-bit words, low
// first) and grad's leading dims share up to 6 dims (size-1 dims dropped).
// An index outside [0, V) adds nowhere (the forward's front-end rejected it).
#include "common.glsl"

layout(std430, set = 0, binding = 0) readonly buffer Grad { ELEM g[]; };
layout(std430, set = 0, binding = 1) readonly buffer Indices { uint idx[]; };
layout(std430, set = 0, binding = 2) buffer GradWeight { ELEM gw[]; };
layout(push_constant) uniform Push {
  uint g_first, i_first, gw_first;
  uint V, D, n;
  uint index64;
  uint rank;
  uint gw_stride0, gw_stride1, g_step;  // g_step: grad's stride along D
  uint size[6];
  uint istride[6];
  uint gstride[6];
} p;

void main() {
  const uint f = flat_index();
  if (f >= p.V * p.D) return;
  const uint v = f / p.D, k = f % p.D;
  const uint at = p.gw_first + v * p.gw_stride0 + k * p.gw_stride1;
  float acc = float(gw[at]);
  for (uint r = 0u; r < p.n; ++r) {
    uint i_off = 0u, g_off = 0u, q = r;
    for (int d = int(p.rank) - 1; d >= 0; --d) {
      const uint j = q % p.size[d];
      i_off += j * p.istride[d];
      g_off += j * p.gstride[d];
      q /= p.size[d];
    }
    bool hit;
    if (p.index64 != 0u) {
      const uint a = 2u * (p.i_first + i_off);
      hit = idx[a] == v && idx[a + 1u] == 0u;
    } else {
      hit = idx[p.i_first + i_off] == v;
    }
    if (hit) acc += float(g[p.g_first + g_off + k * p.g_step]);
  }
  gw[at] = ELEM(acc);
}
