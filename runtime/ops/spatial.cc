// Spatial front-ends: Resize (the graph front-end of ONNX's Resize / Upsample,
// ResizeParams) with torch.nn.functional.interpolate over it, and
// ConvTranspose (1-D to 3-D, ConvTransposeParams) with conv_transpose1d/2d/3d
// over it, PyTorch's argument order, defaults and messages. No autograd.
#include <cmath>
#include <string>
#include <vector>

#include "runtime/amp/autocast.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/ops.h"

namespace ember {
namespace {

const char* resize_mode_name(ResizeMode m) {
  return m == ResizeMode::Nearest ? "nearest" : m == ResizeMode::Linear ? "linear" : "cubic";
}

// The taps an antialiased linear / cubic filter takes at `scale` (< 1: shrinking).
double antialias_taps(ResizeMode mode, double scale) {
  const double s = std::min(scale, 1.0);
  return 2.0 - 2.0 * (std::floor((mode == ResizeMode::Linear ? -1.0 : -2.0) / s) + 1.0);
}

// A single value or one per spatial dim (PyTorch's expand_param_if_needed).
Result<std::vector<int64_t>> per_dim(IntArrayRef v, const char* name, int64_t dims) {
  if (v.size() == 1) return std::vector<int64_t>(static_cast<size_t>(dims), v[0]);
  EMBER_CHECK(static_cast<int64_t>(v.size()) == dims, Status::InvalidArgument, "expected ", name,
              " to be a single integer value or a list of ", dims,
              " values to match the convolution dimensions, but got ", name, "=", shape_str(v));
  return std::vector<int64_t>(v.begin(), v.end());
}

// ONNX's run-time roi, scales and sizes (empty or undefined: not given) applied to `p`.
Result<ResizeParams> with_inputs(const Tensor& x, const Tensor& roi, const Tensor& scales, const Tensor& sizes,
                                 ResizeParams p) {
  const int64_t na = p.num_axes > 0 ? p.num_axes : x.dim();
  auto axis = [&](int64_t i) { return static_cast<int>(p.num_axes > 0 ? p.axes[i] : i); };
  for (int64_t i = 0; i < na; ++i) {
    EMBER_CHECK(axis(i) >= 0 && axis(i) < x.dim(), Status::OutOfRange, "Resize: axis ", axis(i),
                " is out of range for input ", shape_str(x.sizes()));
  }
  auto host = [&](const Tensor& t, const char* what, int64_t count) -> Result<std::vector<double>> {
    EMBER_CHECK(t.numel() == count, Status::ShapeMismatch, "Resize: ", what, " has ", t.numel(), " values, expected ",
                count, " (input ", shape_str(x.sizes()), ")");
    EMBER_ASSIGN_OR_RETURN(Tensor h, core::to(t, Device(DeviceType::CPU)));
    EMBER_ASSIGN_OR_RETURN(h, core::to(h, DType::Float64));
    EMBER_ASSIGN_OR_RETURN(h, core::contiguous(h));
    return h.to_vector<double>();
  };
  const bool has_scales = scales.defined() && scales.numel() > 0, has_sizes = sizes.defined() && sizes.numel() > 0;
  EMBER_CHECK(!(has_scales && has_sizes), Status::InvalidArgument, "Resize: only one of scales and sizes may be given");
  if (roi.defined() && roi.numel() > 0 && p.coord == ResizeCoord::TfCropAndResize) {
    EMBER_ASSIGN_OR_RETURN(const std::vector<double> r, host(roi, "roi", 2 * na));
    for (int64_t i = 0; i < na; ++i) {
      p.roi_start[axis(i)] = r[static_cast<size_t>(i)];
      p.roi_end[axis(i)] = r[static_cast<size_t>(na + i)];
    }
  }
  if (has_scales) {
    EMBER_CHECK(is_floating(scales.dtype()), Status::DTypeMismatch, "Resize: scales must be floating point, got ",
                dtype_name(scales.dtype()));
    EMBER_ASSIGN_OR_RETURN(const std::vector<double> s, host(scales, "scales", na));
    for (int64_t i = 0; i < na; ++i) {
      const double v = s[static_cast<size_t>(i)];
      EMBER_CHECK(v > 0.0 && std::isfinite(v), Status::InvalidArgument, "Resize: scale ", v,
                  " is not positive and finite");
      p.scales[axis(i)] = v;
      p.fixed &= ~(1u << axis(i));
    }
  }
  if (has_sizes) {
    EMBER_CHECK(sizes.dtype() == DType::Int64 || sizes.dtype() == DType::Int32, Status::DTypeMismatch,
                "Resize: sizes must be int64, got ", dtype_name(sizes.dtype()));
    EMBER_ASSIGN_OR_RETURN(const std::vector<double> s, host(sizes, "sizes", na));
    double scale = p.keep_aspect == KeepAspect::NotLarger ? INFINITY : 0.0;
    for (int64_t i = 0; i < na; ++i) {
      EMBER_CHECK(s[static_cast<size_t>(i)] >= 0, Status::InvalidArgument, "Resize: size ", s[static_cast<size_t>(i)],
                  " is negative");
      const double r = s[static_cast<size_t>(i)] / static_cast<double>(x.size(axis(i)));
      scale = p.keep_aspect == KeepAspect::NotLarger ? std::min(scale, r) : std::max(scale, r);
    }
    for (int64_t i = 0; i < na; ++i) {
      const int d = axis(i);
      p.fixed |= 1u << d;
      if (p.keep_aspect == KeepAspect::Stretch) {
        p.sizes[d] = static_cast<int64_t>(s[static_cast<size_t>(i)]);
        p.scales[d] = 0.0;
      } else {
        p.sizes[d] = static_cast<int64_t>(scale * static_cast<double>(x.size(d)) + 0.5);
        p.scales[d] = scale;
      }
    }
  }
  return p;
}

}  // namespace

Result<Tensor> core::resize(const Tensor& x, const Tensor& roi, const Tensor& scales, const Tensor& sizes,
                            const ResizeParams& params) {
  EMBER_CHECK(params.valid(), Status::InvalidArgument,
              "resize: invalid parameters (mode, coordinate transformation, nearest mode, axes or rank out of range)");
  EMBER_CHECK(x.dim() == params.rank, Status::ShapeMismatch, "resize: the parameters describe a rank-", params.rank,
              " input, but got input of size ", shape_str(x.sizes()));
  EMBER_CHECK(x.dtype() != DType::Bool, Status::NotSupported, "resize: \"", resize_mode_name(params.mode),
              "\" not implemented for 'Bool'");
  EMBER_ASSIGN_OR_RETURN(const ResizeParams p, with_inputs(x, roi, scales, sizes, params));
  Shape out(static_cast<size_t>(x.dim()));
  for (int d = 0; d < x.dim(); ++d) {
    const int64_t in = x.size(d), o = p.output_size(d, in);
    EMBER_CHECK(o >= 0, Status::InvalidArgument, "resize: the output size of dim ", d, " (input size ", in,
                ", scale ", p.scales[d], ") is out of range");
    EMBER_CHECK(in > 0 || o == 0, Status::InvalidArgument, "resize: cannot resize dim ", d, " of size 0 to ", o,
                " (input ", shape_str(x.sizes()), ")");
    const double scale = p.coord_scale(d, in, o);
    EMBER_CHECK(!(scale > 0.0) || !p.antialias || p.mode == ResizeMode::Nearest ||
                    antialias_taps(p.mode, scale) <= 64.0,
                Status::NotSupported, "resize: antialiased ", resize_mode_name(p.mode), " shrinking dim ", d,
                " by scale ", scale, " needs more than 64 taps (at most 64 are supported)");
    out[static_cast<size_t>(d)] = o;
  }
  EMBER_ASSIGN_OR_RETURN(Tensor y, core::empty(out, TensorOptions(x.dtype()).device(x.device())));
  if (y.numel() > 0) EMBER_TRY(run_kernel(OpKind::Resize, {x}, {y}, p));
  return y;
}

Tensor resize(const Tensor& x, const Tensor& roi, const Tensor& scales, const Tensor& sizes, const ResizeParams& params) {
  return unwrap(core::resize(x, roi, scales, sizes, params));
}

Result<Tensor> core::interpolate(const Tensor& x, IntArrayRef size, const std::vector<double>& scale_factor,
                                 std::string_view mode, std::optional<bool> align_corners, bool antialias) {
  const int64_t dims = x.dim() - 2;
  EMBER_CHECK(dims >= 1 && dims <= 3, Status::InvalidArgument,
              "Input Error: Only 3D, 4D and 5D input Tensors supported (got ", x.dim(), "D) for the modes: nearest | "
              "linear | bilinear | bicubic | trilinear | area | nearest-exact (got ", mode, ")");
  EMBER_CHECK(!size.empty() || !scale_factor.empty(), Status::InvalidArgument,
              "either size or scale_factor should be defined");
  EMBER_CHECK(size.empty() || scale_factor.empty(), Status::InvalidArgument,
              "only one of size or scale_factor should be defined");
  const bool interpolating = mode == "linear" || mode == "bilinear" || mode == "bicubic" || mode == "trilinear";
  EMBER_CHECK(interpolating || mode == "nearest" || mode == "nearest-exact" || mode == "area", Status::NotSupported,
              "interpolate: mode '", mode, "' is unknown (nearest | linear | bilinear | bicubic | trilinear | area | "
              "nearest-exact)");
  EMBER_CHECK(interpolating || !align_corners.has_value(), Status::InvalidArgument,
              "align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | "
              "trilinear");
  const int64_t needs = mode == "linear" ? 3 : mode == "bilinear" || mode == "bicubic" ? 4 : mode == "trilinear" ? 5 : 0;
  EMBER_CHECK(needs == 0 || needs == x.dim(), Status::InvalidArgument, "Got ", x.dim(), "D input, but ", mode,
              " mode needs ", needs, "D input");
  EMBER_CHECK(!antialias || mode == "bilinear" || mode == "bicubic", Status::InvalidArgument,
              "Anti-alias option is only supported for bilinear and bicubic modes");
  EMBER_CHECK(!antialias, Status::NotSupported, "interpolate: antialias=True is not supported");
  std::vector<double> sf = scale_factor;
  if (sf.size() == 1) sf.assign(static_cast<size_t>(dims), sf[0]);
  std::vector<int64_t> sz(size.begin(), size.end());
  if (sz.size() == 1) sz.assign(static_cast<size_t>(dims), sz[0]);
  const size_t given = size.empty() ? sf.size() : sz.size();
  EMBER_CHECK(static_cast<int64_t>(given) == dims, Status::InvalidArgument,
              "Input and output must have the same number of spatial dimensions, but got input with spatial "
              "dimensions of ",
              shape_str(Shape(x.sizes().begin() + 2, x.sizes().end())), " and output size of ",
              size.empty() ? std::string("scale_factor of ") + std::to_string(sf.size()) + " values"
                           : shape_str(sz),
              ". Please provide input tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) "
              "format.");
  ResizeParams p;
  p.rank = x.dim();
  p.scales[0] = p.scales[1] = 1.0;
  const bool corners = align_corners.value_or(false);
  for (int64_t i = 0; i < dims; ++i) {
    const int d = static_cast<int>(2 + i);
    const int64_t in = x.size(d);
    if (!sz.empty()) {
      EMBER_CHECK(sz[static_cast<size_t>(i)] >= 0, Status::InvalidArgument, "interpolate: size ", shape_str(sz),
                  " has a negative entry");
      p.fixed |= 1u << d;
      p.sizes[d] = sz[static_cast<size_t>(i)];
      continue;
    }
    const double s = sf[static_cast<size_t>(i)];
    EMBER_CHECK(s > 0.0 && std::isfinite(s), Status::InvalidArgument, "interpolate: scale_factor ", s,
                " must be positive and finite");
    if (corners) {  // PyTorch's align_corners uses (in - 1) / (out - 1), not the factor
      p.fixed |= 1u << d;
      p.sizes[d] = static_cast<int64_t>(std::floor(static_cast<double>(in) * s));
    } else {
      p.scales[d] = s;
    }
  }
  if (mode == "area") {
    EMBER_CHECK(x.dim() == 4, Status::NotSupported, "interpolate: mode 'area' is supported for 4D input only, got ",
                x.dim(), "D");
    return core::adaptive_avg_pool2d(x, {p.output_size(2, x.size(2)), p.output_size(3, x.size(3))});
  }
  if (mode == "nearest") {
    p.mode = ResizeMode::Nearest;
    p.coord = ResizeCoord::Asymmetric;
    p.nearest = NearestMode::Floor;
  } else if (mode == "nearest-exact") {
    p.mode = ResizeMode::Nearest;
    p.coord = ResizeCoord::HalfPixel;
    p.nearest = NearestMode::RoundPreferCeil;
  } else {
    p.mode = mode == "bicubic" ? ResizeMode::Cubic : ResizeMode::Linear;
    p.coord = corners ? ResizeCoord::AlignCorners : ResizeCoord::HalfPixel;
    p.cubic_coeff_a = -0.75;
  }
  EMBER_CHECK(is_floating(x.dtype()) || p.mode == ResizeMode::Nearest, Status::NotSupported, "\"upsample_", mode,
              "\" not implemented for '", dtype_legacy_name(x.dtype()), "'");
  return core::resize(x, Tensor(), Tensor(), Tensor(), p);
}

Tensor interpolate(const Tensor& x, IntArrayRef size, const std::vector<double>& scale_factor, std::string_view mode,
                   std::optional<bool> align_corners, bool antialias) {
  return unwrap(core::interpolate(x, size, scale_factor, mode, align_corners, antialias));
}

Result<Tensor> core::conv_transpose(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                    const ConvTransposeParams& p) {
  EMBER_CHECK(x.dim() >= 3 && x.dim() <= 5, Status::InvalidArgument,
              "conv_transpose: expected a 3-D to 5-D input [N, C, *spatial] (1-D to 3-D), but got input of size ",
              shape_str(x.sizes()));
  EMBER_CHECK(p.valid(), Status::InvalidArgument,
              "conv_transpose: strides and dilations must be positive, output_padding non-negative, groups positive");
  const Shape& ws = weight.sizes();
  EMBER_CHECK(weight.dim() == x.dim(), Status::ShapeMismatch, "Expected ", weight.dim(), "-dimensional input for ",
              weight.dim(), "-dimensional weight ", shape_str(ws), ", but got ", x.dim(), "-dimensional input of size ",
              shape_str(x.sizes()), " instead");
  EMBER_CHECK(ws[0] == x.size(1) && x.size(1) % p.groups == 0, Status::ShapeMismatch, "Given transposed=1, weight of size ",
              shape_str(ws), ", expected input", shape_str(x.sizes()), " to have ", ws[0],
              " channels (divisible by groups=", p.groups, "), but got ", x.size(1), " channels instead");
  const int64_t cout = ws[1] * p.groups;
  EMBER_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == cout), Status::ShapeMismatch,
              "Given transposed=1, weight of size ", shape_str(ws), ", expected bias to be 1-dimensional with ", cout,
              " elements, but got bias of size ", shape_str(bias.defined() ? bias.sizes() : Shape{}), " instead");
  EMBER_CHECK(weight.dtype() == x.dtype() && (!bias.defined() || bias.dtype() == x.dtype()), Status::DTypeMismatch,
              "conv_transpose: input (", dtype_name(x.dtype()), "), weight (", dtype_name(weight.dtype()), ") and bias (",
              bias.defined() ? dtype_name(bias.dtype()) : "none", ") must have one dtype");
  EMBER_CHECK(x.dtype() != DType::Bool, Status::NotSupported, "\"slow_conv_transpose\" not implemented for 'Bool'");
  EMBER_TRY(check_same_device({x, weight, bias}));
  Shape out = {x.size(0), cout};
  Shape in_sp, out_sp;
  bool ok = true;
  for (int64_t i = 0; i < x.dim() - 2; ++i) {
    const int64_t in = x.size(2 + i);
    const int64_t o = (in - 1) * p.stride[i] + p.dilation[i] * (ws[2 + i] - 1) + 1 + p.output_padding[i] -
                      p.pad_begin[i] - p.pad_end[i];
    ok = ok && in > 0 && o > 0;
    in_sp.push_back(in);
    out_sp.push_back(o);
    out.push_back(o);
  }
  EMBER_CHECK(ok, Status::ShapeMismatch, "Given input size per channel: ", shape_str(in_sp),
              ". Calculated output size per channel: ", shape_str(out_sp), ". Output size is too small");
  EMBER_ASSIGN_OR_RETURN(Tensor y, core::empty(out, TensorOptions(x.dtype()).device(x.device())));
  if (y.numel() > 0) {
    EMBER_ASSIGN_OR_RETURN(const Tensor xc, core::contiguous(x));
    EMBER_ASSIGN_OR_RETURN(const Tensor wc, core::contiguous(weight.detach()));
    EMBER_TRY(run_kernel(OpKind::ConvTranspose, {xc, wc, bias}, {y}, p));
  }
  return y;
}

Tensor conv_transpose(const Tensor& x, const Tensor& weight, const Tensor& bias, const ConvTransposeParams& p) {
  return unwrap(core::conv_transpose(x, weight, bias, p));
}

namespace {

Result<Tensor> conv_transpose_nd(int64_t dims, const Tensor& x, const Tensor& weight, const Tensor& bias,
                                 IntArrayRef stride, IntArrayRef padding, IntArrayRef output_padding, int64_t groups,
                                 IntArrayRef dilation) {
  const amp::Op amp_op = dims == 1 ? amp::Op::ConvTranspose1d
                                   : (dims == 2 ? amp::Op::ConvTranspose2d : amp::Op::ConvTranspose3d);
  if (amp::Cast c = amp::autocast(amp_op, {x, weight, bias})) {
    return conv_transpose_nd(dims, c[0], c[1], c[2], stride, padding, output_padding, groups, dilation);
  }
  EMBER_CHECK(x.dim() == dims + 1 || x.dim() == dims + 2, Status::InvalidArgument, "Expected ", dims + 1,
              "D (unbatched) or ", dims + 2, "D (batched) input to conv_transpose", dims, "d, but got input of size: ",
              shape_str(x.sizes()));
  EMBER_CHECK(groups > 0, Status::InvalidArgument, "non-positive groups is not supported");
  const bool batched = x.dim() == dims + 2;
  EMBER_ASSIGN_OR_RETURN(const std::vector<int64_t> st, per_dim(stride, "stride", dims));
  EMBER_ASSIGN_OR_RETURN(const std::vector<int64_t> pad, per_dim(padding, "padding", dims));
  EMBER_ASSIGN_OR_RETURN(const std::vector<int64_t> op, per_dim(output_padding, "output_padding", dims));
  EMBER_ASSIGN_OR_RETURN(const std::vector<int64_t> dil, per_dim(dilation, "dilation", dims));
  ConvTransposeParams p;
  p.groups = groups;
  for (size_t i = 0; i < static_cast<size_t>(dims); ++i) {
    EMBER_CHECK(pad[i] >= 0, Status::InvalidArgument, "negative padding is not supported");
    EMBER_CHECK(st[i] > 0, Status::InvalidArgument, "non-positive stride is not supported");
    EMBER_CHECK(dil[i] > 0, Status::InvalidArgument, "dilation should be greater than zero, but got ", shape_str(dil));
    EMBER_CHECK(op[i] >= 0 && (op[i] < st[i] || op[i] < dil[i]), Status::InvalidArgument,
                "output padding must be smaller than either stride or dilation, but got output_padding=",
                shape_str(op), ", stride=", shape_str(st), ", dilation=", shape_str(dil));
    p.stride[i] = st[i];
    p.pad_begin[i] = p.pad_end[i] = pad[i];
    p.output_padding[i] = op[i];
    p.dilation[i] = dil[i];
  }
  Tensor in = x;
  if (!batched) {
    EMBER_ASSIGN_OR_RETURN(in, core::unsqueeze(x, 0));
  }
  EMBER_ASSIGN_OR_RETURN(const Tensor y, core::conv_transpose(in, weight, bias, p));
  if (batched) return y;
  return core::squeeze(y, 0);
}

}  // namespace

Result<Tensor> core::conv_transpose1d(const Tensor& x, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
                                      IntArrayRef padding, IntArrayRef output_padding, int64_t groups,
                                      IntArrayRef dilation) {
  return conv_transpose_nd(1, x, weight, bias, stride, padding, output_padding, groups, dilation);
}

Result<Tensor> core::conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
                                      IntArrayRef padding, IntArrayRef output_padding, int64_t groups,
                                      IntArrayRef dilation) {
  return conv_transpose_nd(2, x, weight, bias, stride, padding, output_padding, groups, dilation);
}

Result<Tensor> core::conv_transpose3d(const Tensor& x, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
                                      IntArrayRef padding, IntArrayRef output_padding, int64_t groups,
                                      IntArrayRef dilation) {
  return conv_transpose_nd(3, x, weight, bias, stride, padding, output_padding, groups, dilation);
}

Tensor conv_transpose1d(const Tensor& x, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
                        IntArrayRef padding, IntArrayRef output_padding, int64_t groups, IntArrayRef dilation) {
  return unwrap(core::conv_transpose1d(x, weight, bias, stride, padding, output_padding, groups, dilation));
}

Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
                        IntArrayRef padding, IntArrayRef output_padding, int64_t groups, IntArrayRef dilation) {
  return unwrap(core::conv_transpose2d(x, weight, bias, stride, padding, output_padding, groups, dilation));
}

Tensor conv_transpose3d(const Tensor& x, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
                        IntArrayRef padding, IntArrayRef output_padding, int64_t groups, IntArrayRef dilation) {
  return unwrap(core::conv_transpose3d(x, weight, bias, stride, padding, output_padding, groups, dilation));
}

Result<Tensor> core::grid_sample(const Tensor& x, const Tensor& grid, const GridSampleParams& p) {
  if (amp::Cast c = amp::autocast(amp::Op::GridSample, {x, grid})) return core::grid_sample(c[0], c[1], p);
  EMBER_CHECK(p.valid(), Status::InvalidArgument, "grid_sample: invalid mode or padding_mode");
  EMBER_CHECK((x.dim() == 4 || x.dim() == 5) && grid.dim() == x.dim(), Status::InvalidArgument,
              "grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, but got input with "
              "sizes ",
              shape_str(x.sizes()), " and grid with sizes ", shape_str(grid.sizes()));
  const int64_t nd = x.dim() - 2;
  EMBER_CHECK(grid.size(0) == x.size(0), Status::ShapeMismatch,
              "grid_sampler(): expected grid and input to have same batch size, but got input with sizes ",
              shape_str(x.sizes()), " and grid with sizes ", shape_str(grid.sizes()));
  EMBER_CHECK(grid.size(-1) == nd, Status::ShapeMismatch, "grid_sampler(): expected grid to have size ", nd,
              " in last dimension, but got grid with sizes ", shape_str(grid.sizes()));
  for (int64_t i = 0; i < nd; ++i) {
    EMBER_CHECK(x.size(2 + i) > 0, Status::InvalidArgument, "grid_sampler(): expected input to have non-empty spatial "
                "dimensions, but input has sizes ", shape_str(x.sizes()));
  }
  EMBER_CHECK(is_floating(x.dtype()) && is_floating(grid.dtype()), Status::NotSupported,
              "grid_sampler(): expected floating point input and grid, got ", dtype_name(x.dtype()), " and ",
              dtype_name(grid.dtype()));
  EMBER_TRY(check_same_device({x, grid}));
  Shape out = {x.size(0), x.size(1)};
  for (int64_t i = 0; i < nd; ++i) out.push_back(grid.size(1 + i));
  EMBER_ASSIGN_OR_RETURN(Tensor y, core::empty(out, TensorOptions(x.dtype()).device(x.device())));
  if (y.numel() > 0) {
    EMBER_ASSIGN_OR_RETURN(const Tensor g, core::to(grid, x.dtype()));
    EMBER_TRY(run_kernel(OpKind::GridSample, {x, g}, {y}, p));
  }
  return y;
}

Tensor grid_sample(const Tensor& x, const Tensor& grid, const GridSampleParams& p) {
  return unwrap(core::grid_sample(x, grid, p));
}

Result<Tensor> core::grid_sample(const Tensor& x, const Tensor& grid, std::string_view mode,
                                 std::string_view padding_mode, std::optional<bool> align_corners) {
  GridSampleParams p;
  EMBER_CHECK(mode == "bilinear" || mode == "nearest" || mode == "bicubic", Status::InvalidArgument,
              "nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: '", mode,
              "'");
  EMBER_CHECK(padding_mode == "zeros" || padding_mode == "border" || padding_mode == "reflection",
              Status::InvalidArgument,
              "nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or 'reflection', but got: '",
              padding_mode, "'");
  EMBER_CHECK(mode != "bicubic" || x.dim() == 4, Status::InvalidArgument,
              "grid_sampler(): bicubic interpolation only supports 4D input");
  p.mode = mode == "nearest" ? ResizeMode::Nearest : mode == "bicubic" ? ResizeMode::Cubic : ResizeMode::Linear;
  p.padding = padding_mode == "zeros" ? GridPadding::Zeros
              : padding_mode == "border" ? GridPadding::Border
                                         : GridPadding::Reflection;
  p.align_corners = align_corners.value_or(false);
  return core::grid_sample(x, grid, p);
}

Tensor grid_sample(const Tensor& x, const Tensor& grid, std::string_view mode, std::string_view padding_mode,
                   std::optional<bool> align_corners) {
  return unwrap(core::grid_sample(x, grid, mode, padding_mode, align_corners));
}

}  // namespace ember
