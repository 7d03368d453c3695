// Backward of 2-D pooling of ELEM (float32 or float16: pool_backward.comp /
// pool_backward_f16.comp; float32 arithmetic) [N, C, H, W] views, any
// strides. One invocation per element of grad_in: it gathers, in the order
// kernels/ref/pool_backward.cc adds them (outputs row by row), the output
// gradients whose window read it, and adds them to grad_in (zeroed by the
// front-end). No atomics: the result is deterministic. Modes: max (0; the
// gradient goes to the window's first maximum or its last NaN, re-found from
// x), average (1), adaptive average (2); windows as kernels/ref/pool_window.h.
#include "common.glsl"

layout(std430, set = 0, binding = 0) readonly buffer Grad { ELEM g[]; };
layout(std430, set = 0, binding = 1) readonly buffer X { ELEM x[]; };  // max pooling's input (else grad again)
layout(std430, set = 0, binding = 2) buffer GradIn { ELEM gi[]; };
layout(push_constant) uniform Push {
  uint g_first, x_first, gi_first;
  uint mode;
  uint total;
  int C, H, W, OH, OW;
  int gs[4], xs[4], gis[4];
  int kh, kw, sh, sw, ph, pw, dh, dw;
  int count_include_pad;
  int divisor_override;  // 0: none
} p;

// Whether the first maximum (or last NaN) of output (oh, ow)'s window is (h, w).
bool is_argmax(uint plane, int oh, int ow, int h, int w) {
  int h0 = oh * p.sh - p.ph, w0 = ow * p.sw - p.pw;
  const int h1 = min(h0 + (p.kh - 1) * p.dh + 1, p.H);
  const int w1 = min(w0 + (p.kw - 1) * p.dw + 1, p.W);
  while (h0 < 0) h0 += p.dh;
  while (w0 < 0) w0 += p.dw;
  if (h0 >= h1 || w0 >= w1) return false;
  int best_h = h0, best_w = w0;
  float best = uintBitsToFloat(0xff800000u);  // -inf
  for (int hh = h0; hh < h1; hh += p.dh) {
    for (int ww = w0; ww < w1; ww += p.dw) {
      const float v = float(x[plane + uint(hh * p.xs[2] + ww * p.xs[3])]);
      if (v > best || isnan(v)) {
        best = v;
        best_h = hh;
        best_w = ww;
      }
    }
  }
  return best_h == h && best_w == w;
}

// The output rows [lo, hi] whose window (kernel k, stride s, padding pd,
// dilation d) can reach input row h.
ivec2 reaching(int h, int k, int s, int pd, int d, int n_out) {
  const int top = h + pd - (k - 1) * d;  // oh * s >= top
  const int lo = top <= 0 ? 0 : (top + s - 1) / s;
  return ivec2(lo, min((h + pd) / s, n_out - 1));
}

int adaptive_start(int i, int o, int n) { return (i / o) * n + ((i % o) * n) / o; }
int adaptive_end(int i, int o, int n) { return 1 + ((i + 1) * n - 1) / o; }

void main() {
  const uint f = flat_index();
  if (f >= p.total) return;
  const int i = int(f);
  const int w = i % p.W;
  const int h = (i / p.W) % p.H;
  const int c = (i / (p.W * p.H)) % p.C;
  const int n = i / (p.W * p.H * p.C);
  const uint g_plane = p.g_first + uint(n * p.gs[0] + c * p.gs[1]);
  const uint at = p.gi_first + uint(n * p.gis[0] + c * p.gis[1] + h * p.gis[2] + w * p.gis[3]);
  float acc = float(gi[at]);
  if (p.mode == 2u) {
    for (int oh = (h * p.OH) / p.H; oh < p.OH && adaptive_start(oh, p.OH, p.H) <= h; ++oh) {
      const float dh_ = float(adaptive_end(oh, p.OH, p.H) - adaptive_start(oh, p.OH, p.H));
      for (int ow = (w * p.OW) / p.W; ow < p.OW && adaptive_start(ow, p.OW, p.W) <= w; ++ow) {
        const float dw_ = float(adaptive_end(ow, p.OW, p.W) - adaptive_start(ow, p.OW, p.W));
        acc += float(g[g_plane + uint(oh * p.gs[2] + ow * p.gs[3])]) / dh_ / dw_;
      }
    }
    gi[at] = ELEM(acc);
    return;
  }
  const int dh = p.mode == 0u ? p.dh : 1, dw = p.mode == 0u ? p.dw : 1;
  const ivec2 rh = reaching(h, p.kh, p.sh, p.ph, dh, p.OH);
  const ivec2 rw = reaching(w, p.kw, p.sw, p.pw, dw, p.OW);
  const uint x_plane = p.x_first + uint(n * p.xs[0] + c * p.xs[1]);
  for (int oh = rh.x; oh <= rh.y; ++oh) {
    if ((h + p.ph - oh * p.sh) % dh != 0) continue;
    for (int ow = rw.x; ow <= rw.y; ++ow) {
      if ((w + p.pw - ow * p.sw) % dw != 0) continue;
      const float v = float(g[g_plane + uint(oh * p.gs[2] + ow * p.gs[3])]);
      if (p.mode == 0u) {
        if (is_argmax(x_plane, oh, ow, h, w)) acc += v;
        continue;
      }
      // Average: the window as avg_pool_window (clipped to the input; the divisor).
      int h0 = oh * p.sh - p.ph, w0 = ow * p.sw - p.pw;
      int h1 = min(h0 + p.kh, p.H + p.ph), w1 = min(w0 + p.kw, p.W + p.pw);
      const int pool_size = (h1 - h0) * (w1 - w0);
      h0 = max(h0, 0);
      w0 = max(w0, 0);
      h1 = min(h1, p.H);
      w1 = min(w1, p.W);
      if (h < h0 || h >= h1 || w < w0 || w >= w1) continue;
      const int divisor = p.divisor_override > 0 ? p.divisor_override
                          : p.count_include_pad != 0 ? pool_size
                                                     : (h1 - h0) * (w1 - w0);
      acc += v / float(divisor);
    }
  }
  gi[at] = ELEM(acc);
}
