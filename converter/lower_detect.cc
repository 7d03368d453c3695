// Lowering of the ONNX detection ops (see lowerer.h): NonMaxSuppression (10+:
// center_point_box; max_output_boxes_per_class, iou_threshold and
// score_threshold as optional inputs, read on the host at run time) and
// RoiAlign (10: output_half_pixel; 16+: coordinate_transformation_mode, mode
// avg / max, output_height / width, sampling_ratio, spatial_scale);
// AffineGrid (20+: align_corners), Col2Im (18+: dilations, pads, strides;
// image_shape and block_shape read on the host) and MaxUnpool (9+:
// kernel_shape, pads, strides; output_shape from 11).
#include <algorithm>
#include <string>
#include <vector>

#include "converter/lowerer.h"

namespace ember::converter::lowering {

void Lowerer::lower_non_max_suppression(const Node& n) {
  require_inputs(n, 2);
  if (rank_of(n.inputs[0], "boxes") != 3) refuse("boxes " + vname(n.inputs[0]) + " is not 3-D");
  if (rank_of(n.inputs[1], "scores") != 3) refuse("scores " + vname(n.inputs[1]) + " is not 3-D");
  const std::optional<DType> dt = dtype_of(n.inputs[0]);
  if (dt && !is_floating(*dt)) refuse("boxes " + vname(n.inputs[0]) + " is not floating point");
  const int64_t center = n.get_int("center_point_box", 0);
  if (center != 0 && center != 1) refuse("center_point_box " + std::to_string(center) + " is not 0 or 1");
  set_output_dtype(out0(n), DType::Int64);
  std::vector<int32_t> ins = {tensor(n.inputs[0]), tensor(n.inputs[1])};
  for (size_t i = 2; i < 5; ++i) ins.push_back(has_input(n, i) ? tensor(n.inputs[i]) : -1);
  emit(OpKind::NonMaxSuppression, n, ins, {out0(n)}, NmsParams{center == 1});
}

void Lowerer::lower_roi_align(const Node& n) {
  require_inputs(n, 3);
  if (rank_of(n.inputs[0], "X") != 4) refuse("X " + vname(n.inputs[0]) + " is not 4-D");
  if (rank_of(n.inputs[1], "rois") != 2) refuse("rois " + vname(n.inputs[1]) + " is not 2-D");
  require_index_dtype(n.inputs[2], "batch_indices");
  RoiAlignParams p;
  const std::string mode = n.get_string("mode", "avg");
  if (mode == "avg") p.mode = RoiAlignMode::Avg;
  else if (mode == "max") p.mode = RoiAlignMode::Max;
  else refuse("mode '" + mode + "' is not avg or max");
  p.output_height = n.get_int("output_height", 1);
  p.output_width = n.get_int("output_width", 1);
  p.sampling_ratio = n.get_int("sampling_ratio", 0);
  p.spatial_scale = n.get_float("spatial_scale", 1.0);
  if (p.output_height < 1 || p.output_width < 1) {
    refuse("output size " + std::to_string(p.output_height) + "x" + std::to_string(p.output_width) +
           " is not positive");
  }
  if (p.sampling_ratio < 0) refuse("sampling_ratio " + std::to_string(p.sampling_ratio) + " is negative");
  // Opset 10 has no coordinate_transformation_mode: its rois are output_half_pixel.
  const std::string coord =
      n.get_string("coordinate_transformation_mode", entry_->since >= 16 ? "half_pixel" : "output_half_pixel");
  if (coord == "half_pixel") p.half_pixel = true;
  else if (coord == "output_half_pixel") p.half_pixel = false;
  else refuse("coordinate_transformation_mode '" + coord + "' is not half_pixel or output_half_pixel");
  emit(OpKind::RoiAlign, n, {tensor(n.inputs[0]), tensor(n.inputs[1]), tensor(n.inputs[2])}, {out0(n)}, p);
}

void Lowerer::lower_affine_grid(const Node& n) {
  require_inputs(n, 2);
  if (rank_of(n.inputs[0], "theta") != 3) refuse("theta " + vname(n.inputs[0]) + " is not 3-D");
  float_input(n, 0);
  require_index_dtype(n.inputs[1], "size");
  emit(OpKind::AffineGrid, n, {tensor(n.inputs[0]), tensor(n.inputs[1])}, {out0(n)},
       AffineGridParams{n.get_int("align_corners", 0) != 0});
}

void Lowerer::lower_col2im(const Node& n) {
  require_inputs(n, 3);
  if (rank_of(n.inputs[0], "input") != 3) refuse("input " + vname(n.inputs[0]) + " is not 3-D");
  float_input(n, 0);
  require_index_dtype(n.inputs[1], "image_shape");
  require_index_dtype(n.inputs[2], "block_shape");
  const std::vector<int64_t> dil = n.get_ints("dilations"), pads = n.get_ints("pads"), str = n.get_ints("strides");
  size_t dims = std::max({dil.size(), str.size(), pads.size() / 2});
  if (dims > static_cast<size_t>(kMaxRank - 2)) refuse("has more than " + std::to_string(kMaxRank - 2) + " spatial dims");
  if ((!dil.empty() && dil.size() != dims) || (!str.empty() && str.size() != dims) ||
      (!pads.empty() && pads.size() != 2 * dims)) {
    refuse("dilations " + join_ints(dil) + ", pads " + join_ints(pads) + " and strides " + join_ints(str) +
           " disagree in length");
  }
  Col2ImParams p;
  p.dims = static_cast<int64_t>(dims);
  for (size_t d = 0; d < dims; ++d) {
    if (!dil.empty()) p.dilations[d] = dil[d];
    if (!str.empty()) p.strides[d] = str[d];
    if (!pads.empty()) p.pads_begin[d] = pads[d], p.pads_end[d] = pads[dims + d];
  }
  if (!p.valid()) refuse("dilations " + join_ints(dil) + ", pads " + join_ints(pads) + " or strides " + join_ints(str) +
                         " out of range");
  emit(OpKind::Col2Im, n, {tensor(n.inputs[0]), tensor(n.inputs[1]), tensor(n.inputs[2])}, {out0(n)}, p);
}

void Lowerer::lower_max_unpool(const Node& n) {
  require_inputs(n, 2);
  const int64_t rank = rank_of(n.inputs[0], "X");
  require_index_dtype(n.inputs[1], "I");
  const std::vector<int64_t> k = n.get_ints("kernel_shape"), pads = n.get_ints("pads"), str = n.get_ints("strides");
  if (k.empty() || k.size() > 3 || static_cast<int64_t>(k.size()) != rank - 2) {
    refuse("kernel_shape " + join_ints(k) + " does not fit X of rank " + std::to_string(rank) + " (1-D to 3-D)");
  }
  const size_t dims = k.size();
  if ((!str.empty() && str.size() != dims) || (!pads.empty() && pads.size() != 2 * dims)) {
    refuse("pads " + join_ints(pads) + " or strides " + join_ints(str) + " disagree with kernel_shape " + join_ints(k));
  }
  MaxUnpoolParams p;
  p.dims = static_cast<int64_t>(dims);
  for (size_t d = 0; d < dims; ++d) {
    p.kernel[d] = k[d];
    if (!str.empty()) p.stride[d] = str[d];
    if (!pads.empty()) p.pad_begin[d] = pads[d], p.pad_end[d] = pads[dims + d];
  }
  if (!p.valid()) refuse("kernel_shape " + join_ints(k) + ", pads " + join_ints(pads) + " or strides " +
                         join_ints(str) + " out of range");
  emit(OpKind::MaxUnpool, n,
       {tensor(n.inputs[0]), tensor(n.inputs[1]), has_input(n, 2) ? tensor(n.inputs[2]) : -1}, {out0(n)}, p);
}

}  // namespace ember::converter::lowering
