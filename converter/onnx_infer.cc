// ONNX shape inference by libonnx 1.12 (Debian's) and the guards that keep
// from it what crashes it: libonnx trusts a model it is given, so a node its
// schema does not verify (a Scan, If or Loop without its graph attribute: a
// null dereference), a stride, dilation, kernel size or block size below 1 (a
// division by zero), a value read before it is defined or a value without a
// type, a subgraph or a model-local function never reach it. The importer
// reports such models' problems itself, naming the node.
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "converter/onnx_import.h"

namespace ember::converter {

namespace {

// The default-domain ops whose schema changed after opset 17 (onnx 1.23's
// operator changelog, opsets 18 to 28), less those that infer_with_opset_17
// treats as type-only changes.
const std::set<std::string>& changed_after_opset_17() {
  static const std::set<std::string> ops = {
      "AffineGrid", "Attention", "AveragePool", "Bernoulli", "BitCast", "BitShift", "BitwiseAnd", "BitwiseNot",
      "BitwiseOr", "BitwiseXor", "CastLike", "CausalConvWithState", "Celu", "CenterCropPad", "Col2Im", "Compress",
      "ConvTranspose", "CumProd", "DFT", "DeformConv", "DepthToSpace", "DequantizeLinear", "Det", "Einsum", "EyeLike",
      "GRU", "GlobalLpPool", "GlobalMaxPool", "GridSample", "GroupNormalization", "If", "ImageDecoder",
      "InstanceNormalization", "IsInf", "IsNaN", "LSTM", "LinearAttention", "Loop", "LpNormalization", "LpPool",
      "MaxRoiPool", "MaxUnpool", "Mod", "Multinomial", "NegativeLogLikelihoodLoss", "OneHot", "Optional",
      "OptionalGetElement", "OptionalHasElement", "Pad", "QLinearMatMul", "QuantizeLinear", "RMSNormalization",
      "RNN", "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Range", "ReduceL1",
      "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd",
      "ReduceSumSquare", "RegexFullMatch", "Resize", "ReverseSequence", "RoiAlign", "RotaryEmbedding", "Scan",
      "ScatterElements", "ScatterND", "Size", "SpaceToDepth", "Split", "SplitToSequence", "StringConcat",
      "StringSplit", "SwiGLU", "Swish", "TensorScatter", "TopK", "Unique"};
  return ops;
}

// Whether libonnx's opset-17 schema of node `n` infers what its schema at the
// model's newer opset does. True where the op did not change after 17 or
// changed only its types (Cast, Reshape, Shape, Squeeze, Conv, the unary ops:
// new dtypes such as float8 or int4, which the importer refuses anyway; ops
// new after 17, such as Gelu, are unknown to libonnx and skipped), and for
// the changed forms that keep the opset-17 meaning: AveragePool without
// "dilations" (19), Pad without an "axes" input (18), Split without
// "num_outputs" (18).
bool same_inference_as_opset_17(const onnx::NodeProto& n) {
  if (!n.domain().empty() && n.domain() != "ai.onnx") return false;
  const std::string& op = n.op_type();
  auto has_attr = [&](const char* name) {
    for (const auto& a : n.attribute()) {
      if (a.name() == name) return true;
    }
    return false;
  };
  if (op == "AveragePool") return !has_attr("dilations");
  if (op == "Pad") return n.input_size() < 4 || n.input(3).empty();
  if (op == "Split") return !has_attr("num_outputs");
  return changed_after_opset_17().count(op) == 0;
}

// ONNX inference under libonnx's newest opset (17), for a model of opset
// > 17 whose every node infers the same there; the opset is restored after.
bool infer_with_opset_17(onnx::ModelProto& model) {
  for (const auto& n : model.graph().node()) {
    if (!same_inference_as_opset_17(n)) return false;
  }
  onnx::ModelProto inferred = model;
  int64_t opset = 0;
  for (auto& o : *inferred.mutable_opset_import()) {
    if (!o.domain().empty() && o.domain() != "ai.onnx") return false;  // other domains: no inference
    opset = o.version();
    o.set_version(kLibOnnxOpset);
  }
  try {
    onnx::shape_inference::InferShapes(inferred, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(false, 0, true));
  } catch (const std::exception&) {
    return false;
  }
  for (auto& o : *inferred.mutable_opset_import()) o.set_version(opset);
  model = std::move(inferred);
  return true;
}


// The attributes whose every value libonnx divides by or loops over: a value
// below 1 makes its inference divide by zero (SIGFPE) or misbehave.
bool positive_attrs_ok(const onnx::NodeProto& n) {
  static const std::set<std::string> positive = {"strides", "dilations", "kernel_shape", "blocksize", "group"};
  for (const auto& a : n.attribute()) {
    if (positive.count(a.name()) == 0) continue;
    if (a.has_i() && a.i() < 1) return false;
    for (int64_t v : a.ints()) {
      if (v < 1) return false;
    }
  }
  return true;
}

// Whether every input of `n` named "" (omitted) is an optional one of its
// schema: libonnx's inference functions read the type of a required input
// without a check (convPoolShapeInference of a ConvInteger or QLinearConv
// whose weight is "": a null dereference found by tools/fuzz.sh onnx), and
// Verify lets an empty name pass.
bool omitted_inputs_optional(const onnx::OpSchema& schema, const onnx::NodeProto& n) {
  const auto& formal = schema.inputs();
  for (int i = 0; i < n.input_size(); ++i) {
    if (!n.input(i).empty()) continue;
    if (formal.empty()) return false;
    const size_t k = std::min(static_cast<size_t>(i), formal.size() - 1);  // the last one may be variadic
    if (formal[k].GetOption() != onnx::OpSchema::Optional) return false;
  }
  return true;
}

// Whether tensor `t`'s data is what its dims and dtype need: libonnx's
// ParseData copies numel elements out of raw_data without checking its size
// (a Constant of int64 [1] with 7 bytes: a wild memcpy, found by
// tools/fuzz.sh onnx). External data is not read here: not consistent.
bool tensor_data_consistent(const onnx::TensorProto& t) {
  using T = onnx::TensorProto;
  int64_t n = 1;
  for (int64_t d : t.dims()) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return false;
  }
  if (t.data_location() == T::EXTERNAL) return false;
  static const std::map<int, int64_t> bytes = {{T::FLOAT, 4},  {T::UINT8, 1},   {T::INT8, 1},    {T::UINT16, 2},
                                               {T::INT16, 2},  {T::INT32, 4},   {T::INT64, 8},   {T::BOOL, 1},
                                               {T::FLOAT16, 2}, {T::DOUBLE, 8}, {T::UINT32, 4},  {T::UINT64, 8},
                                               {T::BFLOAT16, 2}};
  if (t.has_raw_data()) {
    const auto it = bytes.find(t.data_type());
    int64_t need = 0;
    return it != bytes.end() && !__builtin_mul_overflow(n, it->second, &need) &&
           static_cast<int64_t>(t.raw_data().size()) == need;
  }
  switch (t.data_type()) {
    case T::FLOAT: return t.float_data_size() == n;
    case T::INT64: return t.int64_data_size() == n;
    case T::DOUBLE: return t.double_data_size() == n;
    case T::UINT32: case T::UINT64: return t.uint64_data_size() == n;
    case T::STRING: return t.string_data_size() == n;
    case T::UINT8: case T::INT8: case T::UINT16: case T::INT16: case T::INT32: case T::BOOL: case T::FLOAT16:
    case T::BFLOAT16: return t.int32_data_size() == n;
    default: return false;
  }
}

// The declared rank of every value of `g` that has one (inputs, value_info,
// initializers).
std::map<std::string, int> declared_ranks(const onnx::GraphProto& g) {
  std::map<std::string, int> ranks;
  auto add = [&](const onnx::ValueInfoProto& v) {
    if (v.type().has_tensor_type() && v.type().tensor_type().has_shape()) {
      ranks[v.name()] = v.type().tensor_type().shape().dim_size();
    }
  };
  for (const auto& v : g.input()) add(v);
  for (const auto& v : g.value_info()) add(v);
  for (const auto& t : g.initializer()) ranks[t.name()] = t.dims_size();
  return ranks;
}

// Whether a convolution's or pooling's data (and weight) ranks are ones
// libonnx's convPoolShapeInference survives: data of rank >= 3 and, for a
// convolution, a weight of the same rank (a Conv of a [1, 5] input by a 4-D
// weight: a null dereference, found by tools/fuzz.sh onnx).
bool conv_pool_ranks_ok(const onnx::NodeProto& n, const std::map<std::string, int>& ranks) {
  static const std::set<std::string> pools = {"AveragePool", "MaxPool", "LpPool", "MaxUnpool", "MaxRoiPool"};
  static const std::map<std::string, int> convs = {
      {"Conv", 1}, {"ConvInteger", 1}, {"ConvTranspose", 1}, {"QLinearConv", 3}, {"DeformConv", 1}};
  const auto conv = convs.find(n.op_type());
  if (conv == convs.end() && pools.count(n.op_type()) == 0) return true;
  auto rank = [&](int i) {
    if (i >= n.input_size()) return -1;
    const auto it = ranks.find(n.input(i));
    return it == ranks.end() ? -1 : it->second;
  };
  const int x = rank(0);
  if (x >= 0 && x < 3) return false;
  if (conv == convs.end()) return true;
  const int w = rank(conv->second);
  return x < 0 || w < 0 || x == w;
}

// Whether every node of `g` that libonnx knows passes its schema's Verify at
// `opset` (the one inference will use): required attributes present and of
// their type, input and output counts in range. A node of another domain is
// left to libonnx as before (it skips what it does not know).
bool nodes_verify(const onnx::GraphProto& g, int64_t opset) {
  const std::map<std::string, int> ranks = declared_ranks(g);
  for (const auto& t : g.initializer()) {
    if (!tensor_data_consistent(t)) return false;
  }
  for (const auto& n : g.node()) {
    if (!positive_attrs_ok(n)) return false;
    if (!conv_pool_ranks_ok(n, ranks)) return false;
    for (const auto& a : n.attribute()) {
      if (a.has_t() && !tensor_data_consistent(a.t())) return false;
    }
    if (!n.domain().empty() && n.domain() != "ai.onnx") continue;
    const onnx::OpSchema* schema =
        onnx::OpSchemaRegistry::Schema(n.op_type(), static_cast<int>(std::min(opset, kLibOnnxOpset)), "");
    if (schema == nullptr) continue;
    try {
      schema->Verify(n);
    } catch (const std::exception&) {
      return false;
    }
    if (!omitted_inputs_optional(*schema, n)) return false;
  }
  return true;
}

// The model's default-domain opset (0 if it imports none).
int64_t default_opset(const onnx::ModelProto& model) {
  for (const auto& o : model.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") return o.version();
  }
  return 0;
}

// True when every node reads only values defined before it (graph inputs,
// initializers, earlier outputs), no node holds a subgraph (or is an If, Loop
// or Scan, or has a graph-typed attribute) and every declared
// value has a type: libonnx 1.12's inference dereferences the type of an
// undefined or untyped value (crashes the ONNX importer's fuzz target found),
// so a graph that fails this is not given to it; the importer then reports
// the problem itself.
bool safe_for_libonnx(const onnx::GraphProto& g) {
  // It also dereferences a graph input's, output's or value_info's missing type.
  auto typed = [](const onnx::ValueInfoProto& v) {
    return v.has_type() && v.type().value_case() != onnx::TypeProto::VALUE_NOT_SET;
  };
  for (const auto& v : g.input()) {
    if (!typed(v)) return false;
  }
  for (const auto& v : g.output()) {
    if (!typed(v)) return false;
  }
  for (const auto& v : g.value_info()) {
    if (!typed(v)) return false;
  }
  std::set<std::string> defined;
  std::map<std::string, int64_t> ranks;  // of the graph inputs and initializers
  for (const auto& i : g.input()) {
    defined.insert(i.name());
    if (i.type().has_tensor_type() && i.type().tensor_type().has_shape())
      ranks[i.name()] = i.type().tensor_type().shape().dim_size();
  }
  for (const auto& i : g.initializer()) {
    defined.insert(i.name());
    ranks[i.name()] = i.dims_size();
  }
  for (const auto& n : g.node()) {
    // LayerNormalization's inference indexes the input's dims at axis (+ rank
    // when negative) without a range check: axis -4 on a rank-3 input, -1 on
    // a rank-0 one, and 2^63 - 2 crashed it (fuzzing). Given to it only when
    // the input's rank is known here (a graph input or an initializer) and
    // covers the axis; otherwise ember's own inference does the graph.
    if ((n.domain().empty() || n.domain() == "ai.onnx") && n.op_type() == "LayerNormalization") {
      const auto r = n.input_size() > 0 ? ranks.find(n.input(0)) : ranks.end();
      if (r == ranks.end() || r->second < 1) return false;
      for (const auto& a : n.attribute()) {
        if (a.name() == "axis" && (a.i() < -r->second || a.i() >= r->second)) return false;
      }
    }
    for (const auto& i : n.input()) {
      if (!i.empty() && defined.count(i) == 0) return false;
    }
    // A control-flow node even without its graph: a Scan whose body attribute
    // is typed GRAPH but holds none crashed libonnx's Scan inference (fuzzing).
    if ((n.domain().empty() || n.domain() == "ai.onnx") &&
        (n.op_type() == "If" || n.op_type() == "Loop" || n.op_type() == "Scan")) {
      return false;
    }
    for (const auto& a : n.attribute()) {
      if (a.has_g() || a.graphs_size() > 0 || a.type() == onnx::AttributeProto::GRAPH ||
          a.type() == onnx::AttributeProto::GRAPHS) {
        return false;
      }
    }
    for (const auto& o : n.output()) defined.insert(o);
  }
  return true;
}

}  // namespace

bool infer_shapes(onnx::ModelProto& model) {
  // Local functions: libonnx would infer through their bodies, unchecked.
  if (model.functions_size() > 0 || !safe_for_libonnx(model.graph())) return false;
  // One default-domain opset, the one nodes_verify checks against (a second
  // import, or opset 0, left nodes unchecked that libonnx then inferred).
  int default_imports = 0;
  for (const auto& o : model.opset_import()) default_imports += o.domain().empty() || o.domain() == "ai.onnx";
  if (default_imports != 1 || default_opset(model) < 1) return false;
  if (!nodes_verify(model.graph(), default_opset(model))) return false;
  // Data propagation folds Shape sub-graphs (x.view(x.size(0), -1)) into
  // inferred shapes. Node-level failures are skipped (error_mode 0); what
  // still throws (a value_info that contradicts what ONNX infers, an
  // unknown opset) leaves the model as it was. libonnx 1.12 knows the
  // schemas up to opset 17 and would apply them to newer nodes: a newer
  // model is inferred only where that is sound (infer_with_opset_17);
  // otherwise infer_missing_shapes() does it all.
  for (const auto& o : model.opset_import()) {
    if ((o.domain().empty() || o.domain() == "ai.onnx") && o.version() > kLibOnnxOpset) {
      return infer_with_opset_17(model);
    }
  }
  onnx::ModelProto inferred = model;
  try {
    onnx::shape_inference::InferShapes(inferred, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(false, 0, true));
  } catch (const std::exception&) {
    return false;
  }
  model = std::move(inferred);
  return true;
}
}  // namespace ember::converter
