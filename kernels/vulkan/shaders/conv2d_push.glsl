// The push constants of conv2d_direct.comp and conv2d_depthwise.comp,
// mirrored by Conv2dPush in kernels/vulkan/conv2d.cc.
layout(push_constant) uniform Push {
  uint x_first, w_first, bias_first, out_first;
  uint total;  // invocations with work: outputs (direct) or output quads (depthwise)
  uint has_bias, bias_s;
  uint cout, oh_n, ow_n;
  uint cg, h, w;  // input channels per group, input height and width
  uint kh_n, kw_n;
  uint cout_g;  // output channels per group
  int stride_h, stride_w, pad_h, pad_w, dil_h, dil_w;
  uint xs_n, xs_c, xs_h, xs_w;
  uint os_n, os_c, os_h, os_w;
} p;
