// Lowering of the ONNX spatial ops (see lowerer.h): Resize (opsets 10-19+) and
// Upsample (7-9) to one Resize op (ResizeParams: constant scales or sizes,
// axes, keep_aspect_ratio_policy, roi), and ConvTranspose (1-D to 3-D; pads,
// auto_pad and output_shape as onnx.reference computes them) to one
// ConvTranspose op; GridSample to one GridSample op.
#include <cmath>

#include "converter/lowerer.h"

namespace ember::converter::lowering {

namespace {

ResizeMode resize_mode(const std::string& mode) {
  if (mode == "nearest") return ResizeMode::Nearest;
  if (mode == "linear" || mode == "bilinear") return ResizeMode::Linear;
  if (mode == "cubic") return ResizeMode::Cubic;
  refuse("mode '" + mode + "' is unknown (nearest, linear or cubic)");
}

ResizeCoord resize_coord(const std::string& c) {
  if (c == "half_pixel") return ResizeCoord::HalfPixel;
  if (c == "pytorch_half_pixel") return ResizeCoord::PytorchHalfPixel;
  if (c == "align_corners") return ResizeCoord::AlignCorners;
  if (c == "asymmetric") return ResizeCoord::Asymmetric;
  if (c == "tf_crop_and_resize") return ResizeCoord::TfCropAndResize;
  if (c == "half_pixel_symmetric") return ResizeCoord::HalfPixelSymmetric;
  refuse("coordinate_transformation_mode '" + c + "' is unknown");
}

NearestMode nearest_mode(const std::string& m) {
  if (m == "round_prefer_floor") return NearestMode::RoundPreferFloor;
  if (m == "round_prefer_ceil") return NearestMode::RoundPreferCeil;
  if (m == "floor") return NearestMode::Floor;
  if (m == "ceil") return NearestMode::Ceil;
  refuse("nearest_mode '" + m + "' is unknown");
}

// The values of a constant float input (nullopt: absent or empty, as ONNX's "not given").
// The caller has checked that it is a constant.
std::optional<std::vector<double>> const_floats(const Graph& g, const Node& n, size_t i, const std::string& what) {
  if (n.inputs.size() <= i || n.inputs[i] < 0) return std::nullopt;
  const int id = n.inputs[i];
  if (!g.is_constant(id)) {
    refuse(what + " '" + g.value(id).name + "' is computed at run time: Resize needs constant " + what +
           " (or shapes the converter can fold)");
  }
  const Tensor& t = g.value(id).constant;
  if (t.numel() == 0) return std::nullopt;
  if (!is_floating(t.dtype())) refuse(what + " '" + g.value(id).name + "' is not floating point");
  return t.to(DType::Float64).contiguous().to_vector<double>();
}

}  // namespace

// Resize (10: X, scales; 11+: X, roi, scales, sizes) and Upsample (7-8: the
// scales attribute; 9: X, scales).
void Lowerer::lower_resize(const Node& n) {
  require_inputs(n, 1);
  const int x = n.inputs[0];
  const int64_t rank = rank_of(x, "input");
  if (rank < 1 || rank > kMaxRank) refuse("input " + vname(x) + " has rank " + std::to_string(rank));
  const bool upsample = n.op_type == "Upsample";
  const bool v10 = upsample || entry_->since == 10;  // no roi / sizes / coordinate modes
  ResizeParams p;
  p.rank = rank;
  p.mode = resize_mode(n.get_string("mode", "nearest"));
  if (v10) {
    p.coord = ResizeCoord::Asymmetric;
    p.nearest = NearestMode::Floor;
  } else {
    p.coord = resize_coord(n.get_string("coordinate_transformation_mode", "half_pixel"));
    p.nearest = nearest_mode(n.get_string("nearest_mode", "round_prefer_floor"));
    p.cubic_coeff_a = n.get_float("cubic_coeff_a", -0.75);
    p.exclude_outside = n.get_int("exclude_outside", 0) != 0;
    p.extrapolation_value = n.get_float("extrapolation_value", 0.0);
    p.antialias = n.get_int("antialias", 0) != 0;
  }
  if (p.mode == ResizeMode::Cubic && v10) refuse("mode 'cubic' needs opset 11");
  // Scales and sizes (constants become params; others are read at run time),
  // then the dims they apply to.
  auto runtime = [&](size_t i) { return has_input(n, i) && !is_const(n.inputs[i]); };
  int rt_roi = -1, rt_scales = -1, rt_sizes = -1;
  std::optional<std::vector<double>> scales;
  std::optional<std::vector<int64_t>> sizes;
  const size_t scales_at = v10 ? 1 : 2;
  if (upsample && entry_->since == 7) {
    if (!n.has("scales")) refuse("has no scales attribute");
    scales = n.get_floats("scales");
  } else if (runtime(scales_at)) {
    rt_scales = n.inputs[scales_at];
  } else {
    scales = const_floats(g_, n, scales_at, "scales");
  }
  if (!v10 && runtime(3)) {
    rt_sizes = n.inputs[3];
  } else if (!v10 && has_input(n, 3) && val(n.inputs[3]).constant.numel() > 0) {
    sizes = const_ints(n, 3, "sizes");
  }
  const bool at_run_time = rt_scales >= 0 || rt_sizes >= 0;
  if (!at_run_time && scales.has_value() == sizes.has_value()) refuse("needs exactly one of scales and sizes");
  std::vector<int64_t> axes = n.get_ints("axes");
  const bool all = axes.empty();
  if (all) {
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t& a : axes) {
    a = norm_axis(a, rank, "axis");
    if (seen[static_cast<size_t>(a)]) refuse("axes " + join_ints(n.get_ints("axes")) + " repeat an axis");
    seen[static_cast<size_t>(a)] = true;
  }
  p.num_axes = all ? 0 : static_cast<int64_t>(axes.size());
  for (size_t i = 0; i < axes.size(); ++i) p.axes[i] = axes[i];
  const std::string policy = n.get_string("keep_aspect_ratio_policy", "stretch");
  if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller") {
    refuse("keep_aspect_ratio_policy '" + policy + "' is unknown");
  }
  p.keep_aspect = policy == "stretch" ? KeepAspect::Stretch
                  : policy == "not_larger" ? KeepAspect::NotLarger
                                           : KeepAspect::NotSmaller;
  if (sizes && p.keep_aspect != KeepAspect::Stretch) {
    const std::vector<Dim> xd = dims_of(x, "input");
    for (int64_t a : axes) {
      if (!xd[static_cast<size_t>(a)].is_static()) rt_sizes = n.inputs[3];  // the sizes read at run time
    }
    if (rt_sizes >= 0) sizes.reset();
  }
  const size_t count = scales ? scales->size() : sizes ? sizes->size() : axes.size();
  if (count != axes.size()) {
    refuse(std::string(scales ? "scales" : "sizes") + " has " + std::to_string(count) + " values for " +
           std::to_string(axes.size()) + " axes (input rank " + std::to_string(rank) + ")");
  }
  for (int64_t d = 0; d < rank; ++d) p.scales[d] = 1.0;
  if (scales) {
    for (size_t i = 0; i < axes.size(); ++i) {
      const double s = (*scales)[i];
      if (!(s > 0.0) || !std::isfinite(s)) refuse("scale " + fmt(s) + " is not positive and finite");
      p.scales[axes[i]] = s;
    }
  } else if (sizes) {
    for (int64_t s : *sizes) {
      if (s < 0) refuse("sizes " + join_ints(*sizes) + " has a negative size");
    }
    const std::vector<Dim> xd = dims_of(x, "input");
    double scale = p.keep_aspect == KeepAspect::NotLarger ? INFINITY : 0.0;
    for (size_t i = 0; i < axes.size() && p.keep_aspect != KeepAspect::Stretch; ++i) {
      const double r = static_cast<double>((*sizes)[i]) / static_cast<double>(xd[static_cast<size_t>(axes[i])].value);
      scale = p.keep_aspect == KeepAspect::NotLarger ? std::min(scale, r) : std::max(scale, r);
    }
    for (size_t i = 0; i < axes.size(); ++i) {
      p.fixed |= 1u << axes[i];
      if (p.keep_aspect == KeepAspect::Stretch) {
        p.sizes[axes[i]] = (*sizes)[i];
        p.scales[axes[i]] = 0.0;  // output / input at run time
      } else {
        const int64_t in = xd[static_cast<size_t>(axes[i])].value;
        p.sizes[axes[i]] = static_cast<int64_t>(scale * static_cast<double>(in) + 0.5);
        p.scales[axes[i]] = scale;
      }
    }
  }
  if (p.coord == ResizeCoord::TfCropAndResize) {
    for (int64_t d = 0; d < rank; ++d) p.roi_start[d] = 0.0, p.roi_end[d] = 1.0;
    if (!v10 && runtime(1)) {
      rt_roi = n.inputs[1];
    } else {
      std::optional<std::vector<double>> roi = v10 ? std::nullopt : const_floats(g_, n, 1, "roi");
      if (!roi || roi->size() != 2 * axes.size()) {
        refuse("tf_crop_and_resize needs a roi of " + std::to_string(2 * axes.size()) + " values");
      }
      for (size_t i = 0; i < axes.size(); ++i) {
        p.roi_start[axes[i]] = (*roi)[i];
        p.roi_end[axes[i]] = (*roi)[axes.size() + i];
      }
    }
  }
  if (p.antialias && p.mode == ResizeMode::Nearest) refuse("antialias is not defined for mode 'nearest'");
  emit(OpKind::Resize, n,
       {tensor(x), rt_roi >= 0 ? tensor(rt_roi) : -1, rt_scales >= 0 ? tensor(rt_scales) : -1,
        rt_sizes >= 0 ? tensor(rt_sizes) : -1},
       {out0(n)}, p);
}

// ConvTranspose: X [N, C, *in], W [C, M/group, *k], B [M] (optional).
void Lowerer::lower_conv_transpose(const Node& n) {
  require_inputs(n, 2);
  const int x = n.inputs[0], w = n.inputs[1];
  const std::vector<Dim> wd = dims_of(w, "weight");
  const int64_t nsp = static_cast<int64_t>(wd.size()) - 2;
  if (nsp < 1 || nsp > 3) refuse("weight " + vname(w) + " has rank " + std::to_string(wd.size()) + ", not 3 to 5");
  if (rank_of(x, "input") != nsp + 2) refuse("input " + vname(x) + " and weight " + vname(w) + " differ in rank");
  const size_t ns = static_cast<size_t>(nsp);
  auto attr = [&](const std::string& name, int64_t fallback, size_t count) {
    std::vector<int64_t> v = n.get_ints(name, std::vector<int64_t>(count, fallback));
    if (v.size() != count) refuse(name + " " + join_ints(v) + " must have " + std::to_string(count) + " values");
    return v;
  };
  std::vector<int64_t> kernel(ns);
  for (size_t i = 0; i < ns; ++i) {
    if (!wd[2 + i].is_static()) refuse("weight " + vname(w) + " has a dynamic kernel size");
    kernel[i] = wd[2 + i].value;
  }
  if (n.has("kernel_shape") && attr("kernel_shape", 1, ns) != kernel) {
    refuse("kernel_shape " + join_ints(n.get_ints("kernel_shape")) + " differs from the weight's kernel");
  }
  const std::vector<int64_t> st = attr("strides", 1, ns), dil = attr("dilations", 1, ns);
  const std::vector<int64_t> op = attr("output_padding", 0, ns);
  ConvTransposeParams p;
  p.groups = n.get_int("group", 1);
  if (p.groups < 1) refuse("group " + std::to_string(p.groups) + " must be >= 1");
  for (size_t i = 0; i < ns; ++i) {
    if (st[i] < 1) refuse("strides " + join_ints(st) + " must be >= 1");
    if (dil[i] < 1) refuse("dilations " + join_ints(dil) + " must be >= 1");
    if (op[i] < 0) refuse("output_padding " + join_ints(op) + " must be >= 0");
    p.stride[i] = st[i], p.dilation[i] = dil[i], p.output_padding[i] = op[i];
  }
  const std::string auto_pad = n.get_string("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER") {
    refuse("auto_pad '" + auto_pad + "' is unknown");
  }
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  const bool has_pads = n.has("pads");
  std::vector<int64_t> out_shape = n.get_ints("output_shape");
  if (!out_shape.empty() && out_shape.size() != ns) {
    if (out_shape.size() != ns + 2) refuse("output_shape " + join_ints(out_shape) + " has the wrong length");
    out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
  }
  if (has_pads) {
    const std::vector<int64_t> pads = attr("pads", 0, 2 * ns);
    for (size_t i = 0; i < ns; ++i) p.pad_begin[i] = pads[i], p.pad_end[i] = pads[ns + i];
  }
  if ((same && !has_pads) || !out_shape.empty()) {
    // onnx.reference: SAME_* (without pads) split the total padding that
    // gives output_shape (default input * stride), the larger half at the end
    // (SAME_UPPER) or the start; otherwise the pads (default 0) begin it and
    // the output is cut (or extended) at the end to output_shape.
    const std::vector<Dim> xd = dims_of(x, "input");
    for (size_t i = 0; i < ns; ++i) {
      const Dim& d = xd[2 + i];
      if (!d.is_static()) refuse("auto_pad " + auto_pad + " / output_shape needs static spatial input dims");
      const int64_t target = out_shape.empty() ? d.value * st[i] : out_shape[i];
      const int64_t total = st[i] * (d.value - 1) + op[i] + (kernel[i] - 1) * dil[i] + 1 - target;
      const int64_t half = total >= 0 ? total / 2 : -((1 - total) / 2);  // Python's total // 2
      if (same && !has_pads) p.pad_begin[i] = auto_pad == "SAME_UPPER" ? half : total - half;
      p.pad_end[i] = total - p.pad_begin[i];
    }
  }
  emit(OpKind::ConvTranspose, n, {tensor(x), weight(w), has_input(n, 2) ? weight(n.inputs[2]) : -1}, {out0(n)}, p);
}

// GridSample (16: bilinear / nearest / bicubic, 4-D; 20+: linear / nearest / cubic, 4-D or 5-D).
void Lowerer::lower_grid_sample(const Node& n) {
  require_inputs(n, 2);
  const int64_t rank = rank_of(n.inputs[0], "input");
  if (rank != 4 && rank != 5) refuse("input " + vname(n.inputs[0]) + " has rank " + std::to_string(rank) + ", not 4 or 5");
  GridSampleParams p;
  const std::string mode = n.get_string("mode", entry_->since >= 20 ? "linear" : "bilinear");
  if (mode == "nearest") p.mode = ResizeMode::Nearest;
  else if (mode == "linear" || mode == "bilinear") p.mode = ResizeMode::Linear;
  else if (mode == "cubic" || mode == "bicubic") p.mode = ResizeMode::Cubic;
  else refuse("mode '" + mode + "' is unknown");
  const std::string pad = n.get_string("padding_mode", "zeros");
  if (pad == "zeros") p.padding = GridPadding::Zeros;
  else if (pad == "border") p.padding = GridPadding::Border;
  else if (pad == "reflection") p.padding = GridPadding::Reflection;
  else refuse("padding_mode '" + pad + "' is unknown");
  p.align_corners = n.get_int("align_corners", 0) != 0;
  emit(OpKind::GridSample, n, {tensor(n.inputs[0]), tensor(n.inputs[1])}, {out0(n)}, p);
}

}  // namespace ember::converter::lowering
