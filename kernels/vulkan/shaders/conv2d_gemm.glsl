// 2-D convolution as an implicit GEMM on matmul_tiled.glsl, any groups, the
// body of conv2d_gemm.comp (float32) and conv2d_gemm_f16.comp (float16
// storage, float32 accumulation; ELEM is defined first): per image n and
// group g (batch = n * groups + g),
//   out[co = g*cout_g + m, (oh, ow) = col] = bias[co] + sum over k of
//     w[co, k] * x[n, g*cg + ci, oh*sh - ph + kh*dh, ow*sw - pw + kw*dw]
// with k = (ci, kh, kw) flattened (the weight's contiguous row) and the input
// patch gathered on the fly (no im2col buffer). x and out: any strides; the
// weight is contiguous [cout, cg, kh, kw]; the bias has stride bias_s.

layout(std430, set = 0, binding = 0) readonly buffer X { ELEM x_[]; };
layout(std430, set = 0, binding = 1) readonly buffer W { ELEM w_[]; };
layout(std430, set = 0, binding = 2) readonly buffer Bias { ELEM bias_[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Out { ELEM out_[]; };
// Mirrored by Conv2dGemmPush in kernels/vulkan/conv2d.cc.
layout(push_constant) uniform Push {
  uint x_first, w_first, bias_first, out_first;
  uint cout_g, ohw, kdim;  // M, N, K of each group's GEMM
  uint has_bias, bias_s;
  uint groups, cg, h, w, kh_n, kw_n, ow_n;
  int stride_h, stride_w, pad_h, pad_w, dil_h, dil_w;
  uint xs_n, xs_c, xs_h, xs_w;
  uint os_n, os_c, os_h, os_w;
  uint batch0;
} p;

float load_a(uint batch, uint m, uint k) {
  const uint g = batch % p.groups;
  return float(w_[p.w_first + (g * p.cout_g + m) * p.kdim + k]);
}

float load_b(uint batch, uint k, uint col) {
  const uint n = batch / p.groups, g = batch % p.groups;
  const uint khw = p.kh_n * p.kw_n;
  const uint ci = k / khw;
  const uint r = k - ci * khw;
  const uint kh = r / p.kw_n, kw = r - kh * p.kw_n;
  const uint oh = col / p.ow_n, ow = col - oh * p.ow_n;
  const int ih = int(oh) * p.stride_h - p.pad_h + int(kh) * p.dil_h;
  const int iw = int(ow) * p.stride_w - p.pad_w + int(kw) * p.dil_w;
  if (ih < 0 || ih >= int(p.h) || iw < 0 || iw >= int(p.w)) return 0.0;
  return float(x_[p.x_first + n * p.xs_n + (g * p.cg + ci) * p.xs_c + uint(ih) * p.xs_h + uint(iw) * p.xs_w]);
}

void store_out(uint batch, uint m, uint col, float v) {
  const uint n = batch / p.groups, g = batch % p.groups;
  const uint co = g * p.cout_g + m;
  if (p.has_bias != 0) v += float(bias_[p.bias_first + co * p.bias_s]);
  const uint oh = col / p.ow_n, ow = col - oh * p.ow_n;
  out_[p.out_first + n * p.os_n + co * p.os_c + oh * p.os_h + ow * p.os_w] = ELEM(v);
}

#define TILED_M p.cout_g
#define TILED_N p.ohw
#define TILED_K p.kdim
#define TILED_BATCH0 p.batch0
#define TILED_A_K_FAST true
#define TILED_B_N_FAST true
#include "matmul_tiled.glsl"
