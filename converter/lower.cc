// lower(): the optimized converter IR -> a ModelDef of ember ops (ops.def).
// One ember op per IR node (Max/Min with more than two inputs: a chain);
// constant inputs that ember ops take as params are read here. Every problem
// is collected and reported in one Diag.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "converter/convert.h"
#include "converter/onnx_import.h"
#include "runtime/core/error.h"

namespace ember::converter {

namespace {

std::string node_label(const Node& n) {
  return n.op_type + " '" + (n.name.empty() ? std::string("<unnamed>") : n.name) + "'";
}

std::string join_ints(const std::vector<int64_t>& v) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << "]";
  return os.str();
}

// A problem with one node: thrown inside the node's lowering, collected by lower().
struct NodeError {
  std::string reason;
};

[[noreturn]] void refuse(std::string reason) { throw NodeError{std::move(reason)}; }

class Lowerer;

// One entry of the ONNX op table (OnnxOpTable below): how nodes of an ONNX op
// type are lowered at the opsets [since, until].
struct OnnxLowering {
  std::string_view type;
  int64_t since, until;
  void (Lowerer::*lower)(const Node&);
  std::optional<OpKind> kind;  // the ember op it becomes, where there is one
};

// The entry for `type` at `opset`, or null.
const OnnxLowering* find_lowering(std::string_view type, int64_t opset);

class Lowerer {
  friend struct OnnxOpTable;

 public:
  explicit Lowerer(const Graph& g) : g_(g), dtypes_(g.values.size()), tensor_of_(g.values.size(), -1) {
    for (size_t i = 0; i < g.values.size(); ++i) dtypes_[i] = g.values[i].dtype;
  }

  Expected<ModelDef> run() {
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

 private:
  const OnnxLowering* entry_ = nullptr;  // of the node being lowered
  // ---- values and tensors ----

  const Value& val(int id) const { return g_.value(id); }
  bool is_const(int id) const { return g_.is_constant(id); }
  // The name of a value for messages.
  std::string vname(int id) const { return "'" + val(id).name + "'"; }

  std::string unique_name(std::string name, int id) {
    if (name.empty()) name = "value_" + std::to_string(id < 0 ? static_cast<int>(def_.tensors.size()) : id);
    std::string candidate = name;
    for (int k = 1; names_.count(candidate); ++k) candidate = name + "_" + std::to_string(k);
    names_.insert(candidate);
    return candidate;
  }

  // The tensor index of value `id` (-1 for an omitted input), created on first use.
  int32_t tensor(int id) {
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
        errors_.push_back("value '" + v.name + "': rank unknown");
      }
    }
    slot = def_.add_tensor(std::move(t));
    return slot;
  }

  // A new weight that is no IR value (a transposed Gemm weight, a reshaped bias).
  int32_t new_weight(const std::string& name, const Tensor& data, bool trainable) {
    TensorDef t;
    t.name = unique_name(name, -1);
    t.tensor = data.contiguous();
    t.dtype = t.tensor.dtype();
    t.shape = t.tensor.sizes();
    t.has_data = true;
    t.trainable = trainable && is_floating(t.dtype);
    return def_.add_tensor(std::move(t));
  }

  // A new activation (an intermediate of a Max/Min chain).
  int32_t new_activation(const std::string& name, DType dtype, const std::vector<Dim>& shape) {
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

  // The tensor of a weight input: float constants are trainable.
  int32_t weight(int id) {
    const int32_t t = tensor(id);
    if (t >= 0 && is_const(id) && is_floating(def_.tensors[static_cast<size_t>(t)].dtype)) {
      def_.tensors[static_cast<size_t>(t)].trainable = true;
    }
    return t;
  }

  std::optional<DType> dtype_of(int id) const {
    return id < 0 ? std::nullopt : dtypes_[static_cast<size_t>(id)];
  }

  // The rank of value `id`, or a NodeError.
  int64_t rank_of(int id, const std::string& what) const {
    const Value& v = val(id);
    if (v.is_constant()) return v.constant.dim();
    if (!v.shape) refuse(what + " " + vname(id) + " has an unknown rank");
    return static_cast<int64_t>(v.shape->size());
  }

  // Sets the dtypes of the node's outputs the IR does not know (simple rules).
  void infer_output_dtypes(const Node& n) {
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      const int o = n.outputs[k];
      if (o < 0 || dtypes_[static_cast<size_t>(o)]) continue;
      std::optional<DType> dt;
      const std::string& op = n.op_type;
      if (op == "Equal" || op == "Less" || op == "Greater") dt = DType::Bool;
      else if (op == "Shape") dt = DType::Int64;
      else if (op == "Cast") dt = cast_target(n);
      else if (op == "ConstantOfShape") dt = constant_of_shape_value(n).dtype();
      else if (op == "Where") dt = dtype_of(n.inputs.size() > 1 ? n.inputs[1] : -1);
      else if ((op == "MaxPool" || op == "Dropout") && k == 1) dt = op == "MaxPool" ? DType::Int64 : DType::Bool;
      else if (!n.inputs.empty()) dt = dtype_of(n.inputs[0]);
      dtypes_[static_cast<size_t>(o)] = dt;
    }
  }

  // ---- constant inputs read as params ----

  bool has_input(const Node& n, size_t i) const { return n.inputs.size() > i && n.inputs[i] >= 0; }

  // The values of constant int input `i` (nullopt when absent), or a NodeError.
  std::optional<std::vector<int64_t>> const_ints(const Node& n, size_t i, const std::string& what) const {
    if (!has_input(n, i)) return std::nullopt;
    const int id = n.inputs[i];
    if (!is_const(id)) refuse(what + " " + vname(id) + " is not a constant");
    const Tensor& t = val(id).constant;
    if (is_floating(t.dtype()) || t.dtype() == DType::Bool) {
      refuse(what + " " + vname(id) + " has dtype " + std::string(dtype_name(t.dtype())) + ", not an integer type");
    }
    return t.to_vector<int64_t>();
  }

  // A constant scalar input (nullopt when absent), or a NodeError.
  std::optional<Scalar> const_scalar(const Node& n, size_t i, const std::string& what) const {
    if (!has_input(n, i)) return std::nullopt;
    const int id = n.inputs[i];
    if (!is_const(id)) refuse(what + " " + vname(id) + " is not a constant");
    const Tensor& t = val(id).constant;
    if (t.numel() != 1) refuse(what + " " + vname(id) + " has " + std::to_string(t.numel()) + " elements, not 1");
    return t.reshape({1}).item();
  }

  static int64_t norm_axis(int64_t axis, int64_t rank, const std::string& what) {
    const int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank) {
      refuse(what + " " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
    }
    return a;
  }

  DType cast_target(const Node& n) const {
    const int64_t to = n.get_int("to", 0);
    const std::optional<DType> dtype = dtype_from_onnx(to);
    if (!dtype) refuse("cast to ONNX dtype " + std::to_string(to) + " is not supported");
    return *dtype;
  }

  Tensor constant_of_shape_value(const Node& n) const {
    auto it = n.attrs.find("value");
    if (it == n.attrs.end()) return scalar_tensor(0.0, DType::Float32);
    const Tensor* t = std::get_if<Tensor>(&it->second);
    if (t == nullptr || t->numel() != 1) refuse("attribute 'value' must be a tensor of one element");
    return *t;
  }

  Activation fused_activation(const Node& n) const {
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
    } else {
      refuse("fused activation '" + kind + "' is not supported");
    }
    return a;
  }

  // ---- emitting ops ----

  // Appends an op. `inputs` are tensor indices (created while the arguments
  // are evaluated), `outputs` value ids: their tensors are created here, after
  // the inputs', so tensors appear in reading order.
  void emit(OpKind kind, const Node& n, std::vector<int32_t> inputs, const std::vector<int>& outputs,
            OpParams params = NoParams{}) {
    std::vector<int32_t> outs;
    for (int o : outputs) outs.push_back(tensor(o));
    emit_tensors(kind, inputs, outs, params, n.name);
  }

  void emit_tensors(OpKind kind, std::vector<int32_t> inputs, std::vector<int32_t> outputs, OpParams params,
                    std::string name) {
    OpDef op;
    op.op = kind;
    op.inputs = std::move(inputs);
    op.outputs = std::move(outputs);
    op.name = std::move(name);
    op.params = params;
    def_.ops.push_back(std::move(op));
  }

  // The node's first output (the only output most ops have).
  int out0(const Node& n) const {
    if (n.outputs.empty() || n.outputs[0] < 0) refuse("has no output");
    return n.outputs[0];
  }

  // Outputs beyond the first must be unused (omitted or read by nobody).
  void require_unused_extra_outputs(const Node& n, const std::string& what) const {
    for (size_t k = 1; k < n.outputs.size(); ++k) {
      const int o = n.outputs[k];
      if (o >= 0 && (!g_.users_of(o).empty() || g_.is_graph_output(o))) {
        refuse("output " + std::to_string(k) + " " + vname(o) + " (" + what + ") is used");
      }
    }
  }

  void require_inputs(const Node& n, size_t min_count) const {
    for (size_t i = 0; i < min_count; ++i) {
      if (!has_input(n, i)) refuse("input " + std::to_string(i) + " is missing");
    }
  }

  // Symmetric 2-D pads from ONNX [top, left, bottom, right] (or auto_pad).
  void spatial_pads(const Node& n, int id_x, const int64_t kernel[2], const int64_t stride[2],
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

  // Reads a 2-value attribute (default `fallback`) into out[2].
  static void pair_attr(const Node& n, const std::string& attr, int64_t fallback, int64_t out[2]) {
    const std::vector<int64_t> v = n.get_ints(attr, {fallback, fallback});
    if (v.size() != 2) refuse(attr + " " + join_ints(v) + " must have 2 values (2-D only)");
    out[0] = v[0];
    out[1] = v[1];
  }

  // Lowers `n` by its entry of the ONNX op table (OnnxOpTable, below).
  void lower_node(const Node& n, const OnnxLowering& entry) {
    infer_output_dtypes(n);
    if ((n.inputs.empty() || n.inputs[0] < 0) && n.op_type != "ConstantOfShape") refuse("has no first input");
    entry_ = &entry;
    (this->*entry.lower)(n);
  }
  void lower_gelu(const Node& n) {
    const std::string approx = n.get_string("approximate", "none");
    if (approx != "none" && approx != "tanh") refuse("approximate '" + approx + "' is unknown");
    return emit(OpKind::Gelu, n, {tensor(n.inputs[0])}, {out0(n)}, GeluParams{approx == "tanh"});
  }
  void lower_global_average_pool(const Node& n) {
    if (rank_of(n.inputs[0], "input") != 4) refuse("input " + vname(n.inputs[0]) + " is not 4-D");
    return emit(OpKind::AdaptiveAvgPool2d, n, {tensor(n.inputs[0])}, {out0(n)});
  }
  void lower_batch_normalization(const Node& n) {
    require_inputs(n, 5);
    require_unused_extra_outputs(n, "training-mode statistics");
    NormParams p;
    p.eps = n.get_float("epsilon", 1e-5);
    return emit(OpKind::BatchNorm, n,
                {tensor(n.inputs[0]), tensor(n.inputs[3]), tensor(n.inputs[4]), weight(n.inputs[1]),
                 weight(n.inputs[2])},
                {out0(n)}, p);
  }
  void lower_layer_normalization(const Node& n) {
    require_inputs(n, 2);
    require_unused_extra_outputs(n, "mean or inverse standard deviation");
    const int64_t rank = rank_of(n.inputs[0], "input");
    const int64_t axis = norm_axis(n.get_int("axis", -1), rank, "axis");
    NormParams p;
    p.eps = n.get_float("epsilon", 1e-5);
    p.normalized_rank = static_cast<int>(rank - axis);
    return emit(OpKind::LayerNorm, n,
                {tensor(n.inputs[0]), weight(n.inputs[1]), has_input(n, 2) ? weight(n.inputs[2]) : -1},
                {out0(n)}, p);
  }
  void lower_softmax(const Node& n) {
    const std::string& op = n.op_type;
    const int64_t axis = n.get_int("axis", -1);
    if (n.get_int("coerce_2d", 0) == 1) {
      const int64_t rank = rank_of(n.inputs[0], "input");
      if (norm_axis(axis, rank, "axis") != rank - 1) {
        refuse("axis " + std::to_string(axis) + " of rank " + std::to_string(rank) +
               " with the opset < 13 flatten-to-2-D semantics is not supported (only the last axis)");
      }
    }
    return emit(op == "Softmax" ? OpKind::Softmax : OpKind::LogSoftmax, n, {tensor(n.inputs[0])}, {out0(n)},
                SoftmaxParams{static_cast<int>(axis)});
  }
  void lower_cast(const Node& n) {
    (void)cast_target(n);
    return emit(OpKind::Copy, n, {tensor(n.inputs[0])}, {out0(n)});
  }
  void lower_flatten(const Node& n) {
    return emit(OpKind::Flatten, n, {tensor(n.inputs[0])}, {out0(n)}, AxisParams{n.get_int("axis", 1)});
  }
  void lower_reshape(const Node& n) {
    require_inputs(n, 2);
    if (n.get_int("allowzero", 0) != 0) refuse("allowzero = 1 is not supported");
    return emit(OpKind::Reshape, n, {tensor(n.inputs[0]), tensor(n.inputs[1])}, {out0(n)});
  }
  void lower_transpose(const Node& n) {
    std::vector<int64_t> perm = n.get_ints("perm");
    if (!n.has("perm")) {
      const int64_t rank = rank_of(n.inputs[0], "input");
      for (int64_t d = rank - 1; d >= 0; --d) perm.push_back(d);
    }
    return emit(OpKind::Permute, n, {tensor(n.inputs[0])}, {out0(n)}, dims_params(perm, "perm"));
  }
  void lower_squeeze(const Node& n) {
    const std::string& op = n.op_type;
    const auto axes = const_ints(n, 1, "axes");
    if (!axes && op == "Unsqueeze") refuse("has no axes");
    return emit(op == "Squeeze" ? OpKind::Squeeze : OpKind::Unsqueeze, n, {tensor(n.inputs[0])}, {out0(n)},
                dims_params(axes.value_or(std::vector<int64_t>{}), "axes"));
  }
  void lower_concat(const Node& n) {
    std::vector<int32_t> ins;
    for (int id : n.inputs) {
      if (id < 0) refuse("an input is omitted");
      ins.push_back(tensor(id));
    }
    return emit(OpKind::Concat, n, ins, {out0(n)}, AxisParams{n.get_int("axis", 0)});
  }
  void lower_split(const Node& n) {
    if (n.has("num_outputs")) refuse("attribute num_outputs is not supported");
    if (n.outputs.empty()) refuse("has no output");
    return emit(OpKind::Split, n, {tensor(n.inputs[0]), has_input(n, 1) ? tensor(n.inputs[1]) : -1}, n.outputs,
                AxisParams{n.get_int("axis", 0)});
  }
  void lower_slice(const Node& n) {
    require_inputs(n, 3);
    std::vector<int32_t> ins;
    for (size_t i = 0; i < 5; ++i) ins.push_back(has_input(n, i) ? tensor(n.inputs[i]) : -1);
    return emit(OpKind::Slice, n, ins, {out0(n)});
  }
  void lower_expand(const Node& n) {
    require_inputs(n, 2);
    return emit(OpKind::Expand, n, {tensor(n.inputs[0]), tensor(n.inputs[1])}, {out0(n)});
  }
  void lower_gather(const Node& n) {
    require_inputs(n, 2);
    return emit(OpKind::Gather, n, {weight(n.inputs[0]), tensor(n.inputs[1])}, {out0(n)},
                AxisParams{n.get_int("axis", 0)});
  }
  void lower_shape(const Node& n) {
    if (n.has("start") || n.has("end")) refuse("attributes start/end are not supported");
    return emit(OpKind::ShapeOf, n, {tensor(n.inputs[0])}, {out0(n)});
  }
  void lower_constant_of_shape(const Node& n) {
    require_inputs(n, 1);
    const Tensor value = constant_of_shape_value(n);
    return emit(OpKind::ConstantOfShape, n, {tensor(n.inputs[0])}, {out0(n)},
                ScalarParams{value.reshape({1}).item()});
  }
  void lower_identity(const Node& n) {
    if (n.op_type == "Dropout") require_unused_extra_outputs(n, "the training-mode mask");
    refuse("has no ember op (run the passes: they remove Identity and inference Dropout nodes)");
  }

  DimsParams dims_params(const std::vector<int64_t>& dims, const std::string& what) const {
    if (dims.size() > static_cast<size_t>(kMaxRank)) {
      refuse(what + " " + join_ints(dims) + " has more than " + std::to_string(kMaxRank) + " values");
    }
    DimsParams p;
    p.rank = static_cast<int>(dims.size());
    std::copy(dims.begin(), dims.end(), p.dims);
    return p;
  }

  void lower_plain(const Node& n) {
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
    emit(*kind, n, ins, {out0(n)});
  }

  // Broadcast of two shapes (numpy rules); unknown where it cannot be told.
  static std::vector<Dim> broadcast(const std::vector<Dim>& a, const std::vector<Dim>& b) {
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

  std::vector<Dim> dims_of(int id, const std::string& what) const {
    const Value& v = val(id);
    if (v.is_constant()) {
      std::vector<Dim> d;
      for (int64_t s : v.constant.sizes()) d.push_back(Dim::fixed(s));
      return d;
    }
    if (!v.shape) refuse(what + " " + vname(id) + " has an unknown rank");
    return *v.shape;
  }

  // Max/Min: 1 input a Copy, 2 the binary op, more a chain of binary ops.
  void lower_minmax(const Node& n) {
    const OpKind kind = *entry_->kind;
    for (int id : n.inputs) {
      if (id < 0) refuse("an input is omitted");
    }
    if (n.inputs.size() == 1) return emit(OpKind::Copy, n, {tensor(n.inputs[0])}, {out0(n)});
    std::vector<int32_t> ins;
    for (int id : n.inputs) ins.push_back(tensor(id));
    const int32_t out = tensor(out0(n));
    const TensorDef& out_def = def_.tensors[static_cast<size_t>(out)];
    const std::string out_name = out_def.name;
    const DType dt = out_def.dtype;
    int32_t acc = ins[0];
    std::vector<Dim> acc_shape = dims_of(n.inputs[0], "input");
    for (size_t i = 1; i < ins.size(); ++i) {
      const bool last = i + 1 == ins.size();
      acc_shape = broadcast(acc_shape, dims_of(n.inputs[i], "input"));
      const std::string step = "/" + std::string(op_name(kind)) + "_" + std::to_string(i);
      const int32_t dst = last ? out : new_activation(out_name + step, dt, acc_shape);
      emit_tensors(kind, {acc, ins[i]}, {dst}, NoParams{}, last ? n.name : n.name + step);
      acc = dst;
    }
  }

  void lower_clip(const Node& n) {
    ClampParams p;
    if (auto lo = const_scalar(n, 1, "min")) p.has_min = true, p.min = *lo;
    if (auto hi = const_scalar(n, 2, "max")) p.has_max = true, p.max = *hi;
    emit(OpKind::Clamp, n, {tensor(n.inputs[0])}, {out0(n)}, p);
  }

  void lower_gemm(const Node& n) {
    require_inputs(n, 2);
    if (n.get_int("transA", 0) != 0) refuse("transA = 1 is not supported");
    const double alpha = n.get_float("alpha", 1.0), beta = n.get_float("beta", 1.0);
    if (alpha != 1.0) refuse("alpha = " + fmt(alpha) + " is not supported (only 1)");
    const bool has_c = has_input(n, 2);
    if (has_c && beta != 1.0) refuse("beta = " + fmt(beta) + " is not supported (only 1)");
    const int32_t x = tensor(n.inputs[0]);
    const int b = n.inputs[1];
    const bool trans_b = n.get_int("transB", 0) != 0;
    if (rank_of(b, "B") != 2) refuse("B " + vname(b) + " is not 2-D");
    int32_t w = -1;
    int64_t n_out = -1;
    if (trans_b) {
      w = weight(b);
      const auto d = dims_of(b, "B");
      n_out = d[0].value;
    } else {
      if (!is_const(b)) refuse("B " + vname(b) + " with transB = 0 is not a constant (cannot transpose it)");
      const Tensor bt = val(b).constant.t().contiguous();
      n_out = bt.size(0);
      w = new_weight(val(b).name + "/transposed", bt, true);
    }
    int32_t bias = -1;
    if (has_c) {
      const int c = n.inputs[2];
      const std::vector<Dim> cd = dims_of(c, "C");
      const bool row = cd.size() == 2 && cd[0].is_static() && cd[0].value == 1;
      const int64_t c_n = cd.empty() ? -2 : cd.back().value;
      if (!(cd.size() == 1 || row) || (n_out >= 0 && c_n >= 0 && c_n != n_out)) {
        std::string shape = "[";
        for (size_t i = 0; i < cd.size(); ++i) {
          shape += (i ? ", " : "") + (cd[i].is_static() ? std::to_string(cd[i].value)
                                                         : (cd[i].symbol.empty() ? "?" : cd[i].symbol));
        }
        refuse("C " + vname(c) + " of shape " + shape + "] is not a bias of shape [N] or [1, N] (N = " +
               std::to_string(n_out) + ")");
      }
      if (cd.size() == 1) {
        bias = weight(c);
      } else if (is_const(c)) {
        bias = new_weight(val(c).name + "/row", val(c).constant.reshape({-1}), true);
      } else {
        refuse("C " + vname(c) + " of shape [1, N] is not a constant (cannot reshape it to [N])");
      }
    }
    LinearParams p;
    p.activation = fused_activation(n);
    emit(OpKind::Linear, n, {x, w, bias}, {out0(n)}, p);
  }

  static std::string fmt(double v) {
    std::ostringstream os;
    os << v;
    return os.str();
  }

  void lower_conv(const Node& n) {
    require_inputs(n, 2);
    const int w = n.inputs[1];
    const std::vector<Dim> wd = dims_of(w, "weight");
    if (wd.size() != 4) refuse("only 2-D convolutions are supported (weight " + vname(w) + " is not 4-D)");
    Conv2dParams p;
    pair_attr(n, "strides", 1, p.stride);
    pair_attr(n, "dilations", 1, p.dilation);
    p.groups = n.get_int("group", 1);
    int64_t kernel[2];
    if (n.has("kernel_shape")) {
      pair_attr(n, "kernel_shape", 1, kernel);
    } else {
      if (!wd[2].is_static() || !wd[3].is_static()) refuse("kernel size unknown");
      kernel[0] = wd[2].value;
      kernel[1] = wd[3].value;
    }
    spatial_pads(n, n.inputs[0], kernel, p.stride, p.dilation, p.padding);
    p.activation = fused_activation(n);
    emit(OpKind::Conv2d, n, {tensor(n.inputs[0]), weight(w), has_input(n, 2) ? weight(n.inputs[2]) : -1},
         {out0(n)}, p);
  }

  void lower_pool(const Node& n) {
    const bool is_max = n.op_type == "MaxPool";
    if (is_max) require_unused_extra_outputs(n, "indices");
    if (rank_of(n.inputs[0], "input") != 4) refuse("only 2-D pooling is supported (input is not 4-D)");
    if (!n.has("kernel_shape")) refuse("has no kernel_shape");
    Pool2dParams p;
    pair_attr(n, "kernel_shape", 1, p.kernel);
    pair_attr(n, "strides", 1, p.stride);
    pair_attr(n, "dilations", 1, p.dilation);
    spatial_pads(n, n.inputs[0], p.kernel, p.stride, p.dilation, p.padding);
    p.ceil_mode = n.get_int("ceil_mode", 0) != 0;
    if (!is_max) p.count_include_pad = n.get_int("count_include_pad", 0) != 0;
    if (is_max && n.get_int("storage_order", 0) != 0) refuse("storage_order = 1 is not supported");
    emit(is_max ? OpKind::MaxPool2d : OpKind::AvgPool2d, n, {tensor(n.inputs[0])}, {out0(n)}, p);
  }

  void lower_reduce(const Node& n) {
    const int64_t rank = rank_of(n.inputs[0], "input");
    const auto axes = const_ints(n, 1, "axes");
    ReduceParams p;
    p.keepdim = n.get_int("keepdims", 1) != 0;
    if (!axes || axes->empty()) {
      if (n.get_int("noop_with_empty_axes", 0) != 0) refuse("noop_with_empty_axes = 1 is not supported");
      for (int64_t d = 0; d < rank; ++d) p.dims |= uint32_t{1} << d;
    } else {
      for (int64_t a : *axes) p.dims |= uint32_t{1} << norm_axis(a, rank, "axis");
    }
    emit(n.op_type == "ReduceMean" ? OpKind::Mean : OpKind::Sum, n, {tensor(n.inputs[0])}, {out0(n)}, p);
  }

  void lower_pad(const Node& n) {
    const int64_t rank = rank_of(n.inputs[0], "input");
    if (rank > kMaxRank) refuse("input rank " + std::to_string(rank) + " exceeds " + std::to_string(kMaxRank));
    if (has_input(n, 3)) refuse("the axes input is not supported");
    const auto pads = const_ints(n, 1, "pads");
    if (!pads) refuse("has no pads");
    if (static_cast<int64_t>(pads->size()) != 2 * rank) {
      refuse("pads " + join_ints(*pads) + " must have " + std::to_string(2 * rank) + " values for rank " +
             std::to_string(rank));
    }
    PadParams p;
    for (int64_t d = 0; d < rank; ++d) {
      p.before[d] = (*pads)[static_cast<size_t>(d)];
      p.after[d] = (*pads)[static_cast<size_t>(rank + d)];
      if (p.before[d] < 0 || p.after[d] < 0) refuse("negative pads " + join_ints(*pads) + " are not supported");
    }
    const std::string mode = n.get_string("mode", "constant");
    if (mode == "constant") p.mode = PadMode::Constant;
    else if (mode == "reflect") p.mode = PadMode::Reflect;
    else if (mode == "edge") p.mode = PadMode::Replicate;
    else refuse("mode '" + mode + "' is not supported");
    if (auto v = const_scalar(n, 2, "constant_value")) p.value = v->to_double();
    emit(OpKind::Pad, n, {tensor(n.inputs[0])}, {out0(n)}, p);
  }

  const Graph& g_;
  ModelDef def_;
  std::vector<std::optional<DType>> dtypes_;  // per value: the IR's or inferred
  std::vector<int32_t> tensor_of_;            // per value: its tensor index, or -1
  std::set<std::string> names_;
  std::vector<std::string> errors_;
};

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
#include "runtime/graph/ops.def"
#undef RT_UNARY
#undef RT_OP
    {"Add", 1, kAny, &Lowerer::lower_plain, OpKind::Add},
    {"Sub", 1, kAny, &Lowerer::lower_plain, OpKind::Sub},
    {"Mul", 1, kAny, &Lowerer::lower_plain, OpKind::Mul},
    {"Div", 1, kAny, &Lowerer::lower_plain, OpKind::Div},
    {"Pow", 1, kAny, &Lowerer::lower_plain, OpKind::Pow},
    {"Equal", 1, kAny, &Lowerer::lower_plain, OpKind::Eq},
    {"Less", 1, kAny, &Lowerer::lower_plain, OpKind::Lt},
    {"Greater", 1, kAny, &Lowerer::lower_plain, OpKind::Gt},
    {"Where", 1, kAny, &Lowerer::lower_plain, OpKind::Where},
    {"MatMul", 1, kAny, &Lowerer::lower_plain, OpKind::MatMul},
    {"Max", 1, kAny, &Lowerer::lower_minmax, OpKind::Maximum},
    {"Min", 1, kAny, &Lowerer::lower_minmax, OpKind::Minimum},
    {"Gelu", 1, kAny, &Lowerer::lower_gelu, OpKind::Gelu},
    {"Clip", 1, kAny, &Lowerer::lower_clip, OpKind::Clamp},
    {"Gemm", 1, kAny, &Lowerer::lower_gemm, std::nullopt},  // composed: a Linear with a transposed weight
    {"Conv", 1, kAny, &Lowerer::lower_conv, OpKind::Conv2d},
    {"MaxPool", 1, kAny, &Lowerer::lower_pool, OpKind::MaxPool2d},
    {"AveragePool", 1, kAny, &Lowerer::lower_pool, OpKind::AvgPool2d},
    {"GlobalAveragePool", 1, kAny, &Lowerer::lower_global_average_pool, OpKind::AdaptiveAvgPool2d},
    {"BatchNormalization", 1, kAny, &Lowerer::lower_batch_normalization, OpKind::BatchNorm},
    {"LayerNormalization", 1, kAny, &Lowerer::lower_layer_normalization, OpKind::LayerNorm},
    {"Softmax", 1, kAny, &Lowerer::lower_softmax, OpKind::Softmax},
    {"LogSoftmax", 1, kAny, &Lowerer::lower_softmax, OpKind::LogSoftmax},
    {"ReduceMean", 1, kAny, &Lowerer::lower_reduce, OpKind::Mean},
    {"ReduceSum", 1, kAny, &Lowerer::lower_reduce, OpKind::Sum},
    {"Pad", 1, kAny, &Lowerer::lower_pad, OpKind::Pad},
    {"Cast", 1, kAny, &Lowerer::lower_cast, OpKind::Copy},
    {"Flatten", 1, kAny, &Lowerer::lower_flatten, OpKind::Flatten},
    {"Reshape", 1, kAny, &Lowerer::lower_reshape, OpKind::Reshape},
    {"Transpose", 1, kAny, &Lowerer::lower_transpose, OpKind::Permute},
    {"Squeeze", 1, kAny, &Lowerer::lower_squeeze, OpKind::Squeeze},
    {"Unsqueeze", 1, kAny, &Lowerer::lower_squeeze, OpKind::Unsqueeze},
    {"Concat", 1, kAny, &Lowerer::lower_concat, OpKind::Concat},
    {"Split", 1, kAny, &Lowerer::lower_split, OpKind::Split},
    {"Slice", 1, kAny, &Lowerer::lower_slice, OpKind::Slice},
    {"Expand", 1, kAny, &Lowerer::lower_expand, OpKind::Expand},
    {"Gather", 1, kAny, &Lowerer::lower_gather, OpKind::Gather},
    {"Shape", 1, kAny, &Lowerer::lower_shape, OpKind::ShapeOf},
    {"ConstantOfShape", 1, kAny, &Lowerer::lower_constant_of_shape, OpKind::ConstantOfShape},
    // The importer and the passes remove these before lowering.
    {"Constant", 1, kAny, &Lowerer::lower_identity, std::nullopt},
    {"Identity", 1, kAny, &Lowerer::lower_identity, std::nullopt},
    {"Dropout", 1, kAny, &Lowerer::lower_identity, std::nullopt},
};

const OnnxLowering* find_lowering(std::string_view type, int64_t opset) {
  if (opset <= 0) opset = kMaxOnnxOpset;  // a graph built without one (tests)
  for (const OnnxLowering& e : OnnxOpTable::entries) {
    if (!e.type.empty() && e.type == type && e.since <= opset && opset <= e.until) return &e;
  }
  return nullptr;
}

}  // namespace

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
