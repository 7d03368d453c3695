// Lowering of ONNX LinearAttention and CausalConvWithState (opset 27; see
// lowerer.h), as onnx.reference computes them (op_linear_attention.py,
// op_causal_conv_with_state.py). LinearAttention is unrolled over its static
// time steps in float32: state [B, Hkv, dk, dv] decayed by exp(decay) (gated
// rules), the delta rule's v_t = beta_t * (v_t - k_t state), the outer
// product k_t^T v_t added, each step's output q_t state (q heads grouped per
// kv head) scaled. CausalConvWithState is a depthwise Conv2d over the input
// after its past state (or k - 1 zeros), with the optional SiLU.
#include <cmath>
#include <limits>

#include "converter/lowerer.h"

namespace ember::converter::lowering {

namespace {

// input i [B, T, H * D] -> [B, H, T, D] (H heads): its static D, or a NodeError.
int64_t head_size(const std::vector<Dim>& d, int64_t heads, const std::string& what) {
  if (d.size() != 3) refuse(what + " is not 3-D (B, T, H * D)");
  if (!d[2].is_static() || d[2].value % heads != 0) {
    refuse("the last dim of " + what + " is not static or not divisible by " + std::to_string(heads) + " heads");
  }
  return d[2].value / heads;
}

}  // namespace

void Lowerer::lower_linear_attention(const Node& n) {
  const DType dt = float_input(n, 0);
  for (size_t i = 1; i < 3; ++i) {
    if (float_input(n, i) != dt) refuse("input " + vname(n.inputs[i]) + " does not have the query's dtype");
  }
  const int64_t hq = n.get_int("q_num_heads", 0), hkv = n.get_int("kv_num_heads", 0);
  if (hq <= 0 || hkv <= 0 || hq % hkv != 0) {
    refuse("q_num_heads " + std::to_string(hq) + " must be a positive multiple of kv_num_heads " + std::to_string(hkv));
  }
  const std::string rule = n.get_string("update_rule", "gated_delta");
  if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta") {
    refuse("update_rule '" + rule + "' is not linear, gated, delta or gated_delta");
  }
  const bool gating = rule == "gated" || rule == "gated_delta", delta = rule == "delta" || rule == "gated_delta";
  if (gating != has_input(n, 4)) refuse("update_rule '" + rule + "' " + (gating ? "needs" : "forbids") + " the decay input");
  if (delta != has_input(n, 5)) refuse("update_rule '" + rule + "' " + (delta ? "needs" : "forbids") + " the beta input");
  const std::vector<Dim> qd = dims_of(n.inputs[0], "query");
  const int64_t dk = head_size(qd, hq, "query " + vname(n.inputs[0]));
  if (head_size(dims_of(n.inputs[1], "key"), hkv, "key " + vname(n.inputs[1])) != dk) refuse("query and key head sizes differ");
  const int64_t dv = head_size(dims_of(n.inputs[2], "value"), hkv, "value " + vname(n.inputs[2]));
  if (!qd[1].is_static()) refuse("the sequence length of query " + vname(n.inputs[0]) + " is not static");
  const int64_t steps = qd[1].value;
  const DType f = DType::Float32;
  const int32_t out = tensor(out0(n));
  const std::string base = def_.tensors[static_cast<size_t>(out)].name;
  auto nm = [&](const std::string& what) { return base + "/" + what; };
  // [B, T, H * D] (or [B, T, H] with D = 1) -> [B, H, T, D] in float32.
  auto split = [&](size_t i, int64_t heads, int64_t d, const std::string& what) {
    const std::vector<Dim> s = dims_of(n.inputs[i], what);
    const int32_t c = cast_new(tensor(n.inputs[i]), f, nm(what + "_f32"));
    const int32_t r = reshape_new(c, {0, 0, heads, d}, {s[0], s[1], Dim::fixed(heads), Dim::fixed(d)}, nm(what + "_heads"));
    return permute_new(r, {0, 2, 1, 3}, nm(what + "_bhtd"));
  };
  const int32_t q = split(0, hq, dk, "query"), k = split(1, hkv, dk, "key"), v = split(2, hkv, dv, "value");
  const int32_t k_cols = permute_new(k, {0, 1, 3, 2}, nm("key_columns"));  // [B, Hkv, dk, T]
  int32_t decay = -1, beta = -1;
  if (gating) {  // exp(decay) as [B, Hkv, 1 or dk, T]
    const std::vector<Dim> s = dims_of(n.inputs[4], "decay");
    if (s.size() != 3 || !(s[2] == Dim::fixed(hkv) || s[2] == Dim::fixed(hkv * dk))) {
      refuse("decay " + vname(n.inputs[4]) + " is not [B, T, kv_num_heads] or [B, T, kv_num_heads * d_k]");
    }
    const int64_t per = s[2].value / hkv;
    const int32_t c = cast_new(tensor(n.inputs[4]), f, nm("decay_f32"));
    const int32_t e = emit_new(OpKind::Exp, {c}, f, s, NoParams{}, nm("decay_exp"));
    decay = permute_new(reshape_new(e, {0, 0, hkv, per}, {s[0], s[1], Dim::fixed(hkv), Dim::fixed(per)}, nm("decay_heads")),
                        {0, 2, 3, 1}, nm("decay_columns"));
  }
  if (delta) {  // beta as [B, Hkv or 1, T, 1]
    const std::vector<Dim> s = dims_of(n.inputs[5], "beta");
    if (s.size() != 3 || !(s[2] == Dim::fixed(hkv) || s[2] == Dim::fixed(1))) {
      refuse("beta " + vname(n.inputs[5]) + " is not [B, T, kv_num_heads] or [B, T, 1]");
    }
    beta = split(5, s[2].value, 1, "beta");
  }
  int32_t state = -1;  // -1: zeros
  std::optional<DType> state_dt = dt;
  if (has_input(n, 3)) {
    state_dt = dtype_of(n.inputs[3]);
    const std::vector<Dim> s = dims_of(n.inputs[3], "past_state");
    if (s.size() != 4 || !(s[1] == Dim::fixed(hkv)) || !(s[2] == Dim::fixed(dk)) || !(s[3] == Dim::fixed(dv))) {
      refuse("past_state " + vname(n.inputs[3]) + " is not [B, kv_num_heads, d_k, d_v]");
    }
    state = cast_new(tensor(n.inputs[3]), f, nm("state_f32"));
  }
  std::vector<int32_t> outs;
  for (int64_t t = 0; t < steps; ++t) {
    const std::string st = "step" + std::to_string(t) + "_";
    auto at = [&](int32_t x, int64_t axis, const std::string& what) { return slice_new(x, axis, t, t + 1, 1, nm(st + what)); };
    int32_t vt = at(v, 2, "v");
    if (gating && state >= 0) state = binary_new(OpKind::Mul, state, at(decay, 3, "decay"), f, nm(st + "decayed"));
    if (delta) {
      if (state >= 0) {
        const std::vector<Dim> vd = tensor_dims(vt);
        const int32_t got = emit_new(OpKind::MatMul, {at(k, 2, "k"), state}, f, vd, NoParams{}, nm(st + "retrieved"));
        vt = binary_new(OpKind::Sub, vt, got, f, nm(st + "v_minus_retrieved"));
      }
      vt = binary_new(OpKind::Mul, at(beta, 2, "beta"), vt, f, nm(st + "v_delta"));
    }
    const int32_t kc = at(k_cols, 3, "k_column");
    std::vector<Dim> sd = tensor_dims(kc);
    sd[3] = Dim::fixed(dv);
    const int32_t outer = emit_new(OpKind::MatMul, {kc, vt}, f, sd, NoParams{}, nm(st + "outer"));
    state = state < 0 ? outer : binary_new(OpKind::Add, state, outer, f, nm(st + "state"));
    outs.push_back(grouped_matmul_new(at(q, 2, "q"), state, hq, hkv, nm(st + "read")));
  }
  std::vector<Dim> od = tensor_dims(q);
  od[3] = Dim::fixed(dv);
  const int32_t all = emit_new(OpKind::Concat, outs, f, od, AxisParams{2}, nm("outputs"));
  const double scale = n.get_float("scale", 0.0) == 0.0 ? 1.0 / std::sqrt(static_cast<double>(dk)) : n.get_float("scale", 0.0);
  const int32_t scaled = binary_new(OpKind::Mul, all, scalar_weight(nm("scale"), scale, f), f, nm("scaled"));
  const int32_t bthd = permute_new(cast_new(scaled, dt, nm("output_t")), {0, 2, 1, 3}, nm("output_bthd"));
  reshape_new(bthd, {0, 0, hq * dv}, {qd[0], qd[1], Dim::fixed(hq * dv)}, base, out);
  if (n.outputs.size() > 1 && n.outputs[1] >= 0) {
    if (!state_dt || !is_floating(*state_dt)) refuse("past_state " + vname(n.inputs[3]) + " is not floating point");
    cast_new(state, *state_dt, nm("present_state"), tensor(n.outputs[1]));
  }
}

// CausalConvWithState: depthwise Conv2d (k taps) over [past_state or k - 1
// zeros, input]; present_state: the last k - 1 steps of that; SiLU if asked.
void Lowerer::lower_causal_conv_with_state(const Node& n) {
  const DType dt = float_input(n, 0);
  require_inputs(n, 2);
  const std::string act = n.get_string("activation", "none");
  if (act != "none" && act != "silu" && act != "swish") refuse("activation '" + act + "' is not none, silu or swish");
  const std::vector<Dim> xd = dims_of(n.inputs[0], "input"), wd = dims_of(n.inputs[1], "weight");
  if (xd.size() != 3) refuse("input " + vname(n.inputs[0]) + " is not 3-D (batch, channels, length)");
  if (wd.size() != 3 || !wd[2].is_static() || !(wd[1] == Dim::fixed(1)) || !xd[1].is_static() || !(wd[0] == xd[1])) {
    refuse("weight " + vname(n.inputs[1]) + " is not [channels, 1, k] with static channels and k");
  }
  const int64_t c = xd[1].value, k = wd[2].value;
  const DType f = dt == DType::Float16 ? DType::Float32 : dt;  // ember's CPU Conv2d has no float16
  const int32_t out = tensor(out0(n));
  const std::string base = def_.tensors[static_cast<size_t>(out)].name;
  std::vector<Dim> pd = xd;
  pd[2] = Dim{};
  int32_t padded = -1;
  if (has_input(n, 3)) {
    const std::vector<Dim> sd = dims_of(n.inputs[3], "past_state");
    if (sd.size() != 3 || !(sd[2] == Dim::fixed(k - 1))) refuse("past_state " + vname(n.inputs[3]) + " is not [B, channels, k - 1]");
    if (xd[2].is_static()) pd[2] = Dim::fixed(xd[2].value + k - 1);
    padded = emit_new(OpKind::Concat, {cast_new(tensor(n.inputs[3]), dt, base + "/past_t"), tensor(n.inputs[0])}, dt, pd,
                      AxisParams{2}, base + "/padded");
  } else {
    PadParams p;
    p.before[2] = k - 1;
    if (xd[2].is_static()) pd[2] = Dim::fixed(xd[2].value + k - 1);
    padded = emit_new(OpKind::Pad, {tensor(n.inputs[0])}, dt, pd, p, base + "/padded");
  }
  if (n.outputs.size() > 1 && n.outputs[1] >= 0) {
    const int64_t start = k > 1 ? -(k - 1) : std::numeric_limits<int64_t>::max();
    slice_new(padded, 2, start, std::numeric_limits<int64_t>::max(), 1, base + "/present_state", tensor(n.outputs[1]));
  }
  const int32_t x4 = unsqueeze_new(cast_new(padded, f, base + "/padded_compute"), 2, base + "/padded_2d");
  const int32_t w4 = unsqueeze_new(cast_new(tensor(n.inputs[1]), f, base + "/weight_compute"), 2, base + "/weight_2d");
  const int32_t b = has_input(n, 2) ? cast_new(tensor(n.inputs[2]), f, base + "/bias_compute") : -1;
  Conv2dParams p;
  p.groups = c;
  std::vector<Dim> yd = {xd[0], xd[1], Dim::fixed(1), xd[2]};
  const int32_t y4 = emit_new(OpKind::Conv2d, {x4, w4, b}, f, yd, p, base + "/conv_2d");
  yd.erase(yd.begin() + 2);
  int32_t y = emit_new(OpKind::Squeeze, {y4}, f, yd, dims_params({2}, "axes"), base + "/conv");
  if (act != "none") {
    y = cast_new(cast_new(y, dt, base + "/conv_t"), DType::Float32, base + "/conv_f32");
    y = emit_new(OpKind::Silu, {y}, DType::Float32, yd, NoParams{}, base + "/silu");
  }
  cast_new(y, dt, base, out);
}

// Conv of [N, C, L] by [M, C / group, k]: Unsqueeze both to 2-D with a height
// of 1, Conv2d, Squeeze; symmetric pads (NOTSET) or VALID only.
void Lowerer::lower_conv1d(const Node& n) {
  const int x = n.inputs[0], w = n.inputs[1];
  const std::vector<Dim> xd = dims_of(x, "input"), wd = dims_of(w, "weight");
  if (xd.size() != 3) refuse("input " + vname(x) + " of a 1-D convolution is not 3-D");
  auto one = [&](const char* attr, int64_t fallback) {
    const std::vector<int64_t> v = n.get_ints(attr, {fallback});
    if (v.size() != 1) refuse(std::string(attr) + " " + join_ints(v) + " must have 1 value (1-D)");
    if (v[0] < 1) refuse(std::string(attr) + " " + join_ints(v) + " must be >= 1");
    return v[0];
  };
  Conv2dParams p;
  p.stride[1] = one("strides", 1);
  p.dilation[1] = one("dilations", 1);
  p.groups = n.get_int("group", 1);
  if (p.groups < 1) refuse("group " + std::to_string(p.groups) + " must be >= 1");
  if (n.has("kernel_shape")) one("kernel_shape", 1);  // checked only: the weight gives the kernel
  const std::string auto_pad = n.get_string("auto_pad", "NOTSET");
  if (auto_pad == "NOTSET") {
    const std::vector<int64_t> pads = n.get_ints("pads", {0, 0});
    if (pads.size() != 2 || pads[0] != pads[1]) refuse("pads " + join_ints(pads) + " are not 2 equal values");
    p.padding[1] = pads[0];
  } else if (auto_pad != "VALID") {
    refuse("auto_pad " + auto_pad + " of a 1-D convolution is not supported (NOTSET or VALID)");
  }
  p.activation = fused_activation(n);
  const int32_t out = tensor(out0(n));
  const std::string base = def_.tensors[static_cast<size_t>(out)].name;
  const DType dt = tensor_dtype(out), f = dt == DType::Float16 ? DType::Float32 : dt;  // no float16 Conv2d on the CPU
  const int32_t x4 = unsqueeze_new(cast_new(tensor(x), f, base + "/input_compute"), 2, base + "/input_2d");
  const int32_t w4 = unsqueeze_new(cast_new(weight(w), f, base + "/weight_compute"), 2, base + "/weight_2d");
  const int32_t b = has_input(n, 2) ? cast_new(weight(n.inputs[2]), f, base + "/bias_compute") : -1;
  std::vector<Dim> yd = tensor_dims(out);
  if (yd.size() != 3) refuse("output " + vname(out0(n)) + " is not 3-D");
  yd.insert(yd.begin() + 2, Dim::fixed(1));
  const int32_t y4 = emit_new(OpKind::Conv2d, {x4, w4, b}, f, yd, p, base + "/conv_2d");
  if (f == dt) {
    emit_new(OpKind::Squeeze, {y4}, f, tensor_dims(out), dims_params({2}, "axes"), base, out);
    return;
  }
  cast_new(emit_new(OpKind::Squeeze, {y4}, f, tensor_dims(out), dims_params({2}, "axes"), base + "/conv"), dt, base, out);
}

}  // namespace ember::converter::lowering
