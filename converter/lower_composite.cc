// Lowering of ONNX ops composed of several ember ops (see lowerer.h): Sum and
// Mean of N inputs, PRelu, Size, CastLike, LayerNormalization with its statistics,
// And/Or/Xor/Not.
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

// Size: the product of the input's shape (an int64 scalar; 1 for a scalar input).
void Lowerer::lower_size(const Node& n) {
  const int x = n.inputs[0];
  const int64_t rank = rank_of(x, "input");
  const int32_t out = tensor(out0(n));
  const int32_t shape =
      new_activation(def_.tensors[static_cast<size_t>(out)].name + "/shape", DType::Int64, {Dim::fixed(rank)});
  emit_tensors(OpKind::ShapeOf, {tensor(x)}, {shape}, NoParams{}, n.name + "/shape");
  ReduceParams p;
  p.dims = 1;
  p.keepdim = false;
  emit_tensors(OpKind::Prod, {shape}, {out}, p, n.name);
}

void Lowerer::lower_identity(const Node& n) {
  if (n.op_type == "Constant") refuse("has no ember op (run the passes: they fold constants)");
  const int x = n.inputs[0];
  emit(OpKind::Copy, n, {tensor(x)}, {out0(n)});
  const int mask = n.outputs.size() > 1 ? n.outputs[1] : -1;
  if (mask < 0 || (g_.users_of(mask).empty() && !g_.is_graph_output(mask))) return;
  const std::string mask_name = val(mask).name;
  const int32_t shape = new_activation(mask_name + "/shape", DType::Int64, {Dim::fixed(rank_of(x, "input"))});
  emit_tensors(OpKind::ShapeOf, {tensor(x)}, {shape}, NoParams{}, n.name + "/mask_shape");
  const int32_t yes = new_weight(mask_name + "/true", scalar_tensor(true, DType::Bool), false);
  emit_tensors(OpKind::Expand, {yes, shape}, {tensor(mask)}, NoParams{}, n.name + "/mask");
}

// CastLike: a Copy to the dtype of the second input.
void Lowerer::lower_cast_like(const Node& n) {
  require_inputs(n, 2);
  const std::optional<DType> to = dtype_of(n.inputs[1]);
  if (!to) refuse("target " + vname(n.inputs[1]) + " has an unknown dtype");
  emit_cast(n, *to);
}


// LayerNormalization with its Mean and InvStdDev outputs, as the spec's
// reference computes them: mean = Mean(x), d = x - mean, var = Var(x)
// (population), inv = Rsqrt(var + epsilon), y = d * inv * scale + bias.
void Lowerer::lower_layer_norm_stats(const Node& n) {
  const int x = n.inputs[0];
  const std::optional<DType> xdt = dtype_of(x);
  if (xdt != DType::Float32) {
    refuse("the Mean and InvStdDev outputs are supported for a float32 input only (input " + vname(x) + ")");
  }
  if (n.get_int("stash_type", 1) != 1) refuse("stash_type " + std::to_string(n.get_int("stash_type", 1)) + " is not supported (only 1)");
  const int64_t rank = rank_of(x, "input");
  const int64_t axis = norm_axis(n.get_int("axis", -1), rank, "axis");
  ReduceParams p;
  p.keepdim = true;
  p.correction = 0;
  for (int64_t d = axis; d < rank; ++d) p.dims |= uint32_t{1} << d;
  const std::vector<Dim> shape = dims_of(x, "input");
  const std::vector<Dim> kept = reduced_shape(shape, p, true);
  const int32_t in = tensor(x);
  const int32_t y = tensor(out0(n));
  const std::string y_name = def_.tensors[static_cast<size_t>(y)].name;
  auto output = [&](size_t k, const std::string& what) {
    const int o = n.outputs.size() > k ? n.outputs[k] : -1;
    return o >= 0 ? tensor(o) : new_activation(y_name + "/" + what, DType::Float32, kept);
  };
  const int32_t mean = output(1, "mean"), inv = output(2, "inv_std_dev");
  auto act = [&](const std::string& what, const std::vector<Dim>& s) {
    return new_activation(y_name + "/" + what, DType::Float32, s);
  };
  emit_tensors(OpKind::Mean, {in}, {mean}, p, n.name + "/mean");
  const int32_t var = act("var", kept);
  emit_tensors(OpKind::Var, {in}, {var}, p, n.name + "/var");
  const int32_t eps = scalar_weight(y_name + "/epsilon", n.get_float("epsilon", 1e-5), DType::Float32);
  const int32_t var_eps = act("var_eps", kept);
  emit_tensors(OpKind::Add, {var, eps}, {var_eps}, NoParams{}, n.name + "/var_eps");
  emit_tensors(OpKind::Rsqrt, {var_eps}, {inv}, NoParams{}, n.name + "/inv_std_dev");
  const int32_t d = act("centered", shape);
  emit_tensors(OpKind::Sub, {in, mean}, {d}, NoParams{}, n.name + "/centered");
  const int32_t normed = act("normalized", shape);
  emit_tensors(OpKind::Mul, {d, inv}, {normed}, NoParams{}, n.name + "/normalized");
  const bool bias = has_input(n, 2);
  const int32_t scaled = bias ? act("scaled", shape) : y;
  emit_tensors(OpKind::Mul, {normed, weight(n.inputs[1])}, {scaled}, NoParams{}, bias ? n.name + "/scaled" : n.name);
  if (bias) emit_tensors(OpKind::Add, {scaled, weight(n.inputs[2])}, {y}, NoParams{}, n.name);
}


// And, Or, Xor, Not on bool (the only dtype ONNX allows): Minimum, Maximum,
// Ne, and Eq with false; exact on {false, true}.
void Lowerer::lower_logical(const Node& n) {
  const bool unary = n.op_type == "Not";
  require_inputs(n, unary ? 1 : 2);
  for (size_t i = 0; i < (unary ? 1u : 2u); ++i) {
    const std::optional<DType> dt = dtype_of(n.inputs[i]);
    if (dt != DType::Bool) {
      refuse("input " + vname(n.inputs[i]) + " of dtype " + (dt ? std::string(dtype_name(*dt)) : "unknown") +
             " is not bool");
    }
  }
  const int32_t a = tensor(n.inputs[0]);
  if (unary) {
    const int32_t f = new_weight(val(out0(n)).name + "/false", scalar_tensor(false, DType::Bool), false);
    return emit(OpKind::Eq, n, {a, f}, {out0(n)});
  }
  const OpKind k = n.op_type == "And" ? OpKind::Minimum : n.op_type == "Or" ? OpKind::Maximum : OpKind::Ne;
  emit(k, n, {a, tensor(n.inputs[1])}, {out0(n)});
}

}  // namespace ember::converter::lowering
