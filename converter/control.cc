// Control flow in the converter IR (passes.h): If nodes of constant condition
// inlined, graph inputs fixed to constants (ember convert --fix-input). The
// If, Loop and Scan nodes that are left become ember ops (lower_control.cc).
#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "converter/pass_util.h"
#include "converter/passes.h"

namespace ember::converter {

bool is_control_flow_op(const std::string& op_type) {
  return op_type == "If" || op_type == "Loop" || op_type == "Scan";
}

std::string unique_name(const std::string& name, std::set<std::string>& taken) {
  std::string out = name;
  for (int i = 1; taken.count(out); ++i) out = name + "__" + std::to_string(i);
  taken.insert(out);
  return out;
}

std::vector<Node> splice_graph(Graph& graph, const Graph& sg, const std::vector<int>& inputs,
                               const std::vector<int>& outputs, const std::string& name,
                               std::set<std::string>& taken) {
  std::vector<int> map(sg.values.size(), -1);
  for (size_t k = 0; k < inputs.size() && k < sg.inputs.size(); ++k) {
    map[static_cast<size_t>(sg.inputs[k])] = inputs[k];
  }
  std::vector<bool> produced(sg.values.size(), false);
  for (const Node& n : sg.nodes) {
    for (int o : n.outputs) {
      if (o >= 0) produced[static_cast<size_t>(o)] = true;
    }
  }
  std::vector<std::pair<int, int>> copies;  // (subgraph value, outer output) copied by an Identity
  for (size_t k = 0; k < sg.outputs.size() && k < outputs.size(); ++k) {
    const int b = sg.outputs[k], o = outputs[k];
    if (o < 0) continue;
    if (produced[static_cast<size_t>(b)] && map[static_cast<size_t>(b)] < 0) {
      map[static_cast<size_t>(b)] = o;
    } else {
      copies.emplace_back(b, o);
    }
  }
  auto mapped = [&](int id) {
    if (id < 0) return -1;
    int& m = map[static_cast<size_t>(id)];
    if (m >= 0) return m;
    Value v = sg.value(id);
    v.name = unique_name(v.name, taken);
    m = graph.add_value(std::move(v));
    return m;
  };
  std::vector<Node> out;
  for (const Node& n : sg.nodes) {
    Node c = n;
    for (int& i : c.inputs) i = mapped(i);
    for (int& o : c.outputs) o = mapped(o);
    out.push_back(std::move(c));
  }
  for (const auto& [b, o] : copies) {
    Node id;
    id.name = name + "/output_copy";
    id.op_type = "Identity";
    id.kind = map_onnx_op("Identity");
    id.inputs = {mapped(b)};
    id.outputs = {o};
    out.push_back(std::move(id));
  }
  return out;
}

namespace {

// The branch of If node `node` its constant condition takes, or nullptr.
const Graph* taken_branch(const Graph& graph, const Node& node) {
  if (node.op_type != "If" || node.inputs.empty() || !graph.is_constant(node.inputs[0])) return nullptr;
  const Tensor& c = graph.value(node.inputs[0]).constant;
  if (c.numel() != 1) return nullptr;
  const bool cond = c.reshape({1}).item().to_double() != 0.0;
  const std::string want = cond ? "then_branch" : "else_branch";
  for (size_t k = 0; k < node.graphs.size() && k < node.graph_attrs.size(); ++k) {
    if (node.graph_attrs[k] == want) return &node.graphs[k];
  }
  return nullptr;
}

// The nodes that replace If `node` (its branch `branch`): the captured values
// are the node's last inputs and the branch's last inputs.
std::vector<Node> splice_branch(Graph& graph, const Node& node, const Graph& branch, std::set<std::string>& taken) {
  std::vector<int> inputs(branch.inputs.size(), -1);
  const size_t n_cap = static_cast<size_t>(node.captured);
  for (size_t i = 0; i < n_cap && i < branch.inputs.size(); ++i) {
    inputs[branch.inputs.size() - n_cap + i] = node.inputs[node.inputs.size() - n_cap + i];
  }
  return splice_graph(graph, branch, inputs, node.outputs, node.name, taken);
}

}  // namespace

void inline_captured_constants(const Graph& outer, const Node& node, Graph& sg) {
  const size_t n_in = node.inputs.size(), n_cap = static_cast<size_t>(node.captured);
  if (sg.inputs.size() < n_cap || n_in < n_cap) return;
  for (size_t i = 0; i < n_cap; ++i) {
    const int o = node.inputs[n_in - n_cap + i];
    if (!outer.is_constant(o) || outer.value(o).constant.numel() > kMaxInlinedCapture) continue;
    const int in = sg.inputs[sg.inputs.size() - n_cap + i];
    if (sg.users_of(in).empty()) continue;
    const int c = sg.add_constant(sg.value(in).name + "__captured", outer.value(o).constant);
    for (Node& n : sg.nodes)  // node inputs only: a subgraph output stays the input
      std::replace(n.inputs.begin(), n.inputs.end(), in, c);
    }
}

int inline_constant_ifs(Graph& graph) {
  int inlined = 0;
  std::set<std::string> taken;
  for (const Value& v : graph.values) taken.insert(v.name);
  std::vector<Node> nodes;
  nodes.reserve(graph.nodes.size());
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    Node& node = graph.nodes[i];
    const Graph* branch = taken_branch(graph, node);
    bool ok = branch != nullptr && branch->outputs.size() == node.outputs.size() &&
              branch->inputs.size() >= static_cast<size_t>(node.captured);
    if (!ok) {
      nodes.push_back(std::move(node));
      continue;
    }
    const Graph b = *branch;  // the node (and its branches) go away below
    const Node n = std::move(node);
    for (Node& c : splice_branch(graph, n, b, taken)) nodes.push_back(std::move(c));
    ++inlined;
  }
  graph.nodes = std::move(nodes);
  return inlined;
}

Diag fix_input_shapes(Graph& graph, const InputShapes& shapes) {
  for (const auto& entry : shapes) {
    const std::string& name = entry.first;  // (a structured binding cannot be captured in C++17)
    const std::vector<int64_t>& dims = entry.second;
    auto it = std::find_if(graph.inputs.begin(), graph.inputs.end(),
                           [&](int id) { return graph.value(id).name == name; });
    const std::string what = "--input-shape " + name;
    if (it == graph.inputs.end()) {
      std::string names;
      for (int id : graph.inputs) names += (names.empty() ? "" : ", ") + graph.value(id).name;
      return fail(Status::InvalidArgument, "--input-shape: the model has no input '" + name + "' (its inputs: " +
                                               (names.empty() ? "none" : names) + ")");
    }
    Value& v = graph.value(*it);
    if (v.shape && v.shape->size() != dims.size()) {
      return fail(Status::InvalidArgument, what + ": the input has rank " + std::to_string(v.shape->size()) + ", " +
                                               std::to_string(dims.size()) + " dims given");
    }
    std::vector<Dim> out;
    for (size_t d = 0; d < dims.size(); ++d) {
      if (dims[d] < 0) return fail(Status::InvalidArgument, what + ": dim " + std::to_string(d) + " is negative");
      if (v.shape && (*v.shape)[d].is_static() && (*v.shape)[d].value != dims[d]) {
        return fail(Status::InvalidArgument, what + ": dim " + std::to_string(d) + " of the input is " +
                                                 std::to_string((*v.shape)[d].value) + ", not " +
                                                 std::to_string(dims[d]));
      }
      out.push_back(Dim::fixed(dims[d]));
    }
    v.shape = out;
  }
  return Diag::success();
}

Diag fix_inputs(Graph& graph, const FixedInputs& fixed) {
  for (const auto& entry : fixed) {
    const std::string& name = entry.first;
    const std::vector<double>& values = entry.second;
    auto it = std::find_if(graph.inputs.begin(), graph.inputs.end(),
                           [&](int id) { return graph.value(id).name == name; });
    if (it == graph.inputs.end()) {
      std::string names;
      for (int id : graph.inputs) names += (names.empty() ? "" : ", ") + graph.value(id).name;
      return fail(Status::InvalidArgument, "--fix-input: the model has no input '" + name + "' (its inputs: " +
                                               (names.empty() ? "none" : names) + ")");
    }
    Value& v = graph.value(*it);
    const std::string what = "--fix-input " + name;
    if (!v.dtype) return fail(Status::InvalidArgument, what + ": the input's dtype is not known");
    if (!v.shape) return fail(Status::InvalidArgument, what + ": the input's rank is not known");
    const int64_t count = static_cast<int64_t>(values.size());
    Shape shape;
    int64_t known = 1;
    int unknown = -1;
    for (size_t d = 0; d < v.shape->size(); ++d) {
      const Dim& dim = (*v.shape)[d];
      if (!dim.is_static()) {
        if (unknown >= 0) {
          return fail(Status::InvalidArgument, what + ": the input's shape has more than one dim that is not "
                                                      "fixed; its values cannot be given a shape");
        }
        unknown = static_cast<int>(d);
        shape.push_back(-1);
        continue;
      }
      known *= dim.value;
      shape.push_back(dim.value);
    }
    if (unknown >= 0) {
      if (known == 0 || count % known != 0) {
        return fail(Status::InvalidArgument, what + ": " + std::to_string(count) + " values do not fill a whole "
                                                    "number of the input's other dims (" + std::to_string(known) + ")");
      }
      shape[static_cast<size_t>(unknown)] = count / known;
    } else if (known != count) {
      return fail(Status::InvalidArgument, what + ": the input has " + std::to_string(known) + " element" +
                                               (known == 1 ? "" : "s") + " (shape " + shape_str(shape) + "), " +
                                               std::to_string(count) + " value" + (count == 1 ? "" : "s") + " given");
    }
    const DType dt = *v.dtype;
    const bool integral = !is_floating(dt);
    for (double x : values) {
      if (integral && x != std::floor(x)) {
        return fail(Status::InvalidArgument, what + ": the input is " + std::string(dtype_name(dt)) + "; " +
                                                 std::to_string(x) + " is not an integer");
      }
    }
    Tensor t = tensor(values, shape).to(dt);
    set_constant(v, std::move(t));
    graph.inputs.erase(it);
  }
  return Diag::success();
}

}  // namespace ember::converter
