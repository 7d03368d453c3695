// 2-D pooling of ELEM (float32 or float16: pool.comp / pool_f16.comp; float32
// arithmetic) [N, C, H, W] views (any strides: NCHW or channels
// last), one invocation per output element: max (mode 0), average (1) or
// adaptive average (2), with the windows, accumulation order and division of
// kernels/ref/pool_window.h and kernels/ref/pool.cc.
#include "common.glsl"

layout(std430, set = 0, binding = 0) readonly buffer In { ELEM x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Out { ELEM y[]; };
layout(push_constant) uniform Push {
  uint x_first, y_first;
  uint mode;
  uint total;
  int N, C, H, W, OH, OW;
  int xs[4];
  int ys[4];
  int kh, kw, sh, sw, ph, pw, dh, dw;
  int count_include_pad;
  int divisor_override;  // 0: none
} p;

void main() {
  const uint f = flat_index();
  if (f >= p.total) return;
  const int i = int(f);
  const int ow = i % p.OW;
  const int oh = (i / p.OW) % p.OH;
  const int c = (i / (p.OW * p.OH)) % p.C;
  const int n = i / (p.OW * p.OH * p.C);
  const uint plane = p.x_first + uint(n * p.xs[0] + c * p.xs[1]);
  const uint out_at = p.y_first + uint(n * p.ys[0] + c * p.ys[1] + oh * p.ys[2] + ow * p.ys[3]);
  if (p.mode == 0u) {
    int h0 = oh * p.sh - p.ph, w0 = ow * p.sw - p.pw;
    const int h1 = min(h0 + (p.kh - 1) * p.dh + 1, p.H);
    const int w1 = min(w0 + (p.kw - 1) * p.dw + 1, p.W);
    while (h0 < 0) h0 += p.dh;
    while (w0 < 0) w0 += p.dw;
    float best = uintBitsToFloat(0xff800000u);  // -inf
    for (int h = h0; h < h1; h += p.dh) {
      for (int w = w0; w < w1; w += p.dw) {
        const float v = float(x[plane + uint(h * p.xs[2] + w * p.xs[3])]);
        if (v > best || isnan(v)) best = v;
      }
    }
    y[out_at] = ELEM(best);
    return;
  }
  int h0, h1, w0, w1;
  float divisor_h = 1.0, divisor_w = 1.0;
  if (p.mode == 1u) {
    h0 = oh * p.sh - p.ph;
    w0 = ow * p.sw - p.pw;
    h1 = min(h0 + p.kh, p.H + p.ph);
    w1 = min(w0 + p.kw, p.W + p.pw);
    const int pool_size = (h1 - h0) * (w1 - w0);
    h0 = max(h0, 0);
    w0 = max(w0, 0);
    h1 = min(h1, p.H);
    w1 = min(w1, p.W);
    if (h0 >= h1 || w0 >= w1) {
      y[out_at] = ELEM(0.0);
      return;
    }
    divisor_h = float(p.divisor_override > 0 ? p.divisor_override
                      : p.count_include_pad != 0 ? pool_size
                                                 : (h1 - h0) * (w1 - w0));
  } else {
    h0 = (oh / p.OH) * p.H + ((oh % p.OH) * p.H) / p.OH;
    h1 = 1 + ((oh + 1) * p.H - 1) / p.OH;
    w0 = (ow / p.OW) * p.W + ((ow % p.OW) * p.W) / p.OW;
    w1 = 1 + ((ow + 1) * p.W - 1) / p.OW;
    divisor_h = float(h1 - h0);
    divisor_w = float(w1 - w0);
  }
  float sum = 0.0;
  for (int h = h0; h < h1; ++h) {
    for (int w = w0; w < w1; ++w) sum += float(x[plane + uint(h * p.xs[2] + w * p.xs[3])]);
  }
  y[out_at] = ELEM(p.mode == 1u ? sum / divisor_h : sum / divisor_h / divisor_w);
}
