// Lowering of the ONNX shape and data-movement ops (see lowerer.h).
#include <cmath>

#include "converter/lowerer.h"

namespace ember::converter::lowering {

void Lowerer::lower_cast(const Node& n) {
  (void)cast_target(n);
  return emit(OpKind::Copy, n, {tensor(n.inputs[0])}, {out0(n)});
}

void Lowerer::lower_flatten(const Node& n) {
  return emit(OpKind::Flatten, n, {tensor(n.inputs[0])}, {out0(n)}, AxisParams{n.get_int("axis", 1)});
}

void Lowerer::lower_reshape(const Node& n) {
  require_inputs(n, 2);
  if (n.get_int("allowzero", 0) != 0) refuse("allowzero = 1 is not supported");
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
  const auto axes = const_ints(n, 1, "axes");
  if (!axes && op == "Unsqueeze") refuse("has no axes");
  return emit(op == "Squeeze" ? OpKind::Squeeze : OpKind::Unsqueeze, n, {tensor(n.inputs[0])}, {out0(n)},
              dims_params(axes.value_or(std::vector<int64_t>{}), "axes"));
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
  if (n.has("num_outputs")) refuse("attribute num_outputs is not supported");
  if (n.outputs.empty()) refuse("has no output");
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
  if (n.has("start") || n.has("end")) refuse("attributes start/end are not supported");
  return emit(OpKind::ShapeOf, n, {tensor(n.inputs[0])}, {out0(n)});
}

void Lowerer::lower_constant_of_shape(const Node& n) {
  require_inputs(n, 1);
  const Tensor value = constant_of_shape_value(n);
  return emit(OpKind::ConstantOfShape, n, {tensor(n.inputs[0])}, {out0(n)},
              ScalarParams{value.reshape({1}).item()});
}

void Lowerer::lower_pad(const Node& n) {
  const int64_t rank = rank_of(n.inputs[0], "input");
  if (rank > kMaxRank) refuse("input rank " + std::to_string(rank) + " exceeds " + std::to_string(kMaxRank));
  if (has_input(n, 3)) refuse("the axes input is not supported");
  const auto pads = const_ints(n, 1, "pads");
  if (!pads) refuse("has no pads");
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
