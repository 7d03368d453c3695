#include "converter/passes.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>
#include <sstream>

#include "converter/onnx_import.h"
#include "runtime/ops/ops.h"

namespace ember::converter {

std::string PassReport::summary() const {
  std::ostringstream os;
  os << "folded " << constants_folded << " constant nodes and " << shapes_folded << " shape nodes, removed "
     << identities_removed << " identities and " << dead_nodes_removed << " dead nodes, folded "
     << batchnorms_folded << " BatchNorms, fused " << activations_fused << " activations, dropped "
     << values_dropped << " unused values";
  if (convs_made_2d > 0) os << ", made " << convs_made_2d << " 1-D convolutions 2-D";
  return os.str();
}

namespace {

Diag fail(Status s, std::string message) { return {s, std::move(message)}; }

// The values of a constant int tensor (axes, shapes, pads...).
std::vector<int64_t> ints_of(const Tensor& t) {
  if (!t.defined()) return {};
  return t.to_vector<int64_t>();
}


Tensor shape_tensor(IntArrayRef sizes) {
  return tensor(std::vector<int64_t>(sizes.begin(), sizes.end()), {static_cast<int64_t>(sizes.size())});
}

// ONNX Gather along `axis`: x.shape[:axis] + indices.shape + x.shape[axis+1:].
Tensor gather(const Tensor& x, Tensor indices, int64_t axis) {
  axis = wrap_dim(axis, x.dim());
  const int64_t n = x.size(axis);
  indices = indices.to(DType::Int64);
  indices = where(lt(indices, 0), add(indices, n), indices);
  std::vector<int64_t> order{axis};  // axis first, then the others in order
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (d != axis) order.push_back(d);
  }
  const Tensor moved = x.permute(order).contiguous();
  const int64_t rest = n == 0 ? 0 : moved.numel() / n;
  Tensor rows = embedding(moved.reshape({n, rest}), indices);  // indices.shape + [rest]
  Shape out_shape = indices.sizes();
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (d != axis) out_shape.push_back(x.size(d));
  }
  rows = rows.reshape(out_shape);
  // Move the dims before `axis` back in front of the index dims.
  const int64_t k = indices.dim();
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < axis; ++d) perm.push_back(k + d);
  for (int64_t d = 0; d < k; ++d) perm.push_back(d);
  for (int64_t d = k + axis; d < rows.dim(); ++d) perm.push_back(d);
  return rows.permute(perm).contiguous();
}

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

std::vector<Tensor> eval(const Node& node, const std::vector<Tensor>& in) {
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
  if (op == "Where") return {where(x, in.at(1), in.at(2))};
  // Unary.
  if (op == "Relu") return {relu(x)};
  if (op == "Sigmoid") return {sigmoid(x)};
  if (op == "Tanh") return {tanh(x)};
  if (op == "Exp") return {exp(x)};
  if (op == "Log") return {log(x)};
  if (op == "Sqrt") return {sqrt(x)};
  if (op == "Erf") return {erf(x)};
  if (op == "Neg") return {neg(x)};
  if (op == "Abs") return {abs(x)};
  if (op == "Gelu") return {gelu(x, node.get_string("approximate", "none"))};
  if (op == "Clip") {
    std::optional<Scalar> lo, hi;
    if (input(1).defined()) lo = input(1).item();
    if (input(2).defined()) hi = input(2).item();
    return {clamp(x, lo, hi)};
  }
  if (op == "Cast") {
    const auto to = dtype_from_onnx(node.get_int("to", 0));
    EMBER_CHECK(to.has_value(), Status::NotSupported, "Cast to ONNX dtype ", node.get_int("to", 0));
    return {x.to(*to, true)};
  }
  if (op == "Identity" || op == "Dropout") {
    std::vector<Tensor> out{x};
    if (node.outputs.size() > 1) out.push_back(ones(x.sizes(), DType::Bool));
    return out;
  }
  // Shapes and data movement.
  if (op == "Shape") {
    const int64_t r = x.dim();
    int64_t start = node.get_int("start", 0), end = node.get_int("end", r);
    start = std::clamp(start < 0 ? start + r : start, int64_t{0}, r);
    end = std::clamp(end < 0 ? end + r : end, int64_t{0}, r);
    Shape s(x.sizes().begin() + start, x.sizes().begin() + std::max(start, end));
    return {shape_tensor(s)};
  }
  if (op == "Gather") return {gather(x, in.at(1), node.get_int("axis", 0))};
  if (op == "Unsqueeze") {
    std::vector<int64_t> axes = ints_of(in.at(1));
    const int64_t rank = x.dim() + static_cast<int64_t>(axes.size());
    for (int64_t& a : axes) a = wrap_dim(a, rank);
    std::sort(axes.begin(), axes.end());
    Tensor r = x;
    for (int64_t a : axes) r = r.unsqueeze(a);
    return {r.contiguous()};
  }
  if (op == "Squeeze") {
    if (!input(1).defined()) return {x.squeeze().contiguous()};
    std::vector<int64_t> axes = ints_of(in.at(1));
    for (int64_t& a : axes) a = wrap_dim(a, x.dim());
    std::sort(axes.rbegin(), axes.rend());
    Tensor r = x;
    for (int64_t a : axes) {
      EMBER_CHECK(r.size(a) == 1, Status::ShapeMismatch, "Squeeze of dim ", a, " of size ", r.size(a));
      r = r.squeeze(a);
    }
    return {r.contiguous()};
  }
  if (op == "Concat") return {cat(in, node.get_int("axis", 0))};
  if (op == "Reshape") {
    std::vector<int64_t> shape = ints_of(in.at(1));
    if (node.get_int("allowzero", 0) == 0) {
      for (size_t i = 0; i < shape.size(); ++i) {
        if (shape[i] == 0 && static_cast<int64_t>(i) < x.dim()) shape[i] = x.size(static_cast<int64_t>(i));
      }
    }
    return {x.reshape(shape).contiguous()};
  }
  if (op == "Flatten") {
    const int64_t axis = node.get_int("axis", 1);
    const int64_t a = axis < 0 ? axis + x.dim() : axis;
    int64_t outer = 1;
    for (int64_t d = 0; d < a; ++d) outer *= x.size(d);
    return {x.reshape({outer, outer == 0 ? 0 : x.numel() / outer}).contiguous()};
  }
  if (op == "Transpose") {
    std::vector<int64_t> perm = node.get_ints("perm");
    if (perm.empty()) {
      for (int64_t d = x.dim() - 1; d >= 0; --d) perm.push_back(d);
    }
    return {x.permute(perm).contiguous()};
  }
  if (op == "Slice") {
    const std::vector<int64_t> starts = ints_of(in.at(1)), ends = ints_of(in.at(2));
    std::vector<int64_t> axes = ints_of(input(3)), steps = ints_of(input(4));
    if (axes.empty()) {
      axes.resize(starts.size());
      std::iota(axes.begin(), axes.end(), 0);
    }
    if (steps.empty()) steps.assign(starts.size(), 1);
    EMBER_CHECK(ends.size() == starts.size() && axes.size() == starts.size() && steps.size() == starts.size(),
                Status::InvalidArgument, "Slice: starts, ends, axes and steps differ in length");
    Tensor r = x;
    for (size_t i = 0; i < starts.size(); ++i) {
      EMBER_CHECK(steps[i] != 0, Status::InvalidArgument, "Slice with a step of 0");
      if (steps[i] < 0) {
        // ONNX: start clamped to [0, dim-1], end to [-1, dim-1], walking down.
        const int64_t axis = wrap_dim(axes[i], r.dim()), dim = r.size(axis);
        int64_t start = starts[i] < 0 ? starts[i] + dim : starts[i];
        int64_t end = ends[i] < 0 ? ends[i] + dim : ends[i];
        start = std::clamp(start, int64_t{0}, dim - 1);  // dim 0: -1, nothing picked
        end = std::clamp(end, int64_t{-1}, dim - 1);
        std::vector<int64_t> picked;
        for (int64_t k = start; k > end && k >= 0; k += steps[i]) picked.push_back(k);
        r = gather(r, tensor(picked, {static_cast<int64_t>(picked.size())}), axis);
        continue;
      }
      r = r.slice(axes[i], starts[i], ends[i], steps[i]);
    }
    return {r.contiguous()};
  }
  if (op == "Split") {
    const int64_t axis = wrap_dim(node.get_int("axis", 0), x.dim());
    std::vector<int64_t> sizes = ints_of(input(1));
    if (sizes.empty()) {
      const int64_t n = static_cast<int64_t>(node.outputs.size());
      sizes.assign(static_cast<size_t>(n), (x.size(axis) + n - 1) / n);
      sizes.back() = x.size(axis) - (n - 1) * sizes[0];
    }
    std::vector<Tensor> parts = split(x, sizes, axis);
    for (Tensor& p : parts) p = p.contiguous();
    return parts;
  }
  if (op == "Expand") {
    const Shape target = broadcast_shapes(x.sizes(), ints_of(in.at(1)));
    return {x.expand(target).contiguous()};
  }
  if (op == "ConstantOfShape") {
    Tensor value = scalar_tensor(0.0, DType::Float32);
    auto it = node.attrs.find("value");
    if (it != node.attrs.end() && std::holds_alternative<Tensor>(it->second)) value = std::get<Tensor>(it->second);
    return {full(ints_of(x), value.reshape({-1})[0].item(), value.dtype())};
  }
  // Linear algebra and reductions.
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
  raise_error(Status::NotSupported, "no constant evaluator for " + op);
}

// Sets a value's constant, dtype and static shape.
void set_constant(Value& v, Tensor t) {
  v.dtype = t.dtype();
  std::vector<Dim> dims;
  for (int64_t s : t.sizes()) dims.push_back(Dim::fixed(s));
  v.shape = dims;
  v.constant = std::move(t);
}

}  // namespace

Expected<std::vector<Tensor>> evaluate_node(const Node& node, const std::vector<Tensor>& inputs) {
  try {
    return eval(node, inputs);
  } catch (const Error& e) {
    return fail(e.status(), node.label() + ": " + e.what());
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
    if (!all_constant) continue;
    auto out = evaluate_node(node, inputs);
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

int fold_shapes(Graph& graph) {
  int folded = 0;
  std::vector<bool> dead(graph.nodes.size(), false);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& node = graph.nodes[i];
    if (node.outputs.empty() || node.outputs[0] < 0 || graph.is_constant(node.outputs[0])) continue;
    if (node.op_type == "Shape" && !graph.is_constant(node.inputs[0])) {
      const auto s = graph.value(node.inputs[0]).static_shape();
      if (!s) continue;
      // Evaluate on a zero-stride stand-in of that shape (no data needed).
      auto out = evaluate_node(node, {zeros({1}).expand(*s)});
      if (!out.ok()) continue;
      set_constant(graph.value(node.outputs[0]), (*out)[0]);
      dead[i] = true;
      ++folded;
    } else if (node.op_type == "Gather" && node.inputs.size() == 2 && graph.is_constant(node.inputs[1])) {
      const int shape_node = graph.producer_of(node.inputs[0]);
      if (shape_node < 0) continue;
      const Node& sn = graph.nodes[static_cast<size_t>(shape_node)];
      if (sn.op_type != "Shape" || sn.has("start") || sn.has("end")) continue;
      const Value& src = graph.value(sn.inputs[0]);
      if (!src.shape || node.get_int("axis", 0) != 0) continue;
      const auto& dims = *src.shape;
      const int64_t rank = static_cast<int64_t>(dims.size());
      const Tensor idx = graph.value(node.inputs[1]).constant;
      std::vector<int64_t> picked;
      bool ok = true;
      for (int64_t k : ints_of(idx)) {
        if (k < 0) k += rank;
        if (k < 0 || k >= rank || !dims[static_cast<size_t>(k)].is_static()) {
          ok = false;
          break;
        }
        picked.push_back(dims[static_cast<size_t>(k)].value);
      }
      if (!ok) continue;
      set_constant(graph.value(node.outputs[0]), tensor(picked, idx.sizes()));
      dead[i] = true;
      ++folded;
    }
  }
  graph.erase_nodes(dead);
  return folded;
}

namespace {

using Dims = std::vector<Dim>;

std::optional<Dims> dims_of(const Graph& g, int id) {
  if (id < 0) return std::nullopt;
  return g.value(id).shape;
}

// A constant int tensor's values, or nullopt.
std::optional<std::vector<int64_t>> const_ints(const Graph& g, int id) {
  if (id < 0 || !g.is_constant(id)) return std::nullopt;
  const Tensor& t = g.value(id).constant;
  if (is_floating(t.dtype()) || t.dtype() == DType::Bool) return std::nullopt;
  return t.to_vector<int64_t>();
}

// A -1 (or other negative) element of a constant shape tensor: Reshape's
// "infer this dim". Never stored in a Value (sanitized() turns it unknown).
const Dim kLiteralMinusOne{-2, {}};

Dims sanitized(Dims d) {
  for (Dim& x : d) {
    if (x.value == kLiteralMinusOne.value) x = Dim{};
  }
  return d;
}

// What is known of the elements of a 1-D (or scalar) int value used as a
// shape: constants, Gather(Shape(v), k) (v's dim k, perhaps a symbol),
// Unsqueeze of such a scalar, Concat of such parts. nullopt when not even the
// length is known.
std::optional<Dims> shape_elements(const Graph& g, int id, int depth = 0) {
  if (id < 0 || depth > 8) return std::nullopt;
  if (const auto c = const_ints(g, id)) {
    Dims out;
    for (int64_t v : *c) out.push_back(v >= 0 ? Dim::fixed(v) : kLiteralMinusOne);
    return out;
  }
  const int p = g.producer_of(id);
  if (p >= 0) {
    const Node& n = g.nodes[static_cast<size_t>(p)];
    if (n.op_type == "Concat") {
      Dims out;
      for (int in : n.inputs) {
        const auto part = shape_elements(g, in, depth + 1);
        if (!part) return std::nullopt;
        out.insert(out.end(), part->begin(), part->end());
      }
      return out;
    }
    if (n.op_type == "Unsqueeze" && n.inputs.size() == 2) {
      const auto x = g.value(n.inputs[0]).shape;
      if (x && x->empty()) {
        const auto e = shape_elements(g, n.inputs[0], depth + 1);
        return e && e->size() == 1 ? *e : Dims{Dim{}};
      }
    }
    if (n.op_type == "Gather" && n.inputs.size() == 2 && n.get_int("axis", 0) == 0) {
      const int sp = g.producer_of(n.inputs[0]);
      const auto idx = const_ints(g, n.inputs[1]);
      if (sp >= 0 && idx) {
        const Node& sn = g.nodes[static_cast<size_t>(sp)];
        const auto src = g.value(sn.inputs[0]).shape;
        if (sn.op_type == "Shape" && !sn.has("start") && !sn.has("end") && src) {
          const int64_t rank = static_cast<int64_t>(src->size());
          Dims out;
          for (int64_t k : *idx) {
            if (k < 0) k += rank;
            out.push_back(k >= 0 && k < rank ? (*src)[static_cast<size_t>(k)] : Dim{});
          }
          return out;
        }
      }
    }
  }
  const auto d = g.value(id).shape;
  if (d && d->empty()) return Dims{Dim{}};
  if (d && d->size() == 1 && (*d)[0].is_static()) return Dims(static_cast<size_t>((*d)[0].value), Dim{});
  return std::nullopt;
}

Dim broadcast_dim(const Dim& a, const Dim& b) {
  if (a.is_static() && a.value == 1) return b;
  if (b.is_static() && b.value == 1) return a;
  if (a == b) return a;
  if (a.is_static()) return a;  // b unknown or symbolic: a valid model has b == a
  if (b.is_static()) return b;
  return Dim{};
}

std::optional<Dims> broadcast(const std::vector<std::optional<Dims>>& shapes) {
  Dims out;
  for (const auto& s : shapes) {
    if (!s) return std::nullopt;
    if (s->size() > out.size()) out.insert(out.begin(), s->size() - out.size(), Dim::fixed(1));
    const size_t off = out.size() - s->size();
    for (size_t i = 0; i < s->size(); ++i) out[off + i] = broadcast_dim(out[off + i], (*s)[i]);
  }
  return out;
}

Dims unknown(size_t rank) { return Dims(rank, Dim{}); }

// The dtype and shape of `node`'s outputs (nullopt entries where unknown).
std::vector<std::pair<std::optional<DType>, std::optional<Dims>>> infer_node(const Graph& g, const Node& n) {
  const std::string& op = n.op_type;
  auto in = [&](size_t i) { return i < n.inputs.size() ? n.inputs[i] : -1; };
  auto dtype = [&](size_t i) { return in(i) >= 0 ? g.value(in(i)).dtype : std::nullopt; };
  const std::optional<Dims> x = dims_of(g, in(0));
  const int64_t rank = x ? static_cast<int64_t>(x->size()) : -1;
  using Out = std::pair<std::optional<DType>, std::optional<Dims>>;
  static const std::set<std::string> same = {"Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Erf", "Neg", "Abs",
                                             "Clip", "Gelu", "Softmax", "LogSoftmax", "Identity", "Dropout",
                                             "LayerNormalization", "BatchNormalization"};
  if (same.count(op)) return {Out{dtype(0), x}};
  static const std::set<std::string> binary = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Equal", "Less",
                                               "Greater", "Where"};
  if (binary.count(op)) {
    std::vector<std::optional<Dims>> shapes;
    for (int id : n.inputs) shapes.push_back(dims_of(g, id));
    std::optional<DType> dt = op == "Where" ? dtype(1) : dtype(0);
    if (op == "Equal" || op == "Less" || op == "Greater") dt = DType::Bool;
    return {Out{dt, broadcast(shapes)}};
  }
  if (op == "Cast") {
    std::optional<DType> dt;
    switch (n.get_int("to", 0)) {
      case 1: dt = DType::Float32; break;
      case 2: dt = DType::UInt8; break;
      case 3: dt = DType::Int8; break;
      case 5: dt = DType::Int16; break;
      case 6: dt = DType::Int32; break;
      case 7: dt = DType::Int64; break;
      case 9: dt = DType::Bool; break;
      case 10: dt = DType::Float16; break;
      case 11: dt = DType::Float64; break;
      case 16: dt = DType::BFloat16; break;
      default: break;
    }
    return {Out{dt, x}};
  }
  if (op == "Shape") {
    if (rank < 0) return {Out{DType::Int64, std::nullopt}};
    int64_t start = n.get_int("start", 0), end = n.get_int("end", rank);
    start = std::clamp(start < 0 ? start + rank : start, int64_t{0}, rank);
    end = std::clamp(end < 0 ? end + rank : end, int64_t{0}, rank);
    return {Out{DType::Int64, Dims{Dim::fixed(std::max<int64_t>(0, end - start))}}};
  }
  if (op == "MatMul") {
    auto a = x, b = dims_of(g, in(1));
    if (!a || !b || a->empty() || b->empty()) return {Out{dtype(0), std::nullopt}};
    const bool a1 = a->size() == 1, b1 = b->size() == 1;
    Dims ab(a->begin(), a->end() - (a1 ? 0 : 2)), bb(b->begin(), b->end() - (b1 ? 0 : 2));
    if (a1) ab.clear();
    if (b1) bb.clear();
    auto batch = broadcast({ab, bb});
    Dims out = *batch;
    if (!a1) out.push_back((*a)[a->size() - 2]);
    if (!b1) out.push_back(b->back());
    return {Out{dtype(0), out}};
  }
  if (op == "Gemm") {
    auto a = x, b = dims_of(g, in(1));
    Dims out = unknown(2);
    if (a && a->size() == 2) out[0] = (*a)[n.get_int("transA", 0) ? 1 : 0];
    if (b && b->size() == 2) out[1] = (*b)[n.get_int("transB", 0) ? 0 : 1];
    return {Out{dtype(0), out}};
  }
  if (op == "Transpose") {
    if (!x) return {Out{dtype(0), std::nullopt}};
    std::vector<int64_t> perm = n.get_ints("perm");
    if (perm.empty()) {
      for (int64_t d = rank - 1; d >= 0; --d) perm.push_back(d);
    }
    if (static_cast<int64_t>(perm.size()) != rank) return {Out{dtype(0), std::nullopt}};
    Dims out;
    for (int64_t p : perm) out.push_back((*x)[static_cast<size_t>(wrap_dim(p, rank))]);
    return {Out{dtype(0), out}};
  }
  if (op == "Slice") {
    if (!x) return {Out{dtype(0), std::nullopt}};
    Dims out = *x;
    const auto starts = const_ints(g, in(1)), ends = const_ints(g, in(2));
    std::optional<std::vector<int64_t>> axes = const_ints(g, in(3)), steps = const_ints(g, in(4));
    if (in(3) < 0 && starts) {
      axes = std::vector<int64_t>(starts->size());
      std::iota(axes->begin(), axes->end(), 0);
    }
    if (!axes) return {Out{dtype(0), unknown(out.size())}};
    for (size_t i = 0; i < axes->size(); ++i) {
      const size_t a = static_cast<size_t>(wrap_dim((*axes)[i], rank));
      const int64_t step = in(4) < 0 ? 1 : (steps && i < steps->size() ? (*steps)[i] : 0);
      const Dim d = out[a];
      out[a] = Dim{};
      if (!starts || !ends || step <= 0 || !d.is_static() || i >= starts->size() || i >= ends->size()) continue;
      auto clampi = [&](int64_t v) { return std::clamp(v < 0 ? v + d.value : v, int64_t{0}, d.value); };
      const int64_t s = clampi((*starts)[i]), e = clampi((*ends)[i]);
      out[a] = Dim::fixed(e > s ? (e - s + step - 1) / step : 0);
    }
    return {Out{dtype(0), out}};
  }
  if (op == "Reshape") {
    const auto target = shape_elements(g, in(1));
    if (!target) return {Out{dtype(0), std::nullopt}};
    Dims out;
    int64_t known = 1;
    int minus_one = -1;
    bool all_known = x.has_value();
    for (size_t i = 0; i < target->size(); ++i) {
      const Dim& t = (*target)[i];
      if (t.is_static() && t.value == 0 && n.get_int("allowzero", 0) == 0) {
        out.push_back(x && i < x->size() ? (*x)[i] : Dim{});
      } else if (t.value == kLiteralMinusOne.value) {
        minus_one = static_cast<int>(i);
        out.push_back(Dim{});
        continue;
      } else {
        out.push_back(t);
      }
      if (out.back().is_static()) known *= out.back().value;
      else all_known = false;
    }
    if (minus_one >= 0 && all_known && known > 0) {
      int64_t numel = 1;
      for (const Dim& d : *x) {
        if (!d.is_static()) numel = -1;
        if (numel >= 0) numel *= d.value;
      }
      if (numel >= 0) out[static_cast<size_t>(minus_one)] = Dim::fixed(numel / known);
    }
    return {Out{dtype(0), out}};
  }
  if (op == "Flatten") {
    Dims out = unknown(2);
    if (x) {
      const int64_t axis = n.get_int("axis", 1);
      const int64_t a = axis < 0 ? axis + rank : axis;
      int64_t outer = 1, inner = 1;
      for (int64_t d = 0; d < rank; ++d) {
        int64_t& p = d < a ? outer : inner;
        const Dim& dim = (*x)[static_cast<size_t>(d)];
        if (p >= 0) p = dim.is_static() ? p * dim.value : -1;
      }
      if (outer >= 0) out[0] = Dim::fixed(outer);
      else if (a == 1) out[0] = (*x)[0];
      if (inner >= 0) out[1] = Dim::fixed(inner);
    }
    return {Out{dtype(0), out}};
  }
  if (op == "Unsqueeze" || op == "Squeeze") {
    const auto axes = const_ints(g, in(1));
    if (!x || (!axes && !(op == "Squeeze" && in(1) < 0))) return {Out{dtype(0), std::nullopt}};
    Dims out;
    if (op == "Unsqueeze") {
      const int64_t r = rank + static_cast<int64_t>(axes->size());
      std::vector<bool> added(static_cast<size_t>(r), false);
      for (int64_t a : *axes) added[static_cast<size_t>(wrap_dim(a, r))] = true;
      size_t k = 0;
      for (int64_t d = 0; d < r; ++d) out.push_back(added[static_cast<size_t>(d)] ? Dim::fixed(1) : (*x)[k++]);
    } else {
      std::vector<bool> gone(static_cast<size_t>(rank), false);
      if (axes) {
        for (int64_t a : *axes) gone[static_cast<size_t>(wrap_dim(a, rank))] = true;
      } else {
        for (int64_t d = 0; d < rank; ++d) {
          const Dim& dim = (*x)[static_cast<size_t>(d)];
          if (!dim.is_static()) return {Out{dtype(0), std::nullopt}};
          gone[static_cast<size_t>(d)] = dim.value == 1;
        }
      }
      for (int64_t d = 0; d < rank; ++d) {
        if (!gone[static_cast<size_t>(d)]) out.push_back((*x)[static_cast<size_t>(d)]);
      }
    }
    return {Out{dtype(0), out}};
  }
  if (op == "Concat") {
    if (!x) return {Out{dtype(0), std::nullopt}};
    const size_t axis = static_cast<size_t>(wrap_dim(n.get_int("axis", 0), rank));
    Dims out = *x;
    int64_t total = 0;
    for (int id : n.inputs) {
      const auto s = dims_of(g, id);
      if (!s || s->size() != out.size() || !(*s)[axis].is_static()) total = -1;
      if (total >= 0) total += (*s)[axis].value;
    }
    out[axis] = total >= 0 ? Dim::fixed(total) : Dim{};
    return {Out{dtype(0), out}};
  }
  if (op == "Split") {
    std::vector<Out> outs;
    const auto sizes = const_ints(g, in(1));
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      if (!x) {
        outs.push_back({dtype(0), std::nullopt});
        continue;
      }
      Dims out = *x;
      const size_t axis = static_cast<size_t>(wrap_dim(n.get_int("axis", 0), rank));
      out[axis] = sizes && k < sizes->size() ? Dim::fixed((*sizes)[k]) : Dim{};
      outs.push_back({dtype(0), out});
    }
    return outs;
  }
  if (op == "Gather") {
    const auto idx = dims_of(g, in(1));
    if (!x || !idx) return {Out{dtype(0), std::nullopt}};
    const int64_t axis = wrap_dim(n.get_int("axis", 0), rank);
    Dims out(x->begin(), x->begin() + axis);
    out.insert(out.end(), idx->begin(), idx->end());
    out.insert(out.end(), x->begin() + axis + 1, x->end());
    return {Out{dtype(0), out}};
  }
  if (op == "Expand") {
    std::optional<Dims> t = shape_elements(g, in(1));
    if (!t || !x) return {Out{dtype(0), std::nullopt}};
    t = sanitized(*t);
    return {Out{dtype(0), broadcast({x, t})}};
  }
  if (op == "ConstantOfShape") {
    std::optional<DType> dt = DType::Float32;
    auto it = n.attrs.find("value");
    if (it != n.attrs.end() && std::holds_alternative<Tensor>(it->second)) dt = std::get<Tensor>(it->second).dtype();
    const auto target = shape_elements(g, in(0));
    return {Out{dt, target ? std::optional<Dims>(sanitized(*target)) : std::nullopt}};
  }
  if (op == "ReduceMean" || op == "ReduceSum") {
    const auto axes = const_ints(g, in(1));
    if (!x || (!axes && in(1) >= 0)) return {Out{dtype(0), std::nullopt}};
    const bool keep = n.get_int("keepdims", 1) != 0;
    std::vector<bool> reduced(static_cast<size_t>(rank), !axes || axes->empty());
    if (axes && axes->empty() && n.get_int("noop_with_empty_axes", 0) != 0) return {Out{dtype(0), x}};
    if (axes) {
      for (int64_t a : *axes) reduced[static_cast<size_t>(wrap_dim(a, rank))] = true;
    }
    Dims out;
    for (int64_t d = 0; d < rank; ++d) {
      if (!reduced[static_cast<size_t>(d)]) out.push_back((*x)[static_cast<size_t>(d)]);
      else if (keep) out.push_back(Dim::fixed(1));
    }
    return {Out{dtype(0), out}};
  }
  if (op == "Conv" || op == "MaxPool" || op == "AveragePool" || op == "GlobalAveragePool" || op == "Pad") {
    if (!x) return {Out{dtype(0), std::nullopt}};
    Dims out = unknown(x->size());
    if (!out.empty()) out[0] = (*x)[0];
    if (op == "GlobalAveragePool") {
      out = *x;
      for (size_t d = 2; d < out.size(); ++d) out[d] = Dim::fixed(1);
    } else if (op == "Conv") {
      const auto w = dims_of(g, in(1));
      if (w && !w->empty() && out.size() > 1) out[1] = (*w)[0];
    } else if (op != "Pad" && out.size() > 1) {
      out[1] = (*x)[1];
    }
    return {Out{dtype(0), out}};
  }
  return {};
}

// Merges `from` into `into`: fills what `into` lacks. Returns whether it changed.
bool merge(Value& into, const std::optional<DType>& dtype, const std::optional<Dims>& shape) {
  bool changed = false;
  if (!into.dtype && dtype) {
    into.dtype = dtype;
    changed = true;
  }
  if (!shape) return changed;
  if (!into.shape) {
    into.shape = shape;
    return true;
  }
  if (into.shape->size() != shape->size()) return changed;
  for (size_t i = 0; i < shape->size(); ++i) {
    Dim& d = (*into.shape)[i];
    if (!d.is_static() && d.symbol.empty() && !((*shape)[i] == Dim{})) {
      d = (*shape)[i];
      changed = true;
    }
  }
  return changed;
}

}  // namespace

int infer_missing_shapes(Graph& graph) {
  int completed = 0;
  for (const Node& node : graph.nodes) {
    bool missing = false;
    for (int o : node.outputs) {
      if (o < 0) continue;
      const Value& v = graph.value(o);
      missing = missing || !v.dtype || !v.shape ||
                std::any_of(v.shape->begin(), v.shape->end(), [](const Dim& d) { return d == Dim{}; });
    }
    if (!missing) continue;
    const auto outs = infer_node(graph, node);
    for (size_t k = 0; k < node.outputs.size() && k < outs.size(); ++k) {
      if (node.outputs[k] < 0) continue;
      if (merge(graph.value(node.outputs[k]), outs[k].first, outs[k].second)) ++completed;
    }
  }
  return completed;
}

int remove_identities(Graph& graph) {
  int removed = 0;
  std::vector<bool> dead(graph.nodes.size(), false);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    Node& node = graph.nodes[i];
    if (node.op_type != "Identity" && node.op_type != "Dropout") continue;
    if (node.op_type == "Dropout" && node.outputs.size() > 1 && node.outputs[1] >= 0) {
      const int mask = node.outputs[1];
      if (!graph.users_of(mask).empty() || graph.is_graph_output(mask)) continue;
    }
    const int in = node.inputs[0], out = node.outputs[0];
    if (out < 0) continue;
    if (!graph.is_graph_output(out)) {
      graph.replace_uses(out, in);
    } else if (graph.producer_of(in) >= 0 && !graph.is_graph_output(in)) {
      // Keep the output's name: the producer of `in` writes `out` directly.
      Node& producer = graph.nodes[static_cast<size_t>(graph.producer_of(in))];
      for (int& o : producer.outputs) {
        if (o == in) o = out;
      }
      graph.replace_uses(in, out);
    } else {
      continue;  // graph input or constant straight to an output: keep the copy
    }
    node.inputs.clear();
    node.outputs.clear();
    dead[i] = true;
    ++removed;
  }
  graph.erase_nodes(dead);
  return removed;
}

int eliminate_dead_nodes(Graph& graph) {
  std::vector<bool> live_value(graph.values.size(), false);
  for (int o : graph.outputs) live_value[static_cast<size_t>(o)] = true;
  std::vector<bool> dead(graph.nodes.size(), true);
  for (size_t i = graph.nodes.size(); i-- > 0;) {
    const Node& node = graph.nodes[i];
    bool live = false;
    for (int o : node.outputs) live = live || (o >= 0 && live_value[static_cast<size_t>(o)]);
    if (!live) continue;
    dead[i] = false;
    for (int in : node.inputs) {
      if (in >= 0) live_value[static_cast<size_t>(in)] = true;
    }
  }
  const int removed = static_cast<int>(std::count(dead.begin(), dead.end(), true));
  graph.erase_nodes(dead);
  return removed;
}

namespace {

// The single reader of value `id` (and `id` not a graph output), or -1.
int sole_user(const Graph& graph, int id) {
  if (graph.is_graph_output(id)) return -1;
  const std::vector<int> users = graph.users_of(id);
  return users.size() == 1 ? users[0] : -1;
}

}  // namespace

Expected<int> fold_batchnorm(Graph& graph) {
  int folded = 0;
  std::vector<bool> dead(graph.nodes.size(), false);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& bn = graph.nodes[i];
    if (bn.op_type != "BatchNormalization" || bn.inputs.size() < 5) continue;
    if (bn.outputs.size() > 1 && std::any_of(bn.outputs.begin() + 1, bn.outputs.end(), [](int o) { return o >= 0; })) {
      continue;  // training-mode outputs are read
    }
    bool params_constant = true;
    for (size_t k = 1; k < 5; ++k) params_constant = params_constant && graph.is_constant(bn.inputs[k]);
    if (!params_constant) continue;
    const int p = graph.producer_of(bn.inputs[0]);
    if (p < 0 || dead[static_cast<size_t>(p)] || sole_user(graph, bn.inputs[0]) != static_cast<int>(i)) continue;
    Node& prod = graph.nodes[static_cast<size_t>(p)];
    const bool is_conv = prod.op_type == "Conv";
    if (!(is_conv || prod.op_type == "Gemm") || prod.has("activation") || prod.inputs.size() < 2) continue;
    if (!graph.is_constant(prod.inputs[1])) continue;
    const bool has_bias = prod.inputs.size() > 2 && prod.inputs[2] >= 0;
    if (has_bias && !graph.is_constant(prod.inputs[2])) continue;
    const Tensor w = graph.value(prod.inputs[1]).constant;
    if (!is_floating(w.dtype())) continue;
    try {
      const Tensor scale = graph.value(bn.inputs[1]).constant, beta = graph.value(bn.inputs[2]).constant;
      const Tensor mean = graph.value(bn.inputs[3]).constant, var = graph.value(bn.inputs[4]).constant;
      const Tensor s = div(scale, sqrt(add(var, bn.get_float("epsilon", 1e-5))));
      const int64_t channels = s.numel();
      Tensor new_w, new_b;
      if (is_conv) {
        Shape bshape(static_cast<size_t>(w.dim()), 1);
        bshape[0] = channels;
        new_w = mul(w, s.reshape(bshape));
        const Tensor b = has_bias ? graph.value(prod.inputs[2]).constant : zeros({channels}, w.dtype());
        new_b = add(mul(sub(b, mean), s), beta);
      } else {
        if (prod.get_int("transA", 0) != 0 && w.dim() != 2) continue;
        new_w = prod.get_int("transB", 0) ? mul(w, s.reshape({channels, 1})) : mul(w, s.reshape({1, channels}));
        const double gemm_beta = prod.get_float("beta", 1.0);
        const Tensor c = has_bias ? mul(graph.value(prod.inputs[2]).constant, gemm_beta) : zeros({channels}, w.dtype());
        new_b = add(mul(sub(c, mean), s), beta);
        prod.attrs["beta"] = 1.0;
      }
      const std::string base = prod.name.empty() ? bn.name : prod.name;
      prod.inputs[1] = graph.add_constant(base + "/folded_weight", new_w.to(w.dtype()).contiguous());
      const int bias_id = graph.add_constant(base + "/folded_bias", new_b.to(w.dtype()).contiguous());
      if (has_bias) prod.inputs[2] = bias_id;
      else prod.inputs.resize(3, bias_id), prod.inputs[2] = bias_id;
    } catch (const Error& e) {
      return fail(e.status(), "folding " + bn.label() + " into " + prod.label() + ": " + e.what());
    }
    // The producer now writes the BatchNorm's output (its name survives).
    prod.outputs[0] = bn.outputs[0];
    dead[i] = true;
    ++folded;
  }
  graph.erase_nodes(dead);
  return folded;
}

int fuse_activations(Graph& graph) {
  int fused = 0;
  std::vector<bool> dead(graph.nodes.size(), false);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    Node& prod = graph.nodes[i];
    if ((prod.op_type != "Conv" && prod.op_type != "Gemm") || prod.has("activation")) continue;
    if (prod.outputs.empty() || prod.outputs[0] < 0) continue;
    const int u = sole_user(graph, prod.outputs[0]);
    if (u < 0) continue;
    const Node& act = graph.nodes[static_cast<size_t>(u)];
    if (act.op_type == "Relu") {
      prod.attrs["activation"] = std::string("Relu");
    } else if (act.op_type == "Clip" && act.inputs[0] == prod.outputs[0]) {
      const bool lo = act.inputs.size() > 1 && act.inputs[1] >= 0;
      const bool hi = act.inputs.size() > 2 && act.inputs[2] >= 0;
      if ((lo && !graph.is_constant(act.inputs[1])) || (hi && !graph.is_constant(act.inputs[2]))) continue;
      prod.attrs["activation"] = std::string("Clip");
      if (lo) prod.attrs["activation_min"] = graph.value(act.inputs[1]).constant.item().to_double();
      if (hi) prod.attrs["activation_max"] = graph.value(act.inputs[2]).constant.item().to_double();
    } else {
      continue;
    }
    prod.outputs[0] = act.outputs[0];
    dead[static_cast<size_t>(u)] = true;
    ++fused;
  }
  graph.erase_nodes(dead);
  return fused;
}

int conv1d_to_conv2d(Graph& graph) {
  std::vector<Node> nodes;
  int rewritten = 0;
  for (Node& node : graph.nodes) {
    const bool conv1d = node.op_type == "Conv" && node.inputs.size() >= 2 && graph.is_constant(node.inputs[1]) &&
                        graph.value(node.inputs[1]).constant.dim() == 3 && !node.outputs.empty() &&
                        node.outputs[0] >= 0;
    if (!conv1d) {
      nodes.push_back(std::move(node));
      continue;
    }
    const std::string base = node.name.empty() ? graph.value(node.outputs[0]).name : node.name;
    const Tensor w = graph.value(node.inputs[1]).constant;
    node.inputs[1] = graph.add_constant(base + "/weight_2d", w.unsqueeze(2).contiguous());
    auto widen = [&](const char* attr, int64_t pad_value) {
      if (!node.has(attr)) return;
      const std::vector<int64_t> v = node.get_ints(attr);
      node.attrs[attr] = std::vector<int64_t>{pad_value, v.empty() ? pad_value : v[0]};
    };
    widen("kernel_shape", 1);
    widen("strides", 1);
    widen("dilations", 1);
    if (node.has("pads")) {
      const std::vector<int64_t> p = node.get_ints("pads");
      if (p.size() == 2) node.attrs["pads"] = std::vector<int64_t>{0, p[0], 0, p[1]};
    }
    const int axes = graph.add_constant(base + "/axis_2", tensor(std::vector<int64_t>{2}, {1}));
    // [N, C, L] -> [N, C, 1, L] -> Conv -> [N, O, 1, L'] -> [N, O, L'].
    auto with_dim2 = [&](int id, const std::string& name) {
      Value v;
      v.name = name;
      v.dtype = graph.value(id).dtype;
      if (graph.value(id).shape && graph.value(id).shape->size() == 3) {
        std::vector<Dim> d = *graph.value(id).shape;
        d.insert(d.begin() + 2, Dim::fixed(1));
        v.shape = d;
      }
      return graph.add_value(std::move(v));
    };
    const int x4 = with_dim2(node.inputs[0], base + "/input_2d");
    const int y3 = node.outputs[0];
    const int y4 = with_dim2(y3, base + "/output_2d");
    Node unsq;
    unsq.name = base + "/to_2d";
    unsq.op_type = "Unsqueeze";
    unsq.kind = map_onnx_op("Unsqueeze");
    unsq.inputs = {node.inputs[0], axes};
    unsq.outputs = {x4};
    Node sq;
    sq.name = base + "/from_2d";
    sq.op_type = "Squeeze";
    sq.kind = map_onnx_op("Squeeze");
    sq.inputs = {y4, axes};
    sq.outputs = {y3};
    node.inputs[0] = x4;
    node.outputs[0] = y4;
    nodes.push_back(std::move(unsq));
    nodes.push_back(std::move(node));
    nodes.push_back(std::move(sq));
    ++rewritten;
  }
  graph.nodes = std::move(nodes);
  return rewritten;
}

Expected<PassReport> run_passes(Graph& graph) {
  PassReport r;
  for (;;) {
    const int ids = remove_identities(graph);
    const int shapes = fold_shapes(graph);
    auto consts = fold_constants(graph);
    if (!consts.ok()) return consts.diag();
    const int dead = eliminate_dead_nodes(graph);
    r.identities_removed += ids;
    r.shapes_folded += shapes;
    r.constants_folded += *consts;
    r.dead_nodes_removed += dead;
    if (ids + shapes + *consts + dead == 0) break;
  }
  infer_missing_shapes(graph);  // Slice starts and Reshape targets may be constants now
  auto bn = fold_batchnorm(graph);
  if (!bn.ok()) return bn.diag();
  r.batchnorms_folded = *bn;
  r.activations_fused = fuse_activations(graph);
  r.convs_made_2d = conv1d_to_conv2d(graph);
  r.dead_nodes_removed += eliminate_dead_nodes(graph);
  r.values_dropped = graph.compact();
  Diag d = graph.validate();
  if (!d.ok()) return d;
  return r;
}

}  // namespace ember::converter
