// Dynamic int8 Linear, step 4 (included by qlinear_gemm.comp and
// qlinear_gemm_dot.comp): y[i, j] = act(float(acc - zp * rowsum_w[j]) *
// (a_scale * w_scale[j]) + bias[j]) with acc = sum_k qx[i, k] * w[j, k]
// (uint8 x int8, int32 sums), as kernels/cpu/qgemm.cc's epilogue, bit for bit.
// raw != 0 writes acc itself (int32). A workgroup computes a 4 x 64 tile of y,
// one output per invocation, staging 8-word (32-byte) slices of k in shared memory.
layout(local_size_x = 64, local_size_y = 4, local_size_z = 1) in;

layout(std430, set = 0, binding = 0) readonly buffer Q { uint qx[]; };
layout(std430, set = 0, binding = 1) readonly buffer Params { float params[]; };
layout(std430, set = 0, binding = 2) readonly buffer W { uint w[]; };
layout(std430, set = 0, binding = 3) readonly buffer RowSum { int rowsum[]; };
layout(std430, set = 0, binding = 4) readonly buffer WScale { float wscale[]; };
layout(std430, set = 0, binding = 5) readonly buffer Bias { float bias[]; };
layout(std430, set = 0, binding = 6) writeonly buffer Y { uint y[]; };
layout(push_constant) uniform Push {
  uint m;
  uint n;
  uint k4;
  uint row0;  // first row of this dispatch
  uint q_first;
  uint params_first;
  uint w_first;
  uint rowsum_first;
  uint wscale_first;
  uint bias_first;
  uint y_first;
  uint per_row;
  uint w_per_channel;
  uint has_bias;
  uint act;  // 0 none, 1 relu, 2 clamp
  float act_lo;
  float act_hi;
  uint raw;
} p;

const uint TM = 4, TN = 64, TK = 8;
shared uint s_q[TM][TK];
shared uint s_w[TN][TK + 1];

int dot4(uint wv, uint xv);  // signed weights . unsigned activations, 4 lanes

void main() {
  const uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
  const uint lid = ty * TN + tx;
  const uint col0 = gl_WorkGroupID.x * TN;
  const uint rowg = p.row0 + gl_WorkGroupID.y * TM;
  const uint row = rowg + ty, col = col0 + tx;
  int acc = 0;
  for (uint k0 = 0; k0 < p.k4; k0 += TK) {
    // 256 invocations: the 4 x 8 activation words, then 64 x 8 weight words (2 each).
    if (lid < TM * TK) {
      const uint r = lid / TK, c = lid % TK;
      s_q[r][c] = (rowg + r < p.m && k0 + c < p.k4) ? qx[p.q_first + (rowg + r) * p.k4 + k0 + c] : 0u;
    }
    for (uint e = lid; e < TN * TK; e += TM * TN) {
      const uint r = e / TK, c = e % TK;
      s_w[r][c] = (col0 + r < p.n && k0 + c < p.k4) ? w[p.w_first + (col0 + r) * p.k4 + k0 + c] : 0u;
    }
    barrier();
    for (uint c = 0; c < TK; ++c) acc += dot4(s_w[tx][c], s_q[ty][c]);
    barrier();
  }
  if (row >= p.m || col >= p.n) return;
  const uint o = p.y_first + row * p.n + col;
  if (p.raw != 0) {
    y[o] = uint(acc);
    return;
  }
  const uint pi = p.params_first + (p.per_row != 0 ? row : p.m) * 4;
  const float a_scale = params[pi + 2];
  const int a_zp = int(params[pi + 3]);
  const int v = acc - a_zp * rowsum[p.rowsum_first + col];
  precise float scale = a_scale * wscale[p.wscale_first + (p.w_per_channel != 0 ? col : 0)];
  precise float out_ = float(v) * scale;
  if (p.has_bias != 0) out_ = out_ + bias[p.bias_first + col];
  if (p.act == 1) {
    out_ = out_ < 0.0 ? 0.0 : out_;
  } else if (p.act == 2) {
    out_ = out_ < p.act_lo ? p.act_lo : (out_ > p.act_hi ? p.act_hi : out_);
  } else if (p.act == 3) {  // HardSwish: x * clamp(x + 3, 0, 6) / 6
    precise float t = out_ + 3.0;
    t = t < 0.0 ? 0.0 : (t > 6.0 ? 6.0 : t);
    out_ = out_ * t / 6.0;
  }
  y[o] = floatBitsToUint(out_);
}
