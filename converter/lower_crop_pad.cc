// Lowering of Pad with pads, axes or a value known only at run time, negative
// pads or wrap mode, and of CenterCropPad (see lowerer.h): each axis is a
// window of the input, out[j] = x[j + offset] for j in [0, length), read by a
// Gather of computed indices: clamped for edge (and constant, whose indices
// outside the input take the value by Where), reflected or wrapped.
#include <cmath>

#include "converter/lowerer.h"

namespace ember::converter::lowering {

// a mod b (0 <= result < b, b > 0) for int64 tensors, through float64 (exact below 2^53).
int32_t Lowerer::floor_mod(int32_t a, int32_t b, const std::string& name) {
  const int32_t af = cast_new(a, DType::Float64, name + "/a"), bf = cast_new(b, DType::Float64, name + "/b");
  const int32_t q = binary_new(OpKind::Div, af, bf, DType::Float64, name + "/quotient");
  const int32_t fq = emit_new(OpKind::Floor, {q}, DType::Float64, tensor_dims(q), NoParams{}, name + "/floor");
  const int32_t whole = binary_new(OpKind::Mul, cast_new(fq, DType::Int64, name + "/times"), b, DType::Int64,
                                   name + "/whole");
  return binary_new(OpKind::Sub, a, whole, DType::Int64, name);
}

int32_t Lowerer::window(int32_t t, int64_t axis, int32_t offset, int32_t length, const Dim& out_dim, PadMode mode,
                        int32_t fill, const std::string& name, int32_t into) {
  const DType dt = def_.tensors[static_cast<size_t>(t)].dtype;
  std::vector<Dim> s = tensor_dims(t);
  const int64_t rank = static_cast<int64_t>(s.size());
  const int32_t n = dim_size(t, axis, name + "/n");
  const int32_t j = arange_along(length, 0, 1, out_dim, name + "/j");
  const int32_t idx = binary_new(OpKind::Add, j, offset, DType::Int64, name + "/index");
  const int32_t one = int_scalar(name + "/one", 1);
  int32_t safe = -1;
  if (mode == PadMode::Constant || mode == PadMode::Replicate) {
    const int32_t low = binary_new(OpKind::Maximum, idx, int_scalar(name + "/zero", 0), DType::Int64, name + "/low");
    safe = binary_new(OpKind::Minimum, low, binary_new(OpKind::Sub, n, one, DType::Int64, name + "/last"), DType::Int64,
                      name + "/clamped");
  } else if (mode == PadMode::Circular) {
    safe = floor_mod(idx, n, name + "/wrapped");
  } else {  // reflect: period 2 (n - 1) (at least 1), the second half mirrored
    const int32_t span = binary_new(OpKind::Sub, n, one, DType::Int64, name + "/span");
    const int32_t period = binary_new(
        OpKind::Maximum, binary_new(OpKind::Add, span, span, DType::Int64, name + "/period2"), one, DType::Int64,
        name + "/period");
    const int32_t m = floor_mod(idx, period, name + "/phase");
    const int32_t back = binary_new(OpKind::Gt, m, span, DType::Bool, name + "/back");
    safe = emit_new(OpKind::Where, {back, binary_new(OpKind::Sub, period, m, DType::Int64, name + "/mirrored"), m},
                    DType::Int64, {out_dim}, NoParams{}, name + "/reflected");
  }
  s[static_cast<size_t>(axis)] = out_dim;
  const bool masked = mode == PadMode::Constant;
  const int32_t g = emit_new(OpKind::Gather, {t, safe}, dt, s, AxisParams{axis}, name + (masked ? "/gathered" : ""),
                             masked ? -1 : into);
  if (!masked) return g;
  const int32_t valid = binary_new(OpKind::Eq, idx, safe, DType::Bool, name + "/inside");
  std::vector<Dim> ms(static_cast<size_t>(rank), Dim::fixed(1));
  ms[static_cast<size_t>(axis)] = out_dim;
  std::vector<int64_t> axes;
  for (int64_t d = 0; d < rank; ++d) {
    if (d != axis) axes.push_back(d);
  }
  const int32_t mask = rank == 1 ? valid
                                 : emit_new(OpKind::Unsqueeze, {valid, -1}, DType::Bool, ms, dims_params(axes, "axes"),
                                            name + "/mask");
  return emit_new(OpKind::Where, {mask, g, fill}, dt, s, NoParams{}, name, into);
}

// Whether lower_pad's one Pad op (constant pads >= 0, constant axes and value,
// no wrap) takes node `n`.
bool Lowerer::plain_pad(const Node& n) const {
  for (size_t i = 1; i < 4; ++i) {
    if (has_input(n, i) && !is_const(n.inputs[i])) return false;
  }
  if (n.get_string("mode", "constant") == "wrap") return false;
  if (!has_input(n, 1)) return true;
  const Tensor& pads = val(n.inputs[1]).constant;
  if (is_floating(pads.dtype()) || pads.dtype() == DType::Bool) return true;  // refused there
  for (int64_t p : pads.to_vector<int64_t>()) {
    if (p < 0) return false;
  }
  return true;
}

// Pad as windows: per padded axis a, offset -before[a] and length
// n + before[a] + after[a]; pads and axes constants or run-time int64.
void Lowerer::lower_pad_window(const Node& n) {
  require_inputs(n, 2);
  const int x = n.inputs[0], pads = n.inputs[1];
  const std::optional<DType> dt = dtype_of(x);
  if (!dt) refuse("input " + vname(x) + " has an unknown dtype");
  if (dtype_of(pads) != DType::Int64) refuse("pads " + vname(pads) + " is not int64");
  const std::vector<Dim> xs = dims_of(x, "input");
  const int64_t rank = static_cast<int64_t>(xs.size());
  const std::string mode_name = n.get_string("mode", "constant");
  PadMode mode = PadMode::Constant;
  if (mode_name == "reflect") mode = PadMode::Reflect;
  else if (mode_name == "edge") mode = PadMode::Replicate;
  else if (mode_name == "wrap") mode = PadMode::Circular;
  else if (mode_name != "constant") refuse("mode '" + mode_name + "' is not supported");
  const int32_t out = tensor(out0(n));
  const std::string base = def_.tensors[static_cast<size_t>(out)].name;
  // Pads beyond +-2^40 cannot give a tensor that fits in memory: clamped
  // there, n + before + after cannot wrap around (pads of 2^62 gave an empty
  // output; found by fuzzing) and the window's allocation fails as it would.
  ClampParams bound;
  bound.has_min = bound.has_max = true;
  bound.min = Scalar(-(int64_t{1} << 40));
  bound.max = Scalar(int64_t{1} << 40);
  const int32_t p = emit_new(OpKind::Clamp, {tensor(pads)}, DType::Int64, tensor_dims(tensor(pads)), bound,
                             base + "/pads_bounded");
  // The pads of every axis in order: the axes input (constant or not) picks them.
  std::vector<int64_t> axes;
  int32_t axes_t = -1;
  if (has_input(n, 3) && is_const(n.inputs[3])) {
    const std::vector<int64_t> given = *const_ints(n, 3, "axes");
    for (int64_t a : given) axes.push_back(norm_axis(a, rank, "axis"));
  } else if (has_input(n, 3)) {
    if (dtype_of(n.inputs[3]) != DType::Int64) refuse("axes " + vname(n.inputs[3]) + " is not int64");
    axes_t = tensor(n.inputs[3]);
    const int32_t negative = binary_new(OpKind::Lt, axes_t, int_scalar(base + "/zero", 0), DType::Bool, base + "/neg");
    axes_t = emit_new(OpKind::Where,
                      {negative, binary_new(OpKind::Add, axes_t, int_scalar(base + "/rank", rank), DType::Int64,
                                            base + "/axes_up"),
                       axes_t},
                      DType::Int64, tensor_dims(axes_t), NoParams{}, base + "/axes");
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  } else {
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  }
  const int64_t k = static_cast<int64_t>(axes.size());
  const int32_t fill = has_input(n, 2) ? tensor(n.inputs[2]) : new_weight(base + "/zero_value", scalar_tensor(0.0, *dt), false);
  const int32_t halves = reshape_new(p, {2, -1}, {Dim::fixed(2), Dim{}}, base + "/halves");
  auto pick = [&](int64_t side, int64_t i, int64_t axis) {
    const std::string nm = base + (side == 0 ? "/before" : "/after") + std::to_string(axis);
    const int32_t row = emit_new(OpKind::Gather, {halves, int_scalar(nm + "/side", side)}, DType::Int64, {Dim{}},
                                 AxisParams{0}, nm + "/row");
    if (axes_t < 0) return emit_new(OpKind::Gather, {row, int_scalar(nm + "/at", i)}, DType::Int64, {}, AxisParams{0}, nm);
    // Run-time axes: the sum of the pads whose axis is this one.
    const int32_t hit = binary_new(OpKind::Eq, axes_t, int_scalar(nm + "/axis", axis), DType::Bool, nm + "/hit");
    const int32_t picked = emit_new(OpKind::Where, {hit, row, int_scalar(nm + "/none", 0)}, DType::Int64, {Dim{}},
                                    NoParams{}, nm + "/picked");
    return reduce_new(OpKind::Sum, picked, 1u, false, nm);
  };
  int32_t cur = tensor(x);
  for (int64_t i = 0; i < k; ++i) {
    const int64_t a = axes[static_cast<size_t>(i)];
    const std::string nm = base + "/axis" + std::to_string(a);
    const int32_t before = pick(0, i, a), after = pick(1, i, a);
    const int32_t offset = emit_new(OpKind::Neg, {before}, DType::Int64, {}, NoParams{}, nm + "/offset");
    const int32_t grown = binary_new(OpKind::Add, dim_size(cur, a, nm + "/n_in"),
                                     binary_new(OpKind::Add, before, after, DType::Int64, nm + "/pads"), DType::Int64,
                                     nm + "/length");
    Dim out_dim;  // static where the pads and the input dim are
    if (is_const(pads) && axes_t < 0 && xs[static_cast<size_t>(a)].is_static()) {
      const std::vector<int64_t> pv = *const_ints(n, 1, "pads");
      int64_t d = 0;
      if (static_cast<int64_t>(pv.size()) == 2 * k &&
          !__builtin_add_overflow(xs[static_cast<size_t>(a)].value, pv[static_cast<size_t>(i)], &d) &&
          !__builtin_add_overflow(d, pv[static_cast<size_t>(k + i)], &d)) {
        out_dim = Dim::fixed(d);
      }
    }
    cur = window(cur, a, offset, grown, out_dim, mode, fill, nm, i + 1 == k ? out : -1);
  }
  if (k == 0) emit_tensors(OpKind::Copy, {cur}, {out}, NoParams{}, n.name);
}

// CenterCropPad: per axis, a window of length shape[i] at offset
// trunc((n - shape[i]) / 2) (crop: the start; pad: minus the leading pad), 0 outside.
void Lowerer::lower_center_crop_pad(const Node& n) {
  require_inputs(n, 2);
  const int x = n.inputs[0], shape = n.inputs[1];
  const std::optional<DType> dt = dtype_of(x);
  if (!dt) refuse("input " + vname(x) + " has an unknown dtype");
  const std::optional<DType> sdt = dtype_of(shape);
  if (sdt != DType::Int64 && sdt != DType::Int32) refuse("shape " + vname(shape) + " is not int32 or int64");
  const int64_t rank = rank_of(x, "input");
  std::vector<int64_t> axes = n.get_ints("axes");
  if (!n.has("axes")) {
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  }
  for (int64_t& a : axes) a = norm_axis(a, rank, "axis");
  const std::vector<Dim> ss = dims_of(shape, "shape");
  if (ss.size() != 1 || (ss[0].is_static() && ss[0].value != static_cast<int64_t>(axes.size()))) {
    refuse("shape " + vname(shape) + " must have one value per axis (" + std::to_string(axes.size()) + ")");
  }
  const int32_t out = tensor(out0(n));
  const std::string base = def_.tensors[static_cast<size_t>(out)].name;
  const int32_t sizes = cast_new(tensor(shape), DType::Int64, base + "/sizes");
  const int32_t zero = new_weight(base + "/zero", scalar_tensor(0.0, *dt), false);
  int32_t cur = tensor(x);
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t a = axes[i];
    const std::string nm = base + "/axis" + std::to_string(a);
    const int32_t len = emit_new(OpKind::Gather, {sizes, int_scalar(nm + "/at", static_cast<int64_t>(i))}, DType::Int64,
                                 {}, AxisParams{0}, nm + "/size");
    const int32_t diff = binary_new(OpKind::Sub, dim_size(cur, a, nm + "/n"), len, DType::Int64, nm + "/diff");
    const int32_t half = binary_new(OpKind::Mul, cast_new(diff, DType::Float64, nm + "/diff_f"),
                                    scalar_weight(nm + "/half", 0.5, DType::Float64), DType::Float64, nm + "/half_f");
    const int32_t offset = cast_new(half, DType::Int64, nm + "/offset");  // truncated toward 0
    const Dim out_dim = is_const(shape) ? Dim::fixed(val(shape).constant.to_vector<int64_t>()[i]) : Dim{};
    cur = window(cur, a, offset, len, out_dim, PadMode::Constant, zero, nm, i + 1 == axes.size() ? out : -1);
  }
  if (axes.empty()) emit_tensors(OpKind::Copy, {cur}, {out}, NoParams{}, n.name);
}

}  // namespace ember::converter::lowering
