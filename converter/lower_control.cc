// If, Loop and Scan that the passes left (an If of constant condition is
// inlined by control.cc): ember's If / Loop / Scan ops, each subgraph lowered
// by a Lowerer of its own into the model's subgraphs (ModelDef::subgraphs).
#include "converter/lowerer.h"
#include "converter/pass_util.h"
#include "converter/passes.h"

namespace ember::converter::lowering {

namespace {

// The subgraph named `attr` of `n`.
const Graph& subgraph_of(const Node& n, const std::string& attr) {
  for (size_t k = 0; k < n.graphs.size() && k < n.graph_attrs.size(); ++k)
    if (n.graph_attrs[k] == attr) return n.graphs[k];
  refuse("has no " + attr + " subgraph");
}

// Sets what `v` lacks from dtype `dt` and shape `shape`.
void complete(Value& v, std::optional<DType> dt, std::optional<std::vector<Dim>> shape) {
  if (!v.dtype) v.dtype = dt;
  if (!v.shape) v.shape = std::move(shape);
}

std::vector<Dim> unknown_dims(size_t rank) { return std::vector<Dim>(rank); }

}  // namespace

int32_t Lowerer::lower_subgraph(const Node& n, Graph sg, const std::string& attr) {
  const size_t n_in = n.inputs.size(), n_cap = static_cast<size_t>(n.captured);
  if (sg.inputs.size() < n_cap) refuse(attr + " has fewer inputs than the values it captures");
  auto outer = [&](int id, bool keep_dims) -> std::pair<std::optional<DType>, std::optional<std::vector<Dim>>> {
    if (id < 0) return {};
    std::optional<std::vector<Dim>> d;
    if (val(id).is_constant() || val(id).shape) d = dims_of(id, "input");
    if (!keep_dims && d) d = unknown_dims(d->size());
    return {dtype_of(id), d};
  };
  // Captured values: the node's last inputs.
  for (size_t i = 0; i < n_cap; ++i) {
    auto [dt, shape] = outer(n.inputs[n_in - n_cap + i], true);
    complete(sg.value(sg.inputs[sg.inputs.size() - n_cap + i]), dt, shape);
  }
  if (n.op_type == "Loop") {
    if (sg.inputs.size() < 2) refuse("body has fewer than 2 inputs (iteration, condition)");
    complete(sg.value(sg.inputs[0]), DType::Int64, std::vector<Dim>{});
    complete(sg.value(sg.inputs[1]), DType::Bool, std::vector<Dim>{});
    for (size_t j = 2; j + n_cap < sg.inputs.size() && j < n_in; ++j) {
      auto [dt, shape] = outer(n.inputs[j], false);  // a carried value's shape may change
      complete(sg.value(sg.inputs[j]), dt, shape);
    }
  } else if (n.op_type == "Scan") {
    const size_t scans = static_cast<size_t>(n.get_int("num_scan_inputs", 0));
    const size_t states = n_in - n_cap - scans;
    const std::vector<int64_t> axes = n.get_ints("scan_input_axes", std::vector<int64_t>(scans, 0));
    for (size_t j = 0; j < states + scans && j < sg.inputs.size(); ++j) {
      auto [dt, shape] = outer(n.inputs[j], j < states);
      if (j >= states && shape) {  // one step of the sequence: its axis removed
        const int64_t r = static_cast<int64_t>(shape->size());
        int64_t a = j - states < axes.size() ? axes[j - states] : 0;
        if (a < 0) a += r;
        if (a < 0 || a >= r) refuse("scan_input_axes " + join_ints(axes) + " out of range for scan input rank " +
                                    std::to_string(r));
        shape->erase(shape->begin() + a);
      }
      complete(sg.value(sg.inputs[j]), dt, shape);
    }
  }
  inline_captured_constants(g_, n, sg);
  auto passes = run_passes(sg);
  if (!passes.ok()) refuse(attr + ": " + passes.diag().message);
  infer_missing_shapes(sg);
  Diag valid = sg.validate();
  if (!valid.ok()) refuse(attr + ": " + valid.message);
  Expected<ModelDef> def = Lowerer(sg, subgraphs_).run();
  if (!def.ok()) refuse(attr + ": " + def.diag().message);
  subgraphs_->push_back(std::move(*def));
  return static_cast<int32_t>(subgraphs_->size() - 1);
}

void Lowerer::lower_control(const Node& n) {
  const ModelDef* body = nullptr;  // the subgraph that gives the outputs' dtypes
  size_t first_out = 0;            // its output the node's output 0 is
  OpParams params;
  if (n.op_type == "If") {
    IfParams p;
    p.then_graph = lower_subgraph(n, subgraph_of(n, "then_branch"), "then_branch");
    p.else_graph = lower_subgraph(n, subgraph_of(n, "else_branch"), "else_branch");
    body = &(*subgraphs_)[static_cast<size_t>(p.then_graph)];
    params = p;
  } else if (n.op_type == "Loop") {
    LoopParams p;
    const int64_t carried = static_cast<int64_t>(n.inputs.size()) - 2 - n.captured;
    if (carried < 0 || carried > static_cast<int64_t>(n.outputs.size())) refuse("has too few inputs or outputs");
    p.carried = static_cast<int32_t>(carried);
    p.body = lower_subgraph(n, subgraph_of(n, "body"), "body");
    body = &(*subgraphs_)[static_cast<size_t>(p.body)];
    first_out = 1;
    params = p;
  } else {
    ScanLoopParams p;
    const int64_t scans = n.get_int("num_scan_inputs", 0);
    const int64_t states = static_cast<int64_t>(n.inputs.size()) - n.captured - scans;
    const int64_t scan_outs = static_cast<int64_t>(n.outputs.size()) - states;
    if (scans < 1 || scans > kMaxScanValues || states < 0 || scan_outs < 0 || scan_outs > kMaxScanValues)
      refuse("num_scan_inputs " + std::to_string(scans) + " does not fit its " + std::to_string(n.inputs.size()) +
             " inputs and " + std::to_string(n.outputs.size()) + " outputs (at most " +
             std::to_string(kMaxScanValues) + " scan inputs and outputs)");
    p.state = static_cast<int32_t>(states);
    p.scan_inputs = static_cast<int32_t>(scans);
    auto read = [&](const char* attr, int64_t count, auto* out, bool direction) {
      const std::vector<int64_t> v = n.get_ints(attr, std::vector<int64_t>(static_cast<size_t>(count), 0));
      if (static_cast<int64_t>(v.size()) != count)
        refuse(std::string(attr) + " has " + std::to_string(v.size()) + " values, expected " + std::to_string(count));
      for (int64_t j = 0; j < count; ++j) {
        if (direction && v[static_cast<size_t>(j)] != 0 && v[static_cast<size_t>(j)] != 1)
          refuse(std::string(attr) + " " + join_ints(v) + ": directions are 0 or 1");
        out[j] = static_cast<std::remove_reference_t<decltype(out[0])>>(v[static_cast<size_t>(j)]);
      }
    };
    read("scan_input_axes", scans, p.input_axes, false);
    read("scan_input_directions", scans, p.input_reverse, true);
    read("scan_output_axes", scan_outs, p.output_axes, false);
    read("scan_output_directions", scan_outs, p.output_reverse, true);
    p.body = lower_subgraph(n, subgraph_of(n, "body"), "body");
    body = &(*subgraphs_)[static_cast<size_t>(p.body)];
    params = p;
  }
  if (body->outputs.size() != first_out + n.outputs.size())
    refuse("its subgraph has " + std::to_string(body->outputs.size()) + " outputs, expected " +
           std::to_string(first_out + n.outputs.size()));
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    const int o = n.outputs[k];
    if (o >= 0) dtypes_[static_cast<size_t>(o)] = body->tensors[static_cast<size_t>(body->outputs[first_out + k])].dtype;
  }
  std::vector<int32_t> ins;
  for (int id : n.inputs) ins.push_back(tensor(id));
  emit(*entry_->kind, n, ins, n.outputs, params);
}

}  // namespace ember::converter::lowering
