// Lowering of the indexing, scan and selection ops (see lowerer.h):
// GatherElements, ScatterElements / Scatter, CumSum, CumProd, TopK, NonZero
// and Unique to their ember ops; GatherND and ScatterND to GatherElements /
// ScatterElements on flattened data (static shapes); TensorScatter to
// ScatterElements at the positions write_indices + i; Compress to NonZero and
// Gather; ReverseSequence to GatherElements with reversed positions.
#include <algorithm>
#include <numeric>

#include "converter/lowerer.h"

namespace ember::converter::lowering {

namespace {

std::vector<Dim> fixed_dims(const std::vector<int64_t>& v) {
  std::vector<Dim> d;
  for (int64_t x : v) d.push_back(Dim::fixed(x));
  return d;
}

int64_t product(const std::vector<int64_t>& v, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end && i < v.size(); ++i) p *= v[i];
  return p;
}

}  // namespace

std::vector<int64_t> Lowerer::static_dims(int id, const std::string& what) const {
  std::vector<int64_t> out;
  for (const Dim& d : dims_of(id, what)) {
    if (!d.is_static()) refuse(what + " " + vname(id) + " needs a static shape");
    out.push_back(d.value);
  }
  return out;
}

void Lowerer::require_index_dtype(int id, const std::string& what) const {
  const std::optional<DType> dt = dtype_of(id);
  if (!dt || (*dt != DType::Int64 && *dt != DType::Int32)) {
    refuse(what + " " + vname(id) + " must be int64 or int32, got " + (dt ? std::string(dtype_name(*dt)) : "unknown"));
  }
}

void Lowerer::set_output_dtype(const Node& n, size_t k, DType dt) {
  if (k < n.outputs.size() && n.outputs[k] >= 0 && !dtypes_[static_cast<size_t>(n.outputs[k])]) {
    dtypes_[static_cast<size_t>(n.outputs[k])] = dt;
  }
}

void Lowerer::lower_gather_elements(const Node& n) {
  require_inputs(n, 2);
  const int64_t rank = rank_of(n.inputs[0], "data");
  require_index_dtype(n.inputs[1], "indices");
  if (rank_of(n.inputs[1], "indices") != rank) refuse("indices and data differ in rank");
  const int64_t axis = norm_axis(n.get_int("axis", 0), rank, "axis");
  emit(OpKind::GatherElements, n, {tensor(n.inputs[0]), tensor(n.inputs[1])}, {out0(n)}, AxisParams{axis});
}

ScatterReduction Lowerer::scatter_reduction(const Node& n) {
  const std::string r = n.get_string("reduction", "none");
  if (r == "none") return ScatterReduction::None;
  if (r == "add") return ScatterReduction::Add;
  if (r == "mul") return ScatterReduction::Mul;
  if (r == "max") return ScatterReduction::Max;
  if (r == "min") return ScatterReduction::Min;
  refuse("reduction '" + r + "' is unknown");
}

// ScatterElements (and Scatter, opsets 9-10: no reduction).
void Lowerer::lower_scatter_elements(const Node& n) {
  require_inputs(n, 3);
  const int64_t rank = rank_of(n.inputs[0], "data");
  require_index_dtype(n.inputs[1], "indices");
  if (rank_of(n.inputs[1], "indices") != rank || rank_of(n.inputs[2], "updates") != rank) {
    refuse("data, indices and updates differ in rank");
  }
  if (dtype_of(n.inputs[2]) != dtype_of(n.inputs[0])) refuse("updates and data differ in dtype");
  const ScatterParams p{norm_axis(n.get_int("axis", 0), rank, "axis"), scatter_reduction(n)};
  emit(OpKind::ScatterElements, n, {tensor(n.inputs[0]), tensor(n.inputs[1]), tensor(n.inputs[2])}, {out0(n)}, p);
}

// CumSum, CumProd: a constant axis becomes the params, another is read at run time.
void Lowerer::lower_cumulative(const Node& n) {
  require_inputs(n, 2);
  const int64_t rank = std::max<int64_t>(rank_of(n.inputs[0], "input"), 1);
  ScanParams p{0, n.get_int("exclusive", 0) != 0, n.get_int("reverse", 0) != 0};
  int32_t axis_input = -1;
  require_index_dtype(n.inputs[1], "axis");
  if (is_const(n.inputs[1])) {
    const std::vector<int64_t> a = *const_ints(n, 1, "axis");
    if (a.size() != 1) refuse("axis " + join_ints(a) + " must have one value");
    p.axis = norm_axis(a[0], rank, "axis");
  } else {
    axis_input = tensor(n.inputs[1]);
  }
  emit(*entry_->kind, n, {tensor(n.inputs[0]), axis_input}, {out0(n)}, p);
}

// TopK: k from the input (opset >= 10) or the attribute.
void Lowerer::lower_topk(const Node& n) {
  const int x = n.inputs[0];
  const int64_t rank = rank_of(x, "input");
  if (rank == 0) refuse("input " + vname(x) + " is a scalar (rank 0)");
  const TopKParams p{norm_axis(n.get_int("axis", -1), rank, "axis"), n.get_int("largest", 1) != 0,
                     n.get_int("sorted", 1) != 0};
  int32_t k = -1;
  if (has_input(n, 1)) {
    require_index_dtype(n.inputs[1], "k");
    k = tensor(n.inputs[1]);
  } else if (n.has("k")) {
    k = ints_weight(n.name + "/k", {n.get_int("k", 0)});
  } else {
    refuse("has no k");
  }
  set_output_dtype(n, 1, DType::Int64);
  std::vector<int> outs = n.outputs;
  outs.resize(2, -1);
  emit(OpKind::TopK, n, {tensor(x), k}, outs, p);
}

void Lowerer::lower_nonzero(const Node& n) {
  set_output_dtype(n, 0, DType::Int64);
  emit(OpKind::NonZero, n, {tensor(n.inputs[0])}, {out0(n)});
}

void Lowerer::lower_unique(const Node& n) {
  UniqueParams p;
  p.has_axis = n.has("axis");
  p.sorted = n.get_int("sorted", 1) != 0;
  if (p.has_axis) p.axis = norm_axis(n.get_int("axis", 0), rank_of(n.inputs[0], "input"), "axis");
  for (size_t k = 1; k < 4; ++k) set_output_dtype(n, k, DType::Int64);
  std::vector<int> outs = n.outputs;
  outs.resize(4, -1);
  emit(OpKind::Unique, n, {tensor(n.inputs[0])}, outs, p);
}

// Compress: the positions of the true entries of the 1-D condition (NonZero,
// Reshape to 1-D), then Gather along axis (no axis: of the flattened input).
void Lowerer::lower_compress(const Node& n) {
  require_inputs(n, 2);
  const int x = n.inputs[0], cond = n.inputs[1];
  if (dtype_of(cond) != DType::Bool) refuse("condition " + vname(cond) + " is not bool");
  if (rank_of(cond, "condition") != 1) refuse("condition " + vname(cond) + " is not 1-D");
  const std::optional<DType> dt = dtype_of(x);
  if (!dt) refuse("input " + vname(x) + " has an unknown dtype");
  const int32_t out = tensor(out0(n));
  const std::string base = def_.tensors[static_cast<size_t>(out)].name;
  const int32_t nz = emit_new(OpKind::NonZero, {tensor(cond)}, DType::Int64, {Dim::fixed(1), Dim{}}, NoParams{},
                              base + "/nonzero");
  const int32_t pos = emit_new(OpKind::Reshape, {nz, ints_weight(base + "/flat", {-1})}, DType::Int64, {Dim{}},
                               NoParams{}, base + "/positions");
  int32_t data = tensor(x);
  int64_t axis = 0;
  if (n.has("axis")) {
    axis = norm_axis(n.get_int("axis", 0), rank_of(x, "input"), "axis");
  } else {
    data = emit_new(OpKind::Reshape, {data, ints_weight(base + "/flat_input", {-1})}, *dt, {Dim{}}, NoParams{},
                    base + "/flat");
  }
  emit_tensors(OpKind::Gather, {data, pos}, {out}, AxisParams{axis}, n.name);
}

// ReverseSequence: index[t, b] = t < lens[b] ? lens[b] - 1 - t : t along the
// time axis (a static size), broadcast to the input's shape; GatherElements.
void Lowerer::lower_reverse_sequence(const Node& n) {
  require_inputs(n, 2);
  const int x = n.inputs[0];
  const std::vector<Dim> xs = dims_of(x, "input");
  const int64_t time = n.get_int("time_axis", 0), batch = n.get_int("batch_axis", 1);
  if (xs.size() < 2) refuse("input " + vname(x) + " has rank < 2");
  if (!((time == 0 && batch == 1) || (time == 1 && batch == 0))) {
    refuse("time_axis " + std::to_string(time) + " and batch_axis " + std::to_string(batch) + " must be 0 and 1");
  }
  const Dim& steps = xs[static_cast<size_t>(time)];
  if (!steps.is_static()) refuse("the time axis of input " + vname(x) + " is dynamic");
  require_index_dtype(n.inputs[1], "sequence_lens");
  const int32_t out = tensor(out0(n));
  const std::string base = def_.tensors[static_cast<size_t>(out)].name;
  const std::vector<int64_t> tshape = time == 0 ? std::vector<int64_t>{steps.value, 1} : std::vector<int64_t>{1, steps.value};
  const int32_t pos =
      new_weight(base + "/time", arange(static_cast<double>(steps.value), TensorOptions(DType::Int64)).reshape(tshape), false);
  const std::vector<Dim> lshape = batch == 0 ? std::vector<Dim>{xs[0], Dim::fixed(1)} : std::vector<Dim>{Dim::fixed(1), xs[1]};
  const int32_t lens64 = cast_new(tensor(n.inputs[1]), DType::Int64, base + "/lens");
  const int32_t lens = emit_new(OpKind::Reshape, {lens64, ints_weight(base + "/lens_shape", batch == 0 ? std::vector<int64_t>{-1, 1} : std::vector<int64_t>{1, -1})},
                                DType::Int64, lshape, NoParams{}, base + "/lens_2d");
  const int32_t inside = binary_new(OpKind::Lt, pos, lens, DType::Bool, base + "/inside");
  const int32_t back = binary_new(OpKind::Sub, lens, pos, DType::Int64, base + "/back");
  const int32_t rev = binary_new(OpKind::Sub, back, ints_weight(base + "/one", {1}), DType::Int64, base + "/reversed");
  const std::vector<Dim> s2 = tensor_dims(inside);
  const int32_t idx2 = emit_new(OpKind::Where, {inside, rev, pos}, DType::Int64, s2, NoParams{}, base + "/index_2d");
  std::vector<int64_t> to_rank = {0, 0};
  std::vector<Dim> sr = s2;
  for (size_t d = 2; d < xs.size(); ++d) {
    to_rank.push_back(1);
    sr.push_back(Dim::fixed(1));
  }
  const int32_t idx_r = emit_new(OpKind::Reshape, {idx2, ints_weight(base + "/index_shape", to_rank)}, DType::Int64, sr,
                                 NoParams{}, base + "/index_r");
  const int32_t in = tensor(x);
  const int32_t shape = emit_new(OpKind::ShapeOf, {in}, DType::Int64, {Dim::fixed(static_cast<int64_t>(xs.size()))},
                                 NoParams{}, base + "/shape");
  const int32_t idx = emit_new(OpKind::Expand, {idx_r, shape}, DType::Int64, xs, NoParams{}, base + "/index");
  emit_tensors(OpKind::GatherElements, {in, idx}, {out}, AxisParams{time}, n.name);
}

// The linear position in the k leading dims `dims` of each index tuple
// (indices [..., k], negative entries wrapped): Sum over the last axis of
// index * strides; shape: the indices' without the last dim.
int32_t Lowerer::linear_index(int id, const std::vector<int64_t>& dims, const std::string& base) {
  const std::vector<int64_t> is = static_dims(id, "indices");
  const int64_t k = is.back();
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t j = dims.size(); j-- > 1;) strides[j - 1] = strides[j] * dims[j];
  const int32_t idx = cast_new(tensor(id), DType::Int64, base + "/indices");
  const int32_t neg = binary_new(OpKind::Lt, idx, ints_weight(base + "/zero", {0}), DType::Bool, base + "/negative");
  const int32_t up = binary_new(OpKind::Add, idx, ints_weight(base + "/sizes", dims), DType::Int64, base + "/wrapped");
  const int32_t w = emit_new(OpKind::Where, {neg, up, idx}, DType::Int64, fixed_dims(is), NoParams{}, base + "/index");
  const int32_t scaled = binary_new(OpKind::Mul, w, ints_weight(base + "/strides", strides), DType::Int64, base + "/scaled");
  ReduceParams p;
  p.dims = uint32_t{1} << (is.size() - 1);
  p.keepdim = false;
  std::vector<int64_t> lead(is.begin(), is.end() - 1);
  if (k == 0) refuse("indices have an empty last dim");
  return emit_new(OpKind::Sum, {scaled, -1}, DType::Int64, fixed_dims(lead), p, base + "/linear");
}

// GatherND: data [B, P, R] (batch, the indexed dims, the rest), index [B, M, R]
// broadcast from the linear positions, GatherElements along 1, reshaped.
void Lowerer::lower_gather_nd(const Node& n) {
  require_inputs(n, 2);
  const std::vector<int64_t> ds = static_dims(n.inputs[0], "data"), is = static_dims(n.inputs[1], "indices");
  const int64_t b = n.get_int("batch_dims", 0), r = static_cast<int64_t>(ds.size()), q = static_cast<int64_t>(is.size());
  if (q < 1 || b < 0 || b >= std::min(r, q)) refuse("batch_dims " + std::to_string(b) + " is out of range");
  const int64_t k = is.back();
  if (k < 1 || b + k > r) refuse("the last dim of indices (" + std::to_string(k) + ") does not fit data rank " + std::to_string(r) + " after " + std::to_string(b) + " batch dims");
  for (int64_t d = 0; d < b; ++d) {
    if (ds[static_cast<size_t>(d)] != is[static_cast<size_t>(d)]) refuse("data and indices differ in the batch dims");
  }
  const std::optional<DType> dt = dtype_of(n.inputs[0]);
  const int32_t out = tensor(out0(n));
  const std::string base = def_.tensors[static_cast<size_t>(out)].name;
  const int64_t B = product(ds, 0, static_cast<size_t>(b)), P = product(ds, static_cast<size_t>(b), static_cast<size_t>(b + k));
  const int64_t R = product(ds, static_cast<size_t>(b + k), ds.size());
  const int64_t M = product(is, static_cast<size_t>(b), is.size() - 1);
  const int32_t lin = linear_index(n.inputs[1], std::vector<int64_t>(ds.begin() + b, ds.begin() + b + k), base);
  const int32_t lin3 = emit_new(OpKind::Reshape, {lin, ints_weight(base + "/index_shape", {B, M, 1})}, DType::Int64,
                                fixed_dims({B, M, 1}), NoParams{}, base + "/linear_3d");
  const int32_t idx = emit_new(OpKind::Expand, {lin3, ints_weight(base + "/index_expand", {B, M, R})}, DType::Int64,
                               fixed_dims({B, M, R}), NoParams{}, base + "/gather_index");
  const int32_t data = emit_new(OpKind::Reshape, {tensor(n.inputs[0]), ints_weight(base + "/data_shape", {B, P, R})},
                                *dt, fixed_dims({B, P, R}), NoParams{}, base + "/data_3d");
  const int32_t g = emit_new(OpKind::GatherElements, {data, idx}, *dt, fixed_dims({B, M, R}), AxisParams{1},
                             base + "/gathered");
  std::vector<int64_t> os(is.begin(), is.end() - 1);
  os.insert(os.end(), ds.begin() + b + k, ds.end());
  emit_tensors(OpKind::Reshape, {g, ints_weight(base + "/out_shape", os)}, {out}, NoParams{}, n.name);
}

// ScatterND: data [P, R], updates [M, R] at rows index [M, R] (the linear
// positions broadcast), ScatterElements along 0 with the reduction, reshaped.
void Lowerer::lower_scatter_nd(const Node& n) {
  require_inputs(n, 3);
  const std::vector<int64_t> ds = static_dims(n.inputs[0], "data"), is = static_dims(n.inputs[1], "indices");
  const int64_t k = is.empty() ? 0 : is.back();
  if (k < 1 || k > static_cast<int64_t>(ds.size())) refuse("the last dim of indices does not fit the data's rank");
  if (dtype_of(n.inputs[2]) != dtype_of(n.inputs[0])) refuse("updates and data differ in dtype");
  const std::optional<DType> dt = dtype_of(n.inputs[0]);
  const int32_t out = tensor(out0(n));
  const std::string base = def_.tensors[static_cast<size_t>(out)].name;
  const int64_t P = product(ds, 0, static_cast<size_t>(k)), R = product(ds, static_cast<size_t>(k), ds.size());
  const int64_t M = product(is, 0, is.size() - 1);
  const int32_t lin = linear_index(n.inputs[1], std::vector<int64_t>(ds.begin(), ds.begin() + k), base);
  const int32_t lin2 = emit_new(OpKind::Reshape, {lin, ints_weight(base + "/index_shape", {M, 1})}, DType::Int64,
                                fixed_dims({M, 1}), NoParams{}, base + "/linear_2d");
  const int32_t idx = emit_new(OpKind::Expand, {lin2, ints_weight(base + "/index_expand", {M, R})}, DType::Int64,
                               fixed_dims({M, R}), NoParams{}, base + "/scatter_index");
  const int32_t data = emit_new(OpKind::Reshape, {tensor(n.inputs[0]), ints_weight(base + "/data_shape", {P, R})}, *dt,
                                fixed_dims({P, R}), NoParams{}, base + "/data_2d");
  const int32_t upd = emit_new(OpKind::Reshape, {tensor(n.inputs[2]), ints_weight(base + "/updates_shape", {M, R})},
                               *dt, fixed_dims({M, R}), NoParams{}, base + "/updates_2d");
  const int32_t s = emit_new(OpKind::ScatterElements, {data, idx, upd}, *dt, fixed_dims({P, R}),
                             ScatterParams{0, scatter_reduction(n)}, base + "/scattered");
  emit_tensors(OpKind::Reshape, {s, ints_weight(base + "/out_shape", ds)}, {out}, NoParams{}, n.name);
}

// TensorScatter: the cache with update written at write_indices[b] + i along
// axis (circular: modulo the cache's length there); ScatterElements.
void Lowerer::lower_tensor_scatter(const Node& n) {
  require_inputs(n, 2);
  const std::vector<Dim> cs = dims_of(n.inputs[0], "past_cache"), us = dims_of(n.inputs[1], "update");
  const int64_t rank = static_cast<int64_t>(cs.size());
  if (static_cast<int64_t>(us.size()) != rank) refuse("past_cache and update differ in rank");
  const int64_t axis = norm_axis(n.get_int("axis", -2), rank, "axis");
  if (axis == 0) refuse("axis 0 is the batch axis");
  const std::string mode = n.get_string("mode", "linear");
  if (mode != "linear" && mode != "circular") refuse("mode '" + mode + "' is unknown");
  const Dim &len = us[static_cast<size_t>(axis)], &max_len = cs[static_cast<size_t>(axis)];
  if (!len.is_static() || (mode == "circular" && !max_len.is_static())) refuse("the sequence axis is dynamic");
  const int32_t out = tensor(out0(n));
  const std::string base = def_.tensors[static_cast<size_t>(out)].name;
  std::vector<int64_t> at(static_cast<size_t>(rank), 1);
  at[static_cast<size_t>(axis)] = len.value;
  int32_t pos = new_weight(base + "/steps", arange(static_cast<double>(len.value), TensorOptions(DType::Int64)).reshape(at), false);
  if (has_input(n, 2)) {
    require_index_dtype(n.inputs[2], "write_indices");
    std::vector<int64_t> bshape(static_cast<size_t>(rank), 1);
    bshape[0] = -1;
    std::vector<Dim> bdims(static_cast<size_t>(rank), Dim::fixed(1));
    bdims[0] = cs[0];
    const int32_t wi = emit_new(OpKind::Reshape, {cast_new(tensor(n.inputs[2]), DType::Int64, base + "/write_indices"),
                                                  ints_weight(base + "/write_shape", bshape)},
                                DType::Int64, bdims, NoParams{}, base + "/write_at");
    pos = binary_new(OpKind::Add, pos, wi, DType::Int64, base + "/positions");
  }
  if (mode == "circular") {
    const int32_t m = ints_weight(base + "/max_len", {max_len.value});
    const int32_t over = binary_new(OpKind::Ge, pos, m, DType::Bool, base + "/past_end");
    const int32_t wrapped = binary_new(OpKind::Sub, pos, m, DType::Int64, base + "/wrapped");
    pos = emit_new(OpKind::Where, {over, wrapped, pos}, DType::Int64, tensor_dims(pos), NoParams{}, base + "/circular");
  }
  const int32_t upd = tensor(n.inputs[1]);
  const int32_t shape = emit_new(OpKind::ShapeOf, {upd}, DType::Int64, {Dim::fixed(rank)}, NoParams{}, base + "/shape");
  const int32_t idx = emit_new(OpKind::Expand, {pos, shape}, DType::Int64, us, NoParams{}, base + "/index");
  emit_tensors(OpKind::ScatterElements, {tensor(n.inputs[0]), idx, upd}, {out}, ScatterParams{axis, ScatterReduction::None},
               n.name);
}

}  // namespace ember::converter::lowering
