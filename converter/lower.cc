// lower(): the optimized converter IR -> a ModelDef of ember ops (ops.def).
// One ember op per IR node (Max/Min with more than two inputs: a chain);
// constant inputs that ember ops take as params are read here. Every problem
// is collected and reported in one Diag.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "converter/lowerer.h"
#include "converter/pass_util.h"

namespace ember::converter {

namespace lowering {

Expected<ModelDef> Lowerer::run() {
  for (int id : g_.inputs) def_.inputs.push_back(tensor(id));
  for (const Node& n : g_.nodes) {
    const size_t n_ops = def_.ops.size();
    try {
      const OnnxLowering* entry = find_lowering(n.op_type, g_.opset);
      if (entry == nullptr) refuse("has no ember op at opset " + std::to_string(g_.opset));
      lower_node(n, *entry);
    } catch (const NodeError& e) {
      def_.ops.resize(n_ops);
      errors_.push_back(node_label(n) + ": " + e.reason);
    } catch (const Error& e) {  // an eager op refused a constant
      def_.ops.resize(n_ops);
      errors_.push_back(node_label(n) + ": " + e.what());
    }
  }
  for (int id : g_.outputs) def_.outputs.push_back(tensor(id));
  if (!errors_.empty()) {
    std::ostringstream os;
    os << "the graph cannot be lowered to ember ops (" << errors_.size() << " problem"
       << (errors_.size() == 1 ? "" : "s") << "): ";
    for (size_t i = 0; i < errors_.size(); ++i) os << (i ? "; " : "") << errors_[i];
    return Diag{Status::NotSupported, os.str()};
  }
  return std::move(def_);
}

std::string Lowerer::unique_name(std::string name, int id) {
  if (name.empty()) name = "value_" + std::to_string(id < 0 ? static_cast<int>(def_.tensors.size()) : id);
  std::string candidate = name;
  for (int k = 1; names_.count(candidate); ++k) candidate = name + "_" + std::to_string(k);
  names_.insert(candidate);
  return candidate;
}

std::string Lowerer::rank_hint(int id) const {
  const int p = g_.producer_of(id);
  if (p < 0) return "";
  const Node& n = g_.nodes[static_cast<size_t>(p)];
  const size_t k = static_cast<size_t>(std::find(n.outputs.begin(), n.outputs.end(), id) - n.outputs.begin());
  const auto [then_rank, else_rank] = if_branch_ranks(g_, n, k);
  if (!then_rank || !else_rank || *then_rank == *else_rank) return "";
  // The graph inputs the condition is computed from.
  std::set<std::string> reads;
  std::set<int> seen;
  std::vector<int> todo = {n.inputs.empty() ? -1 : n.inputs[0]};
  while (!todo.empty()) {
    const int v = todo.back();
    todo.pop_back();
    if (v < 0 || !seen.insert(v).second) continue;
    if (g_.is_graph_input(v)) reads.insert("'" + g_.value(v).name + "'");
    const int q = g_.producer_of(v);
    if (q >= 0) todo.insert(todo.end(), g_.nodes[static_cast<size_t>(q)].inputs.begin(),
                            g_.nodes[static_cast<size_t>(q)].inputs.end());
  }
  std::string names;
  for (const std::string& r : reads) names += (names.empty() ? "" : ", ") + r;
  return " (" + n.label() + " gives it rank " + std::to_string(*then_rank) + " in then_branch and " +
         std::to_string(*else_rank) + " in else_branch, and its condition" +
         (names.empty() ? "" : " (computed from " + names + ")") +
         " is known only at run time: fixing the inputs it is computed from (--fix-input NAME=VALUE, "
         "--input-shape NAME=DIMS) can fold it)";
}

int32_t Lowerer::tensor(int id) {
  if (id < 0) return -1;
  int32_t& slot = tensor_of_[static_cast<size_t>(id)];
  if (slot >= 0) return slot;
  const Value& v = val(id);
  TensorDef t;
  t.name = unique_name(v.name, id);
  if (v.is_constant()) {
    t.tensor = v.constant.contiguous();
    t.dtype = t.tensor.dtype();
    t.shape = t.tensor.sizes();
    t.has_data = true;
  } else {
    const auto& dt = dtypes_[static_cast<size_t>(id)];
    if (dt) t.dtype = *dt;
    else errors_.push_back("value '" + v.name + "': dtype unknown");
    if (v.shape) {
      bool named = false;
      for (const Dim& d : *v.shape) {
        t.shape.push_back(d.is_static() ? d.value : -1);
        t.dim_names.push_back(d.is_static() ? std::string() : d.symbol);
        named = named || !t.dim_names.back().empty();
      }
      if (!named) t.dim_names.clear();
    } else {
      errors_.push_back("value '" + v.name + "': rank unknown" + rank_hint(id));
    }
  }
  slot = def_.add_tensor(std::move(t));
  return slot;
}

int32_t Lowerer::new_weight(const std::string& name, const Tensor& data, bool trainable) {
  TensorDef t;
  t.name = unique_name(name, -1);
  t.tensor = data.contiguous();
  t.dtype = t.tensor.dtype();
  t.shape = t.tensor.sizes();
  t.has_data = true;
  t.trainable = trainable && is_floating(t.dtype);
  return def_.add_tensor(std::move(t));
}

int32_t Lowerer::new_activation(const std::string& name, DType dtype, const std::vector<Dim>& shape) {
  TensorDef t;
  t.name = unique_name(name, -1);
  t.dtype = dtype;
  bool named = false;
  for (const Dim& d : shape) {
    t.shape.push_back(d.is_static() ? d.value : -1);
    t.dim_names.push_back(d.is_static() ? std::string() : d.symbol);
    named = named || !t.dim_names.back().empty();
  }
  if (!named) t.dim_names.clear();
  return def_.add_tensor(std::move(t));
}

int32_t Lowerer::weight(int id) {
  const int32_t t = tensor(id);
  if (t >= 0 && is_const(id) && is_floating(def_.tensors[static_cast<size_t>(t)].dtype)) {
    def_.tensors[static_cast<size_t>(t)].trainable = true;
  }
  return t;
}

int64_t Lowerer::rank_of(int id, const std::string& what) const {
  const Value& v = val(id);
  if (v.is_constant()) return v.constant.dim();
  if (!v.shape) refuse(what + " " + vname(id) + " has an unknown rank");
  return static_cast<int64_t>(v.shape->size());
}

void Lowerer::infer_output_dtypes(const Node& n) {
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    const int o = n.outputs[k];
    if (o < 0 || dtypes_[static_cast<size_t>(o)]) continue;
    std::optional<DType> dt;
    const std::string& op = n.op_type;
    if (op == "Equal" || op == "Less" || op == "Greater" || op == "GreaterOrEqual" || op == "LessOrEqual" ||
        op == "IsNaN" || op == "IsInf") {
      dt = DType::Bool;
    } else if (op == "Shape" || op == "ArgMax" || op == "ArgMin" || op == "NonMaxSuppression") {
      dt = DType::Int64;
    } else if (op == "CastLike") {
      dt = dtype_of(n.inputs.size() > 1 ? n.inputs[1] : -1);
    }
    else if (op == "Cast" || op == "BitCast") dt = cast_target(n);
    else if (op == "ConstantOfShape") dt = constant_of_shape_value(n).dtype();
    else if (op == "Where") dt = dtype_of(n.inputs.size() > 1 ? n.inputs[1] : -1);
    else if ((op == "MaxPool" || op == "Dropout") && k == 1) dt = op == "MaxPool" ? DType::Int64 : DType::Bool;
    else if (!n.inputs.empty()) dt = dtype_of(n.inputs[0]);
    dtypes_[static_cast<size_t>(o)] = dt;
  }
}

std::optional<std::vector<int64_t>> Lowerer::const_ints(const Node& n, size_t i, const std::string& what) const {
  if (!has_input(n, i)) return std::nullopt;
  const int id = n.inputs[i];
  if (!is_const(id)) refuse(what + " " + vname(id) + " is not a constant");
  const Tensor& t = val(id).constant;
  if (is_floating(t.dtype()) || t.dtype() == DType::Bool) {
    refuse(what + " " + vname(id) + " has dtype " + std::string(dtype_name(t.dtype())) + ", not an integer type");
  }
  return t.to_vector<int64_t>();
}

std::optional<Scalar> Lowerer::const_scalar(const Node& n, size_t i, const std::string& what) const {
  if (!has_input(n, i)) return std::nullopt;
  const int id = n.inputs[i];
  if (!is_const(id)) refuse(what + " " + vname(id) + " is not a constant");
  const Tensor& t = val(id).constant;
  if (t.numel() != 1) refuse(what + " " + vname(id) + " has " + std::to_string(t.numel()) + " elements, not 1");
  return t.reshape({1}).item();
}

int64_t Lowerer::norm_axis(int64_t axis, int64_t rank, const std::string& what) {
  const int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) {
    refuse(what + " " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  }
  return a;
}

DType Lowerer::cast_target(const Node& n) const {
  const int64_t to = n.get_int("to", 0);
  const std::optional<DType> dtype = dtype_from_onnx(to);
  if (!dtype) {
    refuse("cast to ONNX dtype " + onnx_dtype_name(to) + " (" + std::to_string(to) + ") is not supported");
  }
  return *dtype;
}

Tensor Lowerer::constant_of_shape_value(const Node& n) const {
  auto it = n.attrs.find("value");
  if (it == n.attrs.end()) return scalar_tensor(0.0, DType::Float32);
  const Tensor* t = std::get_if<Tensor>(&it->second);
  if (t == nullptr || t->numel() != 1) refuse("attribute 'value' must be a tensor of one element");
  return *t;
}

Activation Lowerer::fused_activation(const Node& n) const {
  Activation a;
  if (!n.has("activation")) return a;
  const std::string kind = n.get_string("activation", "");
  if (kind == "Relu") {
    a.kind = ActivationKind::Relu;
  } else if (kind == "Clip") {
    a.kind = ActivationKind::Clamp;
    a.min = n.get_float("activation_min", -INFINITY);
    a.max = n.get_float("activation_max", INFINITY);
    if (!(a.min <= a.max)) refuse("fused Clip bounds are invalid");
  } else if (kind == "HardSwish") {
    a.kind = ActivationKind::HardSwish;
  } else {
    refuse("fused activation '" + kind + "' is not supported");
  }
  return a;
}

void Lowerer::emit(OpKind kind, const Node& n, std::vector<int32_t> inputs, const std::vector<int>& outputs,
          OpParams params) {
  std::vector<int32_t> outs;
  for (int o : outputs) outs.push_back(tensor(o));
  emit_tensors(kind, inputs, outs, params, n.name);
}

void Lowerer::emit_tensors(OpKind kind, std::vector<int32_t> inputs, std::vector<int32_t> outputs, OpParams params,
                  std::string name) {
  OpDef op;
  op.op = kind;
  op.inputs = std::move(inputs);
  op.outputs = std::move(outputs);
  op.name = std::move(name);
  op.params = params;
  def_.ops.push_back(std::move(op));
}

bool Lowerer::output_used(const Node& n, size_t k) const {
  const int o = k < n.outputs.size() ? n.outputs[k] : -1;
  return o >= 0 && (!g_.users_of(o).empty() || g_.is_graph_output(o));
}

void Lowerer::require_unused_extra_outputs(const Node& n, const std::string& what) const {
  for (size_t k = 1; k < n.outputs.size(); ++k) {
    if (output_used(n, k)) refuse("output " + std::to_string(k) + " " + vname(n.outputs[k]) + " (" + what + ") is used");
  }
}

void Lowerer::require_inputs(const Node& n, size_t min_count) const {
  for (size_t i = 0; i < min_count; ++i) {
    if (!has_input(n, i)) refuse("input " + std::to_string(i) + " is missing");
  }
}

void Lowerer::spatial_pads(const Node& n, int id_x, const int64_t kernel[2], const int64_t stride[2],
                  const int64_t dilation[2], int64_t out[2]) const {
  const std::string auto_pad = n.get_string("auto_pad", "NOTSET");
  if (auto_pad == "NOTSET") {
    const std::vector<int64_t> pads = n.get_ints("pads", {0, 0, 0, 0});
    if (pads.size() != 4) refuse("pads " + join_ints(pads) + " must have 4 values");
    if (pads[0] != pads[2] || pads[1] != pads[3]) {
      refuse("pads " + join_ints(pads) + " are not symmetric (begin != end)");
    }
    out[0] = pads[0];
    out[1] = pads[1];
    return;
  }
  if (auto_pad == "VALID") {
    out[0] = out[1] = 0;
    return;
  }
  if (auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER") refuse("auto_pad '" + auto_pad + "' is unknown");
  const Value& x = val(id_x);
  const auto shape = x.static_shape();
  if (!shape || shape->size() != 4) refuse("auto_pad " + auto_pad + " needs a static 4-D input shape");
  for (int d = 0; d < 2; ++d) {
    const int64_t in = (*shape)[static_cast<size_t>(2 + d)];
    const int64_t o = (in + stride[d] - 1) / stride[d];
    const int64_t total = std::max<int64_t>(0, (o - 1) * stride[d] + (kernel[d] - 1) * dilation[d] + 1 - in);
    if (total % 2 != 0) {
      refuse("auto_pad " + auto_pad + " needs an asymmetric padding (" + std::to_string(total) +
             " in dimension " + std::to_string(2 + d) + ")");
    }
    out[d] = total / 2;
  }
}

void Lowerer::pair_attr(const Node& n, const std::string& attr, int64_t fallback, int64_t out[2]) {
  const std::vector<int64_t> v = n.get_ints(attr, {fallback, fallback});
  if (v.size() != 2) refuse(attr + " " + join_ints(v) + " must have 2 values (2-D only)");
  if (v[0] < 1 || v[1] < 1) refuse(attr + " " + join_ints(v) + " must be >= 1");  // strides, dilations, kernel_shape
  out[0] = v[0];
  out[1] = v[1];
}

void Lowerer::lower_node(const Node& n, const OnnxLowering& entry) {
  infer_output_dtypes(n);
  if ((n.inputs.empty() || n.inputs[0] < 0) && n.op_type != "ConstantOfShape" && n.op_type != "Loop")
    refuse("has no first input");
  entry_ = &entry;
  (this->*entry.lower)(n);
}

DimsParams Lowerer::dims_params(const std::vector<int64_t>& dims, const std::string& what) const {
  if (dims.size() > static_cast<size_t>(kMaxRank)) {
    refuse(what + " " + join_ints(dims) + " has more than " + std::to_string(kMaxRank) + " values");
  }
  DimsParams p;
  p.rank = static_cast<int>(dims.size());
  std::copy(dims.begin(), dims.end(), p.dims);
  return p;
}

// An RT_UNARY_P op's UnaryParams: its line's ONNX attributes, with ONNX's
// defaults; NoParams for the other plain ops.
OpParams plain_params(OpKind kind, const Node& n) {
  switch (kind) {
#define RT_OP(Name, name, n_in, n_out, Params)
#define RT_UNARY(Name, ...)
#define RT_UNARY_P(Name, name, dtypes, formula, onnx, attr_a, default_a, attr_b, default_b, ...) \
  case OpKind::Name:                                                                             \
    return UnaryParams{n.get_float(attr_a, default_a), n.get_float(attr_b, default_b)};
#include "runtime/graph/ops.def"
#undef RT_UNARY_P
#undef RT_UNARY
#undef RT_OP
    default:
      return NoParams{};
  }
}

void Lowerer::lower_plain(const Node& n) {
  const std::optional<OpKind> kind = entry_->kind;
  if (!kind) refuse("has no ember op");
  const int want = op_num_inputs(*kind);
  if (static_cast<int>(n.inputs.size()) != want) {
    refuse("has " + std::to_string(n.inputs.size()) + " inputs, expected " + std::to_string(want));
  }
  std::vector<int32_t> ins;
  for (int id : n.inputs) {
    if (id < 0) refuse("an input is omitted");
    ins.push_back(n.op_type == "MatMul" ? weight(id) : tensor(id));
  }
  emit(*kind, n, ins, {out0(n)}, plain_params(*kind, n));
}

std::vector<Dim> Lowerer::broadcast(const std::vector<Dim>& a, const std::vector<Dim>& b) {
  const size_t r = std::max(a.size(), b.size());
  std::vector<Dim> out(r);
  for (size_t i = 0; i < r; ++i) {
    const Dim da = i < r - a.size() ? Dim::fixed(1) : a[i - (r - a.size())];
    const Dim db = i < r - b.size() ? Dim::fixed(1) : b[i - (r - b.size())];
    if (da.is_static() && da.value == 1) out[i] = db;
    else if (db.is_static() && db.value == 1) out[i] = da;
    else if (da == db) out[i] = da;
    else if (da.is_static() && db.is_static()) refuse("input shapes do not broadcast");
    else out[i] = Dim{};
  }
  return out;
}

std::vector<Dim> Lowerer::dims_of(int id, const std::string& what) const {
  const Value& v = val(id);
  if (v.is_constant()) {
    std::vector<Dim> d;
    for (int64_t s : v.constant.sizes()) d.push_back(Dim::fixed(s));
    return d;
  }
  if (!v.shape) refuse(what + " " + vname(id) + " has an unknown rank");
  return *v.shape;
}

std::string Lowerer::fmt(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

// The ONNX op table: every ONNX op type the converter lowers, with the opsets
// each entry handles. The importer's list of supported types and the IR's
// op mapping derive from it; the unary elementwise ops come from ops.def.
constexpr int64_t kAny = kMaxOnnxOpset;
struct OnnxOpTable {  // Lowerer's friend: the table names its private lowering functions
  static const OnnxLowering entries[];
};
const OnnxLowering OnnxOpTable::entries[] = {
#define RT_OP(Name, name, n_in, n_out, Params)
#define RT_UNARY(Name, name, dtypes, inputs, formula, onnx, ...) {onnx, 1, kAny, &Lowerer::lower_plain, OpKind::Name},
#define RT_UNARY_P(Name, name, dtypes, formula, onnx, ...) {onnx, 1, kAny, &Lowerer::lower_plain, OpKind::Name},
#include "runtime/graph/ops.def"
#undef RT_UNARY_P
#undef RT_UNARY
#undef RT_OP
#define RT_LOWERING(fn)
#define RT_ONNX(type, since, until, fn, kind) {type, since, until, &Lowerer::fn, kind},
#include "converter/onnx_ops.inc"
#undef RT_ONNX
#undef RT_LOWERING
};

const OnnxLowering* find_lowering(std::string_view type, int64_t opset) {
  if (opset <= 0) opset = kMaxOnnxOpset;  // a graph built without one (tests)
  for (const OnnxLowering& e : OnnxOpTable::entries) {
    if (!e.type.empty() && e.type == type && e.since <= opset && opset <= e.until) return &e;
  }
  return nullptr;
}

}  // namespace lowering

using lowering::Lowerer;
using lowering::OnnxLowering;
using lowering::OnnxOpTable;

const std::vector<std::string>& supported_onnx_ops() {
  static const std::vector<std::string> types = [] {
    std::vector<std::string> v;
    for (const OnnxLowering& e : OnnxOpTable::entries) {
      if (!e.type.empty() && std::find(v.begin(), v.end(), e.type) == v.end()) v.emplace_back(e.type);
    }
    return v;
  }();
  return types;
}

std::optional<OpKind> map_onnx_op(const std::string& op_type) {
  for (const OnnxLowering& e : OnnxOpTable::entries) {
    if (!e.type.empty() && e.type == op_type) return e.kind;
  }
  return std::nullopt;
}

Expected<ModelDef> lower(const Graph& graph) {
  Diag d = graph.validate();
  if (!d.ok()) return d;
  return Lowerer(graph).run();
}

}  // namespace ember::converter
