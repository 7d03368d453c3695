// Lowering of the ONNX recurrences LSTM, GRU and RNN (see lowerer.h). A node
// whose activation functions are ONNX's defaults (sigmoid and tanh; an RNN's
// tanh or relu) becomes one Recurrence op (RecurrenceParams), at any sequence
// length; layout 1 is permuted around it. Any other node is unrolled over its
// time steps, which must be static, into Linear,
// elementwise, Split and Concat ops. One Linear gives x_t W^T + Wb for every
// step at once; each step adds h_{t-1} R^T + Rb and applies the gates as the
// ONNX specification writes them (op_lstm.py, op_gru.py, op_rnn.py of
// onnx.reference): every direction (forward, reverse, bidirectional), both
// layouts, initial_h / initial_c (zeros when omitted), LSTM peepholes and
// input_forget, GRU linear_before_reset, clip, and the activation functions
// with activation_alpha / activation_beta. sequence_lens masks the steps past
// a batch entry's length, as ONNX Runtime does: they output zeros and keep the
// state, so Y_h (Y_c) is the state at the last valid step (for the reverse
// direction, the first step run is the entry's last valid one).
//
// W, R, B and P may be constants (what exporters write: their slices become
// weights) or graph values (the ONNX test models: Slice ops cut them).
#include <algorithm>
#include <cctype>

#include "converter/lowerer.h"
#include "converter/passes.h"

namespace ember::converter::lowering {

namespace {

enum class Cell { Rnn, Gru, Lstm };

// One activation function of the recurrence, with its alpha and beta.
struct ActivationFn {
  std::string name;  // lower case
  double alpha = 0, beta = 0;
};

// The activation functions ONNX allows in the recurrences: how many of
// activation_alpha / activation_beta each takes (in the order of the
// activations, as ONNX Runtime reads them) and the defaults, those of the ONNX
// op of that name.
struct ActivationInfo {
  const char* name;
  int n_alpha, n_beta;
  double alpha, beta;
};
constexpr ActivationInfo kActivations[] = {
    {"relu", 0, 0, 0, 0},       {"tanh", 0, 0, 0, 0},          {"sigmoid", 0, 0, 0, 0},
    {"affine", 1, 1, 1.0, 0.0}, {"leakyrelu", 1, 0, 0.01, 0},  {"thresholdedrelu", 1, 0, 1.0, 0},
    {"scaledtanh", 1, 1, 1.0, 1.0}, {"hardsigmoid", 1, 1, 0.2, 0.5}, {"elu", 1, 0, 1.0, 0},
    {"softsign", 0, 0, 0, 0},   {"softplus", 0, 0, 0, 0},
};

std::string lower_case(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::vector<Dim> Lowerer::tensor_dims(int32_t t) const {
  const TensorDef& d = def_.tensors[static_cast<size_t>(t)];
  std::vector<Dim> dims;
  for (size_t i = 0; i < d.shape.size(); ++i) {
    if (d.shape[i] >= 0) dims.push_back(Dim::fixed(d.shape[i]));
    else dims.push_back(d.dim_names.empty() || d.dim_names[i].empty() ? Dim{} : Dim::named(d.dim_names[i]));
  }
  return dims;
}

int32_t Lowerer::emit_new(OpKind kind, std::vector<int32_t> inputs, DType dt, const std::vector<Dim>& shape,
                          OpParams params, const std::string& name, int32_t into) {
  const int32_t out = into >= 0 ? into : new_activation(name, dt, shape);
  emit_tensors(kind, std::move(inputs), {out}, params, def_.tensors[static_cast<size_t>(out)].name);
  return out;
}

int32_t Lowerer::binary_new(OpKind kind, int32_t a, int32_t b, DType dt, const std::string& name, int32_t into) {
  return emit_new(kind, {a, b}, dt, broadcast(tensor_dims(a), tensor_dims(b)), NoParams{}, name, into);
}

int32_t Lowerer::cast_new(int32_t t, DType dt, const std::string& name, int32_t into) {
  if (into < 0 && def_.tensors[static_cast<size_t>(t)].dtype == dt) return t;
  return emit_new(OpKind::Copy, {t}, dt, tensor_dims(t), NoParams{}, name, into);
}

int32_t Lowerer::ints_weight(const std::string& name, const std::vector<int64_t>& v) {
  return new_weight(name, ember::tensor(v, {static_cast<int64_t>(v.size())}), false);
}

// The unrolling of one LSTM, GRU or RNN node.
class Lowerer::Recurrence {
 public:
  Recurrence(Lowerer& l, const Node& n);
  void run();

 private:
  struct State {
    int32_t h = -1, c = -1;  // -1: zeros (no initial state)
  };
  // The weights of one direction ([rows, cols] tensors; -1: none).
  struct Weights {
    int32_t w = -1, wb = -1;     // input weights and bias, every gate
    int32_t r = -1, rb = -1;     // recurrence weights and bias, every gate
    int32_t r_h = -1, rb_h = -1;  // GRU without linear_before_reset: r and rb are z, r only; these h
    int32_t p_i = -1, p_o = -1, p_f = -1;  // LSTM peepholes
  };

  void read_attributes();
  void check_inputs(bool need_static_steps);
  bool fusable() const;
  void emit_fused();
  Weights weights(int64_t d);
  void direction(int64_t d);
  State step(int64_t d, const Weights& w, int32_t x, const State& s, int32_t into_h, int32_t into_c);
  State step_lstm(int64_t d, const Weights& w, int32_t x, const State& s, int32_t into_h, int32_t into_c);
  State step_gru(int64_t d, const Weights& w, int32_t x, const State& s, int32_t into_h);
  void outputs();

  // ---- emitting ----
  std::string name(const std::string& what) const { return base_ + "/" + what; }
  int32_t op(OpKind k, std::vector<int32_t> ins, const std::vector<Dim>& shape, const std::string& what,
             OpParams p = NoParams{}, int32_t into = -1) {
    return l_.emit_new(k, std::move(ins), dt_, shape, p, name(what), into);
  }
  // A binary elementwise op (the shape broadcast); b < 0 for Add: a itself.
  int32_t binary(OpKind k, int32_t a, int32_t b, const std::string& what, int32_t into = -1);
  int32_t linear(int32_t x, int32_t w, int32_t b, const std::string& what);
  // h W^T + b for the state h; b alone (or -1) when h is zeros.
  int32_t hidden(int32_t h, int32_t w, int32_t b, const std::string& what) {
    return h >= 0 ? linear(h, w, b, what) : b;
  }
  std::vector<int32_t> split(int32_t t, int64_t parts, int64_t axis, const std::string& what);
  int32_t activate(size_t which, int32_t x, const std::string& what, int32_t into = -1);
  int32_t clip(int32_t x, const std::string& what);
  // Rows [begin, end) of direction d of weight input i ([D, rows, ...] -> [end - begin, ...]).
  int32_t part(size_t i, int64_t d, int64_t begin, int64_t end, const std::string& what);
  int32_t scalar(double v, const std::string& what) { return l_.scalar_weight(name(what), v, dt_); }
  bool used(size_t k) const {
    const int o = k < n_.outputs.size() ? n_.outputs[k] : -1;
    return o >= 0 && (!l_.g_.users_of(o).empty() || l_.g_.is_graph_output(o));
  }
  // Where the final state of a single-direction, layout-0 node goes: the output itself.
  int32_t final_into(size_t k) { return dirs_ == 1 && !layout1_ && used(k) ? l_.tensor(n_.outputs[k]) : -1; }

  Lowerer& l_;
  const Node& n_;
  Cell cell_;
  std::string base_;
  int64_t gates_ = 1, hidden_ = 0, steps_ = 0, dirs_ = 1, per_dir_ = 1;
  bool reverse_ = false, layout1_ = false, lbr_ = false, input_forget_ = false;
  std::optional<double> clip_;
  std::vector<ActivationFn> acts_;  // per_dir_ per direction
  DType dt_ = DType::Float32;
  Dim batch_;
  int32_t x_ = -1;                   // [T, B, I]
  std::vector<State> initial_;       // per direction, [1, B, H]
  int32_t lens_ = -1;                // sequence_lens as [1, B, 1]; -1: every step valid
  int32_t zero_ = -1;
  std::vector<std::vector<int32_t>> ys_;  // per direction, per time step: [1, B, H]
  std::vector<State> final_;         // per direction
};

Lowerer::Recurrence::Recurrence(Lowerer& l, const Node& n)
    : l_(l), n_(n), cell_(n.op_type == "LSTM" ? Cell::Lstm : n.op_type == "GRU" ? Cell::Gru : Cell::Rnn) {
  base_ = n.name.empty() ? lower_case(n.op_type) : n.name;
  gates_ = cell_ == Cell::Lstm ? 4 : cell_ == Cell::Gru ? 3 : 1;
  per_dir_ = cell_ == Cell::Lstm ? 3 : cell_ == Cell::Gru ? 2 : 1;
}

void Lowerer::Recurrence::read_attributes() {
  const std::string direction = n_.get_string("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional") {
    refuse("direction '" + direction + "' is unknown");
  }
  dirs_ = direction == "bidirectional" ? 2 : 1;
  reverse_ = direction == "reverse";
  const int64_t layout = n_.get_int("layout", 0);
  if (layout != 0 && layout != 1) refuse("layout " + std::to_string(layout) + " is unknown (0 or 1)");
  layout1_ = layout == 1;
  lbr_ = n_.get_int("linear_before_reset", 0) != 0;
  input_forget_ = n_.get_int("input_forget", 0) != 0;
  if (n_.has("clip")) {
    clip_ = n_.get_float("clip", 0.0);
    if (!(*clip_ > 0)) refuse("clip " + fmt(*clip_) + " is not positive");
  }
  std::vector<std::string> names;
  if (n_.has("activations")) {
    names = n_.get_strings("activations");
  } else if (cell_ == Cell::Lstm) {
    names = {"Sigmoid", "Tanh", "Tanh"};
  } else {
    names = cell_ == Cell::Gru ? std::vector<std::string>{"Sigmoid", "Tanh"} : std::vector<std::string>{"Tanh"};
  }
  const size_t want = static_cast<size_t>(per_dir_ * dirs_);
  if (names.size() == static_cast<size_t>(per_dir_) && dirs_ == 2) {  // one set for both directions
    const std::vector<std::string> one = names;
    names.insert(names.end(), one.begin(), one.end());
  }
  if (names.size() != want) {
    refuse("has " + std::to_string(names.size()) + " activations, expected " + std::to_string(want) + " (" +
           std::to_string(per_dir_) + " per direction)");
  }
  const std::vector<double> alphas = n_.get_floats("activation_alpha"), betas = n_.get_floats("activation_beta");
  size_t next_alpha = 0, next_beta = 0;
  for (const std::string& raw : names) {
    const std::string s = lower_case(raw);
    const ActivationInfo* info = nullptr;
    for (const ActivationInfo& a : kActivations) {
      if (s == a.name) info = &a;
    }
    if (info == nullptr) refuse("activation '" + raw + "' is not supported");
    ActivationFn f{s, info->alpha, info->beta};
    if (info->n_alpha > 0 && next_alpha < alphas.size()) f.alpha = alphas[next_alpha++];
    if (info->n_beta > 0 && next_beta < betas.size()) f.beta = betas[next_beta++];
    acts_.push_back(f);
  }
}

void Lowerer::Recurrence::check_inputs(bool need_static_steps) {
  l_.require_inputs(n_, 3);
  const int x = n_.inputs[0];
  const std::optional<DType> dt = l_.dtype_of(x);
  if (!dt || !is_floating(*dt)) refuse("input X " + l_.vname(x) + " is not floating point");
  dt_ = *dt;
  const std::vector<Dim> xs = l_.dims_of(x, "X");
  if (xs.size() != 3) refuse("X " + l_.vname(x) + " is not 3-D");
  const Dim& t = xs[layout1_ ? 1 : 0];
  if (!t.is_static() && need_static_steps) {
    refuse("X " + l_.vname(x) + " has a dynamic sequence length (dim " + std::to_string(layout1_ ? 1 : 0) +
           (t.symbol.empty() ? "" : " '" + t.symbol + "'") +
           "): a recurrence with activation functions other than ONNX's defaults runs as a Scan over its steps only "
           "without sequence_lens and, bidirectional, with constant W, R, B, P and no activation_alpha/beta "
           "(--input-shape can fix the length)");
  }
  steps_ = t.is_static() ? t.value : -1;
  if (t.is_static() && steps_ < 1) refuse("X " + l_.vname(x) + " has no time steps");
  batch_ = xs[layout1_ ? 0 : 1];
  const std::vector<Dim> rs = l_.dims_of(n_.inputs[2], "R");
  if (rs.size() != 3) refuse("R " + l_.vname(n_.inputs[2]) + " is not 3-D");
  hidden_ = n_.get_int("hidden_size", rs[2].is_static() ? rs[2].value : -1);
  if (hidden_ <= 0) refuse("hidden_size is unknown (no attribute, R's last dim is dynamic)");
  const int64_t b = batch_.is_static() ? batch_.value : -1;
  const std::vector<int64_t> state = layout1_ ? std::vector<int64_t>{b, dirs_, hidden_}
                                              : std::vector<int64_t>{dirs_, b, hidden_};  // initial_h / _c
  // input index, what, the dims it must have (-1: any)
  const struct {
    size_t i;
    const char* what;
    std::vector<int64_t> dims;
  } expected[] = {{1, "W", {dirs_, gates_ * hidden_, xs[2].is_static() ? xs[2].value : -1}},
                  {2, "R", {dirs_, gates_ * hidden_, hidden_}},
                  {3, "B", {dirs_, 2 * gates_ * hidden_}},
                  {4, "sequence_lens", {b}},
                  {5, "initial_h", state},
                  {6, "initial_c", state},
                  {7, "P", {dirs_, 3 * hidden_}}};
  for (const auto& e : expected) {
    if (!l_.has_input(n_, e.i)) continue;
    const int id = n_.inputs[e.i];
    const std::vector<Dim> s = l_.dims_of(id, e.what);
    bool ok = s.size() == e.dims.size();
    for (size_t k = 0; ok && k < s.size(); ++k) ok = !s[k].is_static() || e.dims[k] < 0 || s[k].value == e.dims[k];
    if (!ok) {
      std::vector<int64_t> got;
      for (const Dim& d : s) got.push_back(d.value);
      refuse(std::string(e.what) + " " + l_.vname(id) + " has shape " + join_ints(got) + ", expected " +
             join_ints(e.dims) + " (-1: any)");
    }
  }
  if (cell_ != Cell::Lstm && (l_.has_input(n_, 6) || l_.has_input(n_, 7))) refuse("has more than 6 inputs");
}

int32_t Lowerer::Recurrence::binary(OpKind k, int32_t a, int32_t b, const std::string& what, int32_t into) {
  if (b < 0 && k == OpKind::Add) return a;
  return l_.binary_new(k, a, b, k == OpKind::Gt ? DType::Bool : dt_, name(what), into);
}

int32_t Lowerer::Recurrence::linear(int32_t x, int32_t w, int32_t b, const std::string& what) {
  std::vector<Dim> s = l_.tensor_dims(x);
  s.back() = l_.tensor_dims(w)[0];
  return op(OpKind::Linear, {x, w, b}, s, what, LinearParams{});
}

std::vector<int32_t> Lowerer::Recurrence::split(int32_t t, int64_t parts, int64_t axis, const std::string& what) {
  if (t < 0) return std::vector<int32_t>(static_cast<size_t>(parts), -1);
  if (parts == 1) return {t};
  std::vector<Dim> s = l_.tensor_dims(t);
  const size_t a = static_cast<size_t>(axis < 0 ? axis + static_cast<int64_t>(s.size()) : axis);
  if (s[a].is_static()) s[a] = Dim::fixed(s[a].value / parts);
  std::vector<int32_t> outs;
  for (int64_t k = 0; k < parts; ++k) outs.push_back(l_.new_activation(name(what + std::to_string(k)), dt_, s));
  l_.emit_tensors(OpKind::Split, {t, -1}, outs, AxisParams{axis}, name(what));
  return outs;
}

int32_t Lowerer::Recurrence::activate(size_t which, int32_t x, const std::string& what, int32_t into) {
  const ActivationFn& f = acts_[which];
  const std::vector<Dim> s = l_.tensor_dims(x);
  const std::string& a = f.name;
  if (a == "affine") return binary(OpKind::Add, binary(OpKind::Mul, x, scalar(f.alpha, what + "_alpha"), what + "_scaled"),
                                   scalar(f.beta, what + "_beta"), what, into);
  if (a == "scaledtanh") {
    const int32_t t = op(OpKind::Tanh, {binary(OpKind::Mul, x, scalar(f.beta, what + "_beta"), what + "_scaled")}, s,
                         what + "_tanh");
    return binary(OpKind::Mul, t, scalar(f.alpha, what + "_alpha"), what, into);
  }
  const UnaryParams p{f.alpha, f.beta};
  if (a == "relu") return op(OpKind::Relu, {x}, s, what, NoParams{}, into);
  if (a == "tanh") return op(OpKind::Tanh, {x}, s, what, NoParams{}, into);
  if (a == "sigmoid") return op(OpKind::Sigmoid, {x}, s, what, NoParams{}, into);
  if (a == "softsign") return op(OpKind::Softsign, {x}, s, what, NoParams{}, into);
  if (a == "softplus") return op(OpKind::Softplus, {x}, s, what, NoParams{}, into);
  if (a == "leakyrelu") return op(OpKind::LeakyRelu, {x}, s, what, p, into);
  if (a == "thresholdedrelu") return op(OpKind::ThresholdedRelu, {x}, s, what, p, into);
  if (a == "hardsigmoid") return op(OpKind::Hardsigmoid, {x}, s, what, p, into);
  return op(OpKind::Elu, {x}, s, what, p, into);  // the last of kActivations
}

int32_t Lowerer::Recurrence::clip(int32_t x, const std::string& what) {
  if (!clip_) return x;
  ClampParams p;
  p.has_min = p.has_max = true;
  p.min = -*clip_;
  p.max = *clip_;
  return op(OpKind::Clamp, {x}, l_.tensor_dims(x), what + "_clipped", p);
}

int32_t Lowerer::Recurrence::part(size_t i, int64_t d, int64_t begin, int64_t end, const std::string& what) {
  const int id = n_.inputs[i];
  if (l_.is_const(id)) {
    const Tensor t = l_.val(id).constant.select(0, d).narrow(0, begin, end - begin);
    return l_.new_weight(name(what), t, true);
  }
  std::vector<Dim> s = l_.dims_of(id, what);
  s[0] = Dim::fixed(1);
  s[1] = Dim::fixed(end - begin);
  const int32_t sliced =
      op(OpKind::Slice,
         {l_.tensor(id), l_.ints_weight(name(what + "_starts"), {d, begin}), l_.ints_weight(name(what + "_ends"), {d + 1, end}),
          l_.ints_weight(name(what + "_axes"), {0, 1}), -1},
         s, what + "_sliced");
  s.erase(s.begin());
  return op(OpKind::Squeeze, {sliced}, s, what, l_.dims_params({0}, "axes"));
}

Lowerer::Recurrence::Weights Lowerer::Recurrence::weights(int64_t d) {
  const std::string dir = "d" + std::to_string(d) + "_";
  const int64_t gh = gates_ * hidden_, h = hidden_;
  const bool bias = l_.has_input(n_, 3);
  Weights w;
  w.w = part(1, d, 0, gh, dir + "W");
  if (bias) w.wb = part(3, d, 0, gh, dir + "Wb");
  // GRU without linear_before_reset: r multiplies h before R_h, so R_h is apart.
  const int64_t r_rows = cell_ == Cell::Gru && !lbr_ ? 2 * h : gh;
  w.r = part(2, d, 0, r_rows, dir + "R");
  if (bias) w.rb = part(3, d, gh, gh + r_rows, dir + "Rb");
  if (r_rows != gh) {
    w.r_h = part(2, d, r_rows, gh, dir + "R_h");
    if (bias) w.rb_h = part(3, d, gh + r_rows, 2 * gh, dir + "Rb_h");
  }
  if (cell_ == Cell::Lstm && l_.has_input(n_, 7)) {
    w.p_i = part(7, d, 0, h, dir + "P_i");
    w.p_o = part(7, d, h, 2 * h, dir + "P_o");
    w.p_f = part(7, d, 2 * h, 3 * h, dir + "P_f");
  }
  return w;
}

Lowerer::Recurrence::State Lowerer::Recurrence::step_lstm(int64_t d, const Weights& w, int32_t x, const State& s,
                                                          int32_t into_h, int32_t into_c) {
  const size_t a = static_cast<size_t>(d * per_dir_);  // f, g, h
  const int32_t gates = binary(OpKind::Add, x, hidden(s.h, w.r, w.rb, "hr"), "gates");
  const std::vector<int32_t> g = split(gates, 4, -1, "iofc");  // i, o, f, c
  auto peep = [&](int32_t v, int32_t p, int32_t c, const std::string& what) {
    return p >= 0 && c >= 0 ? binary(OpKind::Add, v, binary(OpKind::Mul, p, c, what + "_peep"), what + "_pre") : v;
  };
  const int32_t i = activate(a, clip(peep(g[0], w.p_i, s.c, "i"), "i"), "i");
  const int32_t f = input_forget_ ? binary(OpKind::Sub, scalar(1.0, "one"), i, "f")
                                  : activate(a, clip(peep(g[2], w.p_f, s.c, "f"), "f"), "f");
  const int32_t cand = activate(a + 1, clip(g[3], "c"), "c");
  State next;
  if (s.c >= 0) {
    next.c = binary(OpKind::Add, binary(OpKind::Mul, f, s.c, "c_kept"), binary(OpKind::Mul, i, cand, "c_new"), "C",
                    into_c);
  } else {
    next.c = binary(OpKind::Mul, i, cand, "C", into_c);
  }
  const int32_t o = activate(a, clip(peep(g[1], w.p_o, next.c, "o"), "o"), "o");
  next.h = binary(OpKind::Mul, o, activate(a + 2, next.c, "C_act"), "H", into_h);
  return next;
}

Lowerer::Recurrence::State Lowerer::Recurrence::step_gru(int64_t d, const Weights& w, int32_t x, const State& s,
                                                         int32_t into_h) {
  const size_t a = static_cast<size_t>(d * per_dir_);  // f, g
  const std::vector<int32_t> xg = split(x, 3, -1, "x_zrh");
  const std::vector<int32_t> hg = split(hidden(s.h, w.r, w.rb, "hr"), lbr_ ? 3 : 2, -1, lbr_ ? "h_zrh" : "h_zr");
  const int32_t z = activate(a, clip(binary(OpKind::Add, xg[0], hg[0], "z_pre"), "z"), "z");
  const int32_t r = activate(a, clip(binary(OpKind::Add, xg[1], hg[1], "r_pre"), "r"), "r");
  int32_t pre = -1;
  if (lbr_) {  // x W_h + Wb_h + r (h R_h + Rb_h)
    pre = binary(OpKind::Add, xg[2], hg[2] >= 0 ? binary(OpKind::Mul, r, hg[2], "h_reset") : -1, "h_pre");
  } else {     // x W_h + Wb_h + (r h) R_h + Rb_h
    const int32_t hh = s.h >= 0 ? linear(binary(OpKind::Mul, r, s.h, "h_reset"), w.r_h, w.rb_h, "h_hr") : w.rb_h;
    pre = binary(OpKind::Add, xg[2], hh, "h_pre");
  }
  const int32_t cand = activate(a + 1, clip(pre, "h"), "h");
  // (1 - z) cand + z h = cand + z (h - cand)
  State next;
  if (s.h >= 0) {
    next.h = binary(OpKind::Add, cand, binary(OpKind::Mul, z, binary(OpKind::Sub, s.h, cand, "h_delta"), "h_kept"), "H",
                    into_h);
  } else {
    next.h = binary(OpKind::Sub, cand, binary(OpKind::Mul, z, cand, "h_kept"), "H", into_h);
  }
  return next;
}

Lowerer::Recurrence::State Lowerer::Recurrence::step(int64_t d, const Weights& w, int32_t x, const State& s,
                                                     int32_t into_h, int32_t into_c) {
  if (cell_ == Cell::Lstm) return step_lstm(d, w, x, s, into_h, into_c);
  if (cell_ == Cell::Gru) return step_gru(d, w, x, s, into_h);
  const int32_t pre = binary(OpKind::Add, x, hidden(s.h, w.r, w.rb, "hr"), "pre");
  return State{activate(static_cast<size_t>(d), clip(pre, "h"), "H", into_h), -1};
}

void Lowerer::Recurrence::direction(int64_t d) {
  const Weights w = weights(d);
  const std::string dir = "d" + std::to_string(d) + "_";
  std::vector<Dim> xw_shape = l_.tensor_dims(x_);
  xw_shape.back() = Dim::fixed(gates_ * hidden_);
  const int32_t xw = op(OpKind::Linear, {x_, w.w, w.wb}, xw_shape, dir + "xW", LinearParams{});
  const std::vector<int32_t> xs = split(xw, steps_, 0, dir + "xW_t");
  const bool backward = reverse_ || d == 1;
  State s = initial_[static_cast<size_t>(d)];
  std::vector<int32_t>& ys = ys_[static_cast<size_t>(d)];
  ys.assign(static_cast<size_t>(steps_), -1);
  for (int64_t k = 0; k < steps_; ++k) {
    const int64_t t = backward ? steps_ - 1 - k : k;
    const bool last = k + 1 == steps_;
    const int32_t into_h = last ? final_into(1) : -1, into_c = last ? final_into(2) : -1;
    const std::string at = dir + "t" + std::to_string(t) + "_";
    const std::string old_base = base_;
    base_ = name(at.substr(0, at.size() - 1));
    const State next = step(d, w, xs[static_cast<size_t>(t)], s, lens_ >= 0 ? -1 : into_h, lens_ >= 0 ? -1 : into_c);
    if (lens_ < 0) {
      ys[static_cast<size_t>(t)] = next.h;
      s = next;
    } else {  // steps past the entry's length: output 0, keep the state
      if (zero_ < 0) zero_ = l_.scalar_weight(old_base + "/zero", 0.0, dt_);
      const DType lens_dt = l_.def_.tensors[static_cast<size_t>(lens_)].dtype;
      const int32_t valid = binary(OpKind::Gt, lens_, l_.scalar_weight(name("t"), static_cast<double>(t), lens_dt), "valid");
      auto keep = [&](int32_t v, int32_t old, const std::string& what, int32_t into) {
        return l_.emit_new(OpKind::Where, {valid, v, old >= 0 ? old : zero_}, dt_, l_.tensor_dims(v), NoParams{},
                           name(what), into);
      };
      if (used(0)) ys[static_cast<size_t>(t)] = keep(next.h, zero_, "Y", -1);
      State kept;
      kept.h = keep(next.h, s.h, "H_kept", into_h);
      if (next.c >= 0) kept.c = keep(next.c, s.c, "C_kept", into_c);
      s = kept;
    }
    base_ = old_base;
  }
  final_[static_cast<size_t>(d)] = s;
}

void Lowerer::Recurrence::outputs() {
  if (used(0)) {  // Y: [T, D, B, H] (layout 1: [B, T, D, H])
    const int32_t out = l_.tensor(n_.outputs[0]);
    std::vector<int32_t> per_dir;
    for (int64_t d = 0; d < dirs_; ++d) {
      const std::vector<int32_t>& ys = ys_[static_cast<size_t>(d)];
      const std::string dir = "d" + std::to_string(d) + "_";
      const int32_t y3 = steps_ == 1 ? ys[0]
                                     : op(OpKind::Concat, ys, {Dim::fixed(steps_), batch_, Dim::fixed(hidden_)},
                                          dir + "Y", AxisParams{0});
      const bool last = dirs_ == 1 && !layout1_;
      per_dir.push_back(op(OpKind::Unsqueeze, {y3}, {Dim::fixed(steps_), Dim::fixed(1), batch_, Dim::fixed(hidden_)},
                           dir + "Y4", l_.dims_params({1}, "axes"), last ? out : -1));
    }
    int32_t y = per_dir[0];
    if (dirs_ == 2) {
      y = op(OpKind::Concat, per_dir, {Dim::fixed(steps_), Dim::fixed(2), batch_, Dim::fixed(hidden_)}, "Y",
             AxisParams{1}, layout1_ ? -1 : out);
    }
    if (layout1_) {
      op(OpKind::Permute, {y}, {batch_, Dim::fixed(steps_), Dim::fixed(dirs_), Dim::fixed(hidden_)}, "Y_batch_first",
         l_.dims_params({2, 0, 1, 3}, "perm"), out);
    }
  }
  for (size_t k = 1; k <= 2; ++k) {  // Y_h, Y_c: [D, B, H] (layout 1: [B, D, H])
    if (!used(k) || (dirs_ == 1 && !layout1_)) continue;  // single direction, layout 0: the last step wrote it
    const int32_t out = l_.tensor(n_.outputs[k]);
    const std::string what = k == 1 ? "Y_h" : "Y_c";
    auto of = [&](int64_t d) { return k == 1 ? final_[static_cast<size_t>(d)].h : final_[static_cast<size_t>(d)].c; };
    int32_t y = of(0);
    if (dirs_ == 2) {
      y = op(OpKind::Concat, {of(0), of(1)}, {Dim::fixed(2), batch_, Dim::fixed(hidden_)}, what, AxisParams{0},
             layout1_ ? -1 : out);
    }
    if (layout1_) {
      op(OpKind::Permute, {y}, {batch_, Dim::fixed(dirs_), Dim::fixed(hidden_)}, what + "_batch_first",
         l_.dims_params({1, 0, 2}, "perm"), out);
    }
  }
}

bool Lowerer::Recurrence::fusable() const {
  if (!recurrence_fusable(n_)) return false;
  if (!l_.has_input(n_, 4)) return true;
  const std::optional<DType> ldt = l_.dtype_of(n_.inputs[4]);
  return ldt == DType::Int32 || ldt == DType::Int64;
}

void Lowerer::Recurrence::emit_fused() {
  RecurrenceParams p;
  p.cell = cell_ == Cell::Lstm ? 0 : cell_ == Cell::Gru ? 1 : 2;
  p.directions = dirs_;
  p.reverse = reverse_;
  p.hidden = hidden_;
  p.clip = clip_.value_or(0.0);
  p.linear_before_reset = lbr_;
  p.input_forget = input_forget_;
  p.relu = cell_ == Cell::Rnn && acts_[0].name == "relu";
  // layout 1 ([B, T, I], states [B, D, H]): permuted to layout 0 and back.
  auto time_first = [&](size_t i, const std::string& what) {
    if (!l_.has_input(n_, i)) return -1;
    const int32_t t = l_.tensor(n_.inputs[i]);
    if (!layout1_) return t;
    const std::vector<Dim> s = l_.tensor_dims(t);
    return op(OpKind::Permute, {t}, {s[1], s[0], s[2]}, what + "_time_first", l_.dims_params({1, 0, 2}, "perm"));
  };
  std::vector<int32_t> ins = {time_first(0, "X")};
  // W, R, B, P: trainable weights when constant (weight()); sequence_lens is data.
  for (size_t i = 1; i <= 3; ++i) ins.push_back(l_.has_input(n_, i) ? l_.weight(n_.inputs[i]) : -1);
  ins.push_back(l_.has_input(n_, 4) ? l_.tensor(n_.inputs[4]) : -1);
  ins.push_back(time_first(5, "initial_h"));
  ins.push_back(cell_ == Cell::Lstm ? time_first(6, "initial_c") : -1);
  ins.push_back(cell_ == Cell::Lstm && l_.has_input(n_, 7) ? l_.weight(n_.inputs[7]) : -1);
  const std::vector<Dim> xd = l_.tensor_dims(ins[0]);
  const Dim d = Dim::fixed(dirs_), h = Dim::fixed(hidden_);
  const std::vector<Dim> shapes[3] = {{xd[0], d, xd[1], h}, {d, xd[1], h}, {d, xd[1], h}};
  std::vector<int32_t> outs(3, -1);
  std::vector<std::pair<int32_t, size_t>> permuted;  // (time-first value, output k)
  for (size_t k = 0; k < 3; ++k) {
    if (!used(k) || (k == 2 && cell_ != Cell::Lstm)) continue;
    if (!layout1_) {
      outs[k] = l_.tensor(n_.outputs[k]);
    } else {
      outs[k] = l_.new_activation(name(k == 0 ? "Y_time_first" : k == 1 ? "Y_h_time_first" : "Y_c_time_first"), dt_,
                                  shapes[k]);
      permuted.emplace_back(outs[k], k);
    }
  }
  l_.emit_tensors(OpKind::Recurrence, std::move(ins), outs, p, base_);
  for (const auto& [t, k] : permuted) {  // Y [T, D, B, H] -> [B, T, D, H]; states [D, B, H] -> [B, D, H]
    const std::vector<Dim>& s = shapes[k];
    if (k == 0) {
      op(OpKind::Permute, {t}, {s[2], s[0], s[1], s[3]}, "Y_batch_first", l_.dims_params({2, 0, 1, 3}, "perm"),
         l_.tensor(n_.outputs[k]));
    } else {
      op(OpKind::Permute, {t}, {s[1], s[0], s[2]}, k == 1 ? "Y_h_batch_first" : "Y_c_batch_first",
         l_.dims_params({1, 0, 2}, "perm"), l_.tensor(n_.outputs[k]));
    }
  }
}

void Lowerer::Recurrence::run() {
  read_attributes();
  const bool fuse = fusable();
  check_inputs(/*need_static_steps=*/!fuse);
  if (fuse) return emit_fused();
  x_ = l_.tensor(n_.inputs[0]);
  const std::vector<Dim> xd = l_.tensor_dims(x_);
  if (layout1_) {
    x_ = op(OpKind::Permute, {x_}, {xd[1], xd[0], xd[2]}, "X_time_first", l_.dims_params({1, 0, 2}, "perm"));
  }
  initial_.assign(static_cast<size_t>(dirs_), State{});
  for (size_t i = 5; i <= 6; ++i) {  // initial_h, initial_c: [D, B, H] (layout 1: [B, D, H])
    if (!l_.has_input(n_, i)) continue;
    int32_t t = l_.tensor(n_.inputs[i]);
    const std::string what = i == 5 ? "initial_h" : "initial_c";
    if (layout1_) {
      t = op(OpKind::Permute, {t}, {Dim::fixed(dirs_), batch_, Dim::fixed(hidden_)}, what + "_time_first",
             l_.dims_params({1, 0, 2}, "perm"));
    }
    const std::vector<int32_t> parts = split(t, dirs_, 0, what);
    for (int64_t d = 0; d < dirs_; ++d) {
      (i == 5 ? initial_[static_cast<size_t>(d)].h : initial_[static_cast<size_t>(d)].c) = parts[static_cast<size_t>(d)];
    }
  }
  if (l_.has_input(n_, 4)) {  // sequence_lens [B]
    const int id = n_.inputs[4];
    bool all_full = false;
    if (l_.is_const(id)) {
      const std::vector<int64_t> lens = l_.val(id).constant.to_vector<int64_t>();
      all_full = std::all_of(lens.begin(), lens.end(), [&](int64_t v) { return v == steps_; });
    }
    if (!all_full) {
      const std::optional<DType> ldt = l_.dtype_of(id);
      if (!ldt || is_floating(*ldt) || *ldt == DType::Bool) refuse("sequence_lens " + l_.vname(id) + " is not an integer tensor");
      lens_ = l_.emit_new(OpKind::Reshape, {l_.tensor(id), l_.ints_weight(name("lens_shape"), {1, -1, 1})}, *ldt,
                          {Dim::fixed(1), batch_, Dim::fixed(1)}, NoParams{}, name("lens"));
    }
  }
  ys_.assign(static_cast<size_t>(dirs_), {});
  final_.assign(static_cast<size_t>(dirs_), State{});
  for (int64_t d = 0; d < dirs_; ++d) direction(d);
  outputs();
}

void Lowerer::lower_recurrence(const Node& n) { Recurrence(*this, n).run(); }

}  // namespace ember::converter::lowering

namespace ember::converter {

bool recurrence_fusable(const Node& n) {
  if (!n.has("activations")) return true;
  const bool lstm = n.op_type == "LSTM", gru = n.op_type == "GRU";
  const std::vector<std::string> names = n.get_strings("activations");
  const size_t per_dir = lstm ? 3 : gru ? 2 : 1;
  if (names.empty() || names.size() % per_dir != 0) return false;
  for (size_t k = 0; k < names.size(); ++k) {
    const std::string a = lowering::lower_case(names[k]);
    const size_t pos = k % per_dir;
    const bool ok = lstm ? a == (pos == 0 ? "sigmoid" : "tanh")
                  : gru  ? a == (pos == 0 ? "sigmoid" : "tanh")
                         : (a == "tanh" || a == "relu") && a == lowering::lower_case(names[0]);
    if (!ok) return false;
  }
  return true;
}

}  // namespace ember::converter
