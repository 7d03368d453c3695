// Front-ends of ONNX's AffineGrid, Col2Im and MaxUnpool (over their reference
// kernels). Their run-time size, image_shape / block_shape and output_shape
// inputs are read on the host. No autograd.
#include <string>
#include <vector>

#include "runtime/ops/dispatch.h"
#include "runtime/ops/ops.h"

namespace ember {
namespace {

Result<std::vector<int64_t>> host_ints(const Tensor& t, const char* op, const char* what) {
  EMBER_CHECK(t.defined() && t.dim() == 1, Status::InvalidArgument, op, ": ", what, " must be a 1-D tensor, got ",
              t.defined() ? shape_str(t.sizes()) : std::string("none"));
  EMBER_CHECK(!is_floating(t.dtype()) && t.dtype() != DType::Bool, Status::DTypeMismatch, op, ": ", what,
              " must be an integer tensor, got ", dtype_name(t.dtype()));
  EMBER_ASSIGN_OR_RETURN(Tensor h, core::to(t, Device(DeviceType::CPU)));
  EMBER_ASSIGN_OR_RETURN(h, core::to(h, DType::Int64));
  EMBER_ASSIGN_OR_RETURN(h, core::contiguous(h));
  return h.to_vector<int64_t>();
}

}  // namespace

Result<Tensor> core::affine_grid(const Tensor& theta, const Tensor& size, const AffineGridParams& p) {
  EMBER_ASSIGN_OR_RETURN(const std::vector<int64_t> s, host_ints(size, "AffineGrid", "size"));
  EMBER_CHECK(s.size() == 4 || s.size() == 5, Status::InvalidArgument,
              "AffineGrid: size must be [N, C, H, W] or [N, C, D, H, W], got ", shape_str(s));
  const int64_t nd = static_cast<int64_t>(s.size()) - 2;
  EMBER_CHECK(theta.dim() == 3 && theta.size(0) == s[0] && theta.size(1) == nd && theta.size(2) == nd + 1,
              Status::ShapeMismatch, "AffineGrid: theta must be [", s[0], ", ", nd, ", ", nd + 1, "] for size ",
              shape_str(s), ", got ", shape_str(theta.sizes()));
  EMBER_CHECK(is_floating(theta.dtype()), Status::NotSupported, "AffineGrid: expected a floating-point theta, got ",
              dtype_name(theta.dtype()));
  for (int64_t v : s) {
    EMBER_CHECK(v >= 0, Status::InvalidArgument, "AffineGrid: size ", shape_str(s), " has a negative value");
  }
  Shape out = {s[0]};
  out.insert(out.end(), s.begin() + 2, s.end());
  out.push_back(nd);
  EMBER_ASSIGN_OR_RETURN(Tensor y, core::empty(out, TensorOptions(theta.dtype()).device(theta.device())));
  if (y.numel() > 0) EMBER_TRY(run_kernel(OpKind::AffineGrid, {theta}, {y}, p));
  return y;
}

Result<Tensor> core::col2im(const Tensor& x, const Tensor& image_shape, const Tensor& block_shape,
                            const Col2ImParams& params) {
  EMBER_ASSIGN_OR_RETURN(const std::vector<int64_t> image, host_ints(image_shape, "Col2Im", "image_shape"));
  EMBER_ASSIGN_OR_RETURN(const std::vector<int64_t> block, host_ints(block_shape, "Col2Im", "block_shape"));
  const int64_t nd = static_cast<int64_t>(image.size());
  EMBER_CHECK(nd >= 1 && nd <= kMaxRank - 2 && block.size() == image.size(), Status::InvalidArgument,
              "Col2Im: image_shape ", shape_str(image), " and block_shape ", shape_str(block),
              " must have the same length, 1 to ", kMaxRank - 2);
  EMBER_CHECK(params.dims == 0 || params.dims == nd, Status::InvalidArgument, "Col2Im: dilations, pads and strides are ",
              params.dims, "-D, image_shape ", shape_str(image), " is ", nd, "-D");
  Col2ImParams p = params;
  p.dims = nd;
  EMBER_CHECK(p.valid(), Status::InvalidArgument, "Col2Im: invalid dilations, pads or strides");
  EMBER_CHECK(x.dim() == 3, Status::InvalidArgument, "Col2Im: input must be [N, C * prod(block_shape), L], got ",
              shape_str(x.sizes()));
  EMBER_CHECK(is_floating(x.dtype()), Status::NotSupported, "Col2Im: expected a floating-point input, got ",
              dtype_name(x.dtype()));
  int64_t kvol = 1, cols = 1;
  for (int64_t d = 0; d < nd; ++d) {
    EMBER_CHECK(image[d] >= 1 && block[d] >= 1, Status::InvalidArgument, "Col2Im: image_shape ", shape_str(image),
                " and block_shape ", shape_str(block), " must be positive");
    p.image[d] = image[d];
    p.block[d] = block[d];
    kvol *= block[d];
    const int64_t span = image[d] + p.pads_begin[d] + p.pads_end[d] - p.dilations[d] * (block[d] - 1) - 1;
    EMBER_CHECK(span >= 0, Status::InvalidArgument, "Col2Im: block_shape ", shape_str(block),
                " (dilated) does not fit image_shape ", shape_str(image), " with its pads");
    cols *= span / p.strides[d] + 1;
  }
  EMBER_CHECK(x.size(1) % kvol == 0 && x.size(2) == cols, Status::ShapeMismatch, "Col2Im: input ",
              shape_str(x.sizes()), " must be [N, C * ", kvol, ", ", cols, "] for image_shape ", shape_str(image),
              " and block_shape ", shape_str(block));
  Shape out = {x.size(0), x.size(1) / kvol};
  out.insert(out.end(), image.begin(), image.end());
  EMBER_ASSIGN_OR_RETURN(Tensor y, core::empty(out, TensorOptions(x.dtype()).device(x.device())));
  if (y.numel() > 0) EMBER_TRY(run_kernel(OpKind::Col2Im, {x}, {y}, p));
  return y;
}

Result<Tensor> core::max_unpool(const Tensor& x, const Tensor& indices, const Tensor& output_shape,
                                const MaxUnpoolParams& p) {
  EMBER_CHECK(p.valid() && x.dim() == p.dims + 2, Status::InvalidArgument, "MaxUnpool: input ",
              shape_str(x.sizes()), " does not match its ", p.dims, "-D kernel_shape, pads or strides");
  EMBER_CHECK(indices.defined() && indices.sizes() == x.sizes(), Status::ShapeMismatch, "MaxUnpool: indices ",
              indices.defined() ? shape_str(indices.sizes()) : std::string("none"), " must have the input's shape ",
              shape_str(x.sizes()));
  EMBER_CHECK(is_floating(x.dtype()), Status::NotSupported, "MaxUnpool: expected a floating-point input, got ",
              dtype_name(x.dtype()));
  EMBER_CHECK(indices.dtype() == DType::Int64 || indices.dtype() == DType::Int32, Status::DTypeMismatch,
              "MaxUnpool: indices must be int64, got ", dtype_name(indices.dtype()));
  EMBER_TRY(check_same_device({x, indices}));
  Shape out = x.sizes();
  for (int64_t d = 0; d < p.dims; ++d) {
    out[static_cast<size_t>(2 + d)] = p.unpooled(d, x.size(2 + d));
    EMBER_CHECK(out[static_cast<size_t>(2 + d)] >= 0, Status::InvalidArgument, "MaxUnpool: input ",
                shape_str(x.sizes()), " unpools to a negative size");
  }
  if (output_shape.defined()) {
    EMBER_ASSIGN_OR_RETURN(const std::vector<int64_t> want, host_ints(output_shape, "MaxUnpool", "output_shape"));
    bool ok = want.size() == out.size() && want[0] == out[0] && want[1] == out[1];
    for (size_t d = 2; ok && d < want.size(); ++d) ok = want[d] >= out[d];
    EMBER_CHECK(ok, Status::ShapeMismatch, "MaxUnpool: output_shape ", shape_str(want),
                " must keep N and C and be at least the unpooled shape ", shape_str(out));
    out = Shape(want.begin(), want.end());
  }
  EMBER_ASSIGN_OR_RETURN(Tensor y, core::empty(out, TensorOptions(x.dtype()).device(x.device())));
  if (y.numel() > 0) {
    EMBER_ASSIGN_OR_RETURN(const Tensor idx, core::to(indices, DType::Int64));
    EMBER_TRY(run_kernel(OpKind::MaxUnpool, {x, idx}, {y}, p));
  }
  return y;
}

Tensor affine_grid(const Tensor& theta, const Tensor& size, const AffineGridParams& p) {
  return unwrap(core::affine_grid(theta, size, p));
}

Tensor col2im(const Tensor& x, const Tensor& image_shape, const Tensor& block_shape, const Col2ImParams& params) {
  return unwrap(core::col2im(x, image_shape, block_shape, params));
}

Tensor max_unpool(const Tensor& x, const Tensor& indices, const Tensor& output_shape, const MaxUnpoolParams& p) {
  return unwrap(core::max_unpool(x, indices, output_shape, p));
}

}  // namespace ember
