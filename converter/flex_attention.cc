// ai.onnx.preview::FlexAttention with a score_mod or prob_mod graph (passes.h)
// expanded into ONNX ops as onnx.reference computes it (op_flex_attention.py):
// Q and K times sqrt(scale) in Q's dtype (sqrt taken in float32), K and V
// repeated per group of query heads (GQA), Q·Kᵀ (in float32 for float16 and
// bfloat16), cast to the softmax dtype, score_mod's nodes spliced in with
// their input bound to the scores, Softmax over the last axis, prob_mod's
// nodes likewise on the probabilities, MatMul with V cast to the softmax
// dtype, cast back to V's dtype. Without a mod the node stays: the lowering
// (lower_attention.cc) makes it an Attention.
#include <cmath>
#include <map>
#include <set>

#include "converter/onnx_import.h"
#include "converter/pass_util.h"
#include "converter/passes.h"

namespace ember::converter {
namespace {

bool has_mod(const Node& n) {
  for (const std::string& a : n.graph_attrs) {
    if (a == "score_mod" || a == "prob_mod") return true;
  }
  return false;
}

// The ONNX dtype code of `dt` (Cast's "to").
int64_t onnx_code(DType dt) {
  for (int64_t c = 1; c <= 26; ++c) {
    if (dtype_from_onnx(c) == dt) return c;
  }
  return 0;
}

class FlexExpansion {
 public:
  FlexExpansion(Graph& g, const Node& n, std::set<std::string>& taken)
      : g_(g), n_(n), taken_(taken), base_(n.name.empty() ? "flex_attention" : n.name) {}

  // The nodes replacing the FlexAttention, or nothing when it cannot be
  // expanded (the lowering refuses it then).
  std::vector<Node> run();

 private:
  int add(const std::string& op, std::vector<int> inputs, std::optional<DType> dt, const std::string& what,
          std::map<std::string, Attr> attrs = {}, int into = -1) {
    Node c;
    c.name = base_ + "/" + what;
    c.op_type = op;
    c.kind = map_onnx_op(op);
    c.inputs = std::move(inputs);
    c.attrs = std::move(attrs);
    if (into < 0) {
      Value v;
      v.name = unique_name(c.name, taken_);
      v.dtype = dt;
      into = g_.add_value(std::move(v));
    }
    c.outputs = {into};
    out_.push_back(std::move(c));
    return into;
  }
  int constant(const std::string& what, Tensor t) { return g_.add_constant(unique_name(base_ + "/" + what, taken_), t); }
  int cast(int x, DType from, DType to, const std::string& what) {
    return from == to ? x : add("Cast", {x}, to, what, {{"to", onnx_code(to)}});
  }
  // K or V [B, Hkv, S, E] as [B, Hq, S, E], each kv head repeated `rep` times.
  int repeat_heads(int x, int64_t rep, int64_t hq, int64_t e, DType dt, const std::string& what) {
    if (rep == 1) return x;
    const int u = add("Unsqueeze", {x, constant(what + "_axis", tensor(std::vector<int64_t>{2}, {1}))}, dt,
                      what + "_unsqueezed");
    const int x5 = add("Expand", {u, constant(what + "_repeat", tensor(std::vector<int64_t>{1, 1, rep, 1, 1}, {5}))},
                       dt, what + "_expanded");
    return add("Reshape", {x5, constant(what + "_shape", tensor(std::vector<int64_t>{0, hq, -1, e}, {4}))}, dt,
               what + "_aligned");
  }
  // The mod `attr` applied to `x` (x itself when the node has none).
  int mod(const std::string& attr, int x) {
    for (size_t k = 0; k < n_.graphs.size() && k < n_.graph_attrs.size(); ++k) {
      if (n_.graph_attrs[k] != attr) continue;
      const Graph& sg = n_.graphs[k];
      std::vector<int> inputs(sg.inputs.size(), -1);
      inputs[0] = x;
      const size_t cap = static_cast<size_t>(n_.captured);
      for (size_t i = 0; i < cap; ++i) inputs[sg.inputs.size() - cap + i] = n_.inputs[n_.inputs.size() - cap + i];
      const size_t first = out_.size();
      Value v;
      v.name = unique_name(base_ + "/" + attr + "_out", taken_);
      v.dtype = g_.value(x).dtype;
      const int y = g_.add_value(std::move(v));
      for (Node& c : splice_graph(g_, sg, inputs, {y}, base_ + "/" + attr, taken_)) out_.push_back(std::move(c));
      // The subgraph's shapes are its own symbols (B, H, L, S): inferred anew.
      for (size_t i = first; i < out_.size(); ++i) {
        for (int o : out_[i].outputs) {
          if (o >= 0 && !g_.is_constant(o)) g_.value(o).shape.reset();
        }
      }
      return y;
    }
    return x;
  }

  Graph& g_;
  const Node& n_;
  std::set<std::string>& taken_;
  std::string base_;
  std::vector<Node> out_;
};

std::vector<Node> FlexExpansion::run() {
  if (n_.inputs.size() != 3 + static_cast<size_t>(n_.captured) || n_.outputs.size() != 1) return {};
  for (const Graph& sg : n_.graphs) {
    if (sg.inputs.size() != 1 + static_cast<size_t>(n_.captured) || sg.outputs.size() != 1) return {};
  }
  // Copies: adding values below moves graph.values.
  const Value q = g_.value(n_.inputs[0]), k = g_.value(n_.inputs[1]), v = g_.value(n_.inputs[2]);
  if (!q.dtype || !k.dtype || !v.dtype || !is_floating(*q.dtype) || k.dtype != q.dtype || v.dtype != q.dtype) return {};
  if (!q.shape || !k.shape || !v.shape || q.shape->size() != 4 || k.shape->size() != 4 || v.shape->size() != 4) return {};
  const Dim hq = (*q.shape)[1], hkv = (*k.shape)[1], e = (*k.shape)[3], ev = (*v.shape)[3];
  if (!hq.is_static() || !hkv.is_static() || hkv.value == 0 || hq.value % hkv.value != 0) return {};
  const int64_t rep = hq.value / hkv.value;
  if (rep > 1 && (!e.is_static() || !ev.is_static())) return {};
  const DType dt = *q.dtype;
  // float16 / bfloat16 compute in float32 (ember has no half MatMul; the reference's softmax dtype too).
  const DType md = dt == DType::Float16 || dt == DType::BFloat16 ? DType::Float32 : dt;
  DType sp = md;
  if (n_.has("softmax_precision")) {
    const std::optional<DType> s = dtype_from_onnx(n_.get_int("softmax_precision", 1));
    if (!s || !is_floating(*s)) return {};
    sp = *s == DType::Float16 || *s == DType::BFloat16 ? DType::Float32 : *s;
  }
  double scale = n_.get_float("scale", 0.0);
  if (!n_.has("scale")) {
    if (!(*q.shape)[3].is_static()) return {};
    scale = 1.0 / std::sqrt(static_cast<double>((*q.shape)[3].value));
  }
  const Tensor root = scalar_tensor(static_cast<double>(std::sqrt(static_cast<float>(scale))), DType::Float32).to(dt);
  const int factor = constant("sqrt_scale", root);
  const int qs = cast(add("Mul", {n_.inputs[0], factor}, dt, "q_scaled"), dt, md, "q_compute");
  const int kr = repeat_heads(n_.inputs[1], rep, hq.value, e.value, dt, "k");
  const int ks = cast(add("Mul", {kr, factor}, dt, "k_scaled"), dt, md, "k_compute");
  const int kt = add("Transpose", {ks}, md, "k_transposed", {{"perm", std::vector<int64_t>{0, 1, 3, 2}}});
  const int scores = mod("score_mod", cast(add("MatMul", {qs, kt}, md, "scores"), md, sp, "scores_cast"));
  const int probs = mod("prob_mod", add("Softmax", {scores}, sp, "probs", {{"axis", int64_t{-1}}}));
  const int vr = cast(repeat_heads(n_.inputs[2], rep, hq.value, ev.value, dt, "v"), dt, sp, "v_compute");
  if (sp == dt) {
    add("MatMul", {probs, vr}, sp, "output", {}, n_.outputs[0]);
  } else {
    add("Cast", {add("MatMul", {probs, vr}, sp, "output")}, dt, "output_cast", {{"to", onnx_code(dt)}},
        n_.outputs[0]);
  }
  return std::move(out_);
}

}  // namespace

int expand_flex_attention_mods(Graph& graph) {
  std::set<std::string> taken;
  for (const Value& v : graph.values) taken.insert(v.name);
  std::vector<Node> nodes;
  nodes.reserve(graph.nodes.size());
  int expanded = 0;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    Node& node = graph.nodes[i];
    std::vector<Node> with;
    if (node.op_type == "ai.onnx.preview::FlexAttention" && has_mod(node)) {
      with = FlexExpansion(graph, node, taken).run();
    }
    if (with.empty()) {
      nodes.push_back(std::move(node));
      continue;
    }
    for (Node& c : with) nodes.push_back(std::move(c));
    ++expanded;
  }
  graph.nodes = std::move(nodes);
  return expanded;
}

}  // namespace ember::converter
