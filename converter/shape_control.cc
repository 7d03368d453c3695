// Shape inference for If, Loop and Scan (pass_util.h: infer_control_flow_outputs):
// a copy of each subgraph gets its inputs' dtypes and shapes from the node's
// inputs (as lower_control.cc gives them when it lowers the subgraph), is
// completed by infer_missing_shapes(), and its outputs give the node's.
#include "converter/pass_util.h"
#include "converter/passes.h"

namespace ember::converter {

namespace {

using Dims = std::vector<Dim>;
using Out = std::pair<std::optional<DType>, std::optional<Dims>>;

const Graph* subgraph(const Node& n, const std::string& attr) {
  for (size_t k = 0; k < n.graphs.size() && k < n.graph_attrs.size(); ++k)
    if (n.graph_attrs[k] == attr) return &n.graphs[k];
  return nullptr;
}

Out value_of(const Graph& g, int id) {
  if (id < 0) return {};
  const Value& v = g.value(id);
  if (v.is_constant()) {
    Dims d;
    for (int64_t s : v.constant.sizes()) d.push_back(Dim::fixed(s));
    return {v.constant.dtype(), d};
  }
  return {v.dtype, v.shape};
}

void complete(Value& v, const Out& o) {
  if (!v.dtype) v.dtype = o.first;
  if (!v.shape) v.shape = o.second;
}

// `sg` (a copy of one of n's subgraphs) with its inputs completed from g's
// values and its own values inferred.
Graph seeded(const Graph& g, const Node& n, Graph sg) {
  const size_t n_in = n.inputs.size(), n_cap = static_cast<size_t>(n.captured);
  if (sg.inputs.size() < n_cap || n_in < n_cap) return sg;
  inline_captured_constants(g, n, sg);
  for (size_t i = 0; i < n_cap; ++i)
    complete(sg.value(sg.inputs[sg.inputs.size() - n_cap + i]), value_of(g, n.inputs[n_in - n_cap + i]));
  auto rank_only = [](Out o) {
    if (o.second) o.second = Dims(o.second->size());
    return o;
  };
  if (n.op_type == "Loop" && sg.inputs.size() >= 2) {
    complete(sg.value(sg.inputs[0]), {DType::Int64, Dims{}});
    complete(sg.value(sg.inputs[1]), {DType::Bool, Dims{}});
    for (size_t j = 2; j + n_cap < sg.inputs.size() && j < n_in; ++j)
      complete(sg.value(sg.inputs[j]), rank_only(value_of(g, n.inputs[j])));  // a carried shape may change
  } else if (n.op_type == "Scan") {
    const size_t scans = static_cast<size_t>(n.get_int("num_scan_inputs", 0));
    if (n_in < n_cap + scans) return sg;
    const size_t states = n_in - n_cap - scans;
    const std::vector<int64_t> axes = n.get_ints("scan_input_axes", std::vector<int64_t>(scans, 0));
    for (size_t j = 0; j < states + scans && j + n_cap < sg.inputs.size(); ++j) {
      Out o = value_of(g, n.inputs[j]);
      if (j >= states && o.second) {  // one step of the sequence: its axis removed
        const int64_t r = static_cast<int64_t>(o.second->size());
        int64_t a = j - states < axes.size() ? axes[j - states] : 0;
        if (a < 0) a += r;
        if (a < 0 || a >= r) continue;
        o.second->erase(o.second->begin() + a);
        o = rank_only(o);
      }
      complete(sg.value(sg.inputs[j]), o);
    }
  }
  infer_missing_shapes(sg);
  return sg;
}

// Two sources of one output (the branches; a loop's initial and final
// values): a dim they disagree on is unknown; ranks that differ, no shape.
Out join(Out a, const Out& b) {
  if (!a.first) a.first = b.first;
  if (!a.second || !b.second || a.second->size() != b.second->size()) return {a.first, std::nullopt};
  for (size_t d = 0; d < a.second->size(); ++d)
    if (!((*a.second)[d] == (*b.second)[d])) (*a.second)[d] = Dim{};
  return a;
}

}  // namespace

std::pair<std::optional<size_t>, std::optional<size_t>> if_branch_ranks(const Graph& g, const Node& n, size_t k) {
  const Graph* t = subgraph(n, "then_branch");
  const Graph* e = subgraph(n, "else_branch");
  if (n.op_type != "If" || t == nullptr || e == nullptr || k >= t->outputs.size() || k >= e->outputs.size()) return {};
  auto rank = [&](const Graph& b) -> std::optional<size_t> {
    const Graph s = seeded(g, n, b);
    const std::optional<Dims> d = value_of(s, s.outputs[k]).second;
    return d ? std::optional<size_t>(d->size()) : std::nullopt;
  };
  return {rank(*t), rank(*e)};
}

std::vector<Out> infer_control_flow_outputs(const Graph& g, const Node& n) {
  std::vector<Out> outs;
  if (n.op_type == "If") {
    const Graph* t = subgraph(n, "then_branch");
    const Graph* e = subgraph(n, "else_branch");
    if (t == nullptr || e == nullptr || t->outputs.size() != n.outputs.size() || e->outputs.size() != n.outputs.size())
      return {};
    const Graph ts = seeded(g, n, *t), es = seeded(g, n, *e);
    for (size_t k = 0; k < n.outputs.size(); ++k) outs.push_back(join(value_of(ts, ts.outputs[k]), value_of(es, es.outputs[k])));
    return outs;
  }
  const bool loop = n.op_type == "Loop";
  if (!loop && n.op_type != "Scan") return {};
  const Graph* b = subgraph(n, "body");
  if (b == nullptr) return {};
  const int64_t scan_inputs = loop ? 0 : n.get_int("num_scan_inputs", 0);
  const int64_t first = loop ? 2 : 0;  // the first state input
  const int64_t states = static_cast<int64_t>(n.inputs.size()) - n.captured - first - scan_inputs;
  const int64_t body_first = loop ? 1 : 0;  // the body's first state output
  if (states < 0 || static_cast<int64_t>(b->outputs.size()) != body_first + static_cast<int64_t>(n.outputs.size()))
    return {};
  const Graph body = seeded(g, n, *b);
  Dim steps;  // Scan: the sequences' length
  if (!loop && scan_inputs > 0) {
    const std::optional<Dims> x = value_of(g, n.inputs[static_cast<size_t>(states)]).second;
    const std::vector<int64_t> axes = n.get_ints("scan_input_axes", {0});
    if (x && !axes.empty()) {
      const int64_t a = axes[0] < 0 ? axes[0] + static_cast<int64_t>(x->size()) : axes[0];
      if (a >= 0 && a < static_cast<int64_t>(x->size())) steps = (*x)[static_cast<size_t>(a)];
    }
  }
  const std::vector<int64_t> out_axes = n.get_ints("scan_output_axes", {});
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    Out o = value_of(body, body.outputs[static_cast<size_t>(body_first) + k]);
    if (static_cast<int64_t>(k) < states) {
      const int init = n.inputs[static_cast<size_t>(first) + k];
      outs.push_back(join(o, value_of(g, init)));
      continue;
    }
    if (o.second) {
      const size_t j = k - static_cast<size_t>(states);
      int64_t a = loop || j >= out_axes.size() ? 0 : out_axes[j];
      if (a < 0) a += static_cast<int64_t>(o.second->size()) + 1;
      if (a < 0 || a > static_cast<int64_t>(o.second->size())) return {};
      o.second->insert(o.second->begin() + a, loop ? Dim{} : steps);
    }
    outs.push_back(o);
  }
  return outs;
}

}  // namespace ember::converter
