// Attention exported as ops (passes.h, fuse_attention): MatMul(q, kt), an
// optional Mul or Div by a one-element constant, an optional Add of a mask,
// Softmax over the last axis and MatMul(p, v) become one
// ember::ScaledDotProductAttention node whose key is kt with its last two
// dims swapped (a Transpose: a view at run time); a Transpose of its output's
// dims -3 and -2 (the heads' before they are merged) becomes its output
// layout. The CPU runs it as one kernel, a block of query rows at a time
// (kernels/cpu/attention.cc).
#include <algorithm>
#include <cmath>

#include "converter/pass_util.h"
#include "converter/passes.h"

namespace ember::converter {
namespace {

const std::vector<Dim>* float32_shape(const Graph& g, int id) {
  if (id < 0) return nullptr;
  const Value& v = g.value(id);
  return v.dtype == DType::Float32 && v.shape ? &*v.shape : nullptr;
}

// The node producing `id` when it is `type` and `id` is read by `reader` alone.
Node* sole_producer(Graph& g, int id, int reader, const char* type) {
  if (id < 0 || sole_user(g, id) != reader) return nullptr;
  const int p = g.producer_of(id);
  if (p < 0) return nullptr;
  Node& n = g.nodes[static_cast<size_t>(p)];
  return n.op_type == type && n.outputs.size() == 1 ? &n : nullptr;
}

// The one value of a float constant, or NaN.
double scalar_of(const Graph& g, int id) {
  if (!g.is_constant(id)) return NAN;
  const Tensor& t = g.value(id).constant;
  if (t.numel() != 1 || t.dim() > 0 || t.dtype() != DType::Float32) return NAN;
  return t.to_vector<float>()[0];
}

// 0, 1, ..., rank - 1 with dims a and b swapped (a Transpose's perm).
std::vector<int64_t> perm_swapping(size_t rank, size_t a, size_t b) {
  std::vector<int64_t> perm(rank);
  for (size_t d = 0; d < rank; ++d) perm[d] = static_cast<int64_t>(d);
  std::swap(perm[a], perm[b]);
  return perm;
}

struct Match {
  int q = -1, kt = -1, v = -1, mask = -1;
  double scale = 1.0;
  std::vector<size_t> absorbed;  // the nodes the fused node replaces, but the last MatMul
};

// The chain ending at MatMul `out` (node index i), if it is one.
bool match(Graph& g, size_t i, Match* m) {
  const Node& pv = g.nodes[i];
  if (pv.op_type != "MatMul" || pv.inputs.size() != 2 || pv.outputs.size() != 1) return false;
  const std::vector<Dim>* out = float32_shape(g, pv.outputs[0]);
  const int reader = static_cast<int>(i);
  Node* sm = sole_producer(g, pv.inputs[0], reader, "Softmax");
  if (out == nullptr || sm == nullptr || sm->inputs.size() != 1) return false;
  const std::vector<Dim>* scores = float32_shape(g, sm->inputs[0]);
  const int64_t rank = scores != nullptr ? static_cast<int64_t>(scores->size()) : 0;
  if (rank < 2) return false;
  int64_t axis = sm->get_int("axis", g.opset > 0 && g.opset < 13 ? 1 : -1);  // below 13 on [prod(<axis), rest]: the same for the last
  if (axis < 0) axis += rank;
  if (axis != rank - 1) return false;
  const int sm_index = g.producer_of(pv.inputs[0]);
  m->absorbed = {static_cast<size_t>(sm_index)};
  int x = sm->inputs[0], x_reader = sm_index;
  if (Node* add = sole_producer(g, x, x_reader, "Add")) {  // the mask, on either side
    if (add->inputs.size() != 2 || add->inputs[0] == add->inputs[1]) return false;
    for (size_t side = 0; side < 2 && m->mask < 0; ++side) {
      const int s = add->inputs[side], mask = add->inputs[1 - side];
      const int p = g.producer_of(s);
      if (p < 0 || sole_user(g, s) != g.producer_of(x)) continue;
      const std::string& t = g.nodes[static_cast<size_t>(p)].op_type;
      if (t != "MatMul" && t != "Mul" && t != "Div") continue;
      const std::vector<Dim>* ms = float32_shape(g, mask);
      if (ms == nullptr || static_cast<int64_t>(ms->size()) > rank) continue;  // a mask of more dims widens the scores' rank
      m->mask = mask;
      m->absorbed.push_back(static_cast<size_t>(g.producer_of(x)));
      x_reader = g.producer_of(x);
      x = s;
    }
    if (m->mask < 0) return false;
  }
  for (const char* type : {"Mul", "Div"}) {  // the scale
    Node* f = sole_producer(g, x, x_reader, type);
    if (f == nullptr || f->inputs.size() != 2) continue;
    const bool div = f->op_type == "Div";
    for (size_t side = 0; side < (div ? 1u : 2u); ++side) {
      const double c = scalar_of(g, f->inputs[1 - side]);
      if (std::isnan(c) || c == 0.0) continue;
      m->scale = div ? 1.0 / c : c;
      m->absorbed.push_back(static_cast<size_t>(g.producer_of(x)));
      x_reader = g.producer_of(x);
      x = f->inputs[side];
      break;
    }
    break;
  }
  Node* qk = sole_producer(g, x, x_reader, "MatMul");
  if (qk == nullptr || qk->inputs.size() != 2) return false;
  m->absorbed.push_back(static_cast<size_t>(g.producer_of(x)));
  m->q = qk->inputs[0];
  m->kt = qk->inputs[1];
  m->v = pv.inputs[1];
  const std::vector<Dim>*qs = float32_shape(g, m->q), *ks = float32_shape(g, m->kt), *vs = float32_shape(g, m->v);
  // One rank for q, k^T, v, the scores and the output (ONNX's MatMul broadcasts the leading dims as the op does).
  return qs != nullptr && ks != nullptr && vs != nullptr && static_cast<int64_t>(qs->size()) == rank &&
         static_cast<int64_t>(ks->size()) == rank && static_cast<int64_t>(vs->size()) == rank &&
         static_cast<int64_t>(out->size()) == rank;
}

}  // namespace

int fuse_attention(Graph& graph) {
  int fused = 0;
  std::vector<bool> dead(graph.nodes.size(), false);
  std::vector<std::pair<size_t, Node>> keys;  // the Transposes of kt, each right before its attention node
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    Match m;
    if (!match(graph, i, &m)) continue;
    if (std::any_of(m.absorbed.begin(), m.absorbed.end(), [&](size_t j) { return dead[j]; })) continue;
    Node& out = graph.nodes[i];  // the last MatMul becomes the attention node
    const std::string base = out.name.empty() ? graph.value(out.outputs[0]).name : out.name;
    std::vector<Dim> kd = *graph.value(m.kt).shape;
    const size_t r = kd.size();
    std::swap(kd[r - 1], kd[r - 2]);
    Value k;
    k.name = base + "/key";
    k.dtype = DType::Float32;
    k.shape = kd;
    Node t;
    t.name = base + "/key_transpose";
    t.op_type = "Transpose";
    t.kind = map_onnx_op("Transpose");
    t.attrs["perm"] = perm_swapping(r, r - 1, r - 2);
    t.inputs = {m.kt};
    t.outputs = {graph.add_value(std::move(k))};
    out.op_type = "ember::ScaledDotProductAttention";
    out.kind = OpKind::ScaledDotProductAttention;
    out.attrs.clear();
    out.attrs["scale"] = m.scale;
    out.inputs = {m.q, t.outputs[0], m.v, m.mask};
    keys.emplace_back(i - 1, std::move(t));  // i > 0: the chain's first MatMul comes before
    for (size_t j : m.absorbed) dead[j] = true;
    // The heads' Transpose before they are merged ([*, H, L, Ev] -> [*, L, H, Ev]): the op's output layout.
    const int user = sole_user(graph, out.outputs[0]);
    if (user >= 0 && r >= 3) {
      Node& tr = graph.nodes[static_cast<size_t>(user)];
      if (tr.op_type == "Transpose" && tr.outputs.size() == 1 && tr.get_ints("perm") == perm_swapping(r, r - 3, r - 2)) {
        out.attrs["transpose_output"] = int64_t{1};
        out.outputs[0] = tr.outputs[0];
        dead[static_cast<size_t>(user)] = true;
      }
    }
    ++fused;
  }
  if (fused > 0) add_nodes_after(graph, std::move(keys), dead);
  return fused;
}

}  // namespace ember::converter
