// Recurrence (ONNX LSTM, GRU, RNN; kernels/ref/recurrence.cc has the formulas)
// of ELEM values (float32 or float16, arithmetic in float32). The host
// (kernels/vulkan/recurrence.cc) dispatches, per direction d: mode 0 (the
// state from initial_h / initial_c or zeros), then per time step t, mode 1
// (GRU without linear_before_reset: r h) and mode 2 (the step), then mode 3
// (Y_h, Y_c). One invocation per (batch entry b, hidden unit j) forms its
// gate rows of x_t W^T + Wb and h R^T + Rb as dot products. The state lives
// in the float32 scratch s: h and the next h alternate at s_first + cur * n
// and s_first + (1 - cur) * n, c at + 2n, r h at + 3n (n = B * H). Every
// operand is contiguous: x [T, B, I], W [D, G*H, I], R [D, G*H, H],
// B [D, 2*G*H], sequence_lens [B] (int32, or int64 read as two words, low
// first), initial_h / initial_c [D, B, H], P [D, 3*H], Y [T, D, B, H],
// Y_h / Y_c [D, B, H]; absent ones are flagged and never read or written.
#include "common.glsl"

layout(std430, set = 0, binding = 0) readonly buffer X { ELEM x[]; };
layout(std430, set = 0, binding = 1) readonly buffer W { ELEM w[]; };
layout(std430, set = 0, binding = 2) readonly buffer R { ELEM r[]; };
layout(std430, set = 0, binding = 3) readonly buffer Bias { ELEM bias[]; };
layout(std430, set = 0, binding = 4) readonly buffer Lens { uint lens[]; };
layout(std430, set = 0, binding = 5) readonly buffer H0 { ELEM h0[]; };
layout(std430, set = 0, binding = 6) readonly buffer C0 { ELEM c0[]; };
layout(std430, set = 0, binding = 7) readonly buffer Peep { ELEM peep[]; };
layout(std430, set = 0, binding = 8) writeonly buffer Y { ELEM y[]; };
layout(std430, set = 0, binding = 9) writeonly buffer YH { ELEM yh[]; };
layout(std430, set = 0, binding = 10) writeonly buffer YC { ELEM yc[]; };
layout(std430, set = 0, binding = 11) buffer State { float s[]; };
layout(push_constant) uniform Push {
  uint x_first, w_first, r_first, b_first, l_first, h0_first, c0_first, p_first;
  uint y_first, yh_first, yc_first, s_first;
  uint T, B, I, H;
  uint cell;   // 0 LSTM, 1 GRU, 2 RNN
  uint flags;  // kHas* and kLbr, kInputForget, kRelu below
  uint D, d, t, mode, cur;
  float clip;  // > 0: gate inputs clipped to [-clip, clip]
} p;

const uint kHasBias = 1u, kHasLens = 2u, kLens64 = 4u, kHasH0 = 8u, kHasC0 = 16u, kHasPeep = 32u;
const uint kHasY = 64u, kHasYh = 128u, kHasYc = 256u, kLbr = 512u, kInputForget = 1024u, kRelu = 2048u;

bool has(uint bit) { return (p.flags & bit) != 0u; }

float sigmoid_(float v) { return 1.0 / (1.0 + exp(-v)); }
// tanh through exp overflows to inf / inf past |v| ~ 44 in some drivers; tanh(15) is 1 in float32.
float tanh_(float v) { return tanh(clamp(v, -15.0, 15.0)); }
float clip_(float v) { return p.clip > 0.0 ? clamp(v, -p.clip, p.clip) : v; }
// The gate function: sigmoid, or the RNN's tanh / relu.
float f_(float v) {
  if (p.cell == 2u) return has(kRelu) ? max(v, 0.0) : tanh_(v);
  return sigmoid_(v);
}

// G * H: the gate rows of W and R (G = 4 LSTM, 3 GRU, 1 RNN).
uint gate_rows() { return p.H * (p.cell == 0u ? 4u : p.cell == 1u ? 3u : 1u); }

// Row `row` of x_t W^T + Wb for entry b.
float x_part(uint b, uint row) {
  const uint gh = gate_rows();
  float sum = has(kHasBias) ? float(bias[p.b_first + p.d * 2u * gh + row]) : 0.0;
  const uint xo = p.x_first + (p.t * p.B + b) * p.I, wo = p.w_first + (p.d * gh + row) * p.I;
  for (uint i = 0u; i < p.I; ++i) sum += float(x[xo + i]) * float(w[wo + i]);
  return sum;
}

// Row `row` of v R^T + Rb for entry b, v the state [B, H] at s[v_first].
float h_part(uint v_first, uint b, uint row) {
  const uint gh = gate_rows();
  float sum = has(kHasBias) ? float(bias[p.b_first + p.d * 2u * gh + gh + row]) : 0.0;
  const uint vo = v_first + b * p.H, ro = p.r_first + (p.d * gh + row) * p.H;
  for (uint k = 0u; k < p.H; ++k) sum += s[vo + k] * float(r[ro + k]);
  return sum;
}

void main() {
  const uint i = flat_index(), n = p.B * p.H;
  if (i >= n) return;
  const uint b = i / p.H, j = i % p.H;
  const uint h_at = p.s_first + p.cur * n, next_at = p.s_first + (1u - p.cur) * n;
  const uint c_at = p.s_first + 2u * n, rh_at = p.s_first + 3u * n;
  const uint state = (p.d * p.B + b) * p.H + j;  // in initial_h / initial_c / Y_h / Y_c
  if (p.mode == 0u) {
    s[h_at + i] = has(kHasH0) ? float(h0[p.h0_first + state]) : 0.0;
    s[c_at + i] = has(kHasC0) ? float(c0[p.c0_first + state]) : 0.0;
    return;
  }
  if (p.mode == 3u) {
    if (has(kHasYh)) yh[p.yh_first + state] = ELEM(s[h_at + i]);
    if (has(kHasYc)) yc[p.yc_first + state] = ELEM(s[c_at + i]);
    return;
  }
  const float h = s[h_at + i];
  if (p.mode == 1u) {  // GRU without linear_before_reset: r h, r from the previous h
    s[rh_at + i] = f_(clip_(x_part(b, p.H + j) + h_part(h_at, b, p.H + j))) * h;
    return;
  }
  uint len = p.T;
  if (has(kHasLens)) len = lens[p.l_first + (has(kLens64) ? 2u * b : b)];
  const uint yo = p.y_first + ((p.t * p.D + p.d) * p.B + b) * p.H + j;
  if (p.t >= len) {  // past the entry's length: output 0, keep the state
    s[next_at + i] = h;
    if (has(kHasY)) y[yo] = ELEM(0.0);
    return;
  }
  float hn;
  if (p.cell == 0u) {
    const float c = s[c_at + i];
    float pi = 0.0, po = 0.0, pf = 0.0;
    if (has(kHasPeep)) {
      const uint po_ = p.p_first + p.d * 3u * p.H + j;
      pi = float(peep[po_]);
      po = float(peep[po_ + p.H]);
      pf = float(peep[po_ + 2u * p.H]);
    }
    const float gi = f_(clip_(x_part(b, j) + h_part(h_at, b, j) + pi * c));
    const float gf = has(kInputForget) ? 1.0 - gi
                                       : f_(clip_(x_part(b, 2u * p.H + j) + h_part(h_at, b, 2u * p.H + j) + pf * c));
    const float cn = gf * c + gi * tanh_(clip_(x_part(b, 3u * p.H + j) + h_part(h_at, b, 3u * p.H + j)));
    const float go = f_(clip_(x_part(b, p.H + j) + h_part(h_at, b, p.H + j) + po * cn));
    s[c_at + i] = cn;
    hn = go * tanh_(cn);
  } else if (p.cell == 1u) {
    const float z = f_(clip_(x_part(b, j) + h_part(h_at, b, j)));
    float pre = x_part(b, 2u * p.H + j);
    if (has(kLbr)) {
      pre += f_(clip_(x_part(b, p.H + j) + h_part(h_at, b, p.H + j))) * h_part(h_at, b, 2u * p.H + j);
    } else {
      pre += h_part(rh_at, b, 2u * p.H + j);
    }
    hn = (1.0 - z) * tanh_(clip_(pre)) + z * h;
  } else {
    hn = f_(clip_(x_part(b, j) + h_part(h_at, b, j)));
  }
  s[next_at + i] = hn;
  if (has(kHasY)) y[yo] = ELEM(hn);
}
