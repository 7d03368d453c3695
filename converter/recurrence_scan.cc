// recurrences_to_scans (passes.h): an LSTM, GRU or RNN whose sequence length
// is not static (exported with a dynamic time axis) and whose activation
// functions are not all ONNX's defaults (those become one Recurrence op at
// any length: lower_rnn.cc) becomes, per direction, a
// Scan over the time axis. The Scan's body is the same recurrence over one
// step, with the node's attributes and weights, which lower_rnn.cc unrolls;
// its states are the Scan's, so the executor runs one step per element of the
// sequence, however long it is at run time.
//
//   LSTM(X [T, B, I], W, R, B, , h0, c0, P) -> Y [T, 1, B, H], Y_h, Y_c
//   becomes Scan(h0, c0, X) with the body
//     (h, c, x_t [B, I]) -> Unsqueeze(x_t, 0) -> LSTM(.., h, c, ..) -> (Y_h, Y_c, Squeeze(Y, 0))
//   whose scan output, stacked on axis 0, is Y. layout 1 scans axis 1; a
//   reverse recurrence scans (and stacks) in reverse; a bidirectional one is
//   two Scans, one per direction, their outputs concatenated as ONNX lays
//   them out. Omitted initial states are zeros of [1, B, H]: a constant, or
//   (B dynamic, or more than 64 Ki elements) made at run time from X's shape.
//
// Not rewritten (lower_rnn.cc then refuses the node, naming the reason):
// sequence_lens (the body has no step index to mask with), a bidirectional
// node whose W, R, B, P are not constants or that gives activation_alpha /
// activation_beta (their split between the directions is not reproduced here).
#include <algorithm>

#include "converter/pass_util.h"
#include "converter/passes.h"

namespace ember::converter {

namespace {

// One rewrite: the nodes that replace `n` are appended to `out`.
class ScanRewrite {
 public:
  ScanRewrite(Graph& g, const Node& n, int64_t hidden, std::set<std::string>& taken, std::vector<Node>& out)
      : g_(g), n_(n), taken_(taken), out_(out), hidden_(hidden) {
    base_ = n.name.empty() ? n.op_type : n.name;
    layout_ = n.get_int("layout", 0) == 1 ? 1 : 0;
    const std::string direction = n.get_string("direction", "forward");
    dirs_ = direction == "bidirectional" ? 2 : 1;
    reverse_ = direction == "reverse";
    states_ = n.op_type == "LSTM" ? 2 : 1;
    dt_ = g.value(n.inputs[0]).dtype;
  }

  void run() {
    std::vector<std::vector<int>> ys(3);  // per output (Y, Y_h, Y_c): one value per direction
    for (int64_t d = 0; d < dirs_; ++d) {
      // The Scan's outputs: the states, then Y's steps.
      std::vector<int> outs;
      for (int s = 0; s < states_; ++s) outs.push_back(output(1 + s, d));
      outs.push_back(output(0, d));
      scan(d, outs);
      for (int s = 0; s < states_; ++s) ys[static_cast<size_t>(1 + s)].push_back(outs[static_cast<size_t>(s)]);
      ys[0].push_back(outs.back());
    }
    if (dirs_ == 1) return;
    // Y [T, D, B, H] (layout 1: [B, T, D, H]); Y_h, Y_c [D, B, H] ([B, D, H]).
    for (size_t k = 0; k < ys.size() && k < n_.outputs.size(); ++k) {
      if (n_.outputs[k] < 0 || ys[k].empty()) continue;
      Node c = node("Concat", "/concat_" + std::to_string(k), ys[k], {n_.outputs[k]});
      c.attrs["axis"] = int64_t{k == 0 ? 1 + layout_ : layout_};
      out_.push_back(std::move(c));
    }
  }

 private:
  // Output k of the node for direction d: the node's own when one direction
  // gives it, else a new value (concatenated in run()).
  int output(size_t k, int64_t d) {
    if (dirs_ == 1 && k < n_.outputs.size() && n_.outputs[k] >= 0) return n_.outputs[k];
    return value(g_, "/out" + std::to_string(k) + "_dir" + std::to_string(d));
  }

  int value(Graph& g, const std::string& what) {
    Value v;
    v.name = &g == &g_ ? unique_name(base_ + what, taken_) : what;
    v.dtype = dt_;
    return g.add_value(std::move(v));
  }

  Node node(const std::string& op, const std::string& what, std::vector<int> ins, std::vector<int> outs) const {
    Node c;
    c.name = base_ + what;
    c.op_type = op;
    c.kind = map_onnx_op(op);
    c.inputs = std::move(ins);
    c.outputs = std::move(outs);
    return c;
  }

  int ints(Graph& g, const std::string& what, std::vector<int64_t> v) {
    const int64_t size = static_cast<int64_t>(v.size());
    return g.add_constant(&g == &g_ ? unique_name(base_ + what, taken_) : what, tensor(v, {size}));
  }

  bool has_input(size_t i) const { return i < n_.inputs.size() && n_.inputs[i] >= 0; }

  // Initial state s (0: h, 1: c) of direction d: the node's input (its
  // direction's slice when bidirectional) or zeros.
  int initial_state(int s, int64_t d) {
    const size_t i = 5 + static_cast<size_t>(s);
    if (!has_input(i)) return zeros();
    if (dirs_ == 1) return n_.inputs[i];
    const std::string what = "/initial_" + std::to_string(s) + "_dir" + std::to_string(d);
    const int out = value(g_, what);
    out_.push_back(node("Slice", what,
                        {n_.inputs[i], ints(g_, what + "_start", {d}), ints(g_, what + "_end", {d + 1}),
                         ints(g_, what + "_axis", {layout_})},
                        {out}));
    return out;
  }

  // Zeros of [1, B, H] ([B, 1, H] for layout 1), made once.
  int zeros() {
    if (zeros_ >= 0) return zeros_;
    const Value& x = g_.value(n_.inputs[0]);
    const Dim& b = (*x.shape)[static_cast<size_t>(1 - layout_)];
    if (b.is_static() && hidden_ <= (int64_t{1} << 16) / std::max<int64_t>(1, b.value)) {  // larger: at run time
      const std::vector<int64_t> s = layout_ ? std::vector<int64_t>{b.value, 1, hidden_}
                                             : std::vector<int64_t>{1, b.value, hidden_};
      return zeros_ = g_.add_constant(unique_name(base_ + "/zero_state", taken_), ember::zeros(s, *dt_));
    }
    // Shape(X)[batch axis] between 1 and H, then ConstantOfShape.
    Value sv;
    sv.name = unique_name(base_ + "/x_shape", taken_);
    sv.dtype = DType::Int64;
    const int shape = g_.add_value(sv);
    out_.push_back(node("Shape", "/x_shape", {n_.inputs[0]}, {shape}));
    sv.name = unique_name(base_ + "/batch", taken_);
    const int batch = g_.add_value(sv);
    Node gather = node("Gather", "/batch", {shape, ints(g_, "/batch_axis", {1 - layout_})}, {batch});
    gather.attrs["axis"] = int64_t{0};
    out_.push_back(std::move(gather));
    sv.name = unique_name(base_ + "/state_shape", taken_);
    const int state_shape = g_.add_value(sv);
    const int one = ints(g_, "/one", {1}), h = ints(g_, "/hidden", {hidden_});
    Node concat = node("Concat", "/state_shape", layout_ ? std::vector<int>{batch, one, h} : std::vector<int>{one, batch, h},
                       {state_shape});
    concat.attrs["axis"] = int64_t{0};
    out_.push_back(std::move(concat));
    zeros_ = value(g_, "/zero_state");
    Node fill = node("ConstantOfShape", "/zero_state", {state_shape}, {zeros_});
    fill.attrs["value"] = ember::zeros({1}, *dt_);
    out_.push_back(std::move(fill));
    return zeros_;
  }

  // The Scan of direction d, writing `outs`.
  void scan(int64_t d, const std::vector<int>& outs) {
    Graph body;
    body.opset = g_.opset;
    body.producer = g_.producer;
    std::vector<int> scan_in;  // the Scan's inputs: states, X, then what the body captures
    std::vector<int> state_in;
    for (int s = 0; s < states_; ++s) {
      state_in.push_back(value(body, s == 0 ? "h" : "c"));
      scan_in.push_back(initial_state(s, d));
    }
    const int x_t = value(body, "x_t");
    scan_in.push_back(n_.inputs[0]);
    body.inputs = state_in;
    body.inputs.push_back(x_t);
    // W, R, B (and LSTM's P): constants go into the body (their direction's
    // slice), graph values are captured.
    auto weight = [&](size_t i, const char* what) {
      if (!has_input(i)) return -1;
      const int id = n_.inputs[i];
      if (g_.is_constant(id)) {
        const Tensor& t = g_.value(id).constant;
        return body.add_constant(what, dirs_ == 1 ? t : t.narrow(0, d, 1).contiguous());
      }
      const int in = value(body, what);
      body.value(in).dtype = g_.value(id).dtype;
      captured_.push_back({id, in});
      return in;
    };
    captured_.clear();
    const int w = weight(1, "W"), r = weight(2, "R"), bias = weight(3, "B"), p = states_ == 2 ? weight(7, "P") : -1;
    for (const auto& [outer, inner] : captured_) {
      scan_in.push_back(outer);
      body.inputs.push_back(inner);
    }
    const int axes = ints(body, "axes", {layout_});
    const int x1 = value(body, "x_step");
    body.nodes.push_back(node("Unsqueeze", "/step_input", {x_t, axes}, {x1}));
    Node cell = node(n_.op_type, "/step", {x1, w, r, bias, -1}, {});
    cell.attrs = n_.attrs;
    cell.attrs["direction"] = std::string("forward");  // one direction, one step
    // Bidirectional: this direction's half of the activations (one set given serves both, as lower_rnn.cc reads it).
    const std::vector<std::string> a = n_.get_strings("activations");
    const size_t per = n_.op_type == "LSTM" ? 3 : n_.op_type == "GRU" ? 2 : 1;
    if (dirs_ == 2 && a.size() == 2 * per) {
      const auto first = a.begin() + static_cast<std::ptrdiff_t>(per * static_cast<size_t>(d));
      cell.attrs["activations"] = std::vector<std::string>(first, first + static_cast<std::ptrdiff_t>(per));
    }
    for (int s = 0; s < states_; ++s) cell.inputs.push_back(state_in[static_cast<size_t>(s)]);
    if (p >= 0) cell.inputs.push_back(p);
    const int y = value(body, "y");
    cell.outputs.push_back(y);
    for (int s = 0; s < states_; ++s) {
      cell.outputs.push_back(value(body, s == 0 ? "h_next" : "c_next"));
      body.outputs.push_back(cell.outputs.back());
    }
    body.nodes.push_back(std::move(cell));
    const int y_step = value(body, "y_step");
    body.nodes.push_back(node("Squeeze", "/step_output", {y, axes}, {y_step}));
    body.outputs.push_back(y_step);

    Node scan = node("Scan", "/scan_dir" + std::to_string(d), scan_in, outs);
    const int64_t backwards = dirs_ == 2 ? d : reverse_ ? 1 : 0;
    scan.attrs["num_scan_inputs"] = int64_t{1};
    scan.attrs["scan_input_axes"] = std::vector<int64_t>{layout_};
    scan.attrs["scan_input_directions"] = std::vector<int64_t>{backwards};
    scan.attrs["scan_output_axes"] = std::vector<int64_t>{layout_};
    scan.attrs["scan_output_directions"] = std::vector<int64_t>{backwards};
    scan.captured = static_cast<int>(captured_.size());
    scan.graphs.push_back(std::move(body));
    scan.graph_attrs.push_back("body");
    out_.push_back(std::move(scan));
  }

  Graph& g_;
  const Node& n_;
  std::set<std::string>& taken_;
  std::vector<Node>& out_;
  int64_t hidden_;
  std::string base_;
  int64_t layout_ = 0, dirs_ = 1;
  bool reverse_ = false;
  int states_ = 1;
  std::optional<DType> dt_;
  int zeros_ = -1;
  std::vector<std::pair<int, int>> captured_;  // (outer value, body input)
};

// Whether `n` is a recurrence over a dynamic sequence length that the
// rewrite handles; its hidden size in `hidden`.
bool rewritable(const Graph& g, const Node& n, int64_t& hidden) {
  if (n.op_type != "LSTM" && n.op_type != "GRU" && n.op_type != "RNN") return false;
  if (recurrence_fusable(n)) return false;  // one Recurrence op at any length (lower_rnn.cc)
  if (n.inputs.size() < 3 || n.inputs[0] < 0 || n.inputs[1] < 0 || n.inputs[2] < 0) return false;
  const Value& x = g.value(n.inputs[0]);
  const int64_t layout = n.get_int("layout", 0);
  if (!x.dtype || !x.shape || x.shape->size() != 3 || (layout != 0 && layout != 1)) return false;
  if ((*x.shape)[layout == 1 ? 1 : 0].is_static()) return false;
  if (n.inputs.size() > 4 && n.inputs[4] >= 0) return false;  // sequence_lens
  const std::string direction = n.get_string("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional") return false;
  if (direction == "bidirectional") {
    if (n.has("activation_alpha") || n.has("activation_beta")) return false;
    for (size_t i : {1, 2, 3, 7})
      if (i < n.inputs.size() && n.inputs[i] >= 0 && !g.is_constant(n.inputs[i])) return false;
  }
  const Value& r = g.value(n.inputs[2]);
  std::optional<std::vector<Dim>> rs = r.shape;
  if (r.is_constant()) {
    rs.emplace();
    for (int64_t s : r.constant.sizes()) rs->push_back(Dim::fixed(s));
  }
  const int64_t r_hidden = rs && rs->size() == 3 && (*rs)[2].is_static() ? (*rs)[2].value : -1;
  hidden = n.get_int("hidden_size", r_hidden);
  // A hidden_size R contradicts is left to lower_rnn.cc's refusal.
  return hidden > 0 && (r_hidden < 0 || hidden == r_hidden);
}

}  // namespace

int recurrences_to_scans(Graph& graph) {
  std::set<std::string> taken;
  for (const Value& v : graph.values) taken.insert(v.name);
  std::vector<Node> nodes;
  nodes.reserve(graph.nodes.size());
  int rewritten = 0;
  for (Node& n : graph.nodes) {
    int64_t hidden = 0;
    if (!rewritable(graph, n, hidden)) {
      nodes.push_back(std::move(n));
      continue;
    }
    const Node node = std::move(n);
    ScanRewrite(graph, node, hidden, taken, nodes).run();
    ++rewritten;
  }
  graph.nodes = std::move(nodes);
  return rewritten;
}

}  // namespace ember::converter
