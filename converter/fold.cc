// Constant folding (passes.h: evaluate_node, fold_constants). Elementwise ops
// and reductions fold through the eager front-ends (runtime/ops/ops.h); graph
// ops (Reshape, Slice, Gather, ...) through runtime/model/graph_ops.h, the
// very functions the executor runs, so a graph op means the same folded and
// at run time.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "converter/onnx_import.h"
#include "converter/pass_util.h"
#include "converter/passes.h"
#include "runtime/model/graph_ops.h"
#include "runtime/ops/ops.h"
#include "runtime/tensor/storage.h"

namespace ember::converter {
namespace {

Tensor softmax_like(const Node& node, const Tensor& x, bool log) {
  const int64_t axis = node.get_int("axis", -1);
  if (node.get_int("coerce_2d", 0) != 0) {
    const int64_t a = wrap_dim(axis, x.dim());
    const Tensor flat = x.reshape({-1, x.numel() == 0 ? 0 : [&] {
                                     int64_t inner = 1;
                                     for (int64_t d = a; d < x.dim(); ++d) inner *= x.size(d);
                                     return inner;
                                   }()});
    const Tensor y = log ? log_softmax(flat, 1) : softmax(flat, 1);
    return y.reshape(x.sizes());
  }
  return log ? log_softmax(x, axis) : softmax(x, axis);
}

// Each eval_* returns no tensors for an op it does not handle.

// Elementwise ops, Cast, Identity and Dropout (the eager front-ends).
std::vector<Tensor> eval_elementwise(const Node& node, const std::vector<Tensor>& in) {
  const std::string& op = node.op_type;
  auto input = [&](size_t i) { return i < in.size() ? in[i] : Tensor(); };
  const Tensor x = input(0);
  // Binary and variadic elementwise ops.
  if (op == "Add") return {add(x, in.at(1))};
  if (op == "Sub") return {sub(x, in.at(1))};
  if (op == "Mul") return {mul(x, in.at(1))};
  if (op == "Div") {
    if (is_floating(x.dtype())) return {div(x, in.at(1))};
    // Integer division truncates (C semantics), exact below 2^53.
    return {div(x.to(DType::Float64), in.at(1).to(DType::Float64)).to(x.dtype())};
  }
  if (op == "Pow") return {pow(x, in.at(1)).to(x.dtype())};
  if (op == "Max" || op == "Min") {
    Tensor r = x;
    for (size_t i = 1; i < in.size(); ++i) r = op == "Max" ? maximum(r, in[i]) : minimum(r, in[i]);
    return {r};
  }
  if (op == "Equal") return {eq(x, in.at(1))};
  if (op == "Less") return {lt(x, in.at(1))};
  if (op == "Greater") return {gt(x, in.at(1))};
  if (op == "GreaterOrEqual") return {ge(x, in.at(1))};
  if (op == "LessOrEqual") return {le(x, in.at(1))};
  if (op == "Sum") {  // the lowering's chain of Adds
    Tensor r = x;
    for (size_t i = 1; i < in.size(); ++i) r = add(r, in[i]);
    return {r};
  }
  // On bool, as lowered: Minimum, Maximum, Ne, Eq with false (other dtypes: left to the lowering's refusal).
  const bool all_bool = std::all_of(in.begin(), in.end(), [](const Tensor& t) { return t.dtype() == DType::Bool; });
  if (all_bool && op == "And") return {minimum(x, in.at(1))};
  if (all_bool && op == "Or") return {maximum(x, in.at(1))};
  if (all_bool && op == "Xor") return {ne(x, in.at(1))};
  if (all_bool && op == "Not") return {eq(x, false)};
  if (op == "Where") return {where(x, in.at(1), in.at(2))};
  // Unary: every RT_UNARY op of ops.def with an ONNX name.
#define RT_OP(Name, name, n_in, n_out, Params)
#define RT_UNARY(Name, name, dtypes, inputs, formula, onnx, ...) \
  if (op == onnx) return {name(x)};
#include "runtime/graph/ops.def"
#undef RT_UNARY
#undef RT_OP
#define RT_OP(Name, name, n_in, n_out, Params)
#define RT_UNARY(Name, ...)
#define RT_UNARY_P(Name, name, dtypes, formula, onnx, attr_a, default_a, attr_b, default_b, ...) \
  if (op == onnx) return {name##_p(x, node.get_float(attr_a, default_a), node.get_float(attr_b, default_b))};
#include "runtime/graph/ops.def"
#undef RT_UNARY_P
#undef RT_UNARY
#undef RT_OP
  if (op == "Gelu") return {gelu(x, node.get_string("approximate", "none"))};
  if (op == "Clip") {
    std::optional<Scalar> lo, hi;
    if (input(1).defined()) lo = input(1).item();
    if (input(2).defined()) hi = input(2).item();
    return {clamp(x, lo, hi)};
  }
  if (op == "Cast") {
    const auto to = dtype_from_onnx(node.get_int("to", 0));
    EMBER_ENFORCE(to.has_value(), Status::NotSupported, "Cast to ONNX dtype ", node.get_int("to", 0));
    return {x.to(*to, true)};
  }
  if (op == "Identity" || op == "Dropout") {
    std::vector<Tensor> out{x};
    if (node.outputs.size() > 1) out.push_back(ones(x.sizes(), DType::Bool));
    return out;
  }
  return {};
}

// Graph ops (graph_ops.h), made contiguous to be stored as constants. They
// return a Status; unwrap() raises it as ember::Error, which evaluate_node
// turns into the node's diagnostic as it does the front-ends' errors.
std::vector<Tensor> eval_graph_op(const Node& node, const std::vector<Tensor>& in) {
  const std::string& op = node.op_type;
  auto input = [&](size_t i) { return i < in.size() ? in[i] : Tensor(); };
  const Tensor x = input(0);
  if (op == "Shape") {
    return {unwrap(onnx_shape(x, node.get_int("start", 0), node.get_int("end", std::numeric_limits<int64_t>::max())))};
  }
  if (op == "Gather") return {unwrap(onnx_gather(x, in.at(1), node.get_int("axis", 0))).contiguous()};
  if (op == "Unsqueeze") return {unwrap(onnx_unsqueeze(x, ints_of(in.at(1)))).contiguous()};
  if (op == "Squeeze") return {unwrap(onnx_squeeze(x, ints_of(input(1)))).contiguous()};
  if (op == "Concat") return {unwrap(onnx_concat(in, node.get_int("axis", 0))).contiguous()};
  if (op == "Reshape") {
    return {unwrap(onnx_reshape(x, ints_of(in.at(1)), node.get_int("allowzero", 0) != 0)).contiguous()};
  }
  if (op == "Flatten") return {unwrap(onnx_flatten(x, node.get_int("axis", 1))).contiguous()};
  if (op == "Transpose") return {unwrap(onnx_transpose(x, node.get_ints("perm"))).contiguous()};
  if (op == "Slice") {
    return {unwrap(onnx_slice(x, ints_of(in.at(1)), ints_of(in.at(2)), ints_of(input(3)), ints_of(input(4))))
                .contiguous()};
  }
  if (op == "Split") {
    const std::vector<int64_t> sizes = ints_of(input(1));
    const int64_t n = static_cast<int64_t>(node.outputs.size());
    std::vector<Tensor> parts =
        unwrap(onnx_split(x, node.get_int("axis", 0), input(1).defined() ? &sizes : nullptr, n));
    for (Tensor& p : parts) p = p.contiguous();
    return parts;
  }
  if (op == "Expand") return {unwrap(onnx_expand(x, ints_of(in.at(1)))).contiguous()};
  if (op == "Range") return {unwrap(onnx_range(x, in.at(1), in.at(2), x.dtype()))};
  if (op == "Size") return {scalar_tensor(x.numel(), DType::Int64)};
  if (op == "ConstantOfShape") {
    Tensor value = scalar_tensor(0.0, DType::Float32);
    auto it = node.attrs.find("value");
    if (it != node.attrs.end() && std::holds_alternative<Tensor>(it->second)) value = std::get<Tensor>(it->second);
    return {unwrap(onnx_constant_of_shape(ints_of(x), value.reshape({-1})[0].item(), value.dtype()))};
  }
  return {};
}

// Linear algebra, softmax and reductions (the eager front-ends).
std::vector<Tensor> eval_math(const Node& node, const std::vector<Tensor>& in) {
  const std::string& op = node.op_type;
  auto input = [&](size_t i) { return i < in.size() ? in[i] : Tensor(); };
  const Tensor x = input(0);
  if (op == "MatMul") return {matmul(x, in.at(1))};
  if (op == "Gemm") {
    Tensor a = node.get_int("transA", 0) ? x.t() : x;
    Tensor b = node.get_int("transB", 0) ? in.at(1).t() : in.at(1);
    Tensor y = mul(matmul(a, b), node.get_float("alpha", 1.0));
    if (input(2).defined()) y = add(y, mul(input(2), node.get_float("beta", 1.0)));
    return {y};
  }
  if (op == "Softmax") return {softmax_like(node, x, false)};
  if (op == "LogSoftmax") return {softmax_like(node, x, true)};
  if (op == "ReduceMean" || op == "ReduceSum") {
    const std::vector<int64_t> axes = ints_of(input(1));
    const bool keep = node.get_int("keepdims", 1) != 0;
    if (axes.empty() && node.get_int("noop_with_empty_axes", 0) != 0) return {x};
    if (op == "ReduceSum") return {sum(x, axes, keep, x.dtype())};
    return {mean(x, axes, keep)};
  }
  return {};
}

std::vector<Tensor> eval(const Node& node, const std::vector<Tensor>& in) {
  for (auto evaluate : {eval_elementwise, eval_graph_op, eval_math}) {
    std::vector<Tensor> out = evaluate(node, in);
    if (!out.empty()) return out;
  }
  raise_error(Status::NotSupported, "no constant evaluator for " + node.op_type);
}

// More than `limit` elements in an output, told before evaluating (from the
// inferred output shapes, or the shape input of ConstantOfShape / Expand), so
// folding never allocates what it would not keep.
bool too_large_to_fold(const Graph& graph, const Node& node, const std::vector<Tensor>& in, int64_t limit) {
  auto over = [&](const std::vector<int64_t>& dims) {
    int64_t n = 1;
    for (int64_t d : dims) {
      if (d == 0) return false;
    }
    for (int64_t d : dims) {
      if (d < 0 || __builtin_mul_overflow(n, d, &n) || n > limit) return true;
    }
    return false;
  };
  for (int id : node.outputs) {
    if (id < 0) continue;
    if (const auto shape = graph.value(id).static_shape(); shape && over(*shape)) return true;
  }
  if (node.op_type == "Range" && in.size() == 3) {  // ceil((limit - start) / delta) elements
    for (const Tensor& t : in) {
      if (!t.defined() || t.numel() != 1) return false;  // the evaluator refuses it
    }
    auto v = [&](size_t i) { return in[i].reshape({1}).item().to_double(); };
    const double count = std::ceil((v(1) - v(0)) / v(2));
    return count > static_cast<double>(limit);
  }
  const bool shaped = node.op_type == "ConstantOfShape" || node.op_type == "Expand";
  const size_t shape_input = node.op_type == "Expand" ? 1 : 0;
  if (!shaped || in.size() <= shape_input || !in[shape_input].defined()) return false;
  const Tensor& s = in[shape_input];
  if (is_floating(s.dtype()) || s.dim() != 1) return false;  // the evaluator refuses it
  std::vector<int64_t> dims = s.to_vector<int64_t>();
  if (node.op_type == "Expand") {  // bidirectional broadcast with the data's shape
    const Shape x(in[0].sizes().begin(), in[0].sizes().end());
    const size_t r = std::max(dims.size(), x.size());
    std::vector<int64_t> b(r, 1);
    for (size_t i = 0; i < r; ++i) {
      const int64_t a = i + dims.size() >= r ? dims[i + dims.size() - r] : 1;
      const int64_t c = i + x.size() >= r ? x[i + x.size() - r] : 1;
      b[i] = a == 1 ? c : a;
    }
    dims = b;
  }
  return over(dims);
}

// While a node is folded: an allocation above `limit` bytes is refused
// (NotSupported, so the node is left to run time). The checks above foresee
// the output sizes of ConstantOfShape, Expand and Range; this catches what
// they cannot (a Pad, Tile or Resize of constant but absurd sizes, which ran
// for minutes filling memory under tools/fuzz.sh onnx).
class FoldAllocator : public StorageAllocator {
 public:
  explicit FoldAllocator(size_t limit) : limit_(limit) {}
  Result<Storage> allocate(size_t bytes) override {
    if (bytes > limit_) return fail(Status::NotSupported, "an allocation of ", bytes, " bytes is too large to fold");
    return allocate_storage(bytes, Device(DeviceType::CPU));  // the hook is off inside allocate()
  }

 private:
  size_t limit_;
};

}  // namespace

Expected<std::vector<Tensor>> evaluate_node(const Node& node, const std::vector<Tensor>& inputs) {
  try {
    return eval(node, inputs);
  } catch (const Error& e) {
    return fail(e.status(), node.label() + ": " + e.what());
  } catch (const std::out_of_range&) {  // in.at(i): a node without an input its op needs (found by fuzzing)
    return fail(Status::InvalidModel, node.label() + ": has fewer inputs than " + node.op_type + " needs");
  }
}

Expected<int> fold_constants(Graph& graph, int64_t max_elements) {
  int folded = 0;
  std::vector<bool> dead(graph.nodes.size(), false);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& node = graph.nodes[i];
    bool all_constant = true;
    std::vector<Tensor> inputs;
    for (int id : node.inputs) {
      if (id >= 0 && !graph.is_constant(id)) all_constant = false;
      inputs.push_back(id >= 0 ? graph.value(id).constant : Tensor());
    }
    if (!all_constant || too_large_to_fold(graph, node, inputs, max_elements)) continue;
    // 16 bytes an element (the widest dtype, twice) bounds what folding allocates.
    FoldAllocator cap(static_cast<size_t>(std::clamp<int64_t>(max_elements, 0, int64_t{1} << 40)) * 16);
    Expected<std::vector<Tensor>> out = [&] {
      StorageAllocatorGuard guard(&cap);
      return evaluate_node(node, inputs);
    }();
    if (!out.ok()) {
      if (out.diag().status == Status::NotSupported) continue;  // left to run time
      return out.diag();
    }
    if (out->size() < node.outputs.size()) return fail(Status::Internal, node.label() + ": too few outputs");
    bool small = true;
    for (const Tensor& t : *out) small = small && t.numel() <= max_elements;
    if (!small) continue;
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      if (node.outputs[k] >= 0) set_constant(graph.value(node.outputs[k]), (*out)[k]);
    }
    dead[i] = true;
    ++folded;
  }
  graph.erase_nodes(dead);
  return folded;
}

}  // namespace ember::converter
