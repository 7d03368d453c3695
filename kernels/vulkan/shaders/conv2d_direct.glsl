// Direct 2-D convolution (cross-correlation, as PyTorch), any groups, the body
// of conv2d_direct.comp (float32) and conv2d_direct_f16.comp (float16 storage,
// float32 accumulation); ELEM is defined first:
//   out[n, co, oh, ow] = bias[co] + sum over ci < cg, kh, kw of
//     x[n, g*cg + ci, oh*sh - ph + kh*dh, ow*sw - pw + kw*dw] * w[co, ci, kh, kw]
// with g = co / cout_g. One invocation per output, ow fastest (neighbours share
// the weights of one output channel). x and out: any strides; the weight is
// contiguous [cout, cg, kh, kw]; the bias has stride bias_s.
#include "common.glsl"

layout(std430, set = 0, binding = 0) readonly buffer X { ELEM x_[]; };
layout(std430, set = 0, binding = 1) readonly buffer W { ELEM w_[]; };
layout(std430, set = 0, binding = 2) readonly buffer Bias { ELEM bias_[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Out { ELEM out_[]; };
#include "conv2d_push.glsl"

void main() {
  const uint i = flat_index();
  if (i >= p.total) return;
  const uint ow = i % p.ow_n;
  uint t = i / p.ow_n;
  const uint oh = t % p.oh_n;
  t /= p.oh_n;
  const uint co = t % p.cout;
  const uint n = t / p.cout;
  const uint g = co / p.cout_g;
  float sum = p.has_bias != 0 ? float(bias_[p.bias_first + co * p.bias_s]) : 0.0;
  const int ih0 = int(oh) * p.stride_h - p.pad_h;
  const int iw0 = int(ow) * p.stride_w - p.pad_w;
  const uint x_base = p.x_first + n * p.xs_n + g * p.cg * p.xs_c;
  uint wi = p.w_first + co * p.cg * p.kh_n * p.kw_n;
  for (uint ci = 0; ci < p.cg; ++ci) {
    const uint xc = x_base + ci * p.xs_c;
    for (uint kh = 0; kh < p.kh_n; ++kh) {
      const int ih = ih0 + int(kh) * p.dil_h;
      if (ih < 0 || ih >= int(p.h)) {
        wi += p.kw_n;
        continue;
      }
      const uint xr = xc + uint(ih) * p.xs_h;
      for (uint kw = 0; kw < p.kw_n; ++kw, ++wi) {
        const int iw = iw0 + int(kw) * p.dil_w;
        if (iw >= 0 && iw < int(p.w)) sum += float(x_[xr + uint(iw) * p.xs_w]) * float(w_[wi]);
      }
    }
  }
  out_[p.out_first + n * p.os_n + co * p.os_c + oh * p.os_h + ow * p.os_w] = ELEM(sum);
}
