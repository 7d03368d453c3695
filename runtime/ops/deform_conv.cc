// Front-end of ONNX's DeformConv (2-D, as torchvision.ops.deform_conv2d) over
// its reference kernel: argument checks, the output shape. No autograd.
#include <string>

#include "runtime/ops/dispatch.h"
#include "runtime/ops/ops.h"

namespace ember {

Result<Tensor> core::deform_conv(const Tensor& x, const Tensor& weight, const Tensor& offset, const Tensor& bias,
                                 const Tensor& mask, const DeformConvParams& p) {
  EMBER_CHECK(p.valid(), Status::InvalidArgument, "DeformConv: strides, dilations, groups and offset_group must be "
              "positive and pads not negative");
  EMBER_CHECK(x.defined() && weight.defined() && offset.defined(), Status::InvalidArgument,
              "DeformConv: the input, weight and offset are required");
  EMBER_CHECK(x.dim() == 4 && weight.dim() == 4 && offset.dim() == 4, Status::InvalidArgument,
              "DeformConv: expected a 4-D input, weight and offset (2-D convolution), got ", shape_str(x.sizes()), ", ",
              shape_str(weight.sizes()), " and ", shape_str(offset.sizes()));
  EMBER_CHECK(is_floating(x.dtype()), Status::NotSupported, "DeformConv: expected a floating-point input, got ",
              dtype_name(x.dtype()));
  for (const Tensor* t : {&weight, &offset, &bias, &mask}) {
    EMBER_CHECK(!t->defined() || t->dtype() == x.dtype(), Status::DTypeMismatch,
                "DeformConv: weight, offset, bias and mask must have the input's dtype ", dtype_name(x.dtype()),
                ", got ", dtype_name(t->dtype()));
  }
  EMBER_TRY(check_same_device({x, weight, offset, bias, mask}));
  const int64_t c = x.size(1), oc = weight.size(0), kh = weight.size(2), kw = weight.size(3);
  EMBER_CHECK(c == weight.size(1) * p.groups && oc % p.groups == 0, Status::ShapeMismatch, "DeformConv: input ",
              shape_str(x.sizes()), " and weight ", shape_str(weight.sizes()), " do not fit groups=", p.groups);
  EMBER_CHECK(c % p.offset_groups == 0, Status::ShapeMismatch, "DeformConv: ", c,
              " input channels are not divisible by offset_group=", p.offset_groups);
  const int64_t oh = p.out_h(x.size(2), kh), ow = p.out_w(x.size(3), kw);
  EMBER_CHECK(oh >= 1 && ow >= 1, Status::ShapeMismatch, "DeformConv: the kernel ", kh, "x", kw,
              " (dilated) does not fit the padded input ", shape_str(x.sizes()));
  const Shape want_offset = {x.size(0), p.offset_groups * kh * kw * 2, oh, ow};
  EMBER_CHECK(offset.sizes() == want_offset, Status::ShapeMismatch, "DeformConv: offset must be ",
              shape_str(want_offset), ", got ", shape_str(offset.sizes()));
  EMBER_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == oc), Status::ShapeMismatch,
              "DeformConv: bias must be [", oc, "], got ", bias.defined() ? shape_str(bias.sizes()) : std::string());
  const Shape want_mask = {x.size(0), p.offset_groups * kh * kw, oh, ow};
  EMBER_CHECK(!mask.defined() || mask.sizes() == want_mask, Status::ShapeMismatch, "DeformConv: mask must be ",
              shape_str(want_mask), ", got ", mask.defined() ? shape_str(mask.sizes()) : std::string());
  EMBER_ASSIGN_OR_RETURN(Tensor y, core::empty({x.size(0), oc, oh, ow}, TensorOptions(x.dtype()).device(x.device())));
  if (y.numel() > 0) EMBER_TRY(run_kernel(OpKind::DeformConv, {x, weight, offset, bias, mask}, {y}, p));
  return y;
}

Tensor deform_conv(const Tensor& x, const Tensor& weight, const Tensor& offset, const Tensor& bias,
                   const Tensor& mask, const DeformConvParams& p) {
  return unwrap(core::deform_conv(x, weight, offset, bias, mask, p));
}

}  // namespace ember
