// Lowering of the ONNX neural-network, reduction and elementwise ops with attributes (see lowerer.h).
#include <algorithm>
#include <cmath>

#include "converter/lowerer.h"

namespace ember::converter::lowering {

// The name of a Gemm's transposed constant B (transB = 0): B's own where
// every reader of B is such a Gemm, so the weight keeps its ONNX name (what
// `finetune --train` patterns and LoRA targets match; MatMul + bias fused
// into Gemm lands here), "<B>/transposed" where B is also read as it is.
std::string Lowerer::transposed_name(int b) const {
  bool only_gemms = std::find(g_.outputs.begin(), g_.outputs.end(), b) == g_.outputs.end();
  for (const Node& r : g_.nodes) {
    for (size_t i = 0; i < r.inputs.size() && only_gemms; ++i) {
      if (r.inputs[i] == b) only_gemms = r.op_type == "Gemm" && i == 1 && r.get_int("transB", 0) == 0;
    }
  }
  return only_gemms ? val(b).name : val(b).name + "/transposed";
}

void Lowerer::lower_gelu(const Node& n) {
  const std::string approx = n.get_string("approximate", "none");
  if (approx != "none" && approx != "tanh") refuse("approximate '" + approx + "' is unknown");
  return emit(OpKind::Gelu, n, {tensor(n.inputs[0])}, {out0(n)}, GeluParams{approx == "tanh"});
}

void Lowerer::lower_global_average_pool(const Node& n) {
  if (rank_of(n.inputs[0], "input") != 4) refuse("input " + vname(n.inputs[0]) + " is not 4-D");
  return emit(OpKind::AdaptiveAvgPool2d, n, {tensor(n.inputs[0])}, {out0(n)});
}

void Lowerer::lower_batch_normalization(const Node& n) {
  require_inputs(n, 5);
  if (n.get_int("training_mode", 0) != 0) return lower_batch_norm_training(n);  // lower_norm.cc
  require_unused_extra_outputs(n, "training-mode statistics");
  NormParams p;
  p.eps = n.get_float("epsilon", 1e-5);
  return emit(OpKind::BatchNorm, n,
              {tensor(n.inputs[0]), tensor(n.inputs[3]), tensor(n.inputs[4]), weight(n.inputs[1]),
               weight(n.inputs[2])},
              {out0(n)}, p);
}

void Lowerer::lower_layer_normalization(const Node& n) {
  require_inputs(n, 2);
  for (size_t k = 1; k < n.outputs.size(); ++k) {
    if (output_used(n, k)) return lower_layer_norm_stats(n);
  }
  const int64_t rank = rank_of(n.inputs[0], "input");
  const int64_t axis = norm_axis(n.get_int("axis", -1), rank, "axis");
  NormParams p;
  p.eps = n.get_float("epsilon", 1e-5);
  p.normalized_rank = static_cast<int>(rank - axis);
  return emit(OpKind::LayerNorm, n,
              {tensor(n.inputs[0]), weight(n.inputs[1]), has_input(n, 2) ? weight(n.inputs[2]) : -1},
              {out0(n)}, p);
}

void Lowerer::lower_softmax(const Node& n) {
  const OpKind kind = n.op_type == "Softmax" ? OpKind::Softmax : OpKind::LogSoftmax;
  const int64_t axis = n.get_int("axis", -1);
  const int x = n.inputs[0];
  const int64_t rank = n.get_int("coerce_2d", 0) == 1 ? rank_of(x, "input") : -1;
  if (rank < 0 || norm_axis(axis, rank, "axis") == rank - 1) {
    return emit(kind, n, {tensor(x)}, {out0(n)}, SoftmaxParams{static_cast<int>(axis)});
  }
  // Opsets < 13 at a non-last axis: over the dims from `axis` on together,
  // as Flatten(axis) -> softmax(last) -> Reshape back to the input's shape.
  const int64_t a = norm_axis(axis, rank, "axis");
  const std::optional<DType> dt = dtype_of(x);
  if (!dt) refuse("input " + vname(x) + " has an unknown dtype");
  const std::vector<Dim> dims = dims_of(x, "input");
  int64_t rows = 1, cols = 1;
  for (int64_t d = 0; d < rank; ++d) {
    const Dim& dim = dims[static_cast<size_t>(d)];
    int64_t& p = d < a ? rows : cols;
    p = (p < 0 || !dim.is_static()) ? -1 : p * dim.value;
  }
  const std::vector<Dim> flat = {rows < 0 ? Dim{} : Dim::fixed(rows), cols < 0 ? Dim{} : Dim::fixed(cols)};
  const std::string base = val(x).name + "/" + n.op_type;
  const int32_t in = tensor(x), out = tensor(out0(n));
  const int32_t f = new_activation(base + "/flat", *dt, flat), s = new_activation(base + "/2d", *dt, flat);
  emit_tensors(OpKind::Flatten, {in}, {f}, AxisParams{a}, n.name + "/flatten");
  emit_tensors(kind, {f}, {s}, SoftmaxParams{-1}, n.name + "/2d");
  int32_t shape = -1;
  if (const auto st = val(x).static_shape()) {
    shape = new_weight(base + "/shape", ember::tensor(*st, {rank}), false);
  } else {
    shape = new_activation(base + "/shape", DType::Int64, {Dim::fixed(rank)});
    emit_tensors(OpKind::ShapeOf, {in}, {shape}, NoParams{}, n.name + "/shape");
  }
  emit_tensors(OpKind::Reshape, {s, shape}, {out}, NoParams{}, n.name);
}

void Lowerer::lower_minmax(const Node& n) {
  const OpKind kind = *entry_->kind;
  for (int id : n.inputs) {
    if (id < 0) refuse("an input is omitted");
  }
  if (n.inputs.size() == 1) return emit(OpKind::Copy, n, {tensor(n.inputs[0])}, {out0(n)});
  std::vector<int32_t> ins;
  for (int id : n.inputs) ins.push_back(tensor(id));
  const int32_t out = tensor(out0(n));
  const TensorDef& out_def = def_.tensors[static_cast<size_t>(out)];
  const std::string out_name = out_def.name;
  const DType dt = out_def.dtype;
  int32_t acc = ins[0];
  std::vector<Dim> acc_shape = dims_of(n.inputs[0], "input");
  for (size_t i = 1; i < ins.size(); ++i) {
    const bool last = i + 1 == ins.size();
    acc_shape = broadcast(acc_shape, dims_of(n.inputs[i], "input"));
    const std::string step = "/" + std::string(op_name(kind)) + "_" + std::to_string(i);
    const int32_t dst = last ? out : new_activation(out_name + step, dt, acc_shape);
    emit_tensors(kind, {acc, ins[i]}, {dst}, NoParams{}, last ? n.name : n.name + step);
    acc = dst;
  }
}

void Lowerer::lower_clip(const Node& n) {
  const bool lo = has_input(n, 1), hi = has_input(n, 2);
  if ((lo && !is_const(n.inputs[1])) || (hi && !is_const(n.inputs[2]))) {
    // Bounds known only at run time: Maximum with min, then Minimum with max
    // (as the spec's reference, np.clip: NaN stays NaN).
    const int x = n.inputs[0];
    const std::optional<DType> dt = dtype_of(x);
    if (!dt) refuse("input " + vname(x) + " has an unknown dtype");
    const int32_t in = tensor(x), out = tensor(out0(n));
    const int32_t mid = lo && hi ? new_activation(val(out0(n)).name + "/lower_bounded", *dt, dims_of(x, "input")) : out;
    if (lo) emit_tensors(OpKind::Maximum, {in, tensor(n.inputs[1])}, {mid}, NoParams{}, hi ? n.name + "/min" : n.name);
    if (hi) emit_tensors(OpKind::Minimum, {lo ? mid : in, tensor(n.inputs[2])}, {out}, NoParams{}, n.name);
    return;
  }
  ClampParams p;
  if (auto lo = const_scalar(n, 1, "min")) p.has_min = true, p.min = *lo;
  if (auto hi = const_scalar(n, 2, "max")) p.has_max = true, p.max = *hi;
  if (!p.has_min && !p.has_max) return emit(OpKind::Copy, n, {tensor(n.inputs[0])}, {out0(n)});  // no bounds
  emit(OpKind::Clamp, n, {tensor(n.inputs[0])}, {out0(n)}, p);
}

// Gemm: a Linear (weight [N, K], bias [N]) where it is one: transA = 0,
// alpha = 1, beta = 1 or no C, C of shape [N] or [1, N], B transposed or
// constant. Otherwise lower_gemm_matmul.
void Lowerer::lower_gemm(const Node& n) {
  require_inputs(n, 2);
  const double alpha = n.get_float("alpha", 1.0), beta = n.get_float("beta", 1.0);
  const bool has_c = has_input(n, 2);
  const int b = n.inputs[1];
  const bool trans_b = n.get_int("transB", 0) != 0;
  if (rank_of(b, "B") != 2) refuse("B " + vname(b) + " is not 2-D");
  bool bias_c = true;  // C is a Linear bias: [N], or a constant [1, N]
  if (has_c) {
    const std::vector<Dim> bd = dims_of(b, "B"), cd = dims_of(n.inputs[2], "C");
    const Dim& n_out = bd[trans_b ? 0 : 1];
    bias_c = (cd.size() == 1 || (cd.size() == 2 && cd[0].is_static() && cd[0].value == 1 && is_const(n.inputs[2]))) &&
             (!n_out.is_static() || !cd.back().is_static() || cd.back().value == n_out.value);
  }
  if (n.get_int("transA", 0) != 0 || alpha != 1.0 || (has_c && beta != 1.0) || !bias_c || (!trans_b && !is_const(b))) {
    return lower_gemm_matmul(n);
  }
  const int32_t x = tensor(n.inputs[0]);
  int32_t w = -1;
  int64_t n_out = -1;
  if (trans_b) {
    w = weight(b);
    const auto d = dims_of(b, "B");
    n_out = d[0].value;
  } else {
    if (!is_const(b)) refuse("B " + vname(b) + " with transB = 0 is not a constant (cannot transpose it)");
    n_out = val(b).constant.size(1);
    auto it = transposed_of_.find(b);  // one copy for a B several Gemms read
    if (it == transposed_of_.end()) {
      it = transposed_of_.emplace(b, new_weight(transposed_name(b), val(b).constant.t().contiguous(), true)).first;
    }
    w = it->second;
  }
  int32_t bias = -1;
  if (has_c) {
    const int c = n.inputs[2];
    const std::vector<Dim> cd = dims_of(c, "C");
    const bool row = cd.size() == 2 && cd[0].is_static() && cd[0].value == 1;
    const int64_t c_n = cd.empty() ? -2 : cd.back().value;
    if (!(cd.size() == 1 || row) || (n_out >= 0 && c_n >= 0 && c_n != n_out)) {
      std::string shape = "[";
      for (size_t i = 0; i < cd.size(); ++i) {
        shape += (i ? ", " : "") + (cd[i].is_static() ? std::to_string(cd[i].value)
                                                       : (cd[i].symbol.empty() ? "?" : cd[i].symbol));
      }
      refuse("C " + vname(c) + " of shape " + shape + "] is not a bias of shape [N] or [1, N] (N = " +
             std::to_string(n_out) + ")");
    }
    if (cd.size() == 1) {
      bias = weight(c);
    } else if (is_const(c)) {
      bias = new_weight(val(c).name + "/row", val(c).constant.reshape({-1}), true);
    } else {
      refuse("C " + vname(c) + " of shape [1, N] is not a constant (cannot reshape it to [N])");
    }
  }
  LinearParams p;
  p.activation = fused_activation(n);
  emit(OpKind::Linear, n, {x, w, bias}, {out0(n)}, p);
}

// Gemm as alpha * MatMul(A', B') + beta * C (A', B': Permutes where transposed;
// C broadcast), then the fused activation.
void Lowerer::lower_gemm_matmul(const Node& n) {
  const int a = n.inputs[0], b = n.inputs[1];
  if (rank_of(a, "A") != 2) refuse("A " + vname(a) + " is not 2-D");
  const std::optional<DType> dt = dtype_of(a);
  if (!dt) refuse("A " + vname(a) + " has an unknown dtype");
  const int32_t out = tensor(out0(n));
  const std::string base = def_.tensors[static_cast<size_t>(out)].name;
  const Activation act = fused_activation(n);
  const double alpha = n.get_float("alpha", 1.0), beta = n.get_float("beta", 1.0);
  const bool has_c = has_input(n, 2) && beta != 0.0;
  // The steps write to `out` once no step follows.
  auto step_out = [&](bool last) { return last && act.kind == ActivationKind::None ? out : -1; };
  auto operand = [&](int id, const std::string& attr, const std::string& what) {
    const int32_t t = tensor(id);
    if (n.get_int(attr, 0) == 0) return t;
    const std::vector<Dim> d = dims_of(id, what);
    return emit_new(OpKind::Permute, {t}, *dt, {d[1], d[0]}, dims_params({1, 0}, "perm"), base + "/" + what + "_t");
  };
  const int32_t ta = operand(a, "transA", "A"), tb = operand(b, "transB", "B");
  const std::vector<Dim> ad = tensor_dims(ta), bd = tensor_dims(tb);
  const bool scaled = alpha != 1.0;
  int32_t y = emit_new(OpKind::MatMul, {ta, tb}, *dt, {ad[0], bd[1]}, NoParams{}, base + "/matmul",
                       step_out(!scaled && !has_c));
  if (scaled) y = binary_new(OpKind::Mul, y, scalar_weight(base + "/alpha", alpha, *dt), *dt, base + "/scaled", step_out(!has_c));
  if (has_c) {
    int32_t c = tensor(n.inputs[2]);
    if (beta != 1.0) c = binary_new(OpKind::Mul, c, scalar_weight(base + "/beta", beta, *dt), *dt, base + "/beta_c");
    y = binary_new(OpKind::Add, y, c, *dt, base + "/biased", step_out(true));
  }
  if (act.kind == ActivationKind::Relu) emit_tensors(OpKind::Relu, {y}, {out}, NoParams{}, n.name);
  if (act.kind == ActivationKind::HardSwish) emit_tensors(OpKind::Hardswish, {y}, {out}, NoParams{}, n.name);
  if (act.kind == ActivationKind::Clamp) {
    ClampParams p;
    p.has_min = std::isfinite(act.min);
    p.has_max = std::isfinite(act.max);
    p.min = act.min;
    p.max = act.max;
    emit_tensors(OpKind::Clamp, {y}, {out}, p, n.name);
  }
}

Conv2dParams Lowerer::conv_params(const Node& n, int x, int w) const {
  const std::vector<Dim> wd = dims_of(w, "weight");
  if (wd.size() != 4) refuse("only 2-D convolutions are supported (weight " + vname(w) + " is not 4-D)");
  if (val(x).shape && val(x).shape->size() != 4) {
    refuse("input " + vname(x) + " has rank " + std::to_string(val(x).shape->size()) + ", the 4-D weight needs 4");
  }
  Conv2dParams p;
  pair_attr(n, "strides", 1, p.stride);
  pair_attr(n, "dilations", 1, p.dilation);
  p.groups = n.get_int("group", 1);
  if (p.groups < 1) refuse("group " + std::to_string(p.groups) + " must be >= 1");
  int64_t kernel[2];
  if (n.has("kernel_shape")) {
    pair_attr(n, "kernel_shape", 1, kernel);
  } else {
    if (!wd[2].is_static() || !wd[3].is_static()) refuse("kernel size unknown");
    kernel[0] = wd[2].value;
    kernel[1] = wd[3].value;
  }
  spatial_pads(n, x, kernel, p.stride, p.dilation, p.padding);
  return p;
}

void Lowerer::lower_conv(const Node& n) {
  require_inputs(n, 2);
  const int w = n.inputs[1];
  if (dims_of(w, "weight").size() == 3) return lower_conv1d(n);  // lower_attn.cc
  Conv2dParams p = conv_params(n, n.inputs[0], w);
  p.activation = fused_activation(n);
  std::vector<int32_t> ins = {tensor(n.inputs[0]), weight(w), has_input(n, 2) ? weight(n.inputs[2]) : -1};
  if (has_input(n, 3)) ins.push_back(tensor(n.inputs[3]));  // a residual (fuse_residual_adds)
  emit(OpKind::Conv2d, n, ins, {out0(n)}, p);
}

// DeformConv (19+): 2-D only (a 4-D input), as torchvision's deform_conv2d.
void Lowerer::lower_deform_conv(const Node& n) {
  require_inputs(n, 3);
  if (rank_of(n.inputs[0], "input") != 4) refuse("only 2-D deformable convolution is supported (input is not 4-D)");
  const DType dt = float_input(n, 0);
  for (size_t i = 1; i < 5; ++i) {
    if (has_input(n, i) && dtype_of(n.inputs[i]) != dt) {
      refuse("input " + vname(n.inputs[i]) + " is not " + std::string(dtype_name(dt)));
    }
  }
  auto pair = [&](const char* attr, int64_t fallback, size_t count) {
    std::vector<int64_t> v = n.get_ints(attr, std::vector<int64_t>(count, fallback));
    if (v.size() != count) {
      refuse(std::string(attr) + " " + join_ints(v) + " does not have " + std::to_string(count) + " values");
    }
    return v;
  };
  const std::vector<int64_t> st = pair("strides", 1, 2), dil = pair("dilations", 1, 2), pads = pair("pads", 0, 4);
  if (n.has("kernel_shape")) {
    const std::vector<int64_t> k = pair("kernel_shape", 1, 2);
    const std::vector<Dim> wd = dims_of(n.inputs[1], "weight");
    if (wd.size() != 4 || !wd[2].is_static() || !wd[3].is_static() || wd[2].value != k[0] || wd[3].value != k[1])
      refuse("kernel_shape " + join_ints(k) + " is not the weight's (or its shape is not static)");
  }
  DeformConvParams p;
  p.stride_h = st[0], p.stride_w = st[1], p.dilation_h = dil[0], p.dilation_w = dil[1];
  p.pad_top = pads[0], p.pad_left = pads[1], p.pad_bottom = pads[2], p.pad_right = pads[3];
  p.groups = n.get_int("group", 1);
  p.offset_groups = n.get_int("offset_group", 1);
  if (!p.valid()) refuse("strides, dilations, group and offset_group must be positive and pads not negative");
  auto opt = [&](size_t i) { return has_input(n, i) ? tensor(n.inputs[i]) : -1; };
  emit(OpKind::DeformConv, n, {tensor(n.inputs[0]), tensor(n.inputs[1]), tensor(n.inputs[2]), opt(3), opt(4)},
       {out0(n)}, p);
}

void Lowerer::lower_pool(const Node& n) {
  if (!plain_pool(n)) return lower_pool_nd(n);  // lower_pool.cc
  const bool is_max = n.op_type == "MaxPool";
  if (rank_of(n.inputs[0], "input") != 4) refuse("only 2-D pooling is supported (input is not 4-D)");
  if (!n.has("kernel_shape")) refuse("has no kernel_shape");
  Pool2dParams p;
  pair_attr(n, "kernel_shape", 1, p.kernel);
  pair_attr(n, "strides", 1, p.stride);
  pair_attr(n, "dilations", 1, p.dilation);
  if (!is_max && (p.dilation[0] != 1 || p.dilation[1] != 1)) {  // AveragePool 19's dilations
    refuse("dilations " + join_ints({p.dilation[0], p.dilation[1]}) + " are not supported (only 1)");
  }
  spatial_pads(n, n.inputs[0], p.kernel, p.stride, p.dilation, p.padding);
  p.ceil_mode = n.get_int("ceil_mode", 0) != 0;
  if (!is_max) p.count_include_pad = n.get_int("count_include_pad", 0) != 0;
  emit(is_max ? OpKind::MaxPool2d : OpKind::AvgPool2d, n, {tensor(n.inputs[0])}, {out0(n)}, p);
  if (is_max && output_used(n, 1)) lower_max_pool_indices(n, p);
}

}  // namespace ember::converter::lowering
