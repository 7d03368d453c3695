// Lowering of ONNX data-layout ops onto ember's shape, index and elementwise
// ops (see lowerer.h): Trilu, EyeLike, OneHot (Eq of positions), SpaceToDepth
// and DepthToSpace (Reshape, Permute, Reshape), Tile (Unsqueeze, Expand,
// Reshape), and the windows along an axis that Pad with run-time pads or
// modes and CenterCropPad need (Range, Gather, Where); with the helpers the
// other composite lowerings share (sizes and positions along an axis,
// reshapes, reductions).
#include <cmath>

#include "converter/lowerer.h"

namespace ember::converter::lowering {

int32_t Lowerer::int_scalar(const std::string& name, int64_t v) {
  return new_weight(name, scalar_tensor(static_cast<double>(v), DType::Int64), false);
}

int32_t Lowerer::dim_size(int32_t x, int64_t axis, const std::string& name) {
  const std::vector<Dim> s = tensor_dims(x);
  if (axis < 0 || axis >= static_cast<int64_t>(s.size())) {  // a fuzzed NegativeLogLikelihoodLoss read past the end
    refuse("axis " + std::to_string(axis) + " is out of range for a value of rank " + std::to_string(s.size()));
  }
  const Dim& d = s[static_cast<size_t>(axis)];
  if (d.is_static()) return int_scalar(name, d.value);
  const int32_t dims = emit_new(OpKind::ShapeOf, {x}, DType::Int64, {Dim::fixed(static_cast<int64_t>(s.size()))},
                                NoParams{}, name + "/shape");
  return emit_new(OpKind::Gather, {dims, int_scalar(name + "/axis", axis)}, DType::Int64, {}, AxisParams{0}, name);
}

int32_t Lowerer::arange_along(int32_t count, int64_t axis, int64_t rank, const Dim& size, const std::string& name) {
  const int32_t flat = emit_new(OpKind::Range, {int_scalar(name + "/zero", 0), count, int_scalar(name + "/one", 1)},
                                DType::Int64, {size}, NoParams{}, name + "/range");
  if (rank == 1) return flat;
  std::vector<int64_t> axes;
  std::vector<Dim> dims(static_cast<size_t>(rank), Dim::fixed(1));
  dims[static_cast<size_t>(axis)] = size;
  for (int64_t d = 0; d < rank; ++d) {
    if (d != axis) axes.push_back(d);
  }
  return emit_new(OpKind::Unsqueeze, {flat, -1}, DType::Int64, dims, dims_params(axes, "axes"), name);
}

int32_t Lowerer::positions(int32_t x, int64_t axis, int64_t rank, const Dim& size, const std::string& name) {
  if (!size.is_static()) return arange_along(dim_size(x, axis, name + "/size"), axis, rank, size, name);
  std::vector<int64_t> shape(static_cast<size_t>(rank), 1);
  shape[static_cast<size_t>(axis)] = size.value;
  return new_weight(name, arange(static_cast<double>(size.value), TensorOptions(DType::Int64)).reshape(shape), false);
}

int32_t Lowerer::reduce_new(OpKind kind, int32_t t, uint32_t dims, bool keepdim, const std::string& name,
                            int32_t into) {
  ReduceParams p;
  p.dims = dims;
  p.keepdim = keepdim;
  return emit_new(kind, {t}, tensor_dtype(t), reduced_shape(tensor_dims(t), p, keepdim), p, name, into);
}

void Lowerer::set_output_dtype(int id, DType dt) {
  std::optional<DType>& slot = dtypes_[static_cast<size_t>(id)];
  if (slot && *slot != dt) {
    refuse("output " + vname(id) + " is declared " + std::string(dtype_name(*slot)) + ", not " +
           std::string(dtype_name(dt)));
  }
  slot = dt;
}

// Trilu: x where (column - row) >= k (upper) or <= k (lower), else 0; k a
// constant or a run-time scalar.
void Lowerer::lower_trilu(const Node& n) {
  const int x = n.inputs[0];
  const std::optional<DType> dt = dtype_of(x);
  if (!dt) refuse("input " + vname(x) + " has an unknown dtype");
  const std::vector<Dim> xs = dims_of(x, "input");
  const int64_t rank = static_cast<int64_t>(xs.size());
  if (rank < 2) refuse("input " + vname(x) + " has rank " + std::to_string(rank) + ", not at least 2");
  const int32_t in = tensor(x), out = tensor(out0(n));
  const std::string base = def_.tensors[static_cast<size_t>(out)].name;
  int32_t k = int_scalar(base + "/k", 0);
  if (has_input(n, 1)) {
    if (dtype_of(n.inputs[1]) != DType::Int64) refuse("k " + vname(n.inputs[1]) + " is not int64");
    k = tensor(n.inputs[1]);
  }
  const int32_t rows = positions(in, rank - 2, rank, xs[static_cast<size_t>(rank - 2)], base + "/rows");
  const int32_t cols = positions(in, rank - 1, rank, xs[static_cast<size_t>(rank - 1)], base + "/cols");
  const int32_t diagonal = binary_new(OpKind::Sub, cols, rows, DType::Int64, base + "/diagonal");
  const bool upper = n.get_int("upper", 1) != 0;
  const int32_t keep = binary_new(upper ? OpKind::Ge : OpKind::Le, diagonal, k, DType::Bool, base + "/kept");
  emit_new(OpKind::Where, {keep, in, new_weight(base + "/zero", scalar_tensor(0.0, *dt), false)}, *dt, xs, NoParams{},
           base, out);
}

// EyeLike: ones where column - row == k, of the dtype attribute (else x's).
void Lowerer::lower_eye_like(const Node& n) {
  const int x = n.inputs[0];
  const std::vector<Dim> xs = dims_of(x, "input");
  if (xs.size() != 2) refuse("input " + vname(x) + " is not 2-D");
  std::optional<DType> dt = dtype_of(x);
  if (n.has("dtype")) {
    dt = dtype_from_onnx(n.get_int("dtype", 0));
    if (!dt) refuse("dtype " + std::to_string(n.get_int("dtype", 0)) + " is not supported");
  }
  if (!dt) refuse("input " + vname(x) + " has an unknown dtype");
  set_output_dtype(out0(n), *dt);
  const int32_t in = tensor(x), out = tensor(out0(n));
  const std::string base = def_.tensors[static_cast<size_t>(out)].name;
  const int32_t diagonal = binary_new(OpKind::Sub, positions(in, 1, 2, xs[1], base + "/cols"),
                                      positions(in, 0, 2, xs[0], base + "/rows"), DType::Int64, base + "/diagonal");
  const int32_t on = binary_new(OpKind::Eq, diagonal, int_scalar(base + "/k", n.get_int("k", 0)), DType::Bool,
                                base + "/on");
  cast_new(on, *dt, base, out);
}

// OneHot: Where(indices (negative ones + depth) == the positions 0..depth-1
// along axis, on, off); depth and values constants or run-time.
void Lowerer::lower_one_hot(const Node& n) {
  require_inputs(n, 3);
  const int indices = n.inputs[0], depth = n.inputs[1], values = n.inputs[2];
  const std::optional<DType> vdt = dtype_of(values), idt = dtype_of(indices), ddt = dtype_of(depth);
  if (!vdt || !idt || !ddt || *idt == DType::Bool || *ddt == DType::Bool) {
    refuse("indices, depth and values must have known numeric dtypes");
  }
  const std::vector<Dim> is = dims_of(indices, "indices");
  const int64_t rank = static_cast<int64_t>(is.size()) + 1;
  const int64_t axis = norm_axis(n.get_int("axis", -1), rank, "axis");
  if (dims_of(depth, "depth").size() > 1) refuse("depth " + vname(depth) + " is not a scalar");
  set_output_dtype(out0(n), *vdt);
  const int32_t out = tensor(out0(n));
  const std::string base = def_.tensors[static_cast<size_t>(out)].name;
  Dim size;
  if (is_const(depth)) size = Dim::fixed(static_cast<int64_t>(val(depth).constant.reshape({1}).item().to_double()));
  if (size.is_static() && size.value < 1) refuse("depth " + std::to_string(size.value) + " is not positive");
  int32_t count = cast_new(tensor(depth), DType::Int64, base + "/depth");
  if (dims_of(depth, "depth").size() == 1) {
    count = emit_new(OpKind::Squeeze, {count, -1}, DType::Int64, {}, dims_params({0}, "axes"), base + "/depth_0d");
  }
  const int32_t pos = size.is_static() ? positions(-1, axis, rank, size, base + "/positions")
                                       : arange_along(count, axis, rank, size, base + "/positions");
  std::vector<Dim> us = is;
  us.insert(us.begin() + axis, Dim::fixed(1));
  int32_t idx = cast_new(tensor(indices), DType::Int64, base + "/indices");
  idx = emit_new(OpKind::Unsqueeze, {idx, -1}, DType::Int64, us, dims_params({axis}, "axes"), base + "/indices_1");
  const int32_t negative = binary_new(OpKind::Lt, idx, int_scalar(base + "/zero", 0), DType::Bool, base + "/negative");
  idx = emit_new(OpKind::Where, {negative, binary_new(OpKind::Add, idx, count, DType::Int64, base + "/wrapped"), idx},
                 DType::Int64, us, NoParams{}, base + "/index");
  const int32_t hot = binary_new(OpKind::Eq, idx, pos, DType::Bool, base + "/hot");
  const int32_t v = tensor(values);
  const int32_t off = emit_new(OpKind::Gather, {v, int_scalar(base + "/off_at", 0)}, *vdt, {}, AxisParams{0}, base + "/off");
  const int32_t on = emit_new(OpKind::Gather, {v, int_scalar(base + "/on_at", 1)}, *vdt, {}, AxisParams{0}, base + "/on");
  std::vector<Dim> os = us;
  os[static_cast<size_t>(axis)] = size;
  emit_new(OpKind::Where, {hot, on, off}, *vdt, os, NoParams{}, base, out);
}

// SpaceToDepth / DepthToSpace: Reshape to 6-D, Permute, Reshape (the
// reference's shapes and permutations; C, H and W static, N any).
void Lowerer::lower_space_depth(const Node& n) {
  const bool to_depth = n.op_type == "SpaceToDepth";
  const int x = n.inputs[0];
  const std::optional<DType> dt = dtype_of(x);
  const std::vector<Dim> xs = dims_of(x, "input");
  if (xs.size() != 4) refuse("input " + vname(x) + " is not 4-D");
  if (!dt) refuse("input " + vname(x) + " has an unknown dtype");
  for (size_t i = 1; i < 4; ++i) {
    if (!xs[i].is_static()) refuse("input " + vname(x) + " needs static C, H and W");
  }
  const int64_t b = n.get_int("blocksize", 0), c = xs[1].value, h = xs[2].value, w = xs[3].value;
  if (b < 1) refuse("blocksize " + std::to_string(b) + " must be >= 1");
  const std::string mode = n.get_string("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") refuse("mode '" + mode + "' is unknown");
  if (to_depth ? (h % b != 0 || w % b != 0) : c % (b * b) != 0) {
    refuse(std::string(to_depth ? "H and W" : "C") + " of input " + vname(x) + " are not divisible by the block");
  }
  std::vector<int64_t> split, perm, joined;
  if (to_depth) {
    split = {0, c, h / b, b, w / b, b};
    perm = mode == "DCR" ? std::vector<int64_t>{0, 3, 5, 1, 2, 4} : std::vector<int64_t>{0, 1, 3, 5, 2, 4};
    joined = {0, c * b * b, h / b, w / b};
  } else {
    split = mode == "DCR" ? std::vector<int64_t>{0, b, b, c / (b * b), h, w}
                          : std::vector<int64_t>{0, c / (b * b), b, b, h, w};
    perm = mode == "DCR" ? std::vector<int64_t>{0, 3, 4, 1, 5, 2} : std::vector<int64_t>{0, 1, 4, 2, 5, 3};
    joined = {0, c / (b * b), h * b, w * b};
  }
  const int32_t out = tensor(out0(n));
  const std::string base = def_.tensors[static_cast<size_t>(out)].name;
  auto dims = [&](const std::vector<int64_t>& v) {
    std::vector<Dim> d = {xs[0]};
    for (size_t i = 1; i < v.size(); ++i) d.push_back(Dim::fixed(v[i]));
    return d;
  };
  const int32_t blocks = reshape_new(tensor(x), split, dims(split), base + "/blocks");
  std::vector<int64_t> moved;
  for (int64_t p : perm) moved.push_back(p == 0 ? 0 : split[static_cast<size_t>(p)]);
  const int32_t permuted = emit_new(OpKind::Permute, {blocks}, *dt, dims(moved), dims_params(perm, "perm"),
                                    base + "/permuted");
  // The batch dim is 0 in the shapes (copied); after the Permute it is still dim 0.
  reshape_new(permuted, joined, dims(joined), base, out);
}

// Tile: x [d0..dn] unsqueezed to [1, d0, 1, d1, ...], expanded to
// [r0, d0, r1, d1, ...] and reshaped to [r0 d0, r1 d1, ...]; the repeats a
// constant or a run-time int64 vector.
void Lowerer::lower_tile(const Node& n) {
  require_inputs(n, 2);
  const int x = n.inputs[0], repeats = n.inputs[1];
  const std::optional<DType> dt = dtype_of(x);
  if (!dt) refuse("input " + vname(x) + " has an unknown dtype");
  if (dtype_of(repeats) != DType::Int64) refuse("repeats " + vname(repeats) + " is not int64");
  const std::vector<Dim> xs = dims_of(x, "input");
  const int64_t rank = static_cast<int64_t>(xs.size());
  if (rank == 0 || 2 * rank > kMaxRank) refuse("input rank " + std::to_string(rank) + " is not 1 to 4");
  const int32_t in = tensor(x), out = tensor(out0(n));
  const std::string base = def_.tensors[static_cast<size_t>(out)].name;
  std::vector<int64_t> axes;
  std::vector<Dim> spread;
  for (int64_t d = 0; d < rank; ++d) {
    axes.push_back(2 * d);
    spread.push_back(Dim::fixed(1));
    spread.push_back(xs[static_cast<size_t>(d)]);
  }
  const int32_t u = emit_new(OpKind::Unsqueeze, {in, -1}, *dt, spread, dims_params(axes, "axes"), base + "/spread");
  // [r0, 1, r1, 1, ...]: the repeats as a column next to ones, flattened.
  const int32_t r = tensor(repeats);
  const int32_t column = emit_new(OpKind::Unsqueeze, {r, -1}, DType::Int64, {Dim::fixed(rank), Dim::fixed(1)},
                                  dims_params({1}, "axes"), base + "/repeats_column");
  const int32_t ones_column = new_weight(base + "/ones", ember::ones({rank, 1}, TensorOptions(DType::Int64)), false);
  const int32_t pairs = emit_new(OpKind::Concat, {column, ones_column}, DType::Int64, {Dim::fixed(rank), Dim::fixed(2)},
                                 AxisParams{1}, base + "/pairs");
  const int32_t expand_shape = reshape_new(pairs, {-1}, {Dim::fixed(2 * rank)}, base + "/expand_shape");
  std::vector<Dim> expanded(spread.size(), Dim{});
  for (int64_t d = 0; d < rank; ++d) expanded[static_cast<size_t>(2 * d + 1)] = xs[static_cast<size_t>(d)];
  const int32_t e = emit_new(OpKind::Expand, {u, expand_shape}, *dt, expanded, NoParams{}, base + "/expanded");
  const int32_t shape_of_x = emit_new(OpKind::ShapeOf, {in}, DType::Int64, {Dim::fixed(rank)}, NoParams{}, base + "/dims");
  const int32_t tiled = binary_new(OpKind::Mul, r, shape_of_x, DType::Int64, base + "/tiled_dims");
  emit_new(OpKind::Reshape, {e, tiled}, *dt, std::vector<Dim>(static_cast<size_t>(rank), Dim{}), NoParams{}, base,
           out);
}

// Reshape with allowzero = 1 and a constant shape: a 0 in it is a 0-size dim
// (the input then has no elements: ConstantOfShape makes the empty output),
// else the plain Reshape. A run-time shape is refused (a 0 in it could not
// be told from "copy the input dim").
void Lowerer::lower_reshape_allowzero(const Node& n) {
  require_inputs(n, 2);
  const int shape = n.inputs[1];
  if (!is_const(shape)) refuse("allowzero = 1 with a shape " + vname(shape) + " that is not a constant is not supported");
  const std::vector<int64_t> dims = *const_ints(n, 1, "shape");
  bool zero = false, infer = false;
  for (int64_t d : dims) zero = zero || d == 0, infer = infer || d == -1;
  if (zero && infer) refuse("shape " + join_ints(dims) + " has both 0 and -1 (allowzero = 1)");
  if (!zero) return emit(OpKind::Reshape, n, {tensor(n.inputs[0]), tensor(shape)}, {out0(n)});
  const std::optional<DType> dt = dtype_of(n.inputs[0]);
  if (!dt) refuse("input " + vname(n.inputs[0]) + " has an unknown dtype");
  return emit(OpKind::ConstantOfShape, n, {tensor(shape)}, {out0(n)},
              ScalarParams{scalar_tensor(0.0, *dt).reshape({1}).item()});
}

}  // namespace ember::converter::lowering
