// Shape folding and shape inference (passes.h: fold_shapes, infer_missing_shapes).
#include <algorithm>
#include <numeric>
#include <set>

#include "converter/onnx_import.h"
#include "converter/pass_util.h"
#include "converter/passes.h"
#include "runtime/ops/ops.h"

namespace ember::converter {

namespace {

// The node producing value id, if it is an `op` node (else null).
const Node* produced_by(const Graph& g, int id, const char* op) {
  const int p = id < 0 ? -1 : g.producer_of(id);  // (-1, an absent input, also names absent outputs)
  return p >= 0 && g.nodes[static_cast<size_t>(p)].op_type == op ? &g.nodes[static_cast<size_t>(p)] : nullptr;
}

// A Reshape of x (allowzero 0) to Concat(pieces), each piece a constant or
// x's own dim at that position (Gather(Shape(x), i), unsqueezed): such a dim
// is a 0 in the target (copy the input's dim), so the target is a constant.
// PyTorch's x.view(x.size(0), -1, heads, d) exports four nodes a Reshape
// that ran at every inference (BERT: 96 of its 247 ops).
std::optional<Tensor> copy_dims_target(const Graph& g, const Node& reshape) {
  // (Arity is checked here: a malformed graph reaches the passes before the lowering checks it.)
  if (reshape.inputs.size() != 2 || reshape.inputs[0] < 0 || reshape.inputs[1] < 0 ||
      reshape.get_int("allowzero", 0) != 0 || g.is_constant(reshape.inputs[1])) {
    return {};
  }
  const Node* cat = produced_by(g, reshape.inputs[1], "Concat");
  const auto& xshape = g.value(reshape.inputs[0]).shape;
  if (cat == nullptr || cat->get_int("axis", 0) != 0 || !xshape) return {};
  const int64_t rank = static_cast<int64_t>(xshape->size());
  std::vector<int64_t> dims;
  bool copied = false;
  for (int in : cat->inputs) {
    if (in < 0) return {};
    if (g.is_constant(in)) {
      const Tensor& t = g.value(in).constant;
      if (t.dim() != 1) return {};
      for (int64_t v : ints_of(t)) dims.push_back(v);
      continue;
    }
    int id = in;
    bool scalar = false;  // a rank-0 Gather unsqueezed to one value
    if (const Node* u = produced_by(g, id, "Unsqueeze")) {
      if (u->inputs.empty()) return {};
      const std::vector<int64_t> axes =
          u->inputs.size() > 1 && g.is_constant(u->inputs[1]) ? ints_of(g.value(u->inputs[1]).constant)
                                                              : u->get_ints("axes");
      if (axes.size() != 1 || (axes[0] != 0 && axes[0] != -1)) return {};
      id = u->inputs[0];
      scalar = true;
    }
    const Node* gather = produced_by(g, id, "Gather");
    if (gather == nullptr || gather->inputs.size() != 2 || gather->get_int("axis", 0) != 0 ||
        !g.is_constant(gather->inputs[1])) {
      return {};
    }
    const Tensor& idx = g.value(gather->inputs[1]).constant;
    if (idx.numel() != 1 || idx.dim() != (scalar ? 0 : 1)) return {};
    const Node* shape = produced_by(g, gather->inputs[0], "Shape");
    if (shape == nullptr || shape->has("start") || shape->has("end") || shape->inputs.empty() ||
        shape->inputs[0] != reshape.inputs[0]) {
      return {};
    }
    int64_t k = ints_of(idx)[0];
    if (k < 0) k += rank;
    if (k != static_cast<int64_t>(dims.size()) || k >= rank) return {};
    dims.push_back(0);
    copied = true;
  }
  if (!copied) return {};
  const int64_t n = static_cast<int64_t>(dims.size());
  return tensor(dims, {n});
}

}  // namespace

int fold_shapes(Graph& graph) {
  int folded = 0;
  std::vector<bool> dead(graph.nodes.size(), false);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& node = graph.nodes[i];
    if (node.outputs.empty() || node.outputs[0] < 0 || graph.is_constant(node.outputs[0])) continue;
    if ((node.op_type == "Shape" || node.op_type == "Size") && !node.inputs.empty() && node.inputs[0] >= 0 &&
        !graph.is_constant(node.inputs[0])) {
      const auto s = graph.value(node.inputs[0]).static_shape();
      if (!s) continue;
      // Evaluate on a zero-stride stand-in of that shape (no data needed).
      auto out = evaluate_node(node, {scalar_tensor(0.0, DType::Float32).expand(*s)});  // rank 0 too
      if (!out.ok()) continue;
      set_constant(graph.value(node.outputs[0]), (*out)[0]);
      dead[i] = true;
      ++folded;
    } else if (node.op_type == "Gather" && node.inputs.size() == 2 && graph.is_constant(node.inputs[1])) {
      const int shape_node = node.inputs[0] < 0 ? -1 : graph.producer_of(node.inputs[0]);
      if (shape_node < 0) continue;
      const Node& sn = graph.nodes[static_cast<size_t>(shape_node)];
      if (sn.op_type != "Shape" || sn.has("start") || sn.has("end") || sn.inputs.empty() || sn.inputs[0] < 0) continue;
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
    } else if (node.op_type == "Reshape") {
      if (auto target = copy_dims_target(graph, node)) {
        const std::string name = graph.value(node.inputs[1]).name + "/copy_dims";
        const int id = graph.add_constant(name, *target);
        graph.nodes[i].inputs[1] = id;  // the Concat and its pieces die if nothing else reads them
        ++folded;
      }
    }
  }
  graph.erase_nodes(dead);
  return folded;
}

namespace {

// wrap_dim for an index into the `rank` dims of a value: a rank-0 value has
// none (wrap_dim accepts 0 and -1 there, as PyTorch does, and the dims were
// read past their end: a Concat of scalars, found by tools/fuzz.sh onnx).
size_t axis_index(int64_t axis, int64_t rank) {
  EMBER_ENFORCE(rank > 0, Status::OutOfRange, "axis ", axis, " of a rank-0 value");
  return static_cast<size_t>(wrap_dim(axis, rank));
}

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

// The inferred dtype and shape of one output. Each infer_* below returns no
// entries for the ops it does not handle.
using Out = std::pair<std::optional<DType>, std::optional<Dims>>;

// Elementwise ops, Cast and Shape.
std::vector<Out> infer_elementwise(const Graph& g, const Node& n) {
  [[maybe_unused]] const std::string& op = n.op_type;
  [[maybe_unused]] auto in = [&](size_t i) { return i < n.inputs.size() ? n.inputs[i] : -1; };
  [[maybe_unused]] auto dtype = [&](size_t i) { return in(i) >= 0 ? g.value(in(i)).dtype : std::nullopt; };
  [[maybe_unused]] const std::optional<Dims> x = dims_of(g, in(0));
  [[maybe_unused]] const int64_t rank = x ? static_cast<int64_t>(x->size()) : -1;
  static const std::set<std::string> same = {
#define RT_OP(Name, name, n_in, n_out, Params)
#define RT_UNARY(Name, name, dtypes, inputs, formula, onnx, ...) onnx,
#define RT_UNARY_P(Name, name, dtypes, formula, onnx, ...) onnx,
#include "runtime/graph/ops.def"
#undef RT_UNARY_P
#undef RT_UNARY
#undef RT_OP
                                             "Clip", "Gelu", "Softmax", "LogSoftmax", "Identity", "Dropout",
                                             "LayerNormalization", "BatchNormalization", "Not", "PRelu",
                                             "BitwiseNot"};
  if (same.count(op)) return {Out{dtype(0), x}};
  if (op == "CastLike") return {Out{dtype(1), x}};
  static const std::set<std::string> binary = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Mean",
                                               "Where", "And", "Or", "Xor", "Mod", "BitShift", "BitwiseAnd",
                                               "BitwiseOr", "BitwiseXor"};
  static const std::set<std::string> comparison = {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"};
  if (binary.count(op) || comparison.count(op)) {
    std::vector<std::optional<Dims>> shapes;
    for (int id : n.inputs) shapes.push_back(dims_of(g, id));
    std::optional<DType> dt = op == "Where" ? dtype(1) : dtype(0);
    if (comparison.count(op)) dt = DType::Bool;
    return {Out{dt, broadcast(shapes)}};
  }
  if (op == "Cast" || op == "BitCast") return {Out{dtype_from_onnx(n.get_int("to", 0)), x}};
  if (op == "IsNaN" || op == "IsInf") return {Out{DType::Bool, x}};
  if (op == "Range") return {Out{dtype(0), Dims{Dim{}}}};
  if (op == "Size") return {Out{DType::Int64, Dims{}}};
  if (op == "Shape") {
    if (rank < 0) return {Out{DType::Int64, std::nullopt}};
    int64_t start = n.get_int("start", 0), end = n.get_int("end", rank);
    start = std::clamp(start < 0 ? start + rank : start, int64_t{0}, rank);
    end = std::clamp(end < 0 ? end + rank : end, int64_t{0}, rank);
    return {Out{DType::Int64, Dims{Dim::fixed(std::max<int64_t>(0, end - start))}}};
  }
  return {};
}

// MatMul and Gemm.
std::vector<Out> infer_matmul(const Graph& g, const Node& n) {
  [[maybe_unused]] const std::string& op = n.op_type;
  [[maybe_unused]] auto in = [&](size_t i) { return i < n.inputs.size() ? n.inputs[i] : -1; };
  [[maybe_unused]] auto dtype = [&](size_t i) { return in(i) >= 0 ? g.value(in(i)).dtype : std::nullopt; };
  [[maybe_unused]] const std::optional<Dims> x = dims_of(g, in(0));
  [[maybe_unused]] const int64_t rank = x ? static_cast<int64_t>(x->size()) : -1;
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
  return {};
}

// Transpose, Slice, Reshape, Flatten, Squeeze and Unsqueeze.
std::vector<Out> infer_reshapes(const Graph& g, const Node& n) {
  [[maybe_unused]] const std::string& op = n.op_type;
  [[maybe_unused]] auto in = [&](size_t i) { return i < n.inputs.size() ? n.inputs[i] : -1; };
  [[maybe_unused]] auto dtype = [&](size_t i) { return in(i) >= 0 ? g.value(in(i)).dtype : std::nullopt; };
  [[maybe_unused]] const std::optional<Dims> x = dims_of(g, in(0));
  [[maybe_unused]] const int64_t rank = x ? static_cast<int64_t>(x->size()) : -1;
  if (op == "Transpose") {
    if (!x) return {Out{dtype(0), std::nullopt}};
    std::vector<int64_t> perm = n.get_ints("perm");
    if (perm.empty()) {
      for (int64_t d = rank - 1; d >= 0; --d) perm.push_back(d);
    }
    if (static_cast<int64_t>(perm.size()) != rank) return {Out{dtype(0), std::nullopt}};
    Dims out;
    for (int64_t p : perm) out.push_back((*x)[axis_index(p, rank)]);
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
      const size_t a = axis_index((*axes)[i], rank);
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
      for (int64_t a : *axes) added[axis_index(a, r)] = true;
      size_t k = 0;
      for (int64_t d = 0; d < r; ++d) out.push_back(added[static_cast<size_t>(d)] ? Dim::fixed(1) : (*x)[k++]);
    } else {
      std::vector<bool> gone(static_cast<size_t>(rank), false);
      if (axes) {
        for (int64_t a : *axes) gone[axis_index(a, rank)] = true;
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
  return {};
}

// Concat, Split, Gather, Expand and ConstantOfShape.
std::vector<Out> infer_combine(const Graph& g, const Node& n) {
  [[maybe_unused]] const std::string& op = n.op_type;
  [[maybe_unused]] auto in = [&](size_t i) { return i < n.inputs.size() ? n.inputs[i] : -1; };
  [[maybe_unused]] auto dtype = [&](size_t i) { return in(i) >= 0 ? g.value(in(i)).dtype : std::nullopt; };
  [[maybe_unused]] const std::optional<Dims> x = dims_of(g, in(0));
  [[maybe_unused]] const int64_t rank = x ? static_cast<int64_t>(x->size()) : -1;
  if (op == "Concat") {
    if (!x) return {Out{dtype(0), std::nullopt}};
    const size_t axis = axis_index(n.get_int("axis", 0), rank);
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
      const size_t axis = axis_index(n.get_int("axis", 0), rank);
      out[axis] = sizes && k < sizes->size() ? Dim::fixed((*sizes)[k]) : Dim{};
      if (!sizes && in(1) < 0 && (*x)[axis].is_static()) {  // ceil(dim / n) each, the last one smaller
        const int64_t dim = (*x)[axis].value, parts = static_cast<int64_t>(n.outputs.size());
        const int64_t chunk = (dim + parts - 1) / parts, begin = std::min(dim, static_cast<int64_t>(k) * chunk);
        out[axis] = Dim::fixed(std::min(chunk, dim - begin));
      }
      outs.push_back({dtype(0), out});
    }
    return outs;
  }
  if (op == "Gather") {
    const auto idx = dims_of(g, in(1));
    if (!x || !idx) return {Out{dtype(0), std::nullopt}};
    const int64_t axis = static_cast<int64_t>(axis_index(n.get_int("axis", 0), rank));
    Dims out(x->begin(), x->begin() + axis);
    out.insert(out.end(), idx->begin(), idx->end());
    out.insert(out.end(), x->begin() + axis + 1, x->end());
    return {Out{dtype(0), out}};
  }
  if (op == "GatherElements") return {Out{dtype(0), dims_of(g, in(1))}};  // the indices' shape
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
  return {};
}

// Reductions, Conv, pooling and Pad.
std::vector<Out> infer_reduce_and_nn(const Graph& g, const Node& n) {
  [[maybe_unused]] const std::string& op = n.op_type;
  [[maybe_unused]] auto in = [&](size_t i) { return i < n.inputs.size() ? n.inputs[i] : -1; };
  [[maybe_unused]] auto dtype = [&](size_t i) { return in(i) >= 0 ? g.value(in(i)).dtype : std::nullopt; };
  [[maybe_unused]] const std::optional<Dims> x = dims_of(g, in(0));
  [[maybe_unused]] const int64_t rank = x ? static_cast<int64_t>(x->size()) : -1;
  if (op.rfind("Reduce", 0) == 0) {  // ReduceSum, ReduceMax, ReduceLogSumExp, ...
    auto axes = n.has("axes") ? std::optional<std::vector<int64_t>>(n.get_ints("axes")) : const_ints(g, in(1));
    const auto axes_shape = in(1) >= 0 ? g.value(in(1)).static_shape() : std::nullopt;
    if (!axes && axes_shape && axes_shape->size() == 1 && (*axes_shape)[0] == 0) axes.emplace();  // known empty
    const bool keep = n.get_int("keepdims", 1) != 0;
    if (x && !axes && in(1) >= 0) {  // axes known at run time: the rank is known, sizes 1 stay 1
      if (keep) {
        Dims out;
        for (const Dim& d : *x) out.push_back(d.is_static() && d.value == 1 ? d : Dim{});
        return {Out{dtype(0), out}};
      }
      if (axes_shape && axes_shape->size() == 1 && (*axes_shape)[0] <= rank) {
        return {Out{dtype(0), unknown(static_cast<size_t>(rank - (*axes_shape)[0]))}};
      }
    }
    if (!x || (!axes && in(1) >= 0)) return {Out{dtype(0), std::nullopt}};
    std::vector<bool> reduced(static_cast<size_t>(rank), !axes || axes->empty());
    if ((!axes || axes->empty()) && n.get_int("noop_with_empty_axes", 0) != 0) return {Out{dtype(0), x}};
    if (axes) {
      for (int64_t a : *axes) reduced[axis_index(a, rank)] = true;
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
    if (!out.empty() && op != "Pad") out[0] = (*x)[0];  // Pad may pad dim 0 too
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

// The attention family (lower_attn.cc): Swish, SwiGLU, RMSNormalization and
// RotaryEmbedding keep input 0's shape; Attention, LinearAttention and
// CausalConvWithState as their specifications shape their outputs.
std::vector<Out> infer_attention_family(const Graph& g, const Node& n) {
  const std::string& op = n.op_type;
  auto in = [&](size_t i) { return i < n.inputs.size() ? n.inputs[i] : -1; };
  const std::optional<DType> dt = in(0) >= 0 ? g.value(in(0)).dtype : std::nullopt;
  const std::optional<Dims> x = dims_of(g, in(0));
  if (op == "Swish" || op == "SwiGLU" || op == "RMSNormalization" || op == "RotaryEmbedding") return {Out{dt, x}};
  auto mul = [](const Dim& d, int64_t f, int64_t div) {
    return d.is_static() && d.value * f % div == 0 ? Dim::fixed(d.value * f / div) : Dim{};
  };
  auto add = [](const Dim& a, const Dim& b) { return a.is_static() && b.is_static() ? Dim::fixed(a.value + b.value) : Dim{}; };
  if (op == "CausalConvWithState") {
    const std::optional<Dims> w = dims_of(g, in(1));
    if (!x || x->size() != 3 || !w || w->size() != 3) return {Out{dt, x}};
    const Dim state = (*w)[2].is_static() ? Dim::fixed((*w)[2].value - 1) : Dim{};
    return {Out{dt, x}, Out{dt, Dims{(*x)[0], (*x)[1], state}}};
  }
  const std::optional<Dims> k = dims_of(g, in(1)), v = dims_of(g, in(2));
  if (!x || !k || !v || x->size() != k->size() || x->size() != v->size()) return {};
  const int64_t hq = n.get_int("q_num_heads", 0), hkv = n.get_int("kv_num_heads", 0);
  if (op == "LinearAttention") {
    if (x->size() != 3 || hq <= 0 || hkv <= 0) return {};
    const Dims y = {(*x)[0], (*x)[1], mul((*v)[2], hq, hkv)};
    return {Out{dt, y}, Out{dt, Dims{(*x)[0], Dim::fixed(hkv), mul((*x)[2], 1, hq), mul((*v)[2], 1, hkv)}}};
  }
  if (op != "Attention" && op != "ai.onnx.preview::FlexAttention") return {};
  Dims q4 = *x, k4 = *k, v4 = *v;
  if (x->size() == 3) {
    if (hq <= 0 || hkv <= 0) return {};
    q4 = {(*x)[0], Dim::fixed(hq), (*x)[1], mul((*x)[2], 1, hq)};
    k4 = {(*k)[0], Dim::fixed(hkv), (*k)[1], mul((*k)[2], 1, hkv)};
    v4 = {(*v)[0], Dim::fixed(hkv), (*v)[1], mul((*v)[2], 1, hkv)};
  } else if (x->size() != 4) {
    return {};
  }
  const std::optional<Dims> past = dims_of(g, in(4));
  const Dim total = past && past->size() == 4 ? add((*past)[2], k4[2]) : k4[2];
  const Dims y = x->size() == 3 ? Dims{(*x)[0], (*x)[1], mul(v4[3], hq, 1)} : Dims{q4[0], q4[1], q4[2], v4[3]};
  return {Out{dt, y}, Out{dt, Dims{k4[0], k4[1], total, k4[3]}}, Out{dt, Dims{v4[0], v4[1], total, v4[3]}},
          Out{dt, Dims{q4[0], q4[1], q4[2], total}}};
}

// Resize / Upsample (constant scales or sizes, axes; keep_aspect_ratio_policy
// other than stretch leaves the resized dims unknown), ConvTranspose, GridSample.
std::vector<Out> infer_resize_family(const Graph& g, const Node& n) {
  const std::string& op = n.op_type;
  auto in = [&](size_t i) { return i < n.inputs.size() ? n.inputs[i] : -1; };
  const std::optional<DType> dt = in(0) >= 0 ? g.value(in(0)).dtype : std::nullopt;
  const std::optional<Dims> x = dims_of(g, in(0));
  if (op != "Resize" && op != "Upsample" && op != "ConvTranspose" && op != "GridSample") return {};
  if (!x) return {Out{dt, std::nullopt}};
  const size_t rank = x->size();
  if (op == "GridSample") {  // [N, C, *grid's middle dims]
    const std::optional<Dims> grid = dims_of(g, in(1));
    if (!grid || grid->size() != rank || rank < 3) return {Out{dt, unknown(rank)}};
    Dims out = {(*x)[0], (*x)[1]};
    out.insert(out.end(), grid->begin() + 1, grid->end() - 1);
    return {Out{dt, out}};
  }
  if (op == "ConvTranspose") {
    const std::optional<Dims> w = dims_of(g, in(1));
    Dims out = unknown(rank);
    if (!w || w->size() != rank || rank < 3) return {Out{dt, out}};
    const size_t ns = rank - 2;
    out[0] = (*x)[0];
    if ((*w)[1].is_static()) out[1] = Dim::fixed((*w)[1].value * n.get_int("group", 1));
    const std::vector<int64_t> shape = n.get_ints("output_shape");
    const std::vector<int64_t> st = n.get_ints("strides", std::vector<int64_t>(ns, 1));
    const std::vector<int64_t> dil = n.get_ints("dilations", std::vector<int64_t>(ns, 1));
    const std::vector<int64_t> op_pad = n.get_ints("output_padding", std::vector<int64_t>(ns, 0));
    const std::vector<int64_t> pads = n.get_ints("pads", std::vector<int64_t>(2 * ns, 0));
    const std::string auto_pad = n.get_string("auto_pad", "NOTSET");
    if (st.size() != ns || dil.size() != ns || op_pad.size() != ns || pads.size() != 2 * ns) return {Out{dt, out}};
    for (size_t i = 0; i < ns; ++i) {
      const Dim& d = (*x)[2 + i];
      if (shape.size() == ns || shape.size() == rank) {
        out[2 + i] = Dim::fixed(shape[shape.size() - ns + i]);
      } else if (d.is_static() && (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") && !n.has("pads")) {
        out[2 + i] = Dim::fixed(d.value * st[i]);
      } else if (d.is_static() && (*w)[2 + i].is_static()) {
        const int64_t pad = auto_pad == "VALID" ? 0 : pads[i] + pads[ns + i];
        out[2 + i] = Dim::fixed(st[i] * (d.value - 1) + op_pad[i] + ((*w)[2 + i].value - 1) * dil[i] + 1 - pad);
      }
    }
    return {Out{dt, out}};
  }
  const bool early = op == "Upsample" || (g.opset > 0 && g.opset <= 10);
  std::optional<std::vector<double>> scales;
  std::optional<std::vector<int64_t>> sizes;
  if (op == "Upsample" && n.has("scales")) {
    scales = n.get_floats("scales");
  } else if (const int s = in(early ? 1 : 2); g.is_constant(s) && g.value(s).constant.numel() > 0) {
    scales = g.value(s).constant.to(DType::Float64).contiguous().to_vector<double>();
  }
  if (!early && g.is_constant(in(3)) && g.value(in(3)).constant.numel() > 0) sizes = const_ints(g, in(3));
  std::vector<int64_t> axes = n.get_ints("axes");
  if (axes.empty()) {
    for (size_t d = 0; d < rank; ++d) axes.push_back(static_cast<int64_t>(d));
  }
  Dims out = *x;
  const bool stretch = n.get_string("keep_aspect_ratio_policy", "stretch") == "stretch";
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t a = axes[i] < 0 ? axes[i] + static_cast<int64_t>(rank) : axes[i];
    if (a < 0 || a >= static_cast<int64_t>(rank)) return {Out{dt, unknown(rank)}};
    Dim& d = out[static_cast<size_t>(a)];
    if (sizes && sizes->size() == axes.size() && stretch) {
      d = Dim::fixed((*sizes)[i]);
    } else if (scales && scales->size() == axes.size() && !sizes) {
      const double s = (*scales)[i];
      if (s != 1.0) d = d.is_static() ? Dim::fixed(static_cast<int64_t>(static_cast<double>(d.value) * s)) : Dim{};
    } else {
      d = Dim{};
    }
  }
  return {Out{dt, out}};
}

// Conv (explicit pads) and Pad (constant pads) with their spatial sizes, and
// the outputs of LSTM, GRU and RNN: what ONNX's inference gives them when a
// model's subgraphs kept it from running (an If inlined after --fix-input).
std::vector<Out> infer_conv_pad_lstm(const Graph& g, const Node& n) {
  const std::string& op = n.op_type;
  auto in = [&](size_t i) { return i < n.inputs.size() ? n.inputs[i] : -1; };
  const std::optional<DType> dt = in(0) >= 0 ? g.value(in(0)).dtype : std::nullopt;
  const std::optional<Dims> x = dims_of(g, in(0));
  if (!x) return {};
  const size_t rank = x->size();
  if (op == "Pad" && in(3) < 0 && n.get_string("mode", "constant") != "wrap") {
    const auto pads = const_ints(g, in(1));
    if (!pads || pads->size() != 2 * rank) return {};
    Dims out = *x;
    for (size_t d = 0; d < rank; ++d) {
      out[d] = (*x)[d].is_static() ? Dim::fixed((*x)[d].value + (*pads)[d] + (*pads)[d + rank]) : Dim{};
    }
    return {Out{dt, out}};
  }
  if (op == "Conv" && rank >= 3) {
    const auto w = dims_of(g, in(1));
    const std::string pad = n.get_string("auto_pad", "NOTSET");
    if (!w || w->size() != rank || (pad != "NOTSET" && pad != "VALID")) return {};
    const size_t sp = rank - 2;
    const std::vector<int64_t> pads = n.get_ints("pads", std::vector<int64_t>(2 * sp, 0));
    const std::vector<int64_t> strides = n.get_ints("strides", std::vector<int64_t>(sp, 1));
    const std::vector<int64_t> dil = n.get_ints("dilations", std::vector<int64_t>(sp, 1));
    if (pads.size() != 2 * sp || strides.size() != sp || dil.size() != sp) return {};
    Dims out = {(*x)[0], (*w)[0]};
    for (size_t d = 0; d < sp; ++d) {
      const Dim& i = (*x)[d + 2];
      const Dim& k = (*w)[d + 2];
      const int64_t span = i.value + pads[d] + pads[d + sp] - dil[d] * (k.value - 1) - 1;
      out.push_back(i.is_static() && k.is_static() && strides[d] > 0 && span >= 0 ? Dim::fixed(span / strides[d] + 1)
                                                                                   : Dim{});
    }
    return {Out{dt, out}};
  }
  if ((op == "LSTM" || op == "GRU" || op == "RNN") && rank == 3) {
    const int64_t hidden = n.get_int("hidden_size", 0);
    const int64_t layout = n.get_int("layout", 0);
    if (hidden <= 0 || (layout != 0 && layout != 1)) return {};
    const Dim dirs = Dim::fixed(n.get_string("direction", "forward") == "bidirectional" ? 2 : 1);
    const Dim h = Dim::fixed(hidden);
    // layout 0: X [T, B, I], Y [T, D, B, H], states [D, B, H]; layout 1: X [B, T, I], Y [B, T, D, H], states [B, D, H].
    const Dim& t = (*x)[layout == 0 ? 0 : 1];
    const Dim& b = (*x)[layout == 0 ? 1 : 0];
    const Out y{dt, layout == 0 ? Dims{t, dirs, b, h} : Dims{b, t, dirs, h}};
    const Out state{dt, layout == 0 ? Dims{dirs, b, h} : Dims{b, dirs, h}};
    if (op == "LSTM") return {y, state, state};
    return {y, state};
  }
  return {};
}

// The dtype and shape of `node`'s outputs (nullopt entries where unknown).
std::vector<Out> infer_node(const Graph& g, const Node& n) {
  for (auto infer : {infer_control_flow_outputs, infer_conv_pad_lstm, infer_elementwise, infer_matmul, infer_reshapes, infer_combine,
                     infer_reduce_and_nn, infer_attention_family, infer_resize_family}) {
    std::vector<Out> outs = infer(g, n);
    if (!outs.empty()) return outs;
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
    std::vector<Out> outs;
    try {
      outs = infer_node(graph, node);
    } catch (const Error& e) {  // a malformed node: named
      raise_error(e.status(), node.label() + ": " + e.what());
    }
    for (size_t k = 0; k < node.outputs.size() && k < outs.size(); ++k) {
      if (node.outputs[k] < 0) continue;
      if (merge(graph.value(node.outputs[k]), outs[k].first, outs[k].second)) ++completed;
    }
  }
  return completed;
}

}  // namespace ember::converter
