// Lowering of the ONNX shape and data-movement ops (see lowerer.h).
#include <algorithm>
#include <cmath>

#include "converter/lowerer.h"

namespace ember::converter::lowering {

void Lowerer::lower_cast(const Node& n) { emit_cast(n, cast_target(n)); }

void Lowerer::lower_flatten(const Node& n) {
  return emit(OpKind::Flatten, n, {tensor(n.inputs[0])}, {out0(n)}, AxisParams{n.get_int("axis", 1)});
}

void Lowerer::lower_reshape(const Node& n) {
  require_inputs(n, 2);
  if (n.get_int("allowzero", 0) != 0) return lower_reshape_allowzero(n);  // lower_layout.cc
  return emit(OpKind::Reshape, n, {tensor(n.inputs[0]), tensor(n.inputs[1])}, {out0(n)});
}

void Lowerer::lower_transpose(const Node& n) {
  std::vector<int64_t> perm = n.get_ints("perm");
  if (!n.has("perm")) {
    const int64_t rank = rank_of(n.inputs[0], "input");
    for (int64_t d = rank - 1; d >= 0; --d) perm.push_back(d);
  }
  return emit(OpKind::Permute, n, {tensor(n.inputs[0])}, {out0(n)}, dims_params(perm, "perm"));
}

void Lowerer::lower_squeeze(const Node& n) {
  const std::string& op = n.op_type;
  const OpKind kind = op == "Squeeze" ? OpKind::Squeeze : OpKind::Unsqueeze;
  if (has_input(n, 1) && !is_const(n.inputs[1])) {  // axes read at run time
    if (dtype_of(n.inputs[1]) != DType::Int64) refuse("axes " + vname(n.inputs[1]) + " is not int64");
    return emit(kind, n, {tensor(n.inputs[0]), tensor(n.inputs[1])}, {out0(n)}, DimsParams{});
  }
  const auto axes = const_ints(n, 1, "axes");
  if (!axes && op == "Unsqueeze") refuse("has no axes");
  return emit(kind, n, {tensor(n.inputs[0])}, {out0(n)}, dims_params(axes.value_or(std::vector<int64_t>{}), "axes"));
}

void Lowerer::lower_concat(const Node& n) {
  std::vector<int32_t> ins;
  for (int id : n.inputs) {
    if (id < 0) refuse("an input is omitted");
    ins.push_back(tensor(id));
  }
  return emit(OpKind::Concat, n, ins, {out0(n)}, AxisParams{n.get_int("axis", 0)});
}

void Lowerer::lower_split(const Node& n) {
  if (n.outputs.empty()) refuse("has no output");
  // Opset 18's num_outputs: ceil(dim / n) per output, the last one smaller;
  // the Split op's rule without sizes.
  const int64_t num = n.get_int("num_outputs", static_cast<int64_t>(n.outputs.size()));
  if (has_input(n, 1) && n.has("num_outputs")) refuse("has both a split input and num_outputs");
  if (num != static_cast<int64_t>(n.outputs.size())) {
    refuse("num_outputs = " + std::to_string(num) + " but the node has " + std::to_string(n.outputs.size()) +
           " outputs");
  }
  return emit(OpKind::Split, n, {tensor(n.inputs[0]), has_input(n, 1) ? tensor(n.inputs[1]) : -1}, n.outputs,
              AxisParams{n.get_int("axis", 0)});
}

void Lowerer::lower_slice(const Node& n) {
  require_inputs(n, 3);
  std::vector<int32_t> ins;
  for (size_t i = 0; i < 5; ++i) ins.push_back(has_input(n, i) ? tensor(n.inputs[i]) : -1);
  return emit(OpKind::Slice, n, ins, {out0(n)});
}

void Lowerer::lower_expand(const Node& n) {
  require_inputs(n, 2);
  return emit(OpKind::Expand, n, {tensor(n.inputs[0]), tensor(n.inputs[1])}, {out0(n)});
}

void Lowerer::lower_gather(const Node& n) {
  require_inputs(n, 2);
  return emit(OpKind::Gather, n, {weight(n.inputs[0]), tensor(n.inputs[1])}, {out0(n)},
              AxisParams{n.get_int("axis", 0)});
}

void Lowerer::lower_shape(const Node& n) {
  if (!n.has("start") && !n.has("end")) return emit(OpKind::ShapeOf, n, {tensor(n.inputs[0])}, {out0(n)});
  // Opset 15's start/end: ShapeOf, then a Slice of the dims [start, end).
  const int64_t rank = rank_of(n.inputs[0], "input");
  auto clamped = [&](int64_t v) { return std::clamp(v < 0 ? v + rank : v, int64_t{0}, rank); };
  const int64_t start = clamped(n.get_int("start", 0)), end = clamped(n.get_int("end", rank));
  const std::string base = val(n.inputs[0]).name + "/shape";
  const int32_t full = new_activation(base, DType::Int64, {Dim::fixed(rank)});
  emit_tensors(OpKind::ShapeOf, {tensor(n.inputs[0])}, {full}, NoParams{}, n.name + "/shape");
  auto ints = [&](const std::string& what, int64_t v) {
    return new_weight(base + "/" + what, ember::tensor(std::vector<int64_t>{v}, {1}), false);
  };
  emit_tensors(OpKind::Slice, {full, ints("start", start), ints("end", std::max(start, end)), -1, -1},
               {tensor(out0(n))}, NoParams{}, n.name);
}

void Lowerer::lower_constant_of_shape(const Node& n) {
  require_inputs(n, 1);
  const Tensor value = constant_of_shape_value(n);
  return emit(OpKind::ConstantOfShape, n, {tensor(n.inputs[0])}, {out0(n)},
              ScalarParams{value.reshape({1}).item()});
}

void Lowerer::lower_pad(const Node& n) {
  if (!plain_pad(n)) return lower_pad_window(n);  // lower_crop_pad.cc
  const int64_t rank = rank_of(n.inputs[0], "input");
  if (rank > kMaxRank) refuse("input rank " + std::to_string(rank) + " exceeds " + std::to_string(kMaxRank));
  auto pads = const_ints(n, 1, "pads");
  if (!pads) refuse("has no pads");
  if (const auto axes = const_ints(n, 3, "axes")) {  // opset 18: pads for these axes only
    const size_t k = axes->size();
    if (pads->size() != 2 * k) {
      refuse("pads " + join_ints(*pads) + " must have " + std::to_string(2 * k) + " values for axes " +
             join_ints(*axes));
    }
    std::vector<int64_t> full(static_cast<size_t>(2 * rank), 0);
    std::vector<bool> seen(static_cast<size_t>(rank), false);
    for (size_t i = 0; i < k; ++i) {
      const int64_t a = norm_axis((*axes)[i], rank, "axis");
      if (seen[static_cast<size_t>(a)]) refuse("axes " + join_ints(*axes) + " repeat axis " + std::to_string(a));
      seen[static_cast<size_t>(a)] = true;
      full[static_cast<size_t>(a)] = (*pads)[i];
      full[static_cast<size_t>(rank + a)] = (*pads)[k + i];
    }
    pads = full;
  }
  if (static_cast<int64_t>(pads->size()) != 2 * rank) {
    refuse("pads " + join_ints(*pads) + " must have " + std::to_string(2 * rank) + " values for rank " +
           std::to_string(rank));
  }
  PadParams p;
  for (int64_t d = 0; d < rank; ++d) {
    p.before[d] = (*pads)[static_cast<size_t>(d)];
    p.after[d] = (*pads)[static_cast<size_t>(rank + d)];
    if (p.before[d] < 0 || p.after[d] < 0) refuse("negative pads " + join_ints(*pads) + " are not supported");
  }
  const std::string mode = n.get_string("mode", "constant");
  if (mode == "constant") p.mode = PadMode::Constant;
  else if (mode == "reflect") p.mode = PadMode::Reflect;
  else if (mode == "edge") p.mode = PadMode::Replicate;
  else refuse("mode '" + mode + "' is not supported");
  if (auto v = const_scalar(n, 2, "constant_value")) p.value = v->to_double();
  emit(OpKind::Pad, n, {tensor(n.inputs[0])}, {out0(n)}, p);
}

}  // namespace ember::converter::lowering
