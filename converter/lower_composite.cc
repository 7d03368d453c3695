// Lowering of ONNX ops composed of several ember ops (see lowerer.h): Sum and
// Mean of N inputs, PRelu, CastLike.
#include <cmath>

#include "converter/lowerer.h"

namespace ember::converter::lowering {

int32_t Lowerer::scalar_weight(const std::string& name, double v, DType dt) {
  return new_weight(name, scalar_tensor(v, DType::Float64).to(dt), false);
}

// Sum: a chain of Adds (1 input: a Copy); Mean: the chain, then a Div by N.
void Lowerer::lower_variadic(const Node& n) {
  const bool mean = n.op_type == "Mean";
  for (int id : n.inputs) {
    if (id < 0) refuse("an input is omitted");
  }
  const int32_t out = tensor(out0(n));
  const TensorDef& out_def = def_.tensors[static_cast<size_t>(out)];
  const std::string out_name = out_def.name;
  const DType dt = out_def.dtype;
  if (mean && !is_floating(dt)) {
    refuse("output of dtype " + std::string(dtype_name(dt)) + " is not supported (only floating-point types)");
  }
  std::vector<int32_t> ins;
  for (int id : n.inputs) ins.push_back(tensor(id));
  if (ins.size() == 1) return emit_tensors(OpKind::Copy, {ins[0]}, {out}, NoParams{}, n.name);
  int32_t acc = ins[0];
  std::vector<Dim> acc_shape = dims_of(n.inputs[0], "input");
  for (size_t i = 1; i < ins.size(); ++i) {
    const bool last = i + 1 == ins.size() && !mean;
    acc_shape = broadcast(acc_shape, dims_of(n.inputs[i], "input"));
    const std::string step = "/add_" + std::to_string(i);
    const int32_t dst = last ? out : new_activation(out_name + step, dt, acc_shape);
    emit_tensors(OpKind::Add, {acc, ins[i]}, {dst}, NoParams{}, last ? n.name : n.name + step);
    acc = dst;
  }
  if (!mean) return;
  const int32_t count = scalar_weight(out_name + "/count", static_cast<double>(ins.size()), dt);
  emit_tensors(OpKind::Div, {acc, count}, {out}, NoParams{}, n.name);
}

// PRelu: where(x < 0, x * slope, x), the slope broadcast to x (unidirectionally).
void Lowerer::lower_prelu(const Node& n) {
  require_inputs(n, 2);
  const int x = n.inputs[0], slope = n.inputs[1];
  const std::optional<DType> xdt = dtype_of(x);
  if (!xdt) refuse("input " + vname(x) + " has an unknown dtype");
  const std::vector<Dim> xs = dims_of(x, "input");
  const std::vector<Dim> ss = dims_of(slope, "slope");
  const std::vector<Dim> bs = broadcast(xs, ss);
  if (bs.size() != xs.size()) refuse("slope " + vname(slope) + " has a higher rank than input " + vname(x));
  for (size_t d = 0; d < xs.size(); ++d) {
    if (bs[d].is_static() && xs[d].is_static() && bs[d].value != xs[d].value) {
      refuse("slope " + vname(slope) + " does not broadcast to input " + vname(x));
    }
  }
  const int32_t in = tensor(x), s = weight(slope);
  const int32_t out = tensor(out0(n));
  const std::string out_name = def_.tensors[static_cast<size_t>(out)].name;
  const int32_t zero = scalar_weight(out_name + "/zero", 0.0, *xdt);
  const int32_t neg = new_activation(out_name + "/negative", DType::Bool, xs);
  emit_tensors(OpKind::Lt, {in, zero}, {neg}, NoParams{}, n.name + "/negative");
  const int32_t scaled = new_activation(out_name + "/scaled", *xdt, xs);
  emit_tensors(OpKind::Mul, {in, s}, {scaled}, NoParams{}, n.name + "/scaled");
  emit_tensors(OpKind::Where, {neg, scaled, in}, {out}, NoParams{}, n.name);
}

// CastLike: a Copy to the dtype of the second input.
void Lowerer::lower_cast_like(const Node& n) {
  require_inputs(n, 2);
  if (!dtype_of(n.inputs[1])) refuse("target " + vname(n.inputs[1]) + " has an unknown dtype");
  return emit(OpKind::Copy, n, {tensor(n.inputs[0])}, {out0(n)});
}

}  // namespace ember::converter::lowering
