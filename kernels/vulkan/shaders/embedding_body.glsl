// Embedding: y[r, k] = weight[indices[r], k] for WORD-sized weights (32-bit:
// float32, int32; 16-bit: float16; the bits are copied), one invocation per
// output element. y is contiguous [rows, D]; weight has any strides; indices
// (int32, or int64 read as two 32-bit words, low first) are addressed
// through up to 6 merged dims.
// An index outside [0, V) writes zeros (the front-end rejects those first).
#include "common.glsl"

layout(std430, set = 0, binding = 0) readonly buffer Weight { WORD w[]; };
layout(std430, set = 0, binding = 1) readonly buffer Indices { uint idx[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Out { WORD y[]; };
layout(push_constant) uniform Push {
  uint w_first, i_first, y_first;
  uint rows, D, V;
  uint index64;
  uint rank;
  uint w_stride0, w_stride1;
  uint size[6];
  uint stride[6];
} p;

void main() {
  const uint f = flat_index();
  if (f >= p.rows * p.D) return;
  const uint r = f / p.D, k = f % p.D;
  uint off = 0, q = r;
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    off += (q % p.size[d]) * p.stride[d];
    q /= p.size[d];
  }
  bool valid;
  uint row;
  if (p.index64 != 0u) {
    const uint at = 2u * (p.i_first + off);
    row = idx[at];
    valid = idx[at + 1u] == 0u && row < p.V;
  } else {
    row = idx[p.i_first + off];  // a negative int32 is a huge uint: invalid
    valid = row < p.V;
  }
  WORD v = WORD(0);
  if (valid) v = w[p.w_first + row * p.w_stride0 + k * p.w_stride1];
  y[p.y_first + f] = v;
}
