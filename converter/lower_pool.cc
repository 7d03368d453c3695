// Lowering of the ONNX pools ember's 2-D pooling ops do not take as they are
// (see lowerer.h): 1-D and 3-D MaxPool / AveragePool, asymmetric or large
// pads, auto_pad SAME_*, AveragePool's dilations, integer MaxPool, LpPool and
// GlobalMaxPool. The input is padded explicitly (Pad: -inf for max, 0 else,
// plus what ceil_mode's last window needs), then pooled without padding by
// MaxPool2d, AvgPool2d or, with dilations, a depthwise Conv2d of weights
// 1/k: 1-D pools as 2-D ones on [N, C, 1, L], 3-D ones in two 2-D steps (H
// and W over [N, C*D, H, W], then D over [N, C, D, H*W]). Averages that must
// not count padding divide by the same pool of a mask of ones.
#include <cmath>
#include <limits>

#include "converter/lowerer.h"

namespace ember::converter::lowering {

namespace {

// A weight the lowering makes from shapes and attributes (an averaging
// window, an index table) holds at most 2^24 elements: a larger one is a
// NodeError, not an allocation at conversion time (found by fuzzing).
void check_made_weight(const std::vector<int64_t>& dims, const std::string& what) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n) || n > (int64_t{1} << 24)) {
      refuse(what + " of shape " + join_ints(dims) + " would hold more than 2^24 elements");
    }
  }
}

}  // namespace

// The geometry of one pool node: per spatial dim its kernel, stride,
// dilation, pads before and after (with ceil_mode's extra end pad in
// `extra`), the static input size (-1: dynamic) and output size.
struct Lowerer::PoolGeometry {
  int64_t dims = 0;
  int64_t k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1};
  int64_t before[3] = {}, after[3] = {}, extra[3] = {};
  int64_t in[3] = {-1, -1, -1}, out[3] = {-1, -1, -1};
  int64_t window() const { return k[0] * k[1] * k[2]; }
};

Lowerer::PoolGeometry Lowerer::pool_geometry(const Node& n, const std::vector<Dim>& xs) const {
  PoolGeometry g;
  g.dims = static_cast<int64_t>(xs.size()) - 2;
  if (g.dims < 1 || g.dims > 3) refuse("input has rank " + std::to_string(xs.size()) + ", not 3 to 5 (1-D to 3-D)");
  const size_t nd = static_cast<size_t>(g.dims);
  auto read = [&](const std::string& attr, int64_t fallback, int64_t* out, size_t count) {
    const std::vector<int64_t> v = n.get_ints(attr, std::vector<int64_t>(count, fallback));
    if (v.size() != count) refuse(attr + " " + join_ints(v) + " must have " + std::to_string(count) + " values");
    for (size_t i = 0; i < count; ++i) {
      if (v[i] < (attr == "pads" ? 0 : 1)) refuse(attr + " " + join_ints(v) + (attr == "pads" ? " must be >= 0" : " must be >= 1"));
    }
    for (size_t i = 0; i < count; ++i) out[i] = v[i];
  };
  if (!n.has("kernel_shape")) refuse("has no kernel_shape");
  read("kernel_shape", 1, g.k, nd);
  read("strides", 1, g.s, nd);
  read("dilations", 1, g.d, nd);
  int64_t pads[6] = {};
  read("pads", 0, pads, 2 * nd);
  for (size_t i = 0; i < nd; ++i) {
    g.before[i] = pads[i];
    g.after[i] = pads[nd + i];
    if (xs[2 + i].is_static()) g.in[i] = xs[2 + i].value;
  }
  const bool ceil_mode = n.get_int("ceil_mode", 0) != 0;
  const std::string auto_pad = n.get_string("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER") {
    refuse("auto_pad '" + auto_pad + "' is unknown");
  }
  for (size_t i = 0; i < nd; ++i) {
    const int64_t span = g.d[i] * (g.k[i] - 1) + 1, in = g.in[i];
    if (auto_pad == "VALID") g.before[i] = g.after[i] = 0;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      if (in < 0) refuse("auto_pad " + auto_pad + " needs static spatial dims");
      const int64_t out = (in + g.s[i] - 1) / g.s[i];
      const int64_t total = std::max<int64_t>(0, (out - 1) * g.s[i] + span - in);
      g.before[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      g.after[i] = total - g.before[i];
    }
    if (in < 0) {
      if (ceil_mode) refuse("ceil_mode = 1 needs static spatial dims");
      continue;
    }
    const int64_t room = in + g.before[i] + g.after[i] - span;
    if (room < 0) refuse("the kernel is larger than the padded input in spatial dim " + std::to_string(i));
    g.out[i] = room / g.s[i] + 1;
    if (ceil_mode && auto_pad == "NOTSET") {
      g.out[i] = (room + g.s[i] - 1) / g.s[i] + 1;
      if ((g.out[i] - 1) * g.s[i] >= in + g.before[i]) --g.out[i];  // the last window starts in the input
      g.extra[i] = std::max<int64_t>(0, (g.out[i] - 1) * g.s[i] + span - (in + g.before[i] + g.after[i]));
    }
  }
  return g;
}

// `t` padded by `g`'s pads (`with_extra`: and the extra end pads) with `value`.
int32_t Lowerer::pool_pad(int32_t t, const PoolGeometry& g, bool declared, bool with_extra, double value,
                          const std::string& name) {
  PadParams p;
  p.mode = PadMode::Constant;
  p.value = value;
  std::vector<Dim> s = tensor_dims(t);
  bool any = false;
  for (int64_t i = 0; i < g.dims; ++i) {
    p.before[2 + i] = declared ? g.before[i] : 0;
    p.after[2 + i] = (declared ? g.after[i] : 0) + (with_extra ? g.extra[i] : 0);
    any = any || p.before[2 + i] != 0 || p.after[2 + i] != 0;
    Dim& dim = s[static_cast<size_t>(2 + i)];
    if (dim.is_static()) dim = Dim::fixed(dim.value + p.before[2 + i] + p.after[2 + i]);
    else dim = Dim{};
  }
  if (!any) return t;
  return emit_new(OpKind::Pad, {t}, def_.tensors[static_cast<size_t>(t)].dtype, s, p, name);
}

// One 2-D pooling step without padding on a 4-D tensor: MaxPool2d (max),
// AvgPool2d or, with a dilation, a depthwise Conv2d of weights 1/(kh kw) (mean).
int32_t Lowerer::pool_step(int32_t t, bool max, const int64_t k[2], const int64_t s[2], const int64_t d[2],
                           const std::string& name) {
  std::vector<Dim> shape = tensor_dims(t);
  for (int i = 0; i < 2; ++i) {
    Dim& dim = shape[static_cast<size_t>(2 + i)];
    if (dim.is_static()) dim = Dim::fixed((dim.value - d[i] * (k[i] - 1) - 1) / s[i] + 1);
  }
  const DType dt = def_.tensors[static_cast<size_t>(t)].dtype;
  if (max || (d[0] == 1 && d[1] == 1)) {
    Pool2dParams p;
    for (int i = 0; i < 2; ++i) p.kernel[i] = k[i], p.stride[i] = s[i], p.dilation[i] = max ? d[i] : 1;
    p.count_include_pad = true;
    return emit_new(max ? OpKind::MaxPool2d : OpKind::AvgPool2d, {t}, dt, shape, p, name);
  }
  const Dim& c = shape[1];
  if (!c.is_static()) refuse("AveragePool with dilations needs a static channel count");
  check_made_weight({c.value, 1, k[0], k[1]}, "the averaging window");
  const Tensor w = full({c.value, 1, k[0], k[1]}, 1.0 / static_cast<double>(k[0] * k[1]), TensorOptions(dt));
  Conv2dParams p;
  for (int i = 0; i < 2; ++i) p.stride[i] = s[i], p.dilation[i] = d[i];
  p.groups = c.value;
  return emit_new(OpKind::Conv2d, {t, new_weight(name + "/window", w, false), -1}, dt, shape, p, name);
}

// The max or mean over every window of `g` of the padded tensor `t`.
int32_t Lowerer::pool_windows(int32_t t, const PoolGeometry& g, bool max, const std::string& name, int32_t into) {
  const DType dt = def_.tensors[static_cast<size_t>(t)].dtype;
  std::vector<Dim> s = tensor_dims(t);
  if (g.dims == 2) {
    const int32_t y = pool_step(t, max, g.k, g.s, g.d, name);
    return into < 0 ? y : emit_new(OpKind::Copy, {y}, dt, tensor_dims(y), NoParams{}, name + "/out", into);
  }
  if (g.dims == 1) {
    s.insert(s.begin() + 2, Dim::fixed(1));
    const int32_t t4 = emit_new(OpKind::Unsqueeze, {t, -1}, dt, s, dims_params({2}, "axes"), name + "/2d");
    const int64_t k[2] = {1, g.k[0]}, st[2] = {1, g.s[0]}, d[2] = {1, g.d[0]};
    const int32_t y = pool_step(t4, max, k, st, d, name + "/pool");
    std::vector<Dim> ys = tensor_dims(y);
    ys.erase(ys.begin() + 2);
    return emit_new(OpKind::Squeeze, {y, -1}, dt, ys, dims_params({2}, "axes"), name, into);
  }
  for (size_t i = 2; i < 5; ++i) {
    if (!s[i].is_static()) refuse("3-D pooling needs static spatial dims");
  }
  // H and W over [N, C*D, H, W]; D over [N, C, D, H'*W']; back to [N, C, D', H', W'].
  const Dim planes = s[1].is_static() ? Dim::fixed(s[1].value * s[2].value) : Dim{};
  const int32_t hw = reshape_new(t, {0, -1, s[3].value, s[4].value}, {s[0], planes, s[3], s[4]}, name + "/hw");
  const int64_t k1[2] = {g.k[1], g.k[2]}, s1[2] = {g.s[1], g.s[2]}, d1[2] = {g.d[1], g.d[2]};
  const int32_t y1 = pool_step(hw, max, k1, s1, d1, name + "/pool_hw");
  const std::vector<Dim> y1s = tensor_dims(y1);
  const int64_t plane = y1s[2].value * y1s[3].value;
  const int32_t dd = reshape_new(y1, {0, -1, s[2].value, plane}, {s[0], s[1], s[2], Dim::fixed(plane)}, name + "/d");
  const int64_t k2[2] = {g.k[0], 1}, s2[2] = {g.s[0], 1}, d2[2] = {g.d[0], 1};
  const int32_t y2 = pool_step(dd, max, k2, s2, d2, name + "/pool_d");
  const Dim out_d = tensor_dims(y2)[2];
  return reshape_new(y2, {0, 0, out_d.value, y1s[2].value, y1s[3].value}, {s[0], s[1], out_d, y1s[2], y1s[3]}, name,
                     into);
}

// Whether MaxPool / AveragePool node `n` is one 2-D pooling op as it is:
// a 4-D floating-point input, symmetric pads of at most half the kernel,
// AveragePool without dilations.
bool Lowerer::plain_pool(const Node& n) const {
  const int x = n.inputs[0];
  const std::optional<DType> dt = dtype_of(x);
  if (rank_of(x, "input") != 4 || !dt || !is_floating(*dt) || n.get_ints("kernel_shape").size() != 2) return false;
  const std::vector<int64_t> k = n.get_ints("kernel_shape");
  if (n.op_type == "AveragePool" && n.get_ints("dilations", {1, 1}) != std::vector<int64_t>{1, 1}) return false;
  const std::string auto_pad = n.get_string("auto_pad", "NOTSET");
  if (auto_pad == "VALID") return true;
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    const std::vector<Dim> xs = dims_of(x, "input");
    const std::vector<int64_t> s = n.get_ints("strides", {1, 1}), d = n.get_ints("dilations", {1, 1});
    if (s.size() != 2 || d.size() != 2) return false;
    for (size_t i = 0; i < 2; ++i) {
      if (!xs[2 + i].is_static() || s[i] < 1) return false;
      const int64_t in = xs[2 + i].value, out = (in + s[i] - 1) / s[i];
      const int64_t total = std::max<int64_t>(0, (out - 1) * s[i] + (k[i] - 1) * d[i] + 1 - in);
      if (total % 2 != 0 || total / 2 > k[i] / 2) return false;
    }
    return true;
  }
  const std::vector<int64_t> pads = n.get_ints("pads", {0, 0, 0, 0});
  return pads.size() == 4 && pads[0] == pads[2] && pads[1] == pads[3] && pads[0] <= k[0] / 2 && pads[1] <= k[1] / 2;
}

// MaxPool's output 1 as ONNX defines it: the flat index of each maximum in the
// whole input (N, C, H, W row-major; storage_order 1: W before H in a plane).
// MaxPool2dIndices gives h * W + w in the plane; the plane's offset is added
// (static N, C, H, W).
void Lowerer::lower_max_pool_indices(const Node& n, const Pool2dParams& p) {
  const std::vector<int64_t> xs = static_dims(n.inputs[0], "input (for the indices output)");
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
  const int32_t out = tensor(n.outputs[1]);
  const std::string base = def_.tensors[static_cast<size_t>(out)].name;
  const std::vector<Dim> ys = tensor_dims(tensor(out0(n)));
  int32_t idx = emit_new(OpKind::MaxPool2dIndices, {tensor(n.inputs[0])}, DType::Int64, ys, p, base + "/in_plane");
  check_made_weight({N, C, H, W}, "the index offsets");
  if (n.get_int("storage_order", 0) != 0) {
    Tensor column = empty({H * W}, DType::Int64);
    for (int64_t h = 0; h < H; ++h) {
      for (int64_t w = 0; w < W; ++w) column.data_ptr<int64_t>()[h * W + w] = w * H + h;
    }
    idx = emit_new(OpKind::Gather, {new_weight(base + "/column_major", column, false), idx}, DType::Int64, ys,
                   AxisParams{0}, base + "/column_major_index");
  }
  Tensor offset = empty({N, C, 1, 1}, DType::Int64);
  for (int64_t i = 0; i < N * C; ++i) offset.data_ptr<int64_t>()[i] = i * H * W;
  binary_new(OpKind::Add, idx, new_weight(base + "/plane_offset", offset, false), DType::Int64, base, out);
}

// MaxPool, AveragePool and LpPool in the general form (the file comment).
void Lowerer::lower_pool_nd(const Node& n) {
  const bool is_max = n.op_type == "MaxPool", is_lp = n.op_type == "LpPool";
  if (is_max) {
    require_unused_extra_outputs(n, "indices: only for a 4-D floating-point input with symmetric pads of at most "
                                    "half the kernel");
  }
  const int x = n.inputs[0];
  const std::optional<DType> xdt = dtype_of(x);
  if (!xdt || *xdt == DType::Bool) refuse("input " + vname(x) + " is not numeric");
  if (!is_max && !is_floating(*xdt)) refuse("input " + vname(x) + " is not floating point");
  const std::vector<Dim> xs = dims_of(x, "input");
  const PoolGeometry g = pool_geometry(n, xs);
  const int32_t out = tensor(out0(n));
  const std::string base = def_.tensors[static_cast<size_t>(out)].name;
  // Integers are pooled in float64 (exact), then converted back.
  const DType dt = is_floating(*xdt) ? *xdt : DType::Float64;
  int32_t in = cast_new(tensor(x), dt, base + "/float");
  if (is_max) {
    const int32_t padded = pool_pad(in, g, true, true, -std::numeric_limits<double>::infinity(), base + "/padded");
    if (dt == *xdt) return (void)pool_windows(padded, g, true, base, out);
    return (void)cast_new(pool_windows(padded, g, true, base + "/max"), *xdt, base, out);
  }
  if (is_lp) {
    const double p = static_cast<double>(n.get_int("p", 2));
    if (p < 1) refuse("p = " + fmt(p) + " is not supported (at least 1)");
    in = emit_new(OpKind::Abs, {in}, dt, xs, NoParams{}, base + "/abs");
    if (p != 1) in = binary_new(OpKind::Pow, in, scalar_weight(base + "/p", p, dt), dt, base + "/pow");
  }
  const bool include_pad = n.get_int("count_include_pad", 0) != 0;
  bool padded_any = false, extra_any = false;
  for (int64_t i = 0; i < g.dims; ++i) {
    padded_any = padded_any || g.before[i] != 0 || g.after[i] != 0;
    extra_any = extra_any || g.extra[i] != 0;
  }
  const bool last = is_lp ? false : include_pad ? !extra_any : !(padded_any || extra_any);
  const int32_t mean = pool_windows(pool_pad(in, g, true, true, 0.0, base + "/padded"), g, false,
                                    base + (last ? "" : "/mean"), last ? out : -1);
  if (is_lp) {  // (the sum of |x|^p over the window)^(1/p)
    const double p = static_cast<double>(n.get_int("p", 2));
    const int32_t sum = binary_new(OpKind::Mul, mean, scalar_weight(base + "/window", static_cast<double>(g.window()), dt),
                                   dt, base + "/sum");
    if (p == 1) return (void)cast_new(sum, dt, base, out);
    return (void)binary_new(OpKind::Pow, sum, scalar_weight(base + "/inv_p", 1.0 / p, dt), dt, base, out);
  }
  if (last) return;
  // The share of each window that counts: a mask of ones over the input (and
  // the declared pads with count_include_pad), 0 elsewhere, pooled the same way.
  std::vector<int64_t> mask_shape = {1, 1};
  for (int64_t i = 0; i < g.dims; ++i) {
    if (g.in[i] < 0) refuse("AveragePool that excludes padding needs static spatial dims");
    mask_shape.push_back(g.in[i]);
  }
  // Made at run time: a weight of the input's spatial size would be allocated
  // at conversion (a Pad of 2^30 before it took 17 GB; found by fuzzing).
  std::vector<Dim> mask_dims;
  for (int64_t d : mask_shape) mask_dims.push_back(Dim::fixed(d));
  int32_t mask = emit_new(OpKind::ConstantOfShape, {ints_weight(base + "/ones_shape", mask_shape)}, dt, mask_dims,
                          ScalarParams{Scalar(1.0)}, base + "/ones");
  if (include_pad) mask = pool_pad(mask, g, true, false, 1.0, base + "/ones_padded");
  mask = pool_pad(mask, g, !include_pad, true, 0.0, base + "/mask");
  binary_new(OpKind::Div, mean, pool_windows(mask, g, false, base + "/share"), dt, base, out);
}

// GlobalMaxPool: Max over the spatial dims, kept.
void Lowerer::lower_global_max_pool(const Node& n) {
  const int x = n.inputs[0];
  const int64_t rank = rank_of(x, "input");
  if (rank < 3) refuse("input " + vname(x) + " has rank " + std::to_string(rank) + ", not at least 3");
  const std::optional<DType> dt = dtype_of(x);
  if (!dt) refuse("input " + vname(x) + " has an unknown dtype");
  ReduceParams p;
  p.dims = ((1u << rank) - 1) & ~3u;
  p.keepdim = true;
  emit(OpKind::Max, n, {tensor(x), -1}, {out0(n), -1}, p);
}

}  // namespace ember::converter::lowering
