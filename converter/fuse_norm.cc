// LayerNorm as exported below opset 17 (passes.h, fuse_layer_norms): nine
// nodes become one LayerNormalization node, lowered to ember's LayerNorm; and
// the erf GELU torch exports below opset 20 (fuse_gelus): five nodes, one Gelu;
// and its Hardswish below opset 14 (fuse_hardswishes): two nodes, one HardSwish.
#include <algorithm>
#include <cmath>

#include "converter/onnx_import.h"
#include "converter/pass_util.h"
#include "converter/passes.h"

namespace ember::converter {

namespace {

// The node producing `id` when it is `op` and `id` has exactly the readers
// `readers` (in any order) and is not a graph output; else nullptr.
const Node* producer_if(const Graph& graph, int id, const char* op, std::vector<int> readers) {
  const int p = graph.producer_of(id);
  if (p < 0 || graph.is_graph_output(id)) return nullptr;
  const Node& n = graph.nodes[static_cast<size_t>(p)];
  std::vector<int> users = graph.users_of(id);
  std::sort(users.begin(), users.end());
  std::sort(readers.begin(), readers.end());
  return n.op_type == op && users == readers ? &n : nullptr;
}

int index_of(const Graph& graph, const Node* n) { return static_cast<int>(n - graph.nodes.data()); }

// Whether n has exactly `count` inputs, all present: a malformed graph reaches
// the passes before the lowering checks arity (an Add of one input read past
// its inputs here: found by tools/fuzz.sh onnx).
bool inputs_are(const Node* n, size_t count) {
  if (n == nullptr || n->inputs.size() != count) return false;
  return std::all_of(n->inputs.begin(), n->inputs.end(), [](int id) { return id >= 0; });
}

// One-element float constant, or nullptr.
const Tensor* scalar_constant(const Graph& graph, int id) {
  if (!graph.is_constant(id)) return nullptr;
  const Tensor& t = graph.value(id).constant;
  return t.numel() == 1 && is_floating(t.dtype()) ? &t : nullptr;
}

// The sole reader of `id` when it is `op` (and `id` not a graph output), else nullptr.
Node* sole_reader(Graph& graph, int id, const char* op) {
  const int u = sole_user(graph, id);
  Node* n = u >= 0 ? &graph.nodes[static_cast<size_t>(u)] : nullptr;
  return n != nullptr && n->op_type == op ? n : nullptr;
}

// Whether `id` is a one-element float constant within 1e-6 of v.
bool near_constant(const Graph& graph, int id, double v) {
  const Tensor* t = scalar_constant(graph, id);
  return t != nullptr && std::abs(t->item().to_double() - v) <= 1e-6 * std::abs(v);
}

// ReduceMean over the last axis only (axes as attribute, or as a constant
// input from opset 18), keeping dims.
bool mean_of_last_axis(const Graph& graph, const Node& n, int64_t rank) {
  if (n.get_int("keepdims", 1) != 1) return false;
  std::vector<int64_t> axes = n.get_ints("axes");
  if (n.inputs.size() > 1 && n.inputs[1] >= 0) {
    if (!graph.is_constant(n.inputs[1])) return false;
    axes = ints_of(graph.value(n.inputs[1]).constant);
  }
  return axes.size() == 1 && (axes[0] == -1 || axes[0] == rank - 1);
}

// The other input of a two-input node, when one input is `id`.
int other_input(const Node& n, int id) {
  if (n.inputs.size() != 2) return -1;
  return n.inputs[0] == id ? n.inputs[1] : (n.inputs[1] == id ? n.inputs[0] : -1);
}

// A constant of shape [d] (the normalized axis), or -1.
int affine_param(const Graph& graph, int id, int64_t d) {
  if (!graph.is_constant(id)) return -1;
  const Tensor& t = graph.value(id).constant;
  return t.dim() == 1 && t.size(0) == d && is_floating(t.dtype()) ? id : -1;
}

}  // namespace

// Div(d, Sqrt(Add(ReduceMean(Pow(d, 2)), eps))) with d = Sub(x, ReduceMean(x)),
// both means over the last axis, then Mul by a constant [D] weight and
// optionally Add of a constant [D] bias: the final node becomes
// LayerNormalization(x, weight[, bias]) (axis -1, epsilon eps) and the others
// are removed. Every intermediate value must have only the readers of the
// pattern.
int fuse_layer_norms(Graph& graph) {
  int fused = 0;
  std::vector<bool> dead(graph.nodes.size(), false);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& div = graph.nodes[i];
    if (div.op_type != "Div" || !inputs_are(&div, 2) || div.outputs.size() != 1 || div.outputs[0] < 0) continue;
    const int me = static_cast<int>(i);
    const Node* sub = graph.producer_of(div.inputs[0]) >= 0
                          ? &graph.nodes[static_cast<size_t>(graph.producer_of(div.inputs[0]))]
                          : nullptr;
    const Node* sqrt = producer_if(graph, div.inputs[1], "Sqrt", {me});
    if (!inputs_are(sub, 2) || sub->op_type != "Sub" || !inputs_are(sqrt, 1)) continue;
    const int x = sub->inputs[0], d = div.inputs[0];
    const auto& shape = graph.value(x).shape;
    if (!shape || shape->empty() || !shape->back().is_static()) continue;
    const int64_t rank = static_cast<int64_t>(shape->size()), dim = shape->back().value;
    const Node* mean = producer_if(graph, sub->inputs[1], "ReduceMean", {index_of(graph, sub)});
    if (mean == nullptr || mean->inputs.empty() || mean->inputs[0] != x || !mean_of_last_axis(graph, *mean, rank)) {
      continue;
    }
    const Node* add_eps = producer_if(graph, sqrt->inputs[0], "Add", {index_of(graph, sqrt)});
    if (!inputs_are(add_eps, 2)) continue;
    const Node* var = nullptr;
    const Tensor* eps = nullptr;
    for (int k = 0; k < 2 && var == nullptr; ++k) {
      eps = scalar_constant(graph, add_eps->inputs[static_cast<size_t>(1 - k)]);
      var = producer_if(graph, add_eps->inputs[static_cast<size_t>(k)], "ReduceMean", {index_of(graph, add_eps)});
    }
    if (var == nullptr || var->inputs.empty() || eps == nullptr || !mean_of_last_axis(graph, *var, rank)) continue;
    const Node* pow = producer_if(graph, var->inputs[0], "Pow", {index_of(graph, var)});
    if (!inputs_are(pow, 2) || pow->inputs[0] != d) continue;
    const Tensor* two = scalar_constant(graph, pow->inputs[1]);
    if (two == nullptr || two->item().to_double() != 2.0) continue;
    if (producer_if(graph, d, "Sub", {index_of(graph, pow), me}) == nullptr) continue;
    // The affine part: Mul by the weight, then (optionally) Add of the bias.
    const std::vector<int> mul_users = graph.users_of(div.outputs[0]);
    if (mul_users.size() != 1 || graph.is_graph_output(div.outputs[0])) continue;
    Node& mul = graph.nodes[static_cast<size_t>(mul_users[0])];
    const int weight = mul.op_type == "Mul" ? affine_param(graph, other_input(mul, div.outputs[0]), dim) : -1;
    if (weight < 0 || mul.outputs.size() != 1 || mul.outputs[0] < 0) continue;
    Node* last = &mul;
    int bias = -1;
    const std::vector<int> add_users = graph.users_of(mul.outputs[0]);
    if (add_users.size() == 1 && !graph.is_graph_output(mul.outputs[0])) {
      Node& add = graph.nodes[static_cast<size_t>(add_users[0])];
      bias = add.op_type == "Add" ? affine_param(graph, other_input(add, mul.outputs[0]), dim) : -1;
      if (bias >= 0) last = &add;
    }
    const double epsilon = eps->item().to_double();
    const Node* const pattern[] = {mean, sub, pow, var, add_eps, sqrt, &graph.nodes[i]};
    for (const Node* n : pattern) {
      dead[static_cast<size_t>(index_of(graph, n))] = true;
    }
    if (last != &mul) dead[static_cast<size_t>(mul_users[0])] = true;
    last->op_type = "LayerNormalization";
    last->kind = map_onnx_op("LayerNormalization");
    last->inputs = bias >= 0 ? std::vector<int>{x, weight, bias} : std::vector<int>{x, weight};
    last->attrs = {{"axis", int64_t{-1}}, {"epsilon", epsilon}};
    ++fused;
  }
  graph.erase_nodes(dead);
  return fused;
}

int fuse_gelus(Graph& graph) {
  int fused = 0;
  std::vector<bool> dead(graph.nodes.size(), false);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& erf = graph.nodes[i];
    if (erf.op_type != "Erf" || erf.inputs.size() != 1 || erf.outputs.empty() || erf.outputs[0] < 0) continue;
    const Node* div = producer_if(graph, erf.inputs[0], "Div", {static_cast<int>(i)});
    if (div == nullptr || div->inputs.size() != 2 || !near_constant(graph, div->inputs[1], std::sqrt(2.0))) continue;
    const int x = div->inputs[0];
    Node* add = sole_reader(graph, erf.outputs[0], "Add");
    if (add == nullptr || !near_constant(graph, other_input(*add, erf.outputs[0]), 1.0)) continue;
    Node* mul = sole_reader(graph, add->outputs[0], "Mul");
    if (mul == nullptr || other_input(*mul, add->outputs[0]) != x) continue;
    Node* half = sole_reader(graph, mul->outputs[0], "Mul");
    if (half == nullptr || !near_constant(graph, other_input(*half, mul->outputs[0]), 0.5)) continue;
    for (const Node* n : {div, &erf, static_cast<const Node*>(add), static_cast<const Node*>(mul)}) {
      dead[static_cast<size_t>(index_of(graph, n))] = true;
    }
    half->op_type = "Gelu";
    half->kind = map_onnx_op("Gelu");
    half->inputs = {x};
    half->attrs = {};
    ++fused;
  }
  graph.erase_nodes(dead);
  return fused;
}

int fuse_hardswishes(Graph& graph) {
  int fused = 0;
  std::vector<bool> dead(graph.nodes.size(), false);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& hs = graph.nodes[i];
    if (hs.op_type != "HardSigmoid" || !inputs_are(&hs, 1) || hs.outputs.size() != 1 || hs.outputs[0] < 0) continue;
    if (std::abs(hs.get_float("alpha", 0.2) - 1.0 / 6.0) > 1e-6 || std::abs(hs.get_float("beta", 0.5) - 0.5) > 1e-6) {
      continue;
    }
    const int x = hs.inputs[0];
    Node* mul = sole_reader(graph, hs.outputs[0], "Mul");
    if (mul == nullptr || other_input(*mul, hs.outputs[0]) != x) continue;
    dead[i] = true;
    mul->op_type = "HardSwish";
    mul->kind = map_onnx_op("HardSwish");
    mul->inputs = {x};
    mul->attrs = {};
    ++fused;
  }
  graph.erase_nodes(dead);
  return fused;
}

}  // namespace ember::converter
