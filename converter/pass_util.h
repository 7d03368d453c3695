// Helpers the converter's passes share (passes.cc, fold.cc, shape_fold.cc, fuse.cc).
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "converter/ir.h"

namespace ember::converter {

inline Diag fail(Status s, std::string message) { return {s, std::move(message)}; }

// The single reader of value `id` (and `id` not a graph output), or -1.
inline int sole_user(const Graph& graph, int id) {
  if (graph.is_graph_output(id)) return -1;
  const std::vector<int> users = graph.users_of(id);
  return users.size() == 1 ? users[0] : -1;
}

// Rebuilds graph.nodes with each of `added` placed right after the node of
// its index (indices ascending), then erases the nodes flagged in `dead`
// (indexed as graph.nodes was): a pass's new nodes and the ones it replaced.
inline void add_nodes_after(Graph& graph, std::vector<std::pair<size_t, Node>> added, const std::vector<bool>& dead) {
  std::vector<Node> nodes;
  std::vector<bool> nodes_dead;
  for (size_t i = 0, next = 0; i < graph.nodes.size(); ++i) {
    nodes.push_back(std::move(graph.nodes[i]));
    nodes_dead.push_back(dead[i]);
    for (; next < added.size() && added[next].first == i; ++next) {
      nodes.push_back(std::move(added[next].second));
      nodes_dead.push_back(false);
    }
  }
  graph.nodes = std::move(nodes);
  graph.erase_nodes(nodes_dead);
}

// The values of a constant int tensor (axes, shapes, pads...).
inline std::vector<int64_t> ints_of(const Tensor& t) {
  if (!t.defined()) return {};
  return t.to_vector<int64_t>();
}

// Sets a value's constant, dtype and static shape.
inline void set_constant(Value& v, Tensor t) {
  v.dtype = t.dtype();
  std::vector<Dim> dims;
  for (int64_t s : t.sizes()) dims.push_back(Dim::fixed(s));
  v.shape = dims;
  v.constant = std::move(t);
}

// If, Loop, Scan (shape_control.cc): the dtype and shape of the node's outputs
// from its subgraphs' outputs (nullopt where unknown; empty when it cannot tell).
std::vector<std::pair<std::optional<DType>, std::optional<std::vector<Dim>>>> infer_control_flow_outputs(
    const Graph& g, const Node& n);
// If node n's output k: its rank in the then and the else branch (nullopt where unknown).
std::pair<std::optional<size_t>, std::optional<size_t>> if_branch_ranks(const Graph& g, const Node& n, size_t k);

// A small constant (at most kMaxInlinedCapture elements: axes, shapes, scalars)
// that control-flow node `node` of `outer` captures becomes a constant of its
// subgraph `sg`, so that the subgraph's shapes can be folded; the subgraph
// input that stood for it stays (unread). control.cc.
constexpr int64_t kMaxInlinedCapture = 64;
void inline_captured_constants(const Graph& outer, const Node& node, Graph& sg);

// A name no value of `taken` has: `name`, else `name`__1, __2, ... (added to
// `taken`). control.cc.
std::string unique_name(const std::string& name, std::set<std::string>& taken);

// The nodes computing subgraph `sg` inside `graph`, with values added to
// `graph` (named uniquely with `taken`): sg's k-th input reads `inputs[k]`
// (-1: left unbound), its k-th output is written as `outputs[k]` (-1: not
// needed). A subgraph output that no subgraph node produces (an input, a
// constant) is copied by an Identity named `name`/output_copy. control.cc.
std::vector<Node> splice_graph(Graph& graph, const Graph& sg, const std::vector<int>& inputs,
                               const std::vector<int>& outputs, const std::string& name,
                               std::set<std::string>& taken);

}  // namespace ember::converter
