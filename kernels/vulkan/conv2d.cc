// Conv2d, float32, and float16 where the device has it (caps().float16:
// float16 storage, float32 accumulation, one rounding per output):
// x [N, C, H, W], weight [Cout, C/groups, KH, KW], bias [Cout] or none,
// out [N, Cout, OH, OW] (as kernels/ref/conv2d.cc; the fused activation of
// Conv2dParams is applied by the graph executor, as on CPU).
// Four paths:
//   - 1x1, stride 1, no padding, groups 1: the tiled GEMM (matmul.h),
//     [Cout, Cin] x [Cin, H*W] per image, bias in its epilogue;
//   - depthwise (groups == C == Cout): shaders/conv2d_depthwise.comp;
//   - at least 16 output channels per group: shaders/conv2d_gemm.comp, an
//     implicit GEMM (the tiled shader gathering input patches on the fly);
//   - anything else (few output channels per group, where 64-row GEMM tiles
//     would stay mostly empty): shaders/conv2d_direct.comp.
// Each shader has a float16 twin (NAME_f16.comp on the same NAME.glsl body).
// x, bias and out may have any strides (channels_last too); the weight must be
// contiguous (the front-end makes it so).
#include <algorithm>
#include <string>

#include "kernels/vulkan/dispatch.h"
#include "kernels/vulkan/matmul.h"
#include "kernels/vulkan/vk_kernels.h"

namespace ember::vk {

namespace {

// Mirrors shaders/conv2d_push.glsl.
struct Conv2dPush {
  uint32_t x_first, w_first, bias_first, out_first;
  uint32_t total;
  uint32_t has_bias, bias_s;
  uint32_t cout, oh_n, ow_n;
  uint32_t cg, h, w;
  uint32_t kh_n, kw_n;
  uint32_t cout_g;
  int32_t stride_h, stride_w, pad_h, pad_w, dil_h, dil_w;
  uint32_t xs_n, xs_c, xs_h, xs_w;
  uint32_t os_n, os_c, os_h, os_w;
};
static_assert(sizeof(Conv2dPush) == 120, "Conv2dPush must mirror shaders/conv2d_push.glsl");

// Mirrors the push constants of shaders/conv2d_gemm.comp.
struct Conv2dGemmPush {
  uint32_t x_first, w_first, bias_first, out_first;
  uint32_t cout_g, ohw, kdim;
  uint32_t has_bias, bias_s;
  uint32_t groups, cg, h, w, kh_n, kw_n, ow_n;
  int32_t stride_h, stride_w, pad_h, pad_w, dil_h, dil_w;
  uint32_t xs_n, xs_c, xs_h, xs_w;
  uint32_t os_n, os_c, os_h, os_w;
  uint32_t batch0;
};
static_assert(sizeof(Conv2dGemmPush) == 124, "Conv2dGemmPush must mirror shaders/conv2d_gemm.comp");

// Output channels per group from which the implicit GEMM beats the direct shader.
constexpr int64_t kGemmMinCoutPerGroup = 16;
constexpr int64_t kTile = 64;
constexpr int64_t kMaxGroups = 65535;

uint32_t u32(int64_t v) { return static_cast<uint32_t>(v); }

// H and W of a [N, C, H, W] view read as one dim of stride strides[3].
bool hw_mergeable(const TensorView& v) { return v.sizes[2] == 1 || v.strides[2] == v.sizes[3] * v.strides[3]; }

// The fields Conv2dPush and Conv2dGemmPush share: bias, sizes, window,
// strides, padding, dilation and the input and output strides.
template <typename Push>
void set_geometry(Push& p, const TensorView& x, const TensorView& w, const TensorView& bias, const TensorView& o,
                  const Conv2dParams& cp) {
  p.has_bias = bias.data != nullptr ? 1 : 0;
  p.bias_s = bias.data != nullptr ? u32(bias.strides[0]) : 0;
  p.cg = u32(w.sizes[1]);
  p.h = u32(x.sizes[2]);
  p.w = u32(x.sizes[3]);
  p.kh_n = u32(w.sizes[2]);
  p.kw_n = u32(w.sizes[3]);
  p.ow_n = u32(o.sizes[3]);
  p.stride_h = static_cast<int32_t>(cp.stride[0]);
  p.stride_w = static_cast<int32_t>(cp.stride[1]);
  p.pad_h = static_cast<int32_t>(cp.padding[0]);
  p.pad_w = static_cast<int32_t>(cp.padding[1]);
  p.dil_h = static_cast<int32_t>(cp.dilation[0]);
  p.dil_w = static_cast<int32_t>(cp.dilation[1]);
  p.xs_n = u32(x.strides[0]);
  p.xs_c = u32(x.strides[1]);
  p.xs_h = u32(x.strides[2]);
  p.xs_w = u32(x.strides[3]);
  p.os_n = u32(o.strides[0]);
  p.os_c = u32(o.strides[1]);
  p.os_h = u32(o.strides[2]);
  p.os_w = u32(o.strides[3]);
}

// The 1x1 stride-1 convolution as a GEMM per image:
// out [N, Cout, HW] = weight [Cout, Cin] (batch stride 0) x x [N, Cin, HW].
Status conv1x1(const TensorView& x, const TensorView& w, const TensorView& bias, const TensorView& o) {
  TensorView a = w, b = x, out = o;
  a.rank = b.rank = out.rank = 3;
  a.sizes[0] = x.sizes[0];
  a.strides[0] = 0;
  a.sizes[1] = w.sizes[0];
  a.strides[1] = w.strides[0];
  a.sizes[2] = w.sizes[1];
  a.strides[2] = w.strides[1];
  b.sizes[2] = x.sizes[2] * x.sizes[3];
  b.strides[2] = x.strides[3];
  out.sizes[2] = o.sizes[2] * o.sizes[3];
  out.strides[2] = o.strides[3];
  return gemm(a, b, bias, bias.data != nullptr ? bias.strides[0] : 0, 0, out);
}

// The implicit GEMM: per image and group, [cout_g, cg*kh*kw] x [cg*kh*kw, oh*ow].
Status conv_gemm(const TensorView& x, const TensorView& w, const TensorView& bias, const TensorView& o,
                 const Conv2dParams& cp) {
  const int64_t groups = cp.groups, cout_g = o.sizes[1] / groups, ohw = o.sizes[2] * o.sizes[3];
  const int64_t kdim = w.sizes[1] * w.sizes[2] * w.sizes[3];
  if ((cout_g + kTile - 1) / kTile > kMaxGroups || (ohw + kTile - 1) / kTile > kMaxGroups) {
    Context::set_why("conv2d output of " + std::to_string(ohw) + " pixels needs more workgroups than a dispatch allows");
    return Status::NotSupported;
  }
  Conv2dGemmPush p{};
  p.cout_g = u32(cout_g);
  p.ohw = u32(ohw);
  p.kdim = u32(kdim);
  p.groups = u32(groups);
  set_geometry(p, x, w, bias, o, cp);
  const int64_t batches = o.sizes[0] * groups;
  const uint32_t gx = u32((ohw + kTile - 1) / kTile), gy = u32((cout_g + kTile - 1) / kTile);
  for (int64_t b0 = 0; b0 < batches; b0 += kMaxGroups) {
    Dispatch d(x.dtype == DType::Float16 ? shaders::conv2d_gemm_f16 : shaders::conv2d_gemm);
    p.x_first = d.bind(x);
    p.w_first = d.bind(w);
    p.bias_first = d.bind_or(bias, w);
    p.out_first = d.bind(o);
    p.batch0 = u32(b0);
    const Status s = d.run(p, gx, gy, u32(std::min(kMaxGroups, batches - b0)));
    if (s != Status::Ok) return s;
  }
  return Status::Ok;
}

}  // namespace

Status conv2d(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  if (in.size() != 3 || out.size() != 1) return Status::InvalidArgument;
  const Conv2dParams* p = std::get_if<Conv2dParams>(&params);
  if (p == nullptr || p->groups <= 0) return Status::InvalidArgument;
  const TensorView &x = in[0], &w = in[1], &bias = in[2], &o = out[0];
  if (x.rank != 4 || w.rank != 4 || o.rank != 4) return Status::InvalidArgument;
  if ((x.dtype != DType::Float32 && x.dtype != DType::Float16) || w.dtype != x.dtype || o.dtype != x.dtype ||
      (bias.data != nullptr && bias.dtype != x.dtype)) {
    return Status::DTypeMismatch;
  }
  if (bias.data != nullptr && (bias.rank != 1 || bias.sizes[0] != o.sizes[1])) return Status::InvalidArgument;
  const int64_t groups = p->groups;
  if (o.sizes[0] != x.sizes[0] || o.sizes[1] != w.sizes[0] || o.sizes[1] % groups != 0 ||
      x.sizes[1] != w.sizes[1] * groups) {
    return Status::ShapeMismatch;
  }
  if (o.numel() == 0) return Status::Ok;
  const bool f16 = x.dtype == DType::Float16;
  if (f16 && !float16_supported("conv2d")) return Status::NotSupported;
  if (!w.is_contiguous()) {
    Context::set_why("conv2d on vulkan needs a contiguous weight");
    return Status::NotSupported;
  }
  if (!fits_uint32(x, "the input") || !fits_uint32(w, "the weight") || !fits_uint32(o, "the output")) {
    return Status::NotSupported;
  }
  const int64_t kh = w.sizes[2], kw = w.sizes[3];
  const bool pointwise = kh == 1 && kw == 1 && p->stride[0] == 1 && p->stride[1] == 1 && p->padding[0] == 0 &&
                         p->padding[1] == 0 && groups == 1 && hw_mergeable(x) && hw_mergeable(o);
  if (pointwise) return conv1x1(x, w, bias, o);

  const bool depthwise = groups == x.sizes[1] && groups == o.sizes[1];
  if (!depthwise && o.sizes[1] / groups >= kGemmMinCoutPerGroup) return conv_gemm(x, w, bias, o, *p);
  Conv2dPush push{};
  push.cout = u32(o.sizes[1]);
  push.oh_n = u32(o.sizes[2]);
  push.cout_g = u32(o.sizes[1] / groups);
  set_geometry(push, x, w, bias, o, *p);
  const int64_t rows = o.sizes[0] * o.sizes[1] * o.sizes[2];
  const int64_t total = depthwise ? rows * ((o.sizes[3] + 3) / 4) : o.numel();
  if (total >= (int64_t{1} << 32)) {
    Context::set_why("conv2d output of " + std::to_string(o.numel()) + " elements is too large for one dispatch");
    return Status::NotSupported;
  }
  push.total = u32(total);
  Dispatch d(depthwise ? (f16 ? shaders::conv2d_depthwise_f16 : shaders::conv2d_depthwise)
                       : (f16 ? shaders::conv2d_direct_f16 : shaders::conv2d_direct));
  push.x_first = d.bind(x);
  push.w_first = d.bind(w);
  push.bias_first = d.bind_or(bias, w);
  push.out_first = d.bind(o);
  const Grid g = grid(total, 64);
  return d.run(push, g.x, g.y, 1, {64});
}

}  // namespace ember::vk
