// Depthwise 2-D convolution (groups == C_in == C_out), the body of
// conv2d_depthwise.comp (float32) and conv2d_depthwise_f16.comp (float16
// storage, float32 accumulation); ELEM is defined first:
//   out[n, c, oh, ow] = bias[c] + sum over kh, kw of
//     x[n, c, oh*sh - ph + kh*dh, ow*sw - pw + kw*dw] * w[c, 0, kh, kw]
// One invocation computes 4 neighbouring outputs of a row (ow = 4q .. 4q+3),
// loading each weight once for the four. x and out: any strides; the weight
// is contiguous [C, 1, kh, kw]. Push constants as conv2d_direct.glsl
// (cg and cout_g are 1); total = N * C * OH * ceil(OW / 4).
#include "common.glsl"

layout(std430, set = 0, binding = 0) readonly buffer X { ELEM x_[]; };
layout(std430, set = 0, binding = 1) readonly buffer W { ELEM w_[]; };
layout(std430, set = 0, binding = 2) readonly buffer Bias { ELEM bias_[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Out { ELEM out_[]; };
#include "conv2d_push.glsl"

void main() {
  const uint i = flat_index();
  if (i >= p.total) return;
  const uint quads = (p.ow_n + 3u) / 4u;
  const uint ow0 = (i % quads) * 4u;
  uint t = i / quads;
  const uint oh = t % p.oh_n;
  t /= p.oh_n;
  const uint c = t % p.cout;
  const uint n = t / p.cout;
  const float b = p.has_bias != 0 ? float(bias_[p.bias_first + c * p.bias_s]) : 0.0;
  float sum[4] = float[4](b, b, b, b);
  const int ih0 = int(oh) * p.stride_h - p.pad_h;
  const uint xc = p.x_first + n * p.xs_n + c * p.xs_c;
  const uint wc = p.w_first + c * p.kh_n * p.kw_n;
  for (uint kh = 0; kh < p.kh_n; ++kh) {
    const int ih = ih0 + int(kh) * p.dil_h;
    if (ih < 0 || ih >= int(p.h)) continue;
    const uint xr = xc + uint(ih) * p.xs_h;
    for (uint kw = 0; kw < p.kw_n; ++kw) {
      const float wv = float(w_[wc + kh * p.kw_n + kw]);
      for (uint q = 0; q < 4u; ++q) {
        const int iw = int(ow0 + q) * p.stride_w - p.pad_w + int(kw) * p.dil_w;
        if (iw >= 0 && iw < int(p.w)) sum[q] += float(x_[xr + uint(iw) * p.xs_w]) * wv;
      }
    }
  }
  const uint o = p.out_first + n * p.os_n + c * p.os_c + oh * p.os_h;
  for (uint q = 0; q < 4u && ow0 + q < p.ow_n; ++q) out_[o + (ow0 + q) * p.os_w] = ELEM(sum[q]);
}
