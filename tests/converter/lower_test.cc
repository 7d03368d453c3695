// lower(): the converter IR -> ModelDef, on the models torch.onnx.export wrote
// (tests/golden/onnx_models.py) and on hand-built graphs covering every op
// form and every lowering error.
#include <cmath>

#include "converter/convert.h"
#include "converter/onnx_import.h"
#include "converter/passes.h"
#include "runtime/model/writer.h"
#include "tests/harness/testing.h"

namespace ember::converter {

using ember::testing::check_equal;

namespace {

const std::string kDir = "tests/golden/onnx/";

// Imports, optimizes and lowers a test model.
Graph optimized(const std::string& model) {
  auto g = import_onnx(kDir + model + ".onnx");
  REQUIRE_MESSAGE(g.ok(), g.diag().message);
  auto r = run_passes(*g);
  REQUIRE_MESSAGE(r.ok(), r.diag().message);
  return std::move(*g);
}

ModelDef lowered(const Graph& g) {
  auto d = lower(g);
  REQUIRE_MESSAGE(d.ok(), d.diag().message);
  return std::move(*d);
}

std::string lower_error(const Graph& g) {
  auto d = lower(g);
  REQUIRE(!d.ok());
  CHECK(d.diag().status == Status::NotSupported);
  return d.diag().message;
}

std::vector<OpKind> kinds(const ModelDef& d) {
  std::vector<OpKind> k;
  for (const OpDef& op : d.ops) k.push_back(op.op);
  return k;
}

const TensorDef& tensor_at(const ModelDef& d, int32_t i) {
  REQUIRE(i >= 0);
  REQUIRE(static_cast<size_t>(i) < d.tensors.size());
  return d.tensors[static_cast<size_t>(i)];
}

const Tensor& ir_constant(const Graph& g, const std::string& name) {
  const int id = g.find_value(name);
  REQUIRE_MESSAGE(id >= 0, "no value " << name);
  REQUIRE(g.value(id).is_constant());
  return g.value(id).constant;
}

// A hand-built IR graph.
struct Builder {
  Graph g;

  int value(const std::string& name, std::optional<DType> dtype, std::optional<std::vector<Dim>> shape) {
    Value v;
    v.name = name;
    v.dtype = dtype;
    v.shape = std::move(shape);
    return g.add_value(std::move(v));
  }
  int input(const std::string& name, std::vector<Dim> shape, DType dtype = DType::Float32) {
    const int id = value(name, dtype, std::move(shape));
    g.inputs.push_back(id);
    return id;
  }
  int constant(const std::string& name, Tensor t) { return g.add_constant(name, std::move(t)); }
  // Adds a node; its outputs are new values of the given dtype and shape.
  std::vector<int> node(const std::string& op, const std::string& name, std::vector<int> ins,
                        std::vector<std::pair<std::optional<DType>, std::optional<std::vector<Dim>>>> outs,
                        std::map<std::string, Attr> attrs = {}) {
    Node n;
    n.op_type = op;
    n.name = name;
    n.kind = map_onnx_op(op);
    n.inputs = std::move(ins);
    n.attrs = std::move(attrs);
    for (size_t k = 0; k < outs.size(); ++k) {
      n.outputs.push_back(value(name + "_out" + (k ? std::to_string(k) : ""), outs[k].first, outs[k].second));
    }
    g.nodes.push_back(n);
    return g.nodes.back().outputs;
  }
  int node1(const std::string& op, const std::string& name, std::vector<int> ins, std::vector<Dim> shape,
            std::map<std::string, Attr> attrs = {}, std::optional<DType> dtype = DType::Float32) {
    return node(op, name, std::move(ins), {{dtype, std::move(shape)}}, std::move(attrs))[0];
  }
};

std::vector<Dim> dims(std::initializer_list<int64_t> v) {
  std::vector<Dim> d;
  for (int64_t x : v) d.push_back(Dim::fixed(x));
  return d;
}

Tensor i64(std::vector<int64_t> v) {
  const auto n = static_cast<int64_t>(v.size());
  return tensor(v, {n});
}

// Whether the importer gave every value that a node reads or writes a rank
// and a dtype (what lower() needs; ONNX shape inference plus the importer's
// own gap filling).
bool all_values_typed(const Graph& g) {
  for (const Node& n : g.nodes) {
    for (const std::vector<int>* ids : {&n.inputs, &n.outputs}) {
      for (int id : *ids) {
        if (id < 0) continue;
        const Value& v = g.value(id);
        if (!v.shape || !v.dtype) {
          MESSAGE(n.label() << ": value '" << v.name << "' has no " << (v.shape ? "dtype" : "shape"));
          return false;
        }
      }
    }
  }
  return true;
}

}  // namespace

TEST_CASE("mlp: Gemm becomes Linear with the fused Relu, symbolic batch kept (opsets 11, 13, 17)") {
  for (int opset : {11, 13, 17}) {
    CAPTURE(opset);
    const Graph g = optimized("mlp_opset" + std::to_string(opset));
    const ModelDef d = lowered(g);
    REQUIRE(kinds(d) == std::vector<OpKind>{OpKind::Linear, OpKind::Linear});
    CHECK(d.ops[0].name == "/fc1/Gemm");
    CHECK(d.ops[1].name == "/fc2/Gemm");
    CHECK(std::get<LinearParams>(d.ops[0].params).activation.kind == ActivationKind::Relu);
    CHECK(std::get<LinearParams>(d.ops[1].params).activation.kind == ActivationKind::None);
    REQUIRE(d.inputs.size() == 1);
    REQUIRE(d.outputs.size() == 1);
    const TensorDef& in = tensor_at(d, d.inputs[0]);
    CHECK(in.name == "input");
    CHECK(in.dtype == DType::Float32);
    CHECK(in.shape == std::vector<int64_t>{-1, 10});
    CHECK(in.dim_names == std::vector<std::string>{"batch", ""});
    CHECK(!in.has_data);
    const TensorDef& out = tensor_at(d, d.outputs[0]);
    CHECK(out.name == "output");
    CHECK(out.shape == std::vector<int64_t>{-1, 4});
    CHECK(d.ops[1].outputs == std::vector<int32_t>{d.outputs[0]});
    CHECK(d.ops[0].inputs[0] == d.inputs[0]);
    CHECK(d.ops[1].inputs[0] == d.ops[0].outputs[0]);
    const char* names[2][2] = {{"fc1.weight", "fc1.bias"}, {"fc2.weight", "fc2.bias"}};
    for (int k = 0; k < 2; ++k) {
      REQUIRE(d.ops[static_cast<size_t>(k)].inputs.size() == 3);
      for (int j = 0; j < 2; ++j) {
        const TensorDef& w = tensor_at(d, d.ops[static_cast<size_t>(k)].inputs[static_cast<size_t>(j + 1)]);
        CHECK(w.name == names[k][j]);
        CHECK(w.has_data);
        CHECK(w.trainable);
        check_equal(w.tensor, ir_constant(g, names[k][j]));
      }
    }
    CHECK(tensor_at(d, d.ops[0].inputs[1]).shape == std::vector<int64_t>{16, 10});  // [N, K]: transB = 1
    CHECK(tensor_at(d, d.ops[0].outputs[0]).shape == std::vector<int64_t>{-1, 16});
    CHECK(d.tensors.size() == 7);
  }
}

TEST_CASE("cnn: folded Conv2d with fused Relu/Clamp, AdaptiveAvgPool2d, Flatten, Linear") {
  const Graph g = optimized("cnn_opset13");
  const ModelDef d = lowered(g);
  REQUIRE(kinds(d) == std::vector<OpKind>{OpKind::Conv2d, OpKind::Conv2d, OpKind::AdaptiveAvgPool2d,
                                          OpKind::Flatten, OpKind::Linear});
  CHECK(d.ops[0].name == "/conv1/Conv");
  CHECK(d.ops[3].name == "/Flatten");
  for (int k = 0; k < 2; ++k) {
    const auto& p = std::get<Conv2dParams>(d.ops[static_cast<size_t>(k)].params);
    CHECK(p.stride[0] == 1);
    CHECK(p.stride[1] == 1);
    CHECK(p.padding[0] == 1);
    CHECK(p.padding[1] == 1);
    CHECK(p.dilation[0] == 1);
    CHECK(p.groups == 1);
    // Both convs have a bias after BatchNorm folding (conv2 had none).
    const TensorDef& w = tensor_at(d, d.ops[static_cast<size_t>(k)].inputs[1]);
    const TensorDef& b = tensor_at(d, d.ops[static_cast<size_t>(k)].inputs[2]);
    CHECK(w.trainable);
    CHECK(b.trainable);
    CHECK(w.shape == std::vector<int64_t>{8, k == 0 ? 3 : 8, 3, 3});
    CHECK(b.shape == std::vector<int64_t>{8});
    check_equal(w.tensor, g.value(g.nodes[static_cast<size_t>(k)].inputs[1]).constant);
  }
  const auto& a1 = std::get<Conv2dParams>(d.ops[0].params).activation;
  const auto& a2 = std::get<Conv2dParams>(d.ops[1].params).activation;
  CHECK(a1.kind == ActivationKind::Relu);
  CHECK(a2.kind == ActivationKind::Clamp);
  CHECK(a2.min == 0.0);
  CHECK(a2.max == 6.0);
  CHECK(std::get<AxisParams>(d.ops[3].params).axis == 1);
  const TensorDef& conv1_out = tensor_at(d, d.ops[0].outputs[0]);
  CHECK(conv1_out.name == "/Relu_output_0");
  CHECK(conv1_out.shape == std::vector<int64_t>{-1, 8, 8, 8});
  CHECK(conv1_out.dim_names == std::vector<std::string>{"batch", "", "", ""});
  CHECK(tensor_at(d, d.ops[2].outputs[0]).shape == std::vector<int64_t>{-1, 8, 1, 1});
  CHECK(tensor_at(d, d.ops[3].outputs[0]).shape == std::vector<int64_t>{-1, 8});
  CHECK(tensor_at(d, d.inputs[0]).shape == std::vector<int64_t>{-1, 3, 8, 8});
  CHECK(tensor_at(d, d.outputs[0]).shape == std::vector<int64_t>{-1, 5});
  CHECK(tensor_at(d, d.ops[4].inputs[1]).name == "fc.weight");
}

TEST_CASE("view: Reshape with its folded int64 target (shape the importer does not know set here)") {
  Graph g = optimized("view_static_opset13");
  const int r = g.find_value("/Reshape_output_0");
  REQUIRE(r >= 0);
  if (!g.value(r).shape) g.value(r).shape = dims({3, 64});
  const ModelDef d = lowered(g);
  REQUIRE(kinds(d) == std::vector<OpKind>{OpKind::Conv2d, OpKind::Reshape, OpKind::Linear});
  const TensorDef& target = tensor_at(d, d.ops[1].inputs[1]);
  CHECK(target.has_data);
  CHECK(!target.trainable);  // int64, and no weight
  CHECK(target.dtype == DType::Int64);
  check_equal(target.tensor, i64({3, -1}));
  CHECK(tensor_at(d, d.ops[1].outputs[0]).shape == std::vector<int64_t>{3, 64});
  CHECK(std::get<Conv2dParams>(d.ops[0].params).padding[0] == 0);
}

TEST_CASE("view: with a symbolic batch x.view(x.size(0), -1) is a Reshape to the constant [0, -1] (copy dim 0)") {
  // The x.size(0) sub-graph (Shape, Gather, Unsqueeze, Concat) is x's own dim 0
  // at position 0 of its Reshape: fold_shapes makes it a 0 in a constant target.
  for (int opset : {11, 13}) {
    CAPTURE(opset);
    Graph g = optimized("view_dynamic_opset" + std::to_string(opset));
    CHECK(all_values_typed(g));
    const ModelDef d = lowered(g);
    REQUIRE(kinds(d) == std::vector<OpKind>{OpKind::Conv2d, OpKind::Reshape, OpKind::Linear});
    CHECK(d.ops[1].inputs[0] == d.ops[0].outputs[0]);
    const TensorDef& target = tensor_at(d, d.ops[1].inputs[1]);
    CHECK(target.dtype == DType::Int64);
    check_equal(target.tensor, i64({0, -1}));
    CHECK(tensor_at(d, d.ops[0].outputs[0]).dim_names == std::vector<std::string>{"batch", "", "", ""});
  }
}

TEST_CASE("Gemm forms: transB = 0 transposes a constant B, C [1, N] becomes [N], fused Clip") {
  Builder b;
  const int x = b.input("x", {Dim::named("batch"), Dim::fixed(3)});
  const Tensor bw = tensor({{1.f, 2.f}, {3.f, 4.f}, {5.f, 6.f}});  // [K = 3, N = 2]
  const int w = b.constant("B", bw);
  const int c = b.constant("C", tensor({{0.5f, -0.5f}}));
  const int y = b.node1("Gemm", "gemm", {x, w, c}, {Dim::named("batch"), Dim::fixed(2)},
                        {{"activation", std::string("Clip")}, {"activation_max", 6.0}, {"beta", 1.0}});
  b.g.outputs = {y};
  const ModelDef d = lowered(b.g);
  REQUIRE(kinds(d) == std::vector<OpKind>{OpKind::Linear});
  const TensorDef& wt = tensor_at(d, d.ops[0].inputs[1]);
  CHECK(wt.name == "B");  // its only reader takes the transposed copy: the ONNX name stays
  CHECK(wt.trainable);
  check_equal(wt.tensor, tensor({{1.f, 3.f, 5.f}, {2.f, 4.f, 6.f}}));
  CHECK(wt.tensor.is_contiguous());
  const TensorDef& bias = tensor_at(d, d.ops[0].inputs[2]);
  CHECK(bias.name == "C/row");
  CHECK(bias.shape == std::vector<int64_t>{2});
  check_equal(bias.tensor, tensor({0.5f, -0.5f}));
  const Activation a = std::get<LinearParams>(d.ops[0].params).activation;
  CHECK(a.kind == ActivationKind::Clamp);
  CHECK(a.min == -INFINITY);
  CHECK(a.max == 6.0);
  // Neither B nor C themselves are written: nothing reads them.
  CHECK(d.tensors.size() == 4);

  // No C: bias -1.
  Builder b2;
  const int x2 = b2.input("x", dims({4, 3}));
  const int w2 = b2.constant("W", tensor({{1.f, 2.f, 3.f}}));
  b2.g.outputs = {b2.node1("Gemm", "g", {x2, w2}, dims({4, 1}), {{"transB", int64_t{1}}, {"beta", 0.0}})};
  const ModelDef d2 = lowered(b2.g);
  CHECK(d2.ops[0].inputs == std::vector<int32_t>{0, 1, -1});
  CHECK(tensor_at(d2, 1).name == "W");
}

TEST_CASE("Gemm transB = 0: a B also read as it is keeps its name, the transposed copy is B/transposed") {
  Builder b;
  const int x = b.input("x", {Dim::fixed(2), Dim::fixed(3)});
  const int w = b.constant("B", tensor({{1.f, 2.f}, {3.f, 4.f}, {5.f, 6.f}}));
  const int y = b.node1("Gemm", "gemm", {x, w}, {Dim::fixed(2), Dim::fixed(2)});
  const int z = b.node1("MatMul", "mm", {x, w}, {Dim::fixed(2), Dim::fixed(2)});
  b.g.outputs = {y, z};
  const ModelDef d = lowered(b.g);
  REQUIRE(kinds(d) == std::vector<OpKind>{OpKind::Linear, OpKind::MatMul});
  CHECK(tensor_at(d, d.ops[0].inputs[1]).name == "B/transposed");
  CHECK(tensor_at(d, d.ops[1].inputs[1]).name == "B");
}

TEST_CASE("every lowering error is collected in one message, with op types and node names") {
  Builder b;
  const int x = b.input("x", dims({2, 3}));
  const int x4 = b.input("x4", dims({1, 2, 5, 5}));
  const int w = b.constant("w", zeros({3, 3}));
  const int a = b.node1("Gemm", "g_alpha", {x, w}, dims({2, 3}), {{"alpha", 2.0}, {"transB", int64_t{1}}});
  const int t = b.node1("Gemm", "g_transA", {a, w}, dims({2, 3}), {{"transA", int64_t{1}}});
  const int cw = b.constant("cw", zeros({4, 2, 3, 3}));
  const int conv = b.node1("Conv", "conv", {x4, cw}, dims({1, 4, 4, 4}), {{"pads", std::vector<int64_t>{0, 0, 1, 1}}});
  const int pads = b.node1("Shape", "shape", {t}, dims({2}), {}, DType::Int64);
  const int padded = b.node1("Reshape", "reshape", {t, pads}, dims({2, 3}), {{"allowzero", int64_t{1}}});
  const int lo = b.node1("Abs", "abs", {padded}, dims({2, 3}));
  const int clip = b.node1("Clip", "", {padded, lo}, dims({2, 3}));
  const int id = b.node1("Identity", "id", {clip}, dims({2, 3}));
  const int x3 = b.input("x3", dims({2, 3, 4}));
  const int sm = b.node1("Softmax", "sm", {x3}, dims({2, 3, 4}), {{"axis", int64_t{1}}, {"coerce_2d", int64_t{1}}});
  const int gem = b.node1("Gemm", "g_c", {x, w, b.constant("c", zeros({2, 3}))}, dims({2, 3}), {{"transB", int64_t{1}}});
  const auto drop = b.node("Dropout", "drop", {x}, {{DType::Float32, dims({2, 3})}, {DType::Bool, dims({2, 3})}});
  b.g.outputs = {id, conv, sm, gem, drop[1]};
  CHECK(lower_error(b.g) ==
        "the graph cannot be lowered to ember ops (2 problems): "
        "Conv 'conv': pads [0, 0, 1, 1] are not symmetric (begin != end); "
        "Reshape 'reshape': allowzero = 1 with a shape 'shape_out' that is not a constant is not supported");
}

TEST_CASE("graph ops: params from attributes and constant inputs, variadic Concat and Split") {
  Builder b;
  const int x = b.input("x", {Dim::named("batch"), Dim::fixed(3), Dim::fixed(1), Dim::fixed(4)});
  const int tr = b.node1("Transpose", "tr", {x}, {Dim::fixed(4), Dim::fixed(1), Dim::fixed(3), Dim::named("batch")});
  const int sq = b.node1("Squeeze", "sq", {tr}, {Dim::fixed(4), Dim::fixed(3), Dim::named("batch")});
  const int us = b.node1("Unsqueeze", "us", {sq, b.constant("axes", i64({0, -1}))},
                         {Dim::fixed(1), Dim::fixed(4), Dim::fixed(3), Dim::named("batch"), Dim::fixed(1)});
  const int pm = b.node1("Transpose", "pm", {x}, {Dim::named("batch"), Dim::fixed(4), Dim::fixed(3), Dim::fixed(1)},
                         {{"perm", std::vector<int64_t>{0, 3, 1, 2}}});
  const int cat = b.node1("Concat", "cat", {x, x, x}, {Dim::named("batch"), Dim::fixed(9), Dim::fixed(1), Dim::fixed(4)},
                          {{"axis", int64_t{1}}});
  const auto parts = b.node("Split", "split", {cat, b.constant("sizes", i64({4, 5}))},
                            {{DType::Float32, std::vector<Dim>{Dim::named("batch"), Dim::fixed(4), Dim::fixed(1), Dim::fixed(4)}},
                             {DType::Float32, std::vector<Dim>{Dim::named("batch"), Dim::fixed(5), Dim::fixed(1), Dim::fixed(4)}}},
                            {{"axis", int64_t{1}}});
  const int halves = b.node("Split", "split2", {x}, {{DType::Float32, dims({1, 3, 1, 2})}, {DType::Float32, dims({1, 3, 1, 2})}},
                            {{"axis", int64_t{-1}}})[1];
  const int sl = b.node1("Slice", "slice", {x, b.constant("starts", i64({1})), b.constant("ends", i64({3})), -1,
                                            b.constant("steps", i64({1}))},
                         {Dim::named("batch"), Dim::fixed(2), Dim::fixed(1), Dim::fixed(4)});
  const int shape = b.node1("Shape", "shape", {x}, dims({4}), {}, std::nullopt);  // dtype inferred: int64
  const int fill = b.node1("ConstantOfShape", "fill", {shape}, {Dim{}, Dim{}, Dim{}, Dim{}},
                           {{"value", Attr(tensor({int64_t{7}}))}}, std::nullopt);
  const int ex = b.node1("Expand", "expand", {x, shape}, {Dim::named("batch"), Dim::fixed(3), Dim::fixed(1), Dim::fixed(4)});
  const int emb = b.constant("emb", ones({10, 4}));
  const int ids = b.input("ids", {Dim::named("batch")}, DType::Int64);
  const int ga = b.node1("Gather", "gather", {emb, ids}, {Dim::named("batch"), Dim::fixed(4)});
  const int fl = b.node1("Flatten", "flat", {x}, {Dim::named("batch"), Dim::fixed(12)});
  const int rs = b.node1("Reshape", "reshape", {fl, b.constant("target", i64({0, 3, 4}))},
                         {Dim::named("batch"), Dim::fixed(3), Dim::fixed(4)});
  b.g.outputs = {us, pm, parts[0], parts[1], halves, sl, fill, ex, ga, rs};
  const ModelDef d = lowered(b.g);
  REQUIRE(kinds(d) == std::vector<OpKind>{OpKind::Permute, OpKind::Squeeze, OpKind::Unsqueeze, OpKind::Permute,
                                          OpKind::Concat, OpKind::Split, OpKind::Split, OpKind::Slice, OpKind::ShapeOf,
                                          OpKind::ConstantOfShape, OpKind::Expand, OpKind::Gather, OpKind::Flatten,
                                          OpKind::Reshape});
  auto dims_of = [&](size_t op) {
    const auto& p = std::get<DimsParams>(d.ops[op].params);
    return std::vector<int64_t>(p.dims, p.dims + p.rank);
  };
  CHECK(dims_of(0) == std::vector<int64_t>{3, 2, 1, 0});  // default: reversed
  CHECK(dims_of(1).empty());                              // no axes: every size-1 dim
  CHECK(dims_of(2) == std::vector<int64_t>{0, -1});
  CHECK(dims_of(3) == std::vector<int64_t>{0, 3, 1, 2});
  CHECK(d.ops[2].inputs.size() == 1);  // the axes are params, not an input
  CHECK(d.ops[4].inputs.size() == 3);
  CHECK(d.ops[4].inputs == std::vector<int32_t>{0, 0, 0});
  CHECK(std::get<AxisParams>(d.ops[4].params).axis == 1);
  CHECK(d.ops[5].outputs.size() == 2);
  CHECK(tensor_at(d, d.ops[5].inputs[1]).name == "sizes");
  check_equal(tensor_at(d, d.ops[5].inputs[1]).tensor, i64({4, 5}));
  CHECK(tensor_at(d, d.ops[5].outputs[1]).shape == std::vector<int64_t>{-1, 5, 1, 4});
  CHECK(d.ops[6].inputs[1] == -1);  // equal parts
  CHECK(std::get<AxisParams>(d.ops[6].params).axis == -1);
  REQUIRE(d.ops[7].inputs.size() == 5);
  CHECK(d.ops[7].inputs[3] == -1);
  CHECK(tensor_at(d, d.ops[7].inputs[4]).name == "steps");
  CHECK(tensor_at(d, d.ops[8].outputs[0]).dtype == DType::Int64);
  const Scalar v = std::get<ScalarParams>(d.ops[9].params).value;
  CHECK(v.is_integral());
  CHECK(v.to_int() == 7);
  const TensorDef& filled = tensor_at(d, d.ops[9].outputs[0]);
  CHECK(filled.dtype == DType::Int64);  // from the value attribute
  CHECK(filled.shape == std::vector<int64_t>{-1, -1, -1, -1});
  CHECK(filled.dim_names.empty());  // unknown dims have no names
  CHECK(d.ops[10].inputs[1] == d.ops[8].outputs[0]);
  const TensorDef& table = tensor_at(d, d.ops[11].inputs[0]);
  CHECK(table.name == "emb");
  CHECK(table.trainable);  // Gather's data: an embedding table
  CHECK(!tensor_at(d, d.ops[11].inputs[1]).has_data);
  CHECK(std::get<AxisParams>(d.ops[11].params).axis == 0);
  CHECK(std::get<AxisParams>(d.ops[12].params).axis == 1);
  CHECK(tensor_at(d, d.ops[13].inputs[1]).dtype == DType::Int64);
  CHECK(!tensor_at(d, d.ops[13].inputs[1]).trainable);
  CHECK(d.inputs == std::vector<int32_t>{0, tensor_at(d, d.ops[11].inputs[1]).name == "ids" ? d.ops[11].inputs[1] : -2});
  CHECK(d.outputs.size() == 10);
}

TEST_CASE("nn ops: pooling, norms, softmax, reductions, pad, cast, elementwise and Max chains") {
  Builder b;
  const int x = b.input("x", {Dim::named("n"), Dim::fixed(2), Dim::fixed(6), Dim::fixed(6)});
  const auto nd = [](std::initializer_list<int64_t> rest) {
    std::vector<Dim> d{Dim::named("n")};
    for (int64_t v : rest) d.push_back(Dim::fixed(v));
    return d;
  };
  const int mp = b.node1("MaxPool", "mp", {x}, nd({2, 3, 3}),
                         {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"strides", std::vector<int64_t>{2, 2}},
                          {"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"ceil_mode", int64_t{1}}});
  const int ap = b.node1("AveragePool", "ap", {mp}, nd({2, 2, 2}), {{"kernel_shape", std::vector<int64_t>{2, 2}}});
  const int ap2 = b.node1("AveragePool", "ap2", {x}, nd({2, 6, 6}),
                          {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                           {"count_include_pad", int64_t{1}}, {"dilations", std::vector<int64_t>{1, 1}}});
  const int gp = b.node1("GlobalAveragePool", "gp", {ap2}, nd({2, 1, 1}));
  const int bn = b.node1("BatchNormalization", "bn", {x, b.constant("scale", ones({2})), b.constant("B", zeros({2})),
                                                       b.constant("mean", zeros({2})), b.constant("var", ones({2}))},
                         nd({2, 6, 6}), {{"epsilon", 1e-3}});
  const int ln = b.node1("LayerNormalization", "ln", {bn, b.constant("gamma", ones({6, 6}))}, nd({2, 6, 6}),
                         {{"axis", int64_t{-2}}});
  const int sm = b.node1("Softmax", "sm", {ln}, nd({2, 6, 6}), {{"axis", int64_t{-1}}, {"coerce_2d", int64_t{1}}});
  const int lsm = b.node1("LogSoftmax", "lsm", {sm}, nd({2, 6, 6}), {{"axis", int64_t{1}}});
  const int rm = b.node1("ReduceMean", "rm", {lsm, b.constant("rm_axes", i64({-1, 1}))}, nd({6}),
                         {{"keepdims", int64_t{0}}});
  const int rs = b.node1("ReduceSum", "rs", {rm}, dims({1, 1}));
  const int pd = b.node1("Pad", "pad", {x, b.constant("pads", i64({0, 0, 1, 2, 0, 0, 3, 4}))}, nd({2, 10, 12}),
                         {{"mode", std::string("edge")}});
  const int pc = b.node1("Pad", "padc", {x, b.constant("pads2", i64({0, 0, 0, 1, 0, 0, 0, 1})),
                                         b.constant("pad_value", scalar_tensor(2.5, DType::Float32))},
                         nd({2, 6, 8}));
  const int cast = b.node1("Cast", "cast", {x}, nd({2, 6, 6}), {{"to", int64_t{10}}}, std::nullopt);
  const int eq = b.node1("Equal", "eq", {x, x}, nd({2, 6, 6}), {}, std::nullopt);
  const int wh = b.node1("Where", "where", {eq, x, b.constant("zero", zeros({1}))}, nd({2, 6, 6}), {}, std::nullopt);
  const int ge = b.node1("Gelu", "gelu", {wh}, nd({2, 6, 6}), {{"approximate", std::string("tanh")}});
  const int cl = b.node1("Clip", "clip", {ge, -1, b.constant("hi", scalar_tensor(int64_t{3}, DType::Int64))},
                         nd({2, 6, 6}));
  const int c1 = b.constant("c1", zeros({6}));
  const int mx = b.node1("Max", "max3", {cl, c1, b.constant("c2", zeros({2, 1, 1}))}, nd({2, 6, 6}));
  const int mn = b.node1("Min", "min1", {mx}, nd({2, 6, 6}));
  b.g.outputs = {ap, gp, rs, pd, pc, cast, mn};
  const ModelDef d = lowered(b.g);
  REQUIRE(kinds(d) == std::vector<OpKind>{OpKind::MaxPool2d, OpKind::AvgPool2d, OpKind::AvgPool2d,
                                          OpKind::AdaptiveAvgPool2d, OpKind::BatchNorm, OpKind::LayerNorm,
                                          OpKind::Softmax, OpKind::LogSoftmax, OpKind::Mean, OpKind::Sum, OpKind::Pad,
                                          OpKind::Pad, OpKind::Copy, OpKind::Eq, OpKind::Where, OpKind::Gelu,
                                          OpKind::Clamp, OpKind::Maximum, OpKind::Maximum, OpKind::Copy});
  const auto& mpp = std::get<Pool2dParams>(d.ops[0].params);
  CHECK((mpp.kernel[0] == 3 && mpp.kernel[1] == 3 && mpp.stride[0] == 2 && mpp.padding[1] == 1 && mpp.ceil_mode &&
         mpp.dilation[0] == 1));
  const auto& app = std::get<Pool2dParams>(d.ops[1].params);
  CHECK((app.kernel[0] == 2 && app.stride[1] == 1 && app.padding[0] == 0 && !app.ceil_mode));
  CHECK(!app.count_include_pad);  // ONNX's default is 0 (PyTorch's is true)
  CHECK(std::get<Pool2dParams>(d.ops[2].params).count_include_pad);
  CHECK(std::holds_alternative<NoParams>(d.ops[3].params));
  // BatchNorm: ONNX (X, scale, B, mean, var) -> ember (x, mean, var, weight, bias).
  std::vector<std::string> bn_inputs;
  for (int32_t i : d.ops[4].inputs) bn_inputs.push_back(tensor_at(d, i).name);
  CHECK(bn_inputs == std::vector<std::string>{"x", "mean", "var", "scale", "B"});
  CHECK(std::get<NormParams>(d.ops[4].params).eps == 1e-3);
  CHECK(tensor_at(d, d.ops[4].inputs[3]).trainable);
  CHECK(tensor_at(d, d.ops[4].inputs[4]).trainable);
  CHECK(!tensor_at(d, d.ops[4].inputs[1]).trainable);  // running statistics are buffers
  CHECK(!tensor_at(d, d.ops[4].inputs[2]).trainable);
  CHECK(std::get<NormParams>(d.ops[5].params).normalized_rank == 2);
  CHECK(std::get<NormParams>(d.ops[5].params).eps == 1e-5);
  CHECK(d.ops[5].inputs[2] == -1);
  CHECK(tensor_at(d, d.ops[5].inputs[1]).trainable);
  CHECK(std::get<SoftmaxParams>(d.ops[6].params).dim == -1);
  CHECK(std::get<SoftmaxParams>(d.ops[7].params).dim == 1);
  const auto& mean = std::get<ReduceParams>(d.ops[8].params);
  CHECK(mean.dims == 0b1010u);
  CHECK(!mean.keepdim);
  const auto& sum = std::get<ReduceParams>(d.ops[9].params);
  CHECK(sum.dims == 0b11u);  // no axes: every dim of the rank-2 input
  CHECK(sum.keepdim);
  const auto& pad = std::get<PadParams>(d.ops[10].params);
  CHECK(pad.mode == PadMode::Replicate);
  CHECK((pad.before[2] == 1 && pad.before[3] == 2 && pad.after[2] == 3 && pad.after[3] == 4 && pad.before[0] == 0));
  CHECK(pad.value == 0.0);
  const auto& padc = std::get<PadParams>(d.ops[11].params);
  CHECK(padc.mode == PadMode::Constant);
  CHECK(padc.value == 2.5);
  CHECK(d.ops[11].inputs.size() == 1);
  CHECK(tensor_at(d, d.ops[12].outputs[0]).dtype == DType::Float16);  // Cast's "to"
  CHECK(tensor_at(d, d.ops[13].outputs[0]).dtype == DType::Bool);
  CHECK(tensor_at(d, d.ops[14].outputs[0]).dtype == DType::Float32);  // Where: its x's dtype
  CHECK(std::get<GeluParams>(d.ops[15].params).tanh_approximation);
  const auto& clamp = std::get<ClampParams>(d.ops[16].params);
  CHECK(!clamp.has_min);
  CHECK(clamp.has_max);
  CHECK(clamp.max.is_integral());
  CHECK(clamp.max.to_int() == 3);
  // Max of three: a chain through an intermediate of the broadcast shape.
  CHECK(d.ops[17].name == "max3/maximum_1");
  CHECK(d.ops[18].name == "max3");
  CHECK(d.ops[18].inputs[0] == d.ops[17].outputs[0]);
  const TensorDef& mid = tensor_at(d, d.ops[17].outputs[0]);
  CHECK(mid.name == "max3_out/maximum_1");
  CHECK(mid.shape == std::vector<int64_t>{-1, 2, 6, 6});
  CHECK(mid.dim_names == std::vector<std::string>{"n", "", "", ""});
  CHECK(tensor_at(d, d.ops[17].inputs[1]).name == "c1");
  CHECK(d.ops[19].inputs == std::vector<int32_t>{d.ops[18].outputs[0]});  // Min of one: a copy
}

TEST_CASE("Conv: auto_pad SAME with a static input, groups, dilations; refused forms") {
  Builder b;
  const int x = b.input("x", dims({1, 4, 7, 7}));
  const int w = b.constant("w", zeros({4, 2, 3, 3}));
  const int y = b.node1("Conv", "conv", {x, w}, dims({1, 4, 4, 4}),
                        {{"auto_pad", std::string("SAME_UPPER")}, {"strides", std::vector<int64_t>{2, 2}},
                         {"group", int64_t{2}}});
  const int z = b.node1("Conv", "conv_v", {y, w}, dims({1, 4, 2, 2}),
                        {{"auto_pad", std::string("VALID")}, {"dilations", std::vector<int64_t>{1, 1}},
                         {"group", int64_t{2}}});
  b.g.outputs = {z};
  const ModelDef d = lowered(b.g);
  const auto& p = std::get<Conv2dParams>(d.ops[0].params);
  // out = ceil(7 / 2) = 4, total pad = (4 - 1) * 2 + 3 - 7 = 2: 1 on each side.
  CHECK((p.padding[0] == 1 && p.padding[1] == 1 && p.stride[0] == 2 && p.groups == 2));
  CHECK(p.activation.kind == ActivationKind::None);
  CHECK(d.ops[0].inputs[2] == -1);
  CHECK(std::get<Conv2dParams>(d.ops[1].params).padding[0] == 0);

  Builder bad;
  const int xs = bad.input("x", {Dim::named("batch"), Dim::fixed(4), Dim::named("h"), Dim::fixed(7)});
  const int x6 = bad.input("x6", dims({1, 4, 6, 6}));
  const int w3 = bad.constant("w", zeros({4, 4, 3, 3}));
  const int w3d = bad.constant("w3d", zeros({4, 4, 3, 3, 3}));
  const int a = bad.node1("Conv", "same_dyn", {xs, w3}, {Dim::named("batch"), Dim::fixed(4), Dim{}, Dim::fixed(7)},
                          {{"auto_pad", std::string("SAME_LOWER")}});
  const int c = bad.node1("Conv", "same_odd", {x6, w3}, dims({1, 4, 3, 3}),
                          {{"auto_pad", std::string("SAME_UPPER")}, {"strides", std::vector<int64_t>{2, 2}}});
  const int e = bad.node1("Conv", "conv3d", {bad.input("x3", dims({1, 4, 9, 9, 9})), w3d}, dims({1, 4, 7, 7, 7}));
  const int f = bad.node1("MaxPool", "mp", {x6}, dims({1, 4, 6, 6}),
                          {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"pads", std::vector<int64_t>{0, 0, 1, 1}}});
  bad.g.nodes.back().outputs.push_back(bad.value("mp_idx", DType::Int64, dims({1, 4, 6, 6})));
  bad.g.outputs = {a, c, e, f, bad.g.nodes.back().outputs[1]};
  CHECK(lower_error(bad.g) ==
        "the graph cannot be lowered to ember ops (4 problems): "
        "Conv 'same_dyn': auto_pad SAME_LOWER needs a static 4-D input shape; "
        "Conv 'same_odd': auto_pad SAME_UPPER needs an asymmetric padding (1 in dimension 2); "
        "Conv 'conv3d': only 2-D convolutions are supported (weight 'w3d' is not 4-D); "
        "MaxPool 'mp': output 1 'mp_idx' (indices: only for a 4-D floating-point input with symmetric pads of at "
        "most half the kernel) is used");
}

TEST_CASE("tensors: unique names, dtypes inferred or refused, unknown rank refused, constants as outputs") {
  Builder b;
  const int x = b.input("", dims({2}));
  const int y = b.node1("Relu", "r1", {x}, dims({2}));
  b.g.value(y).name = "t";
  const int z = b.node1("Neg", "n1", {y}, dims({2}), {}, std::nullopt);  // dtype: Neg's input's
  b.g.value(z).name = "t";
  const int c = b.constant("t", tensor({1.f, 2.f}));
  const int s = b.node1("Add", "add", {z, c}, dims({2}));
  b.g.outputs = {s, c};
  const ModelDef d = lowered(b.g);
  std::vector<std::string> names;
  for (const TensorDef& t : d.tensors) names.push_back(t.name);
  CHECK(names == std::vector<std::string>{"value_0", "t", "t_1", "t_2", "add_out"});
  CHECK(d.tensors[2].dtype == DType::Float32);
  CHECK(d.outputs == std::vector<int32_t>{4, 3});
  CHECK(d.tensors[3].has_data);
  CHECK(!d.tensors[3].trainable);  // read by Add only

  Builder bad;
  const int in = bad.input("in", dims({2}));
  bad.g.value(in).dtype.reset();
  const int u = bad.node1("Relu", "relu", {in}, dims({2}), {}, std::nullopt);
  const int v = bad.node1("Exp", "exp", {u}, {});
  bad.g.value(v).shape.reset();
  const int r = bad.node1("ReduceSum", "rsum", {v}, {});
  bad.g.outputs = {r};
  CHECK(lower_error(bad.g) ==
        "the graph cannot be lowered to ember ops (4 problems): value 'in': dtype unknown; "
        "value 'relu_out': dtype unknown; value 'exp_out': rank unknown; "
        "ReduceSum 'rsum': input 'exp_out' has an unknown rank");
}

TEST_CASE("transformer encoder layer: attention, norms and the dynamic-batch shape sub-graphs (opsets 13, 17)") {
  for (int opset : {13, 17}) {
    CAPTURE(opset);
    Graph g = optimized("transformer_opset" + std::to_string(opset));
    // The importer types every value, Slice/Reshape outputs of the Shape sub-graphs included.
    CHECK(all_values_typed(g));
    const ModelDef d = lowered(g);
    std::map<OpKind, int> count;
    for (const OpDef& op : d.ops) ++count[op.op];
    // The attention's 2 MatMuls and Softmax made one op (fuse_attention); the
    // projections' MatMul + Add of a bias made Linears (fuse_matmul_bias), the
    // Relu fused into linear1.
    CHECK(count[OpKind::MatMul] == 0);
    CHECK(count[OpKind::ScaledDotProductAttention] == 1);
    CHECK(count[OpKind::Linear] == 4);  // in_proj, out_proj's Gemm, linear1, linear2
    CHECK(count[OpKind::Softmax] == 0);
    CHECK(count[OpKind::Relu] == 0);
    // x.size(0) under the symbolic batch, once: with the importer's shape inference
    // the x.size(k) of static dims fold away.
    CHECK(count[OpKind::ShapeOf] == 1);
    CHECK(count[OpKind::Reshape] == 5);
    CHECK(count[OpKind::Concat] == 5);
    CHECK(count[OpKind::Slice] == 3);   // q, k, v out of the packed projection
    // Opset 17 exports LayerNormalization; opset 13's 9-node LayerNorms are
    // fused into it (fuse_layer_norms), so both opsets lower alike.
    CHECK(count[OpKind::LayerNorm] == 2);
    CHECK(count[OpKind::Mean] == 0);
    CHECK(count[OpKind::Pow] == 0);
    CHECK(d.ops.size() == g.nodes.size());  // one op per node
    CHECK(d.ops.size() == 38u);  // the attention: MatMul, Softmax, MatMul, the heads' Transpose -> the key's Transpose, the op
    const TensorDef& in = tensor_at(d, d.inputs[0]);
    CHECK(in.shape == std::vector<int64_t>{-1, 8, 32});
    CHECK(in.dim_names == std::vector<std::string>{"batch", "", ""});
    CHECK(tensor_at(d, d.outputs[0]).name == "output");
    for (const OpDef& op : d.ops) {
      CAPTURE(op.name);
      if (op.op == OpKind::Softmax) CHECK(std::get<SoftmaxParams>(op.params).dim == -1);
      if (op.op == OpKind::LayerNorm) {
        CHECK(std::get<NormParams>(op.params).normalized_rank == 1);
        CHECK(tensor_at(d, op.inputs[1]).trainable);
        CHECK(tensor_at(d, op.inputs[2]).trainable);
      }
      if (op.op == OpKind::Mean) CHECK(std::get<ReduceParams>(op.params).dims == 0b100u);
      if (op.op == OpKind::ShapeOf) CHECK(tensor_at(d, op.outputs[0]).dtype == DType::Int64);
      for (int32_t i : op.inputs) {
        if (i < 0) continue;
        const TensorDef& t = tensor_at(d, i);
        // Weights read by MatMul/Linear/LayerNorm are trainable; int64 shape constants never are.
        if (t.has_data && t.dtype == DType::Int64) CHECK(!t.trainable);
      }
    }
    const int w = [&] {
      for (size_t i = 0; i < d.tensors.size(); ++i) {
        if (d.tensors[i].name == "linear1.weight" || d.tensors[i].name.find("linear1") != std::string::npos) {
          if (d.tensors[i].has_data && d.tensors[i].shape.size() == 2) return static_cast<int>(i);
        }
      }
      return -1;
    }();
    REQUIRE(w >= 0);
    CHECK(d.tensors[static_cast<size_t>(w)].trainable);
    // The file writer accepts the whole def.
    std::vector<std::byte> bytes;
    std::string error;
    CHECK_MESSAGE(serialize_model(d, &bytes, &error) == Status::Ok, error);
  }
}

}  // namespace ember::converter
