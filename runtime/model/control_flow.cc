// If, Loop and Scan (control_flow.h): ONNX semantics, each subgraph run
// through run_subgraph. They return a Status, like the other runners.
#include "runtime/model/control_flow.h"

#include <algorithm>
#include <limits>

#include "runtime/core/error.h"
#include "runtime/model/executor.h"
#include "runtime/model/model_access.h"
#include "runtime/ops/ops.h"
#include "runtime/tensor/storage.h"

namespace ember {

Status attach_subgraphs(const Model& m, const std::vector<std::shared_ptr<const Executor>>& subgraphs,
                        std::vector<OpState>& ops, std::string* error) {
  for (int k = 0; k < m.num_ops(); ++k) {
    OpState& op = ops[static_cast<size_t>(k)];
    std::vector<int32_t> indices;
    if (const auto* p = std::get_if<IfParams>(&op.params)) indices = {p->then_graph, p->else_graph};
    if (const auto* p = std::get_if<LoopParams>(&op.params)) indices = {p->body};
    if (const auto* p = std::get_if<ScanLoopParams>(&op.params)) indices = {p->body};
    for (int32_t i : indices) {
      if (i < 0 || static_cast<size_t>(i) >= subgraphs.size())
        return report_error(error, Status::InvalidModel, op_ref(m, k), ": subgraph ", i, " out of range (",
                            subgraphs.size(), " available)");
      op.subgraphs.push_back(subgraphs[static_cast<size_t>(i)]);
    }
  }
  return Status::Ok;
}

namespace {

// A one-element condition or count input read on the host.
Result<Scalar> one_value(const Tensor& t, const char* what) {
  EMBER_CHECK(t.numel() == 1, Status::InvalidArgument, "the ", what, " input has ", t.numel(),
              " elements, expected 1");
  return core::item(t.reshape({1}));
}

// Output j of the op as an empty tensor (a Loop or Scan of zero iterations):
// the declared shape, unknown dims 0.
Result<Tensor> empty_output(const OpContext& c, size_t j) {
  Shape shape;
  for (int64_t d : c.model.tensor_shape(c.out_tensor(j))) shape.push_back(d < 0 ? 0 : d);
  return core::empty(shape, c.declared_dtype(j));
}

// Stacks one scan output's per-iteration values along `axis` (of the result).
Result<Tensor> stack_scan(const OpContext& c, size_t j, const std::vector<Tensor>& parts, int64_t axis) {
  if (parts.empty()) return empty_output(c, j);
  const int64_t rank = parts[0].dim() + 1;
  const int64_t a = axis < 0 ? axis + rank : axis;
  EMBER_CHECK(a >= 0 && a < rank, Status::InvalidArgument, "scan output axis ", axis, " is out of range for rank ",
              rank);
  return core::stack(Span<const Tensor>(parts.data(), parts.size()), a);
}

// The values a control-flow op hands on: fresh heap tensors, never views of
// its inputs or of subgraph weights (whether an output aliases an input
// depends on the values, which the arena plan must not).
Status set_outputs(OpContext& c, const std::vector<Tensor>& values) {
  for (size_t j = 0; j < c.num_outputs() && j < values.size(); ++j) {
    if (c.out_tensor(j) >= 0) EMBER_TRY(c.set(j, core::clone(values[j])));
  }
  return Status::Ok;
}

}  // namespace

Status run_If(OpContext& c) {
  EMBER_ASSIGN_OR_RETURN(const Tensor t, c.need(0, "condition"));
  EMBER_ASSIGN_OR_RETURN(const Scalar cond, one_value(t, "condition"));
  StorageAllocatorGuard heap(nullptr);  // outside the arena plan (control_flow.h)
  const std::vector<Tensor> captured(c.in.begin() + 1, c.in.end());
  EMBER_ASSIGN_OR_RETURN(const std::vector<Tensor> out,
                         run_subgraph(*c.state.subgraphs[cond.to_double() != 0.0 ? 0 : 1], captured));
  return set_outputs(c, out);
}

Status run_Loop(OpContext& c) {
  const auto& p = c.params<LoopParams>();
  const size_t n = static_cast<size_t>(p.carried);
  const size_t n_scans = c.num_outputs() - n;
  // Absent trip count: no limit; absent condition: true.
  int64_t trips = std::numeric_limits<int64_t>::max();
  if (c.opt(0).defined()) {
    EMBER_ASSIGN_OR_RETURN(const Scalar v, one_value(c.opt(0), "trip count"));
    trips = v.to_int();
  }
  bool go = true;
  if (c.opt(1).defined()) {
    EMBER_ASSIGN_OR_RETURN(const Scalar v, one_value(c.opt(1), "condition"));
    go = v.to_double() != 0.0;
  }
  StorageAllocatorGuard heap(nullptr);  // outside the arena plan (control_flow.h)
  std::vector<Tensor> body_in(c.in.size());  // iteration, condition, carried..., captured...
  for (size_t j = 2; j < c.in.size(); ++j) body_in[j] = c.in[j];
  for (size_t j = 2; j < 2 + n; ++j)
    EMBER_CHECK(body_in[j].defined(), Status::InvalidArgument, "loop-carried input ", j - 2, " is missing");
  std::vector<std::vector<Tensor>> scans(n_scans);
  const Executor& body = *c.state.subgraphs[0];
  for (int64_t i = 0; i < trips && go; ++i) {
    body_in[0] = scalar_tensor(Scalar(i), TensorOptions(DType::Int64));
    body_in[1] = scalar_tensor(Scalar(go), TensorOptions(DType::Bool));
    // condition, carried..., scans...
    EMBER_ASSIGN_OR_RETURN(const std::vector<Tensor> out, run_subgraph(body, body_in));
    EMBER_ASSIGN_OR_RETURN(const Scalar v, one_value(out[0], "body's condition"));
    go = v.to_double() != 0.0;
    for (size_t j = 0; j < n; ++j) body_in[2 + j] = out[1 + j];
    for (size_t k = 0; k < n_scans; ++k) scans[k].push_back(out[1 + n + k]);
  }
  std::vector<Tensor> results(body_in.begin() + 2, body_in.begin() + 2 + static_cast<std::ptrdiff_t>(n));
  for (size_t k = 0; k < n_scans; ++k) {
    EMBER_ASSIGN_OR_RETURN(Tensor s, stack_scan(c, n + k, scans[k], 0));
    results.push_back(std::move(s));
  }
  return set_outputs(c, results);
}

Status run_Scan(OpContext& c) {
  const auto& p = c.params<ScanLoopParams>();
  const size_t n = static_cast<size_t>(p.state), m = static_cast<size_t>(p.scan_inputs);
  const size_t n_scans = c.num_outputs() - n;
  std::vector<Tensor> body_in(c.in.size());  // states..., one slice of each sequence..., captured...
  for (size_t j = 0; j < c.in.size(); ++j) {
    if (j < n + m) {
      EMBER_ASSIGN_OR_RETURN(body_in[j], c.need(j, "state or scan"));
    } else {
      body_in[j] = c.in[j];
    }
  }
  // Every sequence has the same length along its axis.
  int64_t length = -1;
  int64_t axes[kMaxScanValues];
  for (size_t j = 0; j < m; ++j) {
    const Tensor& x = c.in[n + j];
    const int64_t a = p.input_axes[j] < 0 ? p.input_axes[j] + x.dim() : p.input_axes[j];
    EMBER_CHECK(a >= 0 && a < x.dim(), Status::InvalidArgument, "scan input ", j, ": axis ", p.input_axes[j],
                " is out of range for rank ", x.dim());
    axes[j] = a;
    EMBER_CHECK(length < 0 || x.size(a) == length, Status::ShapeMismatch, "scan input ", j, " has ", x.size(a),
                " steps along axis ", a, ", scan input 0 has ", length);
    length = x.size(a);
  }
  StorageAllocatorGuard heap(nullptr);  // outside the arena plan (control_flow.h)
  std::vector<std::vector<Tensor>> scans(n_scans);
  const Executor& body = *c.state.subgraphs[0];
  for (int64_t t = 0; t < length; ++t) {
    for (size_t j = 0; j < m; ++j)
      body_in[n + j] = c.in[n + j].select(axes[j], p.input_reverse[j] ? length - 1 - t : t);
    EMBER_ASSIGN_OR_RETURN(const std::vector<Tensor> out, run_subgraph(body, body_in));  // states..., scans...
    for (size_t j = 0; j < n; ++j) body_in[j] = out[j];
    for (size_t k = 0; k < n_scans; ++k) scans[k].push_back(out[n + k]);
  }
  std::vector<Tensor> results(body_in.begin(), body_in.begin() + static_cast<std::ptrdiff_t>(n));
  for (size_t k = 0; k < n_scans; ++k) {
    if (p.output_reverse[k]) std::reverse(scans[k].begin(), scans[k].end());
    EMBER_ASSIGN_OR_RETURN(Tensor s, stack_scan(c, n + k, scans[k], p.output_axes[k]));
    results.push_back(std::move(s));
  }
  return set_outputs(c, results);
}

}  // namespace ember
