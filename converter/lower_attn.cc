// Lowering of the attention family of ONNX ops (see lowerer.h) onto ember's
// matrix, elementwise, reduction and shape ops, each as onnx.reference
// computes it (op_rms_normalization.py, op_swish.py, op_swiglu.py,
// op_rotary_embedding.py; Attention in lower_attention.cc, LinearAttention and
// CausalConvWithState in lower_recurrent_attn.cc).
#include <cmath>

#include "converter/lowerer.h"

namespace ember::converter::lowering {

DType Lowerer::tensor_dtype(int32_t t) const { return def_.tensors[static_cast<size_t>(t)].dtype; }

DType Lowerer::float_input(const Node& n, size_t i) const {
  if (!has_input(n, i)) refuse("input " + std::to_string(i) + " is missing");
  const std::optional<DType> dt = dtype_of(n.inputs[i]);
  if (!dt || !is_floating(*dt)) {
    refuse("input " + vname(n.inputs[i]) + " of dtype " + (dt ? std::string(dtype_name(*dt)) : "unknown") +
           " is not floating point");
  }
  return *dt;
}

int32_t Lowerer::reshape_new(int32_t t, const std::vector<int64_t>& shape, const std::vector<Dim>& dims,
                             const std::string& name, int32_t into) {
  return emit_new(OpKind::Reshape, {t, ints_weight(name + "_shape", shape)}, tensor_dtype(t), dims, NoParams{}, name,
                  into);
}

int32_t Lowerer::permute_new(int32_t t, const std::vector<int64_t>& perm, const std::string& name, int32_t into) {
  const std::vector<Dim> in = tensor_dims(t);
  std::vector<Dim> out;
  for (int64_t p : perm) out.push_back(in[static_cast<size_t>(p)]);
  return emit_new(OpKind::Permute, {t}, tensor_dtype(t), out, dims_params(perm, "perm"), name, into);
}

int32_t Lowerer::slice_new(int32_t t, int64_t axis, int64_t start, int64_t end, int64_t step, const std::string& name,
                           int32_t into) {
  std::vector<Dim> dims = tensor_dims(t);
  const size_t a = static_cast<size_t>(axis < 0 ? axis + static_cast<int64_t>(dims.size()) : axis);
  Dim& d = dims[a];
  if (d.is_static()) {
    auto clamp = [&](int64_t v) { return std::clamp(v < 0 ? v + d.value : v, int64_t{0}, d.value); };
    const int64_t len = clamp(end) - clamp(start);
    d = Dim::fixed(len <= 0 ? 0 : (len + step - 1) / step);
  } else {
    d = Dim{};
  }
  return emit_new(OpKind::Slice,
                  {t, ints_weight(name + "_start", {start}), ints_weight(name + "_end", {end}),
                   ints_weight(name + "_axis", {axis}), ints_weight(name + "_step", {step})},
                  tensor_dtype(t), dims, NoParams{}, name, into);
}

int32_t Lowerer::unsqueeze_new(int32_t t, int64_t axis, const std::string& name) {
  std::vector<Dim> dims = tensor_dims(t);
  const int64_t a = axis < 0 ? axis + static_cast<int64_t>(dims.size()) + 1 : axis;
  dims.insert(dims.begin() + a, Dim::fixed(1));
  return emit_new(OpKind::Unsqueeze, {t}, tensor_dtype(t), dims, dims_params({axis}, "axes"), name);
}

Dim dim_times(const Dim& d, int64_t f) { return d.is_static() ? Dim::fixed(d.value * f) : Dim{}; }

// a [B, Hq, M, K] x b [B, Hkv, K, N]: with fewer kv heads, the q heads of one kv
// head (adjacent, as ONNX repeats each kv head) grouped into the rows of a MatMul.
int32_t Lowerer::grouped_matmul_new(int32_t a, int32_t b, int64_t hq, int64_t hkv, const std::string& name,
                                    int32_t into) {
  const DType dt = tensor_dtype(a);
  const std::vector<Dim> ad = tensor_dims(a), bd = tensor_dims(b);
  const std::vector<Dim> out = {ad[0], ad[1], ad[2], bd[3]};
  if (hq == hkv || hkv == 1) return emit_new(OpKind::MatMul, {a, b}, dt, out, NoParams{}, name, into);
  const int64_t r = hq / hkv;
  const std::vector<Dim> grouped = {ad[0], Dim::fixed(hkv), dim_times(ad[2], r), ad[3]};
  const int32_t g = reshape_new(a, {0, hkv, -1, 0}, grouped, name + "_grouped");
  const int32_t m = emit_new(OpKind::MatMul, {g, b}, dt, {ad[0], Dim::fixed(hkv), dim_times(ad[2], r), bd[3]},
                             NoParams{}, name + "_grouped_product");
  return reshape_new(m, {0, hq, -1, 0}, out, name, into);
}

// x * sigmoid(alpha * x): Silu for alpha 1, else Mul, Sigmoid, Mul.
int32_t Lowerer::swish_new(int32_t x, double alpha, const std::string& name, int32_t into) {
  const DType dt = tensor_dtype(x);
  if (alpha == 1.0) return emit_new(OpKind::Silu, {x}, dt, tensor_dims(x), NoParams{}, name, into);
  const int32_t ax = binary_new(OpKind::Mul, x, scalar_weight(name + "/alpha", alpha, dt), dt, name + "/alpha_x");
  const int32_t s = emit_new(OpKind::Sigmoid, {ax}, dt, tensor_dims(x), NoParams{}, name + "/sigmoid");
  return binary_new(OpKind::Mul, x, s, dt, name, into);
}

// MatMul: float16 computed in float32 (ember's CPU has no float16 MatMul, as
// PyTorch 1.13), the product cast back; other dtypes the plain MatMul.
void Lowerer::lower_matmul(const Node& n) {
  if (n.inputs.size() != 2 || dtype_of(n.inputs[0]) != DType::Float16) return lower_plain(n);
  require_inputs(n, 2);
  const int32_t out = tensor(out0(n));
  const std::string base = def_.tensors[static_cast<size_t>(out)].name;
  const int32_t a = cast_new(weight(n.inputs[0]), DType::Float32, base + "/a_f32");
  const int32_t b = cast_new(weight(n.inputs[1]), DType::Float32, base + "/b_f32");
  const int32_t p = emit_new(OpKind::MatMul, {a, b}, DType::Float32, tensor_dims(out), NoParams{}, base + "/f32");
  cast_new(p, DType::Float16, base, out);
}

// ember::ScaledDotProductAttention, which the converter's fuse_attention pass
// makes of a MatMul, Softmax, MatMul chain: q, k, v and the mask (optional)
// as they are, the attribute scale.
void Lowerer::lower_scaled_dot_product_attention(const Node& n) {
  require_inputs(n, 3);
  AttentionParams p;
  p.scale = n.get_float("scale", 1.0);
  p.transpose_output = n.get_int("transpose_output", 0) != 0;
  emit(OpKind::ScaledDotProductAttention, n,
       {tensor(n.inputs[0]), tensor(n.inputs[1]), tensor(n.inputs[2]), has_input(n, 3) ? tensor(n.inputs[3]) : -1},
       {out0(n)}, p);
}

// Swish (opset 24): x * sigmoid(alpha * x).
void Lowerer::lower_swish(const Node& n) {
  float_input(n, 0);
  const int32_t out = tensor(out0(n));
  // A copy of the name: swish_new adds tensors, which may move def_.tensors.
  const std::string name = def_.tensors[static_cast<size_t>(out)].name;
  swish_new(tensor(n.inputs[0]), n.get_float("alpha", 1.0), name, out);
}

// SwiGLU: Swish(A, alpha) * B, A and B of one shape and dtype.
void Lowerer::lower_swiglu(const Node& n) {
  const DType dt = float_input(n, 0);
  if (float_input(n, 1) != dt) refuse("inputs " + vname(n.inputs[0]) + " and " + vname(n.inputs[1]) + " differ in dtype");
  const std::vector<Dim> a = dims_of(n.inputs[0], "input"), b = dims_of(n.inputs[1], "input");
  if (a.size() != b.size() || !(broadcast(a, b) == a) || !(broadcast(a, b) == b)) {
    refuse("inputs " + vname(n.inputs[0]) + " and " + vname(n.inputs[1]) + " differ in shape");
  }
  const int32_t out = tensor(out0(n));
  const std::string base = def_.tensors[static_cast<size_t>(out)].name;
  const int32_t gate = swish_new(tensor(n.inputs[0]), n.get_float("alpha", 1.0), base + "/swish");
  binary_new(OpKind::Mul, gate, tensor(n.inputs[1]), dt, base, out);
}

// RMSNormalization: x / sqrt(mean(x^2 over axis..) + epsilon) * scale, computed
// in the stash_type's dtype (float32 by default) and cast back before the scale.
void Lowerer::lower_rms_normalization(const Node& n) {
  const DType dt = float_input(n, 0);
  require_inputs(n, 2);
  const int64_t stash = n.get_int("stash_type", 1);
  const std::optional<DType> st = dtype_from_onnx(stash);
  if (!st || !is_floating(*st)) refuse("stash_type " + std::to_string(stash) + " is not a floating-point type");
  const std::vector<Dim> s = dims_of(n.inputs[0], "input");
  const int64_t rank = static_cast<int64_t>(s.size());
  if (rank == 0) refuse("input " + vname(n.inputs[0]) + " is a scalar (rank 0)");
  ReduceParams p;
  p.keepdim = true;
  for (int64_t d = norm_axis(n.get_int("axis", -1), rank, "axis"); d < rank; ++d) p.dims |= uint32_t{1} << d;
  const int32_t out = tensor(out0(n));
  const std::string base = def_.tensors[static_cast<size_t>(out)].name;
  const int32_t x = cast_new(tensor(n.inputs[0]), *st, base + "/x_stash");
  const int32_t sq = binary_new(OpKind::Mul, x, x, *st, base + "/squared");
  const int32_t ms = emit_new(OpKind::Mean, {sq}, *st, reduced_shape(s, p, true), p, base + "/mean_square");
  const int32_t eps = binary_new(OpKind::Add, ms, scalar_weight(base + "/epsilon", n.get_float("epsilon", 1e-5), *st),
                                 *st, base + "/mean_square_eps");
  const int32_t rms = emit_new(OpKind::Sqrt, {eps}, *st, tensor_dims(eps), NoParams{}, base + "/rms");
  const int32_t inv = emit_new(OpKind::Reciprocal, {rms}, *st, tensor_dims(rms), NoParams{}, base + "/inv_rms");
  const int32_t normed = cast_new(binary_new(OpKind::Mul, x, inv, *st, base + "/normalized"), dt, base + "/normalized_t");
  const int32_t scale = weight(n.inputs[1]);
  binary_new(OpKind::Mul, normed, cast_new(scale, dt, base + "/scale_t"), dt, base, out);
}

// RotaryEmbedding: the first rotary_embedding_dim values of each head rotated
// by the cos/sin caches (gathered at position_ids when given), in halves or
// interleaved pairs; 4-D input [B, H, S, D] or 3-D [B, S, H * D] with num_heads.
void Lowerer::lower_rotary_embedding(const Node& n) {
  const DType dt = float_input(n, 0);
  require_inputs(n, 3);
  const std::vector<Dim> s = dims_of(n.inputs[0], "input");
  if (s.size() != 3 && s.size() != 4) refuse("input " + vname(n.inputs[0]) + " is not 3-D or 4-D");
  const bool three_d = s.size() == 3;
  const int64_t heads = n.get_int("num_heads", 0);
  int64_t head = s.back().is_static() ? s.back().value : -1;
  if (three_d) {
    if (heads <= 0) refuse("a 3-D input needs the num_heads attribute");
    if (head < 0 || head % heads != 0) {
      refuse("the hidden size of input " + vname(n.inputs[0]) + " is not static or not divisible by num_heads " +
             std::to_string(heads));
    }
    head /= heads;
  }
  if (head < 0) refuse("the head size of input " + vname(n.inputs[0]) + " is not static");
  const int64_t rot = n.get_int("rotary_embedding_dim", 0) == 0 ? head : n.get_int("rotary_embedding_dim", 0);
  if (rot <= 0 || rot > head || rot % 2 != 0) {
    refuse("rotary_embedding_dim " + std::to_string(rot) + " must be even and at most the head size " +
           std::to_string(head));
  }
  const bool interleaved = n.get_int("interleaved", 0) != 0;
  const int32_t out = tensor(out0(n));
  const std::string base = def_.tensors[static_cast<size_t>(out)].name;
  int32_t x = tensor(n.inputs[0]);
  if (three_d) x = reshape_new(x, {0, 0, heads, head}, {s[0], s[1], Dim::fixed(heads), Dim::fixed(head)}, base + "/heads");
  // The caches as [B, S, rot / 2], then with a heads axis of 1 (axis 1 of [B, H, S, D], 2 of [B, S, H, D]).
  auto cache = [&](size_t i, const std::string& what) {
    const std::optional<DType> cdt = dtype_of(n.inputs[i]);
    if (cdt != dt) refuse(what + " " + vname(n.inputs[i]) + " does not have the input's dtype");
    const std::vector<Dim> cs = dims_of(n.inputs[i], what);
    if (cs.empty() || !(cs.back() == Dim::fixed(rot / 2))) {
      refuse("the last dim of " + what + " " + vname(n.inputs[i]) + " is not rotary_embedding_dim / 2 = " +
             std::to_string(rot / 2));
    }
    int32_t c = tensor(n.inputs[i]);
    if (has_input(n, 3)) {
      if (cs.size() != 2) refuse(what + " " + vname(n.inputs[i]) + " is not 2-D (with position_ids)");
      std::vector<Dim> gs = dims_of(n.inputs[3], "position_ids");
      gs.push_back(cs.back());
      c = emit_new(OpKind::Gather, {c, tensor(n.inputs[3])}, dt, gs, AxisParams{0}, base + "/" + what);
    } else if (cs.size() != 3) {
      refuse(what + " " + vname(n.inputs[i]) + " is not 3-D (without position_ids)");
    }
    return unsqueeze_new(c, three_d ? 2 : 1, base + "/" + what + "_heads");
  };
  const int32_t cos = cache(1, "cos_cache"), sin = cache(2, "sin_cache");
  const int32_t rotated = rot == head ? x : slice_new(x, -1, 0, rot, 1, base + "/rotated");
  const int64_t half = rot / 2;
  const int32_t x1 = interleaved ? slice_new(rotated, -1, 0, rot, 2, base + "/x1") : slice_new(rotated, -1, 0, half, 1, base + "/x1");
  const int32_t x2 = interleaved ? slice_new(rotated, -1, 1, rot, 2, base + "/x2") : slice_new(rotated, -1, half, rot, 1, base + "/x2");
  auto mul = [&](int32_t a, int32_t b, const std::string& what) { return binary_new(OpKind::Mul, a, b, dt, base + "/" + what); };
  const int32_t real = binary_new(OpKind::Sub, mul(cos, x1, "cos_x1"), mul(sin, x2, "sin_x2"), dt, base + "/real");
  const int32_t imag = binary_new(OpKind::Add, mul(sin, x1, "sin_x1"), mul(cos, x2, "cos_x2"), dt, base + "/imag");
  const std::vector<Dim> xs = tensor_dims(x);
  std::vector<Dim> rs = xs;
  rs.back() = Dim::fixed(rot);
  const bool whole = rot == head && !three_d;
  int32_t y = -1;
  if (interleaved) {  // [.., rot / 2, 2] -> [.., rot]
    std::vector<Dim> pairs = tensor_dims(real);
    pairs.push_back(Dim::fixed(2));
    const int32_t cat = emit_new(OpKind::Concat, {unsqueeze_new(real, -1, base + "/real_pair"), unsqueeze_new(imag, -1, base + "/imag_pair")},
                                 dt, pairs, AxisParams{-1}, base + "/pairs");
    y = reshape_new(cat, {0, 0, 0, rot}, rs, base + "/rotated_out", whole ? out : -1);
  } else {
    y = emit_new(OpKind::Concat, {real, imag}, dt, rs, AxisParams{-1}, base + "/rotated_out", whole ? out : -1);
  }
  if (rot < head) {
    const int32_t rest = slice_new(x, -1, rot, head, 1, base + "/not_rotated");
    y = emit_new(OpKind::Concat, {y, rest}, dt, xs, AxisParams{-1}, base + "/joined", three_d ? -1 : out);
  }
  if (three_d) reshape_new(y, {0, 0, heads * head}, s, base, out);
}

}  // namespace ember::converter::lowering
