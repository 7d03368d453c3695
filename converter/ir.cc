#include "converter/ir.h"

#include <algorithm>
#include <set>

#include "runtime/core/check.h"

namespace ember::converter {

std::optional<Shape> Value::static_shape() const {
  if (!shape) return std::nullopt;
  Shape s;
  for (const Dim& d : *shape) {
    if (!d.is_static()) return std::nullopt;
    s.push_back(d.value);
  }
  return s;
}

int64_t Node::get_int(const std::string& attr, int64_t fallback) const {
  auto it = attrs.find(attr);
  if (it == attrs.end()) return fallback;
  if (const auto* v = std::get_if<int64_t>(&it->second)) return *v;
  if (const auto* f = std::get_if<double>(&it->second)) return static_cast<int64_t>(*f);
  return fallback;
}

double Node::get_float(const std::string& attr, double fallback) const {
  auto it = attrs.find(attr);
  if (it == attrs.end()) return fallback;
  if (const auto* v = std::get_if<double>(&it->second)) return *v;
  if (const auto* i = std::get_if<int64_t>(&it->second)) return static_cast<double>(*i);
  return fallback;
}

std::string Node::get_string(const std::string& attr, const std::string& fallback) const {
  auto it = attrs.find(attr);
  if (it == attrs.end()) return fallback;
  if (const auto* v = std::get_if<std::string>(&it->second)) return *v;
  return fallback;
}

std::vector<int64_t> Node::get_ints(const std::string& attr, std::vector<int64_t> fallback) const {
  auto it = attrs.find(attr);
  if (it == attrs.end()) return fallback;
  if (const auto* v = std::get_if<std::vector<int64_t>>(&it->second)) return *v;
  if (const auto* i = std::get_if<int64_t>(&it->second)) return {*i};
  return fallback;
}

std::vector<double> Node::get_floats(const std::string& attr) const {
  auto it = attrs.find(attr);
  if (it == attrs.end()) return {};
  if (const auto* v = std::get_if<std::vector<double>>(&it->second)) return *v;
  return {};
}

std::vector<std::string> Node::get_strings(const std::string& attr) const {
  auto it = attrs.find(attr);
  if (it == attrs.end()) return {};
  if (const auto* v = std::get_if<std::vector<std::string>>(&it->second)) return *v;
  if (const auto* s = std::get_if<std::string>(&it->second)) return {*s};
  return {};
}

std::string Node::label() const { return op_type + " '" + name + "'"; }

int Graph::add_value(Value v) {
  values.push_back(std::move(v));
  return static_cast<int>(values.size()) - 1;
}

int Graph::add_constant(const std::string& name, Tensor t) {
  Value v;
  v.name = name;
  v.dtype = t.dtype();
  std::vector<Dim> dims;
  for (int64_t s : t.sizes()) dims.push_back(Dim::fixed(s));
  v.shape = dims;
  v.constant = std::move(t);
  return add_value(std::move(v));
}

int Graph::find_value(const std::string& name) const {
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

bool Graph::is_graph_output(int id) const {
  return std::find(outputs.begin(), outputs.end(), id) != outputs.end();
}

bool Graph::is_graph_input(int id) const {
  return std::find(inputs.begin(), inputs.end(), id) != inputs.end();
}

int Graph::producer_of(int id) const {
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (int o : nodes[i].outputs) {
      if (o == id) return static_cast<int>(i);
    }
  }
  return -1;
}

std::vector<int> Graph::users_of(int id) const {
  std::vector<int> users;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const auto& in = nodes[i].inputs;
    if (std::find(in.begin(), in.end(), id) != in.end()) users.push_back(static_cast<int>(i));
  }
  return users;
}

void Graph::replace_uses(int from, int to) {
  for (Node& n : nodes) {
    for (int& i : n.inputs) {
      if (i == from) i = to;
    }
  }
  for (int& o : outputs) {
    if (o == from) o = to;
  }
}

void Graph::erase_nodes(const std::vector<bool>& dead) {
  std::vector<Node> kept;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (i >= dead.size() || !dead[i]) kept.push_back(std::move(nodes[i]));
  }
  nodes = std::move(kept);
}

int Graph::compact() {
  std::vector<bool> used(values.size(), false);
  auto mark = [&](int id) {
    if (id >= 0) used[static_cast<size_t>(id)] = true;
  };
  for (const Node& n : nodes) {
    for (int i : n.inputs) mark(i);
    for (int o : n.outputs) mark(o);
  }
  for (int i : inputs) mark(i);
  for (int o : outputs) mark(o);
  std::vector<int> remap(values.size(), -1);
  std::vector<Value> kept;
  for (size_t i = 0; i < values.size(); ++i) {
    if (!used[i]) continue;
    remap[i] = static_cast<int>(kept.size());
    kept.push_back(std::move(values[i]));
  }
  const int dropped = static_cast<int>(values.size() - kept.size());
  values = std::move(kept);
  auto fix = [&](int& id) {
    if (id >= 0) id = remap[static_cast<size_t>(id)];
  };
  for (Node& n : nodes) {
    for (int& i : n.inputs) fix(i);
    for (int& o : n.outputs) fix(o);
  }
  for (int& i : inputs) fix(i);
  for (int& o : outputs) fix(o);
  return dropped;
}

std::map<std::string, int> Graph::op_histogram() const {
  std::map<std::string, int> h;
  for (const Node& n : nodes) ++h[n.op_type];
  return h;
}

Diag Graph::validate() const {
  const int n_values = static_cast<int>(values.size());
  std::vector<bool> ready(values.size(), false);
  for (int i : inputs) {
    if (i < 0 || i >= n_values) return {Status::InvalidModel, "graph input id out of range"};
    ready[static_cast<size_t>(i)] = true;
  }
  for (int i = 0; i < n_values; ++i) {
    if (values[static_cast<size_t>(i)].is_constant()) ready[static_cast<size_t>(i)] = true;
  }
  for (const Node& n : nodes) {
    for (int i : n.inputs) {
      if (i < -1 || i >= n_values) return {Status::InvalidModel, n.label() + ": input id out of range"};
      if (i >= 0 && !ready[static_cast<size_t>(i)]) {
        return {Status::InvalidModel, n.label() + ": input '" + values[static_cast<size_t>(i)].name +
                                          "' is not produced before it is read"};
      }
    }
    for (int o : n.outputs) {
      if (o < -1 || o >= n_values) return {Status::InvalidModel, n.label() + ": output id out of range"};
      if (o >= 0 && ready[static_cast<size_t>(o)]) {
        return {Status::InvalidModel, n.label() + ": output '" + values[static_cast<size_t>(o)].name +
                                          "' is produced twice"};
      }
      if (o >= 0) ready[static_cast<size_t>(o)] = true;
    }
  }
  for (int o : outputs) {
    if (o < 0 || o >= n_values || !ready[static_cast<size_t>(o)]) {
      return {Status::InvalidModel, "a graph output is never produced"};
    }
  }
  return Diag::success();
}

}  // namespace ember::converter
