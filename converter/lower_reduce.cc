// Lowering of the ONNX reductions (ReduceSum, ReduceMean, ReduceMax, ReduceMin,
// ReduceProd, ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum,
// ReduceLogSumExp) and of ArgMax/ArgMin onto ember's reduction ops (see
// lowerer.h). The composite forms emit a chain of ember ops with intermediate
// activations.
#include <cmath>
#include <limits>

#include "converter/lowerer.h"

namespace ember::converter::lowering {

// The reduced dims and keepdim of a Reduce* node; false when the node reduces
// nothing (noop_with_empty_axes = 1 with no axes: the identity of the spec).
// Axes from an input no constant gives: *runtime_axes is that value (the ops
// read it at run time, ops.def), p.dims stays 0 and p.noop_empty is the
// attribute; without runtime_axes such an input is refused.
bool Lowerer::reduce_params(const Node& n, int64_t rank, ReduceParams& p, int* runtime_axes) const {
  // The importer moves ReduceSum's and ReduceMean's axes attribute into an
  // input; the other reductions take it as an attribute below opset 18.
  // A runtime axes input of static shape [0] is known to be empty.
  const auto axes_shape = has_input(n, 1) ? val(n.inputs[1]).static_shape() : std::nullopt;
  const bool runtime = has_input(n, 1) && !is_const(n.inputs[1]) && !n.has("axes");
  const bool empty_input = runtime && axes_shape && axes_shape->size() == 1 && (*axes_shape)[0] == 0;
  p.keepdim = n.get_int("keepdims", 1) != 0;
  if (runtime && !empty_input && runtime_axes != nullptr) {
    if (dtype_of(n.inputs[1]) != DType::Int64) refuse("axes " + vname(n.inputs[1]) + " is not int64");
    *runtime_axes = n.inputs[1];
    p.noop_empty = n.get_int("noop_with_empty_axes", 0) != 0;
    return true;
  }
  const std::optional<std::vector<int64_t>> axes =
      n.has("axes")  ? std::optional<std::vector<int64_t>>(n.get_ints("axes"))
      : empty_input ? std::optional<std::vector<int64_t>>(std::vector<int64_t>{})
                    : const_ints(n, 1, "axes");
  if (!axes || axes->empty()) {
    if (n.get_int("noop_with_empty_axes", 0) != 0) return false;
    for (int64_t d = 0; d < rank; ++d) p.dims |= uint32_t{1} << d;
    return true;
  }
  if (rank > 32) refuse("input rank " + std::to_string(rank) + " exceeds 32");
  for (int64_t a : *axes) {
    const uint32_t bit = uint32_t{1} << norm_axis(a, rank, "axis");
    if (p.dims & bit) refuse("axes " + join_ints(*axes) + " name a dimension twice");
    p.dims |= bit;
  }
  return true;
}

std::vector<Dim> Lowerer::reduced_shape(const std::vector<Dim>& in, const ReduceParams& p, bool keepdim) {
  std::vector<Dim> out;
  for (size_t d = 0; d < in.size(); ++d) {
    if (!((p.dims >> d) & 1u)) out.push_back(in[d]);
    else if (keepdim) out.push_back(Dim::fixed(1));
  }
  return out;
}

// The output shape of a reduction over run-time axes `axes`: with keepdim
// the rank stays and dims of size 1 stay 1 (the rest is unknown); without it
// the rank drops by the axes' count, which must be static.
std::vector<Dim> Lowerer::runtime_reduced_shape(const std::vector<Dim>& in, int axes, bool keepdim) const {
  std::vector<Dim> out;
  if (keepdim) {
    for (const Dim& d : in) out.push_back(d.is_static() && d.value == 1 ? d : Dim{});
    return out;
  }
  const auto s = val(axes).static_shape();
  if (!s || s->size() != 1) refuse("axes " + vname(axes) + " has no static length (needed with keepdims = 0)");
  const auto drop = static_cast<size_t>((*s)[0]);
  if (drop > in.size()) refuse("axes " + vname(axes) + " has more entries than the input has dims");
  return std::vector<Dim>(in.size() - drop, Dim{});
}

void Lowerer::lower_reduce(const Node& n) {
  const std::string& op = n.op_type;
  const int x = n.inputs[0];
  const int64_t rank = rank_of(x, "input");
  const std::optional<DType> xdt = dtype_of(x);
  if (!xdt) refuse("input " + vname(x) + " has an unknown dtype");
  const bool needs_float = op == "ReduceL2" || op == "ReduceLogSum" || op == "ReduceLogSumExp";
  if (needs_float && !is_floating(*xdt)) {
    refuse("input " + vname(x) + " of dtype " + std::string(dtype_name(*xdt)) +
           " is not supported (only floating-point types)");
  }
  ReduceParams p;
  int axes = -1;  // a run-time axes input
  const bool reduces = reduce_params(n, rank, p, &axes);
  const int32_t in = tensor(x);
  const int32_t axes_t = axes >= 0 ? tensor(axes) : -1;
  const int32_t out = tensor(out0(n));
  const std::string out_name = def_.tensors[static_cast<size_t>(out)].name;
  const std::vector<Dim> shape = dims_of(x, "input");
  auto shape_after = [&](const ReduceParams& q) {
    return axes >= 0 ? runtime_reduced_shape(shape, axes, q.keepdim) : reduced_shape(shape, q, q.keepdim);
  };
  auto step = [&](const std::string& what, DType dt, const std::vector<Dim>& s) {
    return new_activation(out_name + "/" + what, dt, s);
  };
  // A reduction reads the run-time axes as its second input.
  auto with_axes = [&](int32_t t) { return axes_t >= 0 ? std::vector<int32_t>{t, axes_t} : std::vector<int32_t>{t}; };
  auto emit_step = [&](OpKind k, std::vector<int32_t> ins, std::vector<int32_t> outs, OpParams params,
                       const std::string& what) {
    std::string name = outs[0] == out ? n.name : n.name + "/" + what;
    const DType odt = def_.tensors[static_cast<size_t>(outs[0])].dtype;
    if ((k == OpKind::Sum || k == OpKind::Prod) && !is_floating(odt) && odt != DType::Int64) {
      // ember's integer sums and products are int64 (as torch's): narrowed back.
      const int32_t wide = new_activation(out_name + "/" + what + "_int64", DType::Int64,
                                          shape_after(std::get<ReduceParams>(params)));
      emit_tensors(k, std::move(ins), {wide}, params, n.name + "/" + what + "_int64");
      return emit_tensors(OpKind::Copy, {wide}, std::move(outs), NoParams{}, std::move(name));
    }
    emit_tensors(k, std::move(ins), std::move(outs), params, std::move(name));
  };
  if (!reduces) {
    // The identity of the spec's reference: the elementwise part only.
    if (op == "ReduceL1") return emit_step(OpKind::Abs, {in}, {out}, NoParams{}, "abs");
    if (op == "ReduceSumSquare") return emit_step(OpKind::Mul, {in, in}, {out}, NoParams{}, "square");
    if (op == "ReduceLogSum") return emit_step(OpKind::Log, {in}, {out}, NoParams{}, "log");
    if (op == "ReduceL2") return emit_step(OpKind::Abs, {in}, {out}, NoParams{}, "abs");
    return emit_step(OpKind::Copy, {in}, {out}, NoParams{}, "copy");
  }
  if (op == "ReduceSum" || op == "ReduceMean" || op == "ReduceProd") {
    const OpKind k = op == "ReduceSum" ? OpKind::Sum : op == "ReduceMean" ? OpKind::Mean : OpKind::Prod;
    return emit_step(k, with_axes(in), {out}, p, "reduce");
  }
  if (op == "ReduceMax" || op == "ReduceMin") {
    return emit_step(op == "ReduceMax" ? OpKind::Max : OpKind::Min, with_axes(in), {out, -1}, p, "reduce");
  }
  if (op == "ReduceL2") {
    p.p = 2.0;
    return emit_step(OpKind::Norm, with_axes(in), {out}, p, "norm");
  }
  if (op == "ReduceL1" || op == "ReduceSumSquare") {
    const bool l1 = op == "ReduceL1";
    const int32_t e = step(l1 ? "abs" : "square", *xdt, shape);
    emit_step(l1 ? OpKind::Abs : OpKind::Mul, l1 ? std::vector<int32_t>{in} : std::vector<int32_t>{in, in}, {e},
              NoParams{}, l1 ? "abs" : "square");
    return emit_step(OpKind::Sum, with_axes(e), {out}, p, "sum");
  }
  if (op == "ReduceLogSum") {
    const int32_t s = step("sum", *xdt, shape_after(p));
    emit_step(OpKind::Sum, with_axes(in), {s}, p, "sum");
    return emit_step(OpKind::Log, {s}, {out}, NoParams{}, "log");
  }
  if (op != "ReduceLogSumExp") refuse("is not a reduction");
  // log(sum(exp(x - m))) + m with m the max over the reduced dims (kept for
  // the subtraction; reduced as keepdims says for the sum): no overflow.
  ReduceParams keep = p;
  keep.keepdim = true;
  const int32_t m = step("max", *xdt, shape_after(keep));
  emit_step(OpKind::Max, with_axes(in), {m, -1}, keep, "max");
  const int32_t d = step("sub", *xdt, shape);
  emit_step(OpKind::Sub, {in, m}, {d}, NoParams{}, "sub");
  const int32_t e = step("exp", *xdt, shape);
  emit_step(OpKind::Exp, {d}, {e}, NoParams{}, "exp");
  const int32_t s = step("sum", *xdt, shape_after(p));
  emit_step(OpKind::Sum, with_axes(e), {s}, p, "sum");
  const int32_t l = step("log", *xdt, shape_after(p));
  emit_step(OpKind::Log, {s}, {l}, NoParams{}, "log");
  int32_t m_out = m;
  if (!p.keepdim) {
    m_out = step("max_reduced", *xdt, shape_after(p));
    emit_step(OpKind::Max, with_axes(in), {m_out, -1}, p, "max_reduced");
  }
  emit_step(OpKind::Add, {l, m_out}, {out}, NoParams{}, "add");
}

// ArgMax/ArgMin: one axis; select_last_index = 1 as the first index of the
// input flipped along the axis (a Slice of step -1), mapped back by size - 1 - i.
void Lowerer::lower_arg_reduce(const Node& n) {
  const bool is_max = n.op_type == "ArgMax";
  const int x = n.inputs[0];
  const int64_t rank = rank_of(x, "input");
  ReduceParams p;
  p.keepdim = n.get_int("keepdims", 1) != 0;
  const int64_t axis = rank == 0 ? 0 : norm_axis(n.get_int("axis", 0), rank, "axis");
  if (rank == 0) refuse("input " + vname(x) + " is a scalar (rank 0)");
  p.dims = uint32_t{1} << axis;
  const OpKind k = is_max ? OpKind::ArgMax : OpKind::ArgMin;
  const int32_t in = tensor(x);
  const int32_t out = tensor(out0(n));
  if (n.get_int("select_last_index", 0) == 0) return emit_tensors(k, {in}, {out}, p, n.name);
  const std::vector<Dim> shape = dims_of(x, "input");
  const Dim size = shape[static_cast<size_t>(axis)];
  if (!size.is_static()) {
    refuse("select_last_index = 1 needs a static size of axis " + std::to_string(axis) + " of input " + vname(x));
  }
  const std::string out_name = def_.tensors[static_cast<size_t>(out)].name;
  const std::optional<DType> xdt = dtype_of(x);
  if (!xdt) refuse("input " + vname(x) + " has an unknown dtype");
  auto ints = [&](const std::string& what, int64_t v) {
    return new_weight(out_name + "/" + what, ::ember::tensor(std::vector<int64_t>{v}, {1}), false);
  };
  const int32_t flipped = new_activation(out_name + "/flipped", *xdt, shape);
  emit_tensors(OpKind::Slice,
               {in, ints("starts", -1), ints("ends", std::numeric_limits<int64_t>::min()), ints("axes", axis),
                ints("steps", -1)},
               {flipped}, NoParams{}, n.name + "/flip");
  const int32_t idx = new_activation(out_name + "/flipped_index", DType::Int64, reduced_shape(shape, p, p.keepdim));
  emit_tensors(k, {flipped}, {idx}, p, n.name + "/arg");
  const int32_t last = new_weight(out_name + "/last", scalar_tensor(size.value - 1, DType::Int64), false);
  emit_tensors(OpKind::Sub, {last, idx}, {out}, NoParams{}, n.name);
}

}  // namespace ember::converter::lowering
