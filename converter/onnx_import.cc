#include "converter/onnx_import.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <unordered_map>

#include "converter/passes.h"
#include "runtime/core/error.h"

namespace ember::converter {

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the ONNX importer reads raw_data as little-endian and needs a little-endian host"
#endif

std::optional<DType> dtype_from_onnx(int64_t code) {
  switch (code) {
    case onnx::TensorProto::FLOAT: return DType::Float32;
    case onnx::TensorProto::FLOAT16: return DType::Float16;
    case onnx::TensorProto::BFLOAT16: return DType::BFloat16;
    case onnx::TensorProto::DOUBLE: return DType::Float64;
    case onnx::TensorProto::INT64: return DType::Int64;
    case onnx::TensorProto::INT32: return DType::Int32;
    case onnx::TensorProto::INT16: return DType::Int16;
    case onnx::TensorProto::INT8: return DType::Int8;
    case onnx::TensorProto::UINT8: return DType::UInt8;
    case onnx::TensorProto::BOOL: return DType::Bool;
    case onnx::TensorProto::UINT16: return DType::UInt16;
    case onnx::TensorProto::UINT32: return DType::UInt32;
    case onnx::TensorProto::UINT64: return DType::UInt64;
    // The codes after libonnx 1.12's last (16), as onnx 1.23 numbers them.
    case 17: return DType::Float8E4M3FN;
    case 18: return DType::Float8E4M3FNUZ;
    case 19: return DType::Float8E5M2;
    case 20: return DType::Float8E5M2FNUZ;
    case 21: return DType::UInt4;
    case 22: return DType::Int4;
    case 23: return DType::Float4E2M1FN;
    case 24: return DType::Float8E8M0FNU;
    case 25: return DType::UInt2;
    case 26: return DType::Int2;
    default: return std::nullopt;
  }
}

std::string onnx_dtype_name(int64_t t) {
  // The codes after libonnx 1.12's BFLOAT16 (16), as onnx 1.23 names them.
  static const char* const newer[] = {"FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ",
                                      "UINT4", "INT4", "FLOAT4E2M1", "FLOAT8E8M0", "UINT2", "INT2", "FLOAT6E2M3"};
  if (t >= 17 && t < 17 + static_cast<int64_t>(std::size(newer))) return newer[t - 17];
  if (t >= 0 && t <= 16 && onnx::TensorProto_DataType_IsValid(static_cast<int>(t))) {
    return onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(t));
  }
  return "code " + std::to_string(t);
}

namespace {

Diag fail(Status s, std::string message) { return {s, std::move(message)}; }


// Copies the typed-field values `src` (one per element) into `out` as T.
template <typename T, typename Field>
void copy_field(const Field& src, Tensor& out) {
  T* p = static_cast<T*>(out.data_ptr());
  for (int i = 0; i < src.size(); ++i) {
    if constexpr (std::is_same_v<T, bool>) {
      p[i] = src.Get(i) != 0;
    } else {
      p[i] = static_cast<T>(src.Get(i));
    }
  }
}

// Bits per element as ONNX stores the type (the 4- and 2-bit types packed,
// the first element in the low bits of a byte).
int onnx_bits(DType dtype) {
  switch (dtype) {
    case DType::Int4: case DType::UInt4: case DType::Float4E2M1FN: return 4;
    case DType::Int2: case DType::UInt2: return 2;
    default: return static_cast<int>(element_size(dtype)) * 8;
  }
}

// Unpacks ONNX's packed sub-byte elements (bytes `src`) into `out`, one per byte.
void unpack_sub_byte(const unsigned char* src, Tensor& out) {
  const int bits = onnx_bits(out.dtype());
  const unsigned mask = (1u << bits) - 1;
  auto* p = static_cast<uint8_t*>(out.data_ptr());
  for (int64_t i = 0; i < out.numel(); ++i) {
    const unsigned v = (src[i * bits / 8] >> (i * bits % 8)) & mask;
    const bool is_signed = out.dtype() == DType::Int4 || out.dtype() == DType::Int2;
    p[i] = static_cast<uint8_t>(is_signed && (v >> (bits - 1)) ? v | ~mask : v);  // sign-extended
  }
}

// The typed field's values (int32_data for the narrow types, uint64_data for
// uint32/uint64) as T, one per element.
template <typename T>
void copy_typed(const onnx::TensorProto& t, Tensor& out) {
  switch (out.dtype()) {
    case DType::Float32: copy_field<T>(t.float_data(), out); break;
    case DType::Float64: copy_field<T>(t.double_data(), out); break;
    case DType::Int64: copy_field<T>(t.int64_data(), out); break;
    case DType::UInt32: case DType::UInt64: copy_field<T>(t.uint64_data(), out); break;
    default: copy_field<T>(t.int32_data(), out); break;
  }
}

int64_t typed_count(const onnx::TensorProto& t, DType dtype) {
  switch (dtype) {
    case DType::Float32: return t.float_data_size();
    case DType::Float64: return t.double_data_size();
    case DType::Int64: return t.int64_data_size();
    case DType::UInt32: case DType::UInt64: return t.uint64_data_size();
    default: return t.int32_data_size();
  }
}

Expected<Tensor> tensor_from_proto(const onnx::TensorProto& t, const std::string& what) {
  const std::optional<DType> dtype = dtype_from_onnx(t.data_type());
  if (!dtype) {
    return fail(Status::NotSupported, what + ": unsupported dtype " + onnx_dtype_name(t.data_type()));
  }
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    return fail(Status::NotSupported, what + ": external tensor data is not supported");
  }
  Shape shape;
  int64_t numel = 1;
  for (int64_t d : t.dims()) {
    if (d < 0) return fail(Status::InvalidModel, what + ": negative dimension " + std::to_string(d));
    if (d != 0 && numel > (int64_t{1} << 40) / d) {
      return fail(Status::InvalidModel, what + ": element count overflows");
    }
    numel *= d;
    shape.push_back(d);
  }
  // The data's size is checked before anything is allocated: a shape the
  // file does not hold the data for is refused, however large.
  const int bits = onnx_bits(*dtype);
  const size_t bytes = (static_cast<size_t>(numel) * static_cast<size_t>(bits) + 7) / 8;
  if (t.has_raw_data()) {
    if (t.raw_data().size() != bytes) {
      return fail(Status::InvalidModel, what + ": raw_data holds " + std::to_string(t.raw_data().size()) +
                                            " bytes, shape " + shape_str(shape) + " of " +
                                            std::string(dtype_name(*dtype)) + " needs " +
                                            std::to_string(bytes));
    }
    Tensor out = empty(shape, *dtype);
    const auto* raw = reinterpret_cast<const unsigned char*>(t.raw_data().data());
    if (*dtype == DType::Bool) {
      bool* p = out.data_ptr<bool>();
      for (int64_t i = 0; i < numel; ++i) p[i] = raw[i] != 0;
    } else if (bits < 8) {
      unpack_sub_byte(raw, out);
    } else if (bytes != 0) {
      std::memcpy(out.data_ptr(), raw, bytes);
    }
    return out;
  }
  // Typed fields: one value per element; the sub-byte types packed in int32_data's bytes.
  const int64_t count = typed_count(t, *dtype);
  const int64_t want = bits < 8 ? static_cast<int64_t>(bytes) : numel;
  if (count != want) {
    return fail(Status::InvalidModel, what + ": holds " + std::to_string(count) + " values, shape " +
                                          shape_str(shape) + " needs " + std::to_string(want));
  }
  Tensor out = empty(shape, *dtype);
  if (bits < 8) {
    std::vector<unsigned char> packed(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) packed[static_cast<size_t>(i)] = static_cast<unsigned char>(t.int32_data(static_cast<int>(i)));
    unpack_sub_byte(packed.data(), out);
    return out;
  }
  switch (element_size(*dtype)) {
    case 1: *dtype == DType::Bool ? copy_typed<bool>(t, out) : copy_typed<uint8_t>(t, out); break;
    case 2: copy_typed<uint16_t>(t, out); break;  // the 16-bit floats: their bits
    case 4: *dtype == DType::Float32 ? copy_typed<float>(t, out) : copy_typed<uint32_t>(t, out); break;
    default: *dtype == DType::Float64 ? copy_typed<double>(t, out) : copy_typed<uint64_t>(t, out); break;
  }
  return out;
}

// dtype and dims of a ValueInfoProto. `strict`: an unsupported dtype is an error.
Diag read_type(const onnx::ValueInfoProto& info, Value& v, bool strict) {
  if (!info.has_type() || !info.type().has_tensor_type()) {
    if (strict) return fail(Status::NotSupported, "'" + info.name() + "' is not a tensor");
    return Diag::success();
  }
  const auto& tt = info.type().tensor_type();
  if (tt.has_elem_type()) {
    v.dtype = dtype_from_onnx(tt.elem_type());
    if (!v.dtype && strict) {
      return fail(Status::NotSupported, "'" + info.name() + "': unsupported dtype " + onnx_dtype_name(tt.elem_type()));
    }
  }
  if (tt.has_shape()) {
    std::vector<Dim> dims;
    for (const auto& d : tt.shape().dim()) {
      if (d.has_dim_value() && d.dim_value() >= 0) dims.push_back(Dim::fixed(d.dim_value()));
      // "unk__3": a name ONNX's inference made up for a dim it could not
      // compute; unknown here, so the passes can fill it in after folding.
      // "?" (PaddlePaddle's exporter) names no symbol: each "?" is a dim of
      // its own, not one size shared by every "?" of the graph.
      else if (d.has_dim_param() && d.dim_param().rfind("unk__", 0) != 0 && d.dim_param() != "?")
        dims.push_back(Dim::named(d.dim_param()));
      else dims.push_back(Dim{});
    }
    v.shape = dims;
  }
  return Diag::success();
}

// Reads one attribute into `out` (an out-parameter: GCC 12 warns falsely on
// returning the variant through Expected at -O1).
Diag read_attr(const onnx::AttributeProto& a, const std::string& what, Attr& out) {
  using A = onnx::AttributeProto;
  switch (a.type()) {
    case A::INT: out = a.i(); return Diag::success();
    case A::FLOAT: out = static_cast<double>(a.f()); return Diag::success();
    case A::STRING: out = a.s(); return Diag::success();
    case A::INTS: out = std::vector<int64_t>(a.ints().begin(), a.ints().end()); return Diag::success();
    case A::FLOATS: out = std::vector<double>(a.floats().begin(), a.floats().end()); return Diag::success();
    case A::STRINGS: out = std::vector<std::string>(a.strings().begin(), a.strings().end()); return Diag::success();
    case A::TENSOR: {
      auto t = tensor_from_proto(a.t(), what + " attribute '" + a.name() + "'");
      if (!t.ok()) return t.diag();
      out = std::move(*t);
      return Diag::success();
    }
    default:
      return fail(Status::NotSupported, what + ": attribute '" + a.name() + "' has unsupported type " +
                                            A::AttributeType_Name(a.type()));
  }
}

// The nodes of `g` and of its subgraphs whose op is not supported, by op type.
// If, Loop and Scan are imported (their subgraphs too) and judged later
// (converter/control.h).
void collect_unsupported(const onnx::GraphProto& g, const std::set<std::string>& ok,
                         std::map<std::string, std::vector<std::string>>& bad, int& n_bad, int depth) {
  for (const auto& n : g.node()) {
    const bool default_domain = n.domain().empty() || n.domain() == "ai.onnx";
    const std::string type = default_domain ? n.op_type() : n.domain() + "::" + n.op_type();
    if (depth < 64) {  // deeper nesting is refused by the importer itself
      for (const auto& a : n.attribute()) {
        if (a.type() == onnx::AttributeProto::GRAPH) collect_unsupported(a.g(), ok, bad, n_bad, depth + 1);
      }
    }
    if (ok.count(type) || (default_domain && is_control_flow_op(type))) continue;  // another domain's op: "domain::type"
    bad[type].push_back(n.name().empty() ? "<unnamed>" : n.name());
    ++n_bad;
  }
}

// The error for every unsupported op at once, or success.
Diag check_ops(const onnx::GraphProto& g, const std::string& source) {
  const std::set<std::string> ok(supported_onnx_ops().begin(), supported_onnx_ops().end());
  std::map<std::string, std::vector<std::string>> bad;  // op type -> node names
  int n_bad = 0;
  collect_unsupported(g, ok, bad, n_bad, 0);
  if (bad.empty()) return Diag::success();
  std::ostringstream os;
  os << "'" << source << "' uses ops the converter does not support (" << n_bad << " node"
     << (n_bad == 1 ? "" : "s") << " of " << bad.size() << " type" << (bad.size() == 1 ? "" : "s") << "): ";
  bool first = true;
  for (const auto& [type, names] : bad) {
    os << (first ? "" : ", ") << type << " x" << names.size() << " (";
    const size_t shown = std::min<size_t>(names.size(), 8);
    for (size_t i = 0; i < shown; ++i) os << (i ? ", " : "") << names[i];
    if (shown < names.size()) os << ", ...";
    os << ")";
    first = false;
  }
  return fail(Status::NotSupported, os.str());
}

class Importer {
 public:
  Importer(const onnx::ModelProto& model, std::string source) : model_(model), source_(std::move(source)) {}
  // A subgraph's importer: names it does not define resolve in `parent`.
  Importer(Importer* parent, const std::string& what)
      : model_(parent->model_), source_(parent->source_), parent_(parent), what_(what),
        depth_(parent->depth_ + 1) {
    graph_.opset = parent->graph_.opset;
  }

  Expected<Graph> run() {
    if (!model_.has_graph()) return fail(Status::InvalidModel, "'" + source_ + "' is not an ONNX model: it has no graph");
    const auto& g = model_.graph();
    Diag d = read_opset();
    if (!d.ok()) return d;
    d = check_ops(g, source_);
    if (!d.ok()) return d;
    graph_.producer = model_.producer_name() + (model_.producer_version().empty() ? "" : " " + model_.producer_version());
    d = import_graph(g);
    if (!d.ok()) return d;
    d = graph_.validate();
    if (!d.ok()) return d;
    infer_missing_shapes(graph_);  // what ONNX's inference gave up on
    return std::move(graph_);
  }

  // A subgraph (If branch, Loop or Scan body): its inputs are its own, then
  // what it captured from enclosing scopes (captures()).
  Expected<Graph> run_subgraph(const onnx::GraphProto& g) {
    if (depth_ > 32) return fail(Status::NotSupported, what_ + ": subgraphs nested more than 32 deep");
    Diag d = import_graph(g);
    if (!d.ok()) return d;
    d = graph_.validate();
    if (!d.ok()) return fail(d.status, what_ + ": " + d.message);
    infer_missing_shapes(graph_);
    return std::move(graph_);
  }
  const std::vector<std::string>& captures() const { return captures_; }

 private:
  Diag import_graph(const onnx::GraphProto& g) {
    const std::string where = what_.empty() ? "" : what_ + ": ";
    for (const auto& init : g.initializer()) {
      auto t = tensor_from_proto(init, where + "initializer '" + init.name() + "'");
      if (!t.ok()) return t.diag();
      if (ids_.count(init.name())) return fail(Status::InvalidModel, where + "initializer '" + init.name() + "' is defined twice");
      ids_[init.name()] = graph_.add_constant(init.name(), std::move(*t));
    }
    for (const auto& in : g.input()) {
      if (ids_.count(in.name())) continue;  // an initializer listed as input (IR < 4): a constant
      Value v;
      v.name = in.name();
      Diag d = read_type(in, v, parent_ == nullptr);
      if (!d.ok()) return fail(d.status, where + "graph input " + d.message);
      const int id = graph_.add_value(std::move(v));
      ids_[in.name()] = id;
      graph_.inputs.push_back(id);
    }
    for (const auto& vi : g.value_info()) infos_[vi.name()] = &vi;
    for (const auto& out : g.output()) infos_[out.name()] = &out;

    for (const auto& n : g.node()) {
      Diag d = add_node(n);
      if (!d.ok()) return d;
    }
    for (const auto& out : g.output()) {
      const int id = lookup(out.name());
      if (id < 0) {
        return fail(Status::InvalidModel, where + "graph output '" + out.name() + "' is not produced by any node");
      }
      Value& v = graph_.value(id);
      Diag d = read_type(out, v, parent_ == nullptr);
      if (!d.ok()) return fail(d.status, where + "graph output " + d.message);
      graph_.outputs.push_back(id);
    }
    return Diag::success();
  }

  // The id of `name` in this graph, captured from an enclosing scope when
  // only one of those defines it (a new graph input); -1 when none does.
  int lookup(const std::string& name) {
    auto it = ids_.find(name);
    if (it != ids_.end()) return it->second;
    if (parent_ == nullptr) return -1;
    const int outer = parent_->lookup(name);
    if (outer < 0) return -1;
    Value v;
    const Value& o = parent_->graph_.value(outer);
    v.name = name;
    v.dtype = o.dtype;
    v.shape = o.shape;
    const int id = graph_.add_value(std::move(v));
    ids_[name] = id;
    graph_.inputs.push_back(id);
    captures_.push_back(name);
    return id;
  }

  // An If without its branches, a Loop or Scan without its body: an error
  // here (libonnx's inference, which would crash on them, is not given such
  // a node: onnx_infer.cc).
  static Diag check_graph_attrs(const Node& node, bool default_domain) {
    if (!default_domain) return Diag::success();
    std::vector<std::string> required;
    if (node.op_type == "If") required = {"then_branch", "else_branch"};
    if (node.op_type == "Loop" || node.op_type == "Scan") required = {"body"};
    for (const std::string& attr : required) {
      if (std::find(node.graph_attrs.begin(), node.graph_attrs.end(), attr) == node.graph_attrs.end()) {
        return fail(Status::InvalidModel, node.label() + " has no graph attribute '" + attr + "'");
      }
    }
    return Diag::success();
  }

  // The GRAPH attributes of `n` into node.graphs; what they capture becomes
  // the node's last inputs (the same order in every subgraph).
  Diag add_subgraphs(const onnx::NodeProto& n, Node& node) {
    std::vector<std::unique_ptr<Importer>> subs;
    for (const auto& a : n.attribute()) {
      if (a.type() != onnx::AttributeProto::GRAPH) continue;
      subs.push_back(std::make_unique<Importer>(this, node.label() + " " + a.name()));
      auto g = subs.back()->run_subgraph(a.g());
      if (!g.ok()) return g.diag();
      node.graphs.push_back(std::move(*g));
      node.graph_attrs.push_back(a.name());
    }
    std::vector<std::string> all;  // the union of the captures, in first-seen order
    for (const auto& sub : subs) {
      for (const std::string& c : sub->captures()) {
        if (std::find(all.begin(), all.end(), c) == all.end()) all.push_back(c);
      }
    }
    for (size_t k = 0; k < subs.size(); ++k) {
      Graph& g = node.graphs[k];
      const std::vector<std::string>& own = subs[k]->captures();
      const size_t formal = g.inputs.size() - own.size();
      std::vector<int> inputs(g.inputs.begin(), g.inputs.begin() + static_cast<std::ptrdiff_t>(formal));
      for (const std::string& c : all) {
        auto it = std::find(own.begin(), own.end(), c);
        if (it != own.end()) {
          inputs.push_back(g.inputs[formal + static_cast<size_t>(it - own.begin())]);
        } else {  // captured by another subgraph only: an unused input here
          Value v;
          v.name = c;
          inputs.push_back(g.add_value(std::move(v)));
        }
      }
      g.inputs = std::move(inputs);
    }
    for (const std::string& c : all) node.inputs.push_back(lookup(c));
    node.captured = static_cast<int>(all.size());
    return Diag::success();
  }

 private:
  Diag read_opset() {
    bool found = false;
    for (const auto& o : model_.opset_import()) {
      if (!o.domain().empty() && o.domain() != "ai.onnx") continue;
      found = true;
      graph_.opset = o.version();
    }
    if (!found) {
      // A model of another domain only (ai.onnx.ml, ai.onnx.preview.training): name its ops.
      std::map<std::string, int> ops;
      for (const auto& n : model_.graph().node())
        ++ops[(n.domain().empty() ? std::string("ai.onnx") : n.domain()) + "." + n.op_type()];
      std::string listed;
      for (const auto& [op, count] : ops) listed += (listed.empty() ? "" : ", ") + op + " x" + std::to_string(count);
      return fail(Status::NotSupported, "'" + source_ + "' has no opset_import for the default ONNX domain; " +
                                            "it uses ops the converter does not support: " + listed);
    }
    if (graph_.opset < kMinOnnxOpset || graph_.opset > kMaxOnnxOpset) {
      return fail(Status::NotSupported, "'" + source_ + "' uses ONNX opset " + std::to_string(graph_.opset) +
                                            "; supported opsets are " + std::to_string(kMinOnnxOpset) + " to " +
                                            std::to_string(kMaxOnnxOpset));
    }
    return Diag::success();
  }

  // A new value for a node output (shape and dtype from value_info when known).
  Expected<int> new_output(const std::string& name, const Node& node) {
    if (ids_.count(name)) {
      return fail(Status::InvalidModel, node.label() + ": output '" + name + "' is already defined");
    }
    Value v;
    v.name = name;
    auto it = infos_.find(name);
    if (it != infos_.end()) (void)read_type(*it->second, v, false);
    const int id = graph_.add_value(std::move(v));
    ids_[name] = id;
    return id;
  }

  Diag add_constant_node(const onnx::NodeProto& n, const Node& node) {
    Tensor t;
    for (const auto& a : n.attribute()) {
      const std::string& k = a.name();
      if (k == "value") {
        auto r = tensor_from_proto(a.t(), node.label() + " value");
        if (!r.ok()) return r.diag();
        t = std::move(*r);
      } else if (k == "value_float") {
        t = scalar_tensor(static_cast<double>(a.f()), DType::Float32);
      } else if (k == "value_floats") {
        t = tensor(std::vector<float>(a.floats().begin(), a.floats().end()), {a.floats_size()});
      } else if (k == "value_int") {
        t = scalar_tensor(a.i(), DType::Int64);
      } else if (k == "value_ints") {
        t = tensor(std::vector<int64_t>(a.ints().begin(), a.ints().end()), {a.ints_size()});
      } else {
        return fail(Status::NotSupported, node.label() + ": Constant attribute '" + k + "' is not supported");
      }
    }
    if (!t.defined() || n.output_size() != 1) {
      return fail(Status::InvalidModel, node.label() + ": a Constant needs one value and one output");
    }
    if (ids_.count(n.output(0))) {
      return fail(Status::InvalidModel, node.label() + ": output '" + n.output(0) + "' is already defined");
    }
    ids_[n.output(0)] = graph_.add_constant(n.output(0), std::move(t));
    return Diag::success();
  }

  // Moves attribute `attr` (ints) into a constant int64 input at position `index`.
  void attr_to_input(Node& node, const std::string& attr, size_t index) {
    auto it = node.attrs.find(attr);
    if (it == node.attrs.end()) return;
    const std::vector<int64_t> v = node.get_ints(attr);
    node.attrs.erase(it);
    const int id = graph_.add_constant(node.name + "/" + attr, tensor(v, {static_cast<int64_t>(v.size())}));
    if (node.inputs.size() < index) node.inputs.resize(index, -1);
    node.inputs.insert(node.inputs.begin() + static_cast<std::ptrdiff_t>(index), id);
  }

  // Moves the float attribute `attr` into a constant float32 scalar input at
  // position `index` (Pad's "value", Clip's "min" and "max" before opset 11).
  void float_attr_to_input(Node& node, const std::string& attr, size_t index) {
    auto it = node.attrs.find(attr);
    if (it == node.attrs.end()) return;
    const double v = node.get_float(attr, 0.0);
    node.attrs.erase(it);
    const int id = graph_.add_constant(node.name + "/" + attr, scalar_tensor(v, DType::Float32));
    if (node.inputs.size() <= index) node.inputs.resize(index + 1, -1);
    node.inputs[index] = id;
  }

  // The old attribute forms of the opset as the newest opset's inputs.
  Diag normalize(Node& node) {
    const std::string& op = node.op_type;
    const int64_t opset = graph_.opset;
    if (op == "Unsqueeze" || op == "Squeeze" || op.rfind("Reduce", 0) == 0) {
      attr_to_input(node, "axes", 1);
    } else if (op == "Split") {
      attr_to_input(node, "split", 1);
    } else if (op == "Pad" && opset < 11) {
      attr_to_input(node, "pads", 1);
      float_attr_to_input(node, "value", 2);
    } else if (op == "Clip" && opset < 11) {
      float_attr_to_input(node, "min", 1);
      float_attr_to_input(node, "max", 2);
    } else if (op == "Slice" && opset < 10) {
      attr_to_input(node, "starts", 1);
      attr_to_input(node, "ends", 2);
      attr_to_input(node, "axes", 3);
    } else if (op == "BatchNormalization" && opset < 9 && node.get_int("spatial", 1) != 1) {
      return fail(Status::NotSupported, node.label() + ": attribute 'spatial' = " +
                                            std::to_string(node.get_int("spatial", 1)) +
                                            " (per-element statistics, opset < 9) is not supported");
    } else if (op == "Dropout" && node.inputs.size() > 2 && node.inputs[2] >= 0) {
      const int t = node.inputs[2];
      if (!graph_.is_constant(t) || graph_.value(t).constant.numel() != 1 ||
          graph_.value(t).constant.reshape({1}).item().to_double() != 0.0) {
        return fail(Status::NotSupported, node.label() + ": input 'training_mode' '" + graph_.value(t).name +
                                              "' is not a constant false (training-mode dropout is not supported)");
      }
    } else if (op == "Softmax" || op == "LogSoftmax") {
      normalize_softmax(node);
    }
    return Diag::success();
  }

  void normalize_softmax(Node& node) {
    if (graph_.opset >= 13) {
      node.attrs["axis"] = node.get_int("axis", -1);
      return;
    }
    // Opsets < 13: coerce to 2-D [prod(dims < axis), prod(dims >= axis)].
    const int64_t axis = node.get_int("axis", 1);
    node.attrs["axis"] = axis;
    const Value& in = graph_.value(node.inputs.at(0));
    const int64_t rank = in.shape ? static_cast<int64_t>(in.shape->size()) : -1;
    if (!(axis == -1 || (rank >= 0 && (axis == rank - 1 || axis + rank == rank - 1)))) {
      node.attrs["coerce_2d"] = int64_t{1};
    } else {
      node.attrs["axis"] = int64_t{-1};
    }
  }

  Diag add_node(const onnx::NodeProto& n) {
    Node node;
    node.name = n.name();
    const bool default_domain = n.domain().empty() || n.domain() == "ai.onnx";
    node.op_type = default_domain ? n.op_type() : n.domain() + "::" + n.op_type();
    if (n.op_type() == "Constant" && default_domain) return add_constant_node(n, node);
    node.kind = map_onnx_op(node.op_type);
    for (const std::string& in : n.input()) {
      if (in.empty()) {
        node.inputs.push_back(-1);
        continue;
      }
      const int id = lookup(in);
      if (id < 0) {
        return fail(Status::InvalidModel, node.label() + " reads '" + in +
                                              "', which is no initializer (missing initializer), graph input "
                                              "or earlier node's output" + (parent_ ? " (in " + what_ + ")" : ""));
      }
      node.inputs.push_back(id);
    }
    for (const auto& a : n.attribute()) {
      if (a.type() == onnx::AttributeProto::GRAPH) continue;  // add_subgraphs
      Diag d = read_attr(a, node.label(), node.attrs[a.name()]);
      if (!d.ok()) return d;
    }
    // Loop's first inputs (trip count, condition) are optional.
    if (node.op_type != "Loop" && (node.inputs.empty() || node.inputs[0] < 0)) {
      return fail(Status::InvalidModel, node.label() + " has no first input");
    }
    Diag sd = add_subgraphs(n, node);
    if (!sd.ok()) return sd;
    sd = check_graph_attrs(node, default_domain);
    if (!sd.ok()) return sd;
    Diag d = normalize(node);
    if (!d.ok()) return d;
    for (const std::string& out : n.output()) {
      if (out.empty()) {
        node.outputs.push_back(-1);
        continue;
      }
      auto id = new_output(out, node);
      if (!id.ok()) return id.diag();
      node.outputs.push_back(*id);
    }
    graph_.nodes.push_back(std::move(node));
    return Diag::success();
  }

  const onnx::ModelProto& model_;
  std::string source_;
  Importer* parent_ = nullptr;
  std::string what_;  // a subgraph's "If 'x' then_branch"; empty for the model's graph
  int depth_ = 0;
  std::vector<std::string> captures_;  // names read from enclosing scopes, in first-read order
  Graph graph_;
  std::unordered_map<std::string, int> ids_;
  std::unordered_map<std::string, const onnx::ValueInfoProto*> infos_;
};

}  // namespace

Expected<Graph> import_onnx_bytes(const std::string& bytes, const std::string& source) {
  if (bytes.empty()) return fail(Status::InvalidModel, "'" + source + "' is empty: not an ONNX model");
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) {
    return fail(Status::InvalidModel,
                "'" + source + "' is not an ONNX model (the protobuf does not parse: truncated or another format)");
  }
  infer_shapes(model);
  try {
    return Importer(model, source).run();
  } catch (const Error& e) {  // an eager op refused a tensor built from the file
    return fail(e.status(), "'" + source + "': " + e.what());
  }
}

Expected<Graph> import_onnx(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(Status::IoError, "cannot open '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return fail(Status::IoError, "cannot read '" + path + "'");
  return import_onnx_bytes(ss.str(), path);
}

}  // namespace ember::converter
