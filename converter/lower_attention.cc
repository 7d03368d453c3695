// Lowering of ONNX Attention (opsets 23-25; see lowerer.h) onto MatMul,
// Softmax, elementwise and shape ops, as onnx.reference's op_attention.py
// computes it: 3-D inputs split into q_num_heads / kv_num_heads heads, 4-D
// inputs as they are; past_key / past_value concatenated before K and V (the
// present_key / present_value outputs); Q and K each scaled by sqrt(scale);
// grouped-query attention (kv heads < q heads) as a MatMul of the q heads
// grouped per kv head; softcap; an additive bias from attn_mask (bool or
// float, broadcast, padded with -inf up to the total kv length), is_causal and
// the sliding window (bottom-right aligned after the past; per batch entry
// from nonpad_kv_seqlen) and nonpad_kv_seqlen's padding; Softmax in
// softmax_precision, rows whose bias is all -inf set to 0; the optional
// qk_matmul_output of each qk_matmul_output_mode. float16 is computed in
// float32 (ember's CPU has no float16 MatMul), the output cast back.
#include <algorithm>
#include <cmath>
#include <limits>

#include "converter/lowerer.h"

namespace ember::converter::lowering {

class Lowerer::Attention {
 public:
  Attention(Lowerer& l, const Node& n) : l_(l), n_(n) {}
  void run();

 private:
  void read_attributes();
  int32_t heads(size_t i, int64_t num_heads, const std::string& what);
  int32_t with_past(int32_t cur, size_t past, size_t present, const std::string& what);
  int32_t grouped_matmul(int32_t a, int32_t b, int32_t into, const std::string& what);
  int32_t mask_bias();
  int32_t window_bias();
  int32_t padding_bias();
  int32_t bias();
  void outputs(int32_t scores, int32_t bias, int32_t v);

  std::string name(const std::string& what) const { return base_ + "/" + what; }
  int32_t scalar(double v, DType dt, const std::string& what) { return l_.scalar_weight(name(what), v, dt); }
  int32_t binary(OpKind k, int32_t a, int32_t b, DType dt, const std::string& what, int32_t into = -1) {
    return l_.binary_new(k, a, b, dt, name(what), into);
  }
  int32_t cast(int32_t t, DType dt, const std::string& what, int32_t into = -1) {
    return l_.cast_new(t, dt, name(what), into);
  }
  bool used(size_t k) const {
    const int o = k < n_.outputs.size() ? n_.outputs[k] : -1;
    return o >= 0 && (!l_.g_.users_of(o).empty() || l_.g_.is_graph_output(o));
  }
  int32_t output(size_t k) { return used(k) ? l_.tensor(n_.outputs[k]) : -1; }
  static Dim times(const Dim& d, int64_t f) { return dim_times(d, f); }

  Lowerer& l_;
  const Node& n_;
  std::string base_;
  DType t_ = DType::Float32, ct_ = DType::Float32, sp_ = DType::Float32;  // input, compute, softmax dtypes
  bool three_d_ = false;
  int64_t hq_ = 0, hkv_ = 0, mode_ = 0, left_ = -1, right_ = -1;
  bool causal_ = false;
  double softcap_ = 0;
  Dim s_, l_len_;        // query and total kv lengths
  int64_t past_len_ = 0;  // -1: dynamic
  std::vector<Dim> scores_dims_;  // [B, Hq, S, L]
  bool may_mask_rows_ = false;    // whether the bias may be all -inf in a row
};

void Lowerer::Attention::read_attributes() {
  t_ = l_.float_input(n_, 0);
  for (size_t i = 1; i < 3; ++i) {
    if (l_.float_input(n_, i) != t_) refuse("input " + l_.vname(n_.inputs[i]) + " does not have Q's dtype");
  }
  ct_ = t_ == DType::Float16 ? DType::Float32 : t_;
  sp_ = ct_;
  if (n_.has("softmax_precision")) {
    const std::optional<DType> sp = dtype_from_onnx(n_.get_int("softmax_precision", 1));
    if (!sp || !is_floating(*sp)) {
      refuse("softmax_precision " + std::to_string(n_.get_int("softmax_precision", 1)) + " is not a floating-point type");
    }
    sp_ = *sp == DType::Float16 ? DType::Float32 : *sp;
  }
  mode_ = n_.get_int("qk_matmul_output_mode", 0);
  if (mode_ < 0 || mode_ > 3) refuse("qk_matmul_output_mode " + std::to_string(mode_) + " is not 0, 1, 2 or 3");
  causal_ = n_.get_int("is_causal", 0) != 0;
  softcap_ = n_.get_float("softcap", 0.0);
  left_ = n_.get_int("left_window_size", -1);
  right_ = n_.get_int("right_window_size", -1);
  if (left_ < -1 || right_ < -1) refuse("left_window_size and right_window_size must be -1 or nonnegative");
  if (l_.has_input(n_, 4) != l_.has_input(n_, 5)) refuse("past_key and past_value must be given together");
  if (l_.has_input(n_, 6) && l_.has_input(n_, 4)) refuse("nonpad_kv_seqlen cannot be combined with past_key");
  const size_t rank = l_.dims_of(n_.inputs[0], "Q").size();
  if (rank != 3 && rank != 4) refuse("Q " + l_.vname(n_.inputs[0]) + " is not 3-D or 4-D");
  for (size_t i = 1; i < 3; ++i) {
    if (l_.dims_of(n_.inputs[i], "input").size() != rank) refuse("Q, K and V do not have one rank");
  }
  three_d_ = rank == 3;
}

// Input i as [B, H, S, D] in the input dtype (3-D: split into num_heads heads).
int32_t Lowerer::Attention::heads(size_t i, int64_t num_heads, const std::string& what) {
  const int id = n_.inputs[i];
  const std::vector<Dim> d = l_.dims_of(id, what);
  if (!three_d_) return l_.tensor(id);
  const Dim& hidden = d[2];
  if (!hidden.is_static() || hidden.value % num_heads != 0) {
    refuse("the hidden size of " + what + " " + l_.vname(id) + " is not static or not divisible by " +
           std::to_string(num_heads) + " heads");
  }
  const int64_t head = hidden.value / num_heads;
  const int32_t r = l_.reshape_new(l_.tensor(id), {0, 0, num_heads, head}, {d[0], d[1], Dim::fixed(num_heads), Dim::fixed(head)},
                                   name(what + "_heads"));
  return l_.permute_new(r, {0, 2, 1, 3}, name(what + "_bhsd"));
}

// K or V after the past (input `past`): the present output `present`.
int32_t Lowerer::Attention::with_past(int32_t cur, size_t past, size_t present, const std::string& what) {
  const int32_t into = output(present);
  if (!l_.has_input(n_, past)) return into >= 0 ? cast(cur, t_, "present_" + what, into) : cur;
  const int id = n_.inputs[past];
  if (l_.dtype_of(id) != t_) refuse("past input " + l_.vname(id) + " does not have Q's dtype");
  const std::vector<Dim> p = l_.dims_of(id, "past input");
  if (p.size() != 4) refuse("past input " + l_.vname(id) + " is not 4-D");
  std::vector<Dim> d = l_.tensor_dims(cur);
  past_len_ = p[2].is_static() ? p[2].value : -1;
  d[2] = p[2].is_static() && d[2].is_static() ? Dim::fixed(p[2].value + d[2].value) : Dim{};
  return l_.emit_new(OpKind::Concat, {l_.tensor(id), cur}, t_, d, AxisParams{2}, name("present_" + what), into);
}

int32_t Lowerer::Attention::grouped_matmul(int32_t a, int32_t b, int32_t into, const std::string& what) {
  return l_.grouped_matmul_new(a, b, hq_, hkv_, name(what), into);
}

// attn_mask as an additive bias in the compute dtype (bool: 0 / -inf), padded
// with -inf to the total kv length; -1 when there is none.
int32_t Lowerer::Attention::mask_bias() {
  if (!l_.has_input(n_, 3)) return -1;
  const int id = n_.inputs[3];
  const std::optional<DType> dt = l_.dtype_of(id);
  if (!dt || (*dt != DType::Bool && !is_floating(*dt))) refuse("attn_mask " + l_.vname(id) + " is not bool or floating point");
  const std::vector<Dim> d = l_.dims_of(id, "attn_mask");
  if (d.empty() || d.size() > 4) refuse("attn_mask " + l_.vname(id) + " has rank " + std::to_string(d.size()) + " (1 to 4)");
  may_mask_rows_ = true;
  int32_t m = l_.tensor(id);
  if (*dt == DType::Bool) {
    m = l_.emit_new(OpKind::Where, {m, scalar(0, ct_, "mask_zero"), scalar(-INFINITY, ct_, "mask_neg_inf")}, ct_, d,
                    NoParams{}, name("mask_bias"));
  } else {
    m = cast(m, ct_, "mask_bias");
  }
  if (d.back() == l_len_) return m;
  if (!d.back().is_static() || !l_len_.is_static() || d.back().value > l_len_.value) {
    refuse("the last dim of attn_mask " + l_.vname(id) + " does not match the kv length (or is dynamic)");
  }
  PadParams p;
  p.value = -INFINITY;
  p.after[d.size() - 1] = l_len_.value - d.back().value;
  std::vector<Dim> padded = d;
  padded.back() = l_len_;
  return l_.emit_new(OpKind::Pad, {m}, ct_, padded, p, name("mask_bias_padded"));
}

// is_causal and the sliding window: query i attends key j where
// j <= i + offset (causal), i + offset - j <= left, j - i - offset <= right;
// offset: the past length (a constant [S, L] bias), or nonpad_kv_seqlen[b] - S
// (a [B, 1, S, L] bias at run time). -1 when neither applies.
int32_t Lowerer::Attention::window_bias() {
  if (!causal_ && left_ < 0 && right_ < 0) return -1;
  if (!s_.is_static() || !l_len_.is_static()) refuse("is_causal and the window need static sequence lengths");
  const int64_t s = s_.value, len = l_len_.value;
  if (!l_.has_input(n_, 6)) {
    if (past_len_ < 0) refuse("is_causal and the window need a static past length");
    std::vector<float> bias(static_cast<size_t>(s * len));
    for (int64_t i = 0; i < s; ++i) {
      bool row_ok = false;
      for (int64_t j = 0; j < len; ++j) {
        const int64_t diff = i + past_len_ - j;
        const bool ok = (!causal_ || diff >= 0) && (left_ < 0 || diff <= left_) && (right_ < 0 || -diff <= right_);
        bias[static_cast<size_t>(i * len + j)] = ok ? 0.0f : -INFINITY;
        row_ok = row_ok || ok;
      }
      may_mask_rows_ = may_mask_rows_ || !row_ok;
    }
    return l_.new_weight(name("causal_bias"), ember::tensor(bias, {s, len}).to(ct_), false);
  }
  // j - i for each (i, j), compared with the per-batch offset [B, 1, 1, 1].
  std::vector<int64_t> dist(static_cast<size_t>(s * len));
  for (int64_t i = 0; i < s; ++i) {
    for (int64_t j = 0; j < len; ++j) dist[static_cast<size_t>(i * len + j)] = j - i;
  }
  may_mask_rows_ = true;
  const int32_t jmi = l_.new_weight(name("key_minus_query"), ember::tensor(dist, {s, len}), false);
  const std::vector<Dim> b = {l_.dims_of(n_.inputs[6], "nonpad_kv_seqlen")[0], Dim::fixed(1), Dim::fixed(1), Dim::fixed(1)};
  const int32_t seqlen = l_.reshape_new(l_.tensor(n_.inputs[6]), {-1, 1, 1, 1}, b, name("nonpad_4d"));
  const int32_t offset = binary(OpKind::Sub, seqlen, scalar(static_cast<double>(s), DType::Int64, "query_length"),
                                DType::Int64, "offset");
  int32_t allowed = -1;
  auto both = [&](int32_t c, const std::string& what) {
    allowed = allowed < 0 ? c : binary(OpKind::Minimum, allowed, c, DType::Bool, what);
  };
  if (causal_) both(binary(OpKind::Le, jmi, offset, DType::Bool, "causal"), "causal");
  if (left_ >= 0) {  // j - i >= offset - left
    const int32_t lo = binary(OpKind::Sub, offset, scalar(static_cast<double>(left_), DType::Int64, "left"), DType::Int64, "left_bound");
    both(binary(OpKind::Ge, jmi, lo, DType::Bool, "left_ok"), "left_and");
  }
  if (right_ >= 0) {  // j - i <= offset + right
    const int32_t hi = binary(OpKind::Add, offset, scalar(static_cast<double>(right_), DType::Int64, "right"), DType::Int64, "right_bound");
    both(binary(OpKind::Le, jmi, hi, DType::Bool, "right_ok"), "right_and");
  }
  return l_.emit_new(OpKind::Where, {allowed, scalar(0, ct_, "window_zero"), scalar(-INFINITY, ct_, "window_neg_inf")},
                     ct_, l_.tensor_dims(allowed), NoParams{}, name("window_bias"));
}

// nonpad_kv_seqlen: keys at and past nonpad_kv_seqlen[b] masked ([B, 1, 1, L]).
int32_t Lowerer::Attention::padding_bias() {
  if (!l_.has_input(n_, 6)) return -1;
  const int id = n_.inputs[6];
  const std::optional<DType> dt = l_.dtype_of(id);
  if (dt != DType::Int64 && dt != DType::Int32) refuse("nonpad_kv_seqlen " + l_.vname(id) + " is not int64 or int32");
  const std::vector<Dim> d = l_.dims_of(id, "nonpad_kv_seqlen");
  if (d.size() != 1) refuse("nonpad_kv_seqlen " + l_.vname(id) + " is not 1-D");
  if (!l_len_.is_static()) refuse("nonpad_kv_seqlen needs a static kv length");
  may_mask_rows_ = true;
  const int32_t seqlen = l_.reshape_new(cast(l_.tensor(id), DType::Int64, "nonpad_int64"), {-1, 1, 1, 1},
                                        {d[0], Dim::fixed(1), Dim::fixed(1), Dim::fixed(1)}, name("nonpad_b111"));
  const int32_t pos = l_.new_weight(name("key_positions"), arange(static_cast<double>(l_len_.value), TensorOptions(DType::Int64)), false);
  const int32_t valid = binary(OpKind::Lt, pos, seqlen, DType::Bool, "key_valid");
  return l_.emit_new(OpKind::Where, {valid, scalar(0, ct_, "pad_zero"), scalar(-INFINITY, ct_, "pad_neg_inf")}, ct_,
                     l_.tensor_dims(valid), NoParams{}, name("padding_bias"));
}

// The sum of the biases (mask, causal / window, padding); -1 when there is none.
int32_t Lowerer::Attention::bias() {
  int32_t total = -1;
  int k = 0;
  for (int32_t part : {mask_bias(), window_bias(), padding_bias()}) {
    if (part < 0) continue;
    total = total < 0 ? part : binary(OpKind::Add, total, part, ct_, "bias" + std::to_string(++k));
  }
  return total;
}

// Softmax of scores + bias (rows whose bias is all -inf: 0), the product with V and the outputs.
void Lowerer::Attention::outputs(int32_t scores, int32_t bias_t, int32_t v) {
  const int32_t qk_out = output(3);
  if (qk_out >= 0 && mode_ <= 1) cast(scores, t_, "qk_out", qk_out);
  const int32_t with_bias = bias_t < 0 ? scores : binary(OpKind::Add, scores, bias_t, ct_, "scores_biased");
  if (qk_out >= 0 && mode_ == 2) cast(with_bias, t_, "qk_out", qk_out);
  const int32_t logits = cast(with_bias, sp_, "logits");
  int32_t probs = l_.emit_new(OpKind::Softmax, {logits}, sp_, scores_dims_, SoftmaxParams{-1}, name("softmax"));
  if (bias_t >= 0 && may_mask_rows_) {
    std::vector<Dim> rows = l_.tensor_dims(bias_t);
    ReduceParams p;
    p.dims = uint32_t{1} << (rows.size() - 1);
    p.keepdim = true;
    rows.back() = Dim::fixed(1);
    const int32_t row_max = l_.new_activation(name("bias_row_max"), ct_, rows);
    l_.emit_tensors(OpKind::Max, {bias_t, -1}, {row_max, -1}, p, l_.def_.tensors[static_cast<size_t>(row_max)].name);
    const int32_t masked = binary(OpKind::Eq, row_max, scalar(-INFINITY, ct_, "neg_inf"), DType::Bool, "row_masked");
    probs = l_.emit_new(OpKind::Where, {masked, scalar(0, sp_, "prob_zero"), probs}, sp_, scores_dims_, NoParams{},
                        name("softmax_guarded"));
  }
  if (qk_out >= 0 && mode_ == 3) cast(probs, t_, "qk_out", qk_out);
  // The probabilities in the input dtype, as the reference (float16: float32, closer to its float16 products).
  const int32_t y = l_.tensor(l_.out0(n_));
  const bool direct = !three_d_ && ct_ == t_;
  const int32_t o = grouped_matmul(cast(probs, ct_, "probs_compute"), v, direct ? y : -1, "output_bhsd");
  if (direct) return;
  if (!three_d_) {
    cast(o, t_, "output", y);
    return;
  }
  const int32_t p = l_.permute_new(cast(o, t_, "output_t"), {0, 2, 1, 3}, name("output_bshd"));
  const std::vector<Dim> pd = l_.tensor_dims(p);
  l_.reshape_new(p, {0, 0, -1}, {pd[0], pd[1], pd[3].is_static() ? times(pd[2], pd[3].value) : Dim{}}, name("output"), y);
}

void Lowerer::Attention::run() {
  read_attributes();
  base_ = l_.def_.tensors[static_cast<size_t>(l_.tensor(l_.out0(n_)))].name;
  if (three_d_) {
    hq_ = n_.get_int("q_num_heads", 0);
    hkv_ = n_.get_int("kv_num_heads", 0);
    if (hq_ <= 0 || hkv_ <= 0) refuse("3-D inputs need the q_num_heads and kv_num_heads attributes");
  }
  const int32_t q = heads(0, hq_, "Q");
  int32_t k = heads(1, hkv_, "K"), v = heads(2, hkv_, "V");
  const std::vector<Dim> qd = l_.tensor_dims(q), kd = l_.tensor_dims(k), vd = l_.tensor_dims(v);
  if (!three_d_) {
    if (!qd[1].is_static() || !kd[1].is_static()) refuse("the head counts of Q and K must be static");
    hq_ = qd[1].value;
    hkv_ = kd[1].value;
    if (hq_ <= 0 || hkv_ <= 0) refuse("Q and K need at least one head");  // (0 heads divided by zero below)
  }
  if (!(kd[1] == vd[1])) refuse("K and V have different head counts");
  if (hq_ % hkv_ != 0) refuse("q heads " + std::to_string(hq_) + " are not a multiple of kv heads " + std::to_string(hkv_));
  if (qd[3].is_static() && kd[3].is_static() && qd[3].value != kd[3].value) refuse("Q and K have different head sizes");
  double scale = n_.get_float("scale", 0.0);
  if (!n_.has("scale")) {
    if (!qd[3].is_static()) refuse("the default scale needs a static head size");
    scale = 1.0 / std::sqrt(static_cast<double>(qd[3].value));
  }
  k = with_past(k, 4, 1, "key");
  v = with_past(v, 5, 2, "value");
  s_ = qd[2];
  l_len_ = l_.tensor_dims(k)[2];
  scores_dims_ = {qd[0], Dim::fixed(hq_), s_, l_len_};
  // sqrt(scale) rounded to the input dtype, as the reference, on Q and on K.
  const double root = scalar_tensor(std::sqrt(scale), DType::Float64).to(t_).to(DType::Float64).item().to<double>();
  const int32_t factor = scalar(root, ct_, "sqrt_scale");
  const int32_t qs = binary(OpKind::Mul, cast(q, ct_, "q_compute"), factor, ct_, "q_scaled");
  const int32_t ks = binary(OpKind::Mul, cast(k, ct_, "k_compute"), factor, ct_, "k_scaled");
  int32_t scores = grouped_matmul(qs, l_.permute_new(ks, {0, 1, 3, 2}, name("k_transposed")), -1, "scores");
  if (softcap_ > 0) {
    const int32_t c = scalar(softcap_, ct_, "softcap");
    const int32_t th = l_.emit_new(OpKind::Tanh, {binary(OpKind::Div, scores, c, ct_, "scores_over_cap")}, ct_,
                                   scores_dims_, NoParams{}, name("scores_tanh"));
    scores = binary(OpKind::Mul, th, c, ct_, "scores_capped");
  }
  outputs(scores, bias(), cast(v, ct_, "v_compute"));
}

void Lowerer::lower_attention(const Node& n) {
  Attention(*this, n).run();
}

void Lowerer::lower_flex_attention(const Node& n) {
  for (const char* mod : {"score_mod", "prob_mod"}) {
    // GRAPH attributes are kept in graph_attrs, not attrs; a node with one is
    // expanded by the passes (expand_flex_attention_mods) where it can be.
    if (std::find(n.graph_attrs.begin(), n.graph_attrs.end(), mod) != n.graph_attrs.end())
      refuse(std::string("the ") + mod + " graph needs Q, K and V of one known float dtype, rank 4, static head "
             "counts and a static head size for the default scale or GQA");
  }
  if (n.inputs.size() != 3) refuse("has " + std::to_string(n.inputs.size()) + " inputs, expected 3 (Q, K, V)");
  if (rank_of(n.inputs[0], "Q") != 4) refuse("Q " + vname(n.inputs[0]) + " is not 4-D");
  Attention(*this, n).run();
}

}  // namespace ember::converter::lowering
