// The ONNX importer and the converter passes, on models torch.onnx.export wrote
// (tests/golden/onnx_models.py) and on broken files.
#include <algorithm>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include <onnx/onnx_pb.h>

#include "converter/onnx_import.h"
#include "converter/passes.h"
#include "tests/harness/testing.h"

namespace ember::converter {

using ember::testing::check_close;
using ember::testing::check_equal;

namespace {

const std::string kDir = "tests/golden/onnx/";

Graph load(const std::string& model) {
  auto g = import_onnx(kDir + model + ".onnx");
  REQUIRE_MESSAGE(g.ok(), g.diag().message);
  return std::move(*g);
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// torch's reference values (onnx_expected.txt: gen_golden.py's T records).
Tensor expected(const std::string& name) {
  static const std::map<std::string, Tensor> records = [] {
    std::map<std::string, Tensor> r;
    std::istringstream file(read_bytes(kDir + "onnx_expected.txt"));
    std::string line;
    while (std::getline(file, line)) {
      std::istringstream ls(line);
      std::string kind, key, dtype;
      int64_t rank = 0;
      ls >> kind >> key >> dtype >> rank;
      Shape shape(static_cast<size_t>(rank));
      int64_t n = 1;
      for (auto& d : shape) ls >> d, n *= d;
      std::vector<double> v(static_cast<size_t>(n));
      for (auto& x : v) ls >> x;
      Tensor t = tensor(v, shape);
      r[key] = dtype == "float32" ? t.to(DType::Float32) : t.to(DType::Int64);
    }
    return r;
  }();
  auto it = records.find(name);
  REQUIRE_MESSAGE(it != records.end(), "no expected record " << name);
  return it->second;
}

const Tensor& constant(const Graph& g, const std::string& name) {
  const int id = g.find_value(name);
  REQUIRE_MESSAGE(id >= 0, "no value " << name);
  REQUIRE(g.value(id).is_constant());
  return g.value(id).constant;
}

// Appends an `op` node reading ins and writing a new value `out`; its id.
int add_node(Graph& g, const std::string& op, std::vector<int> ins, const std::string& out) {
  Value v;
  v.name = out;
  const int id = g.add_value(v);
  Node n;
  n.op_type = op;
  n.name = op + "_" + out;
  n.inputs = std::move(ins);
  n.outputs = {id};
  g.nodes.push_back(n);
  return id;
}

const Node& only_node(const Graph& g, const std::string& op) {
  const Node* found = nullptr;
  for (const Node& n : g.nodes) {
    if (n.op_type == op) {
      REQUIRE_MESSAGE(found == nullptr, "more than one " << op);
      found = &n;
    }
  }
  REQUIRE_MESSAGE(found != nullptr, "no " << op);
  return *found;
}

std::string error_of(const std::string& model) {
  auto g = import_onnx(kDir + model + ".onnx");
  REQUIRE(!g.ok());
  return g.diag().message;
}

}  // namespace

TEST_CASE("mlp: inputs, outputs, symbolic batch, op histogram, initializers (opsets 11, 13, 17)") {
  for (int opset : {11, 13, 17}) {
    CAPTURE(opset);
    Graph g = load("mlp_opset" + std::to_string(opset));
    CHECK(g.opset == opset);
    CHECK(g.producer.rfind("pytorch", 0) == 0);
    REQUIRE(g.inputs.size() == 1);
    REQUIRE(g.outputs.size() == 1);
    const Value& in = g.value(g.inputs[0]);
    CHECK(in.name == "input");
    CHECK(in.dtype == DType::Float32);
    REQUIRE(in.shape.has_value());
    CHECK(*in.shape == std::vector<Dim>{Dim::named("batch"), Dim::fixed(10)});
    CHECK(!in.static_shape().has_value());
    const Value& out = g.value(g.outputs[0]);
    CHECK(out.name == "output");
    CHECK(*out.shape == std::vector<Dim>{Dim::named("batch"), Dim::fixed(4)});
    CHECK(g.op_histogram() == std::map<std::string, int>{{"Gemm", 2}, {"Relu", 1}});
    CHECK(only_node(g, "Relu").kind == OpKind::Relu);
    CHECK(!g.nodes[0].kind.has_value());  // Gemm: composed, no ember op of its own
    CHECK(g.nodes[0].get_int("transB", 0) == 1);
    for (const char* p : {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}) {
      check_equal(constant(g, p), expected(std::string("mlp.") + p));
    }
    CHECK(g.validate().ok());
  }
}

TEST_CASE("initializers stored in the typed fields, every supported dtype") {
  Graph g = load("typed_fields");
  check_equal(constant(g, "f32"), tensor({1.5f, -2.0f, 0.25f}));
  check_equal(constant(g, "f64"), tensor({1e-3, -7.5}, DType::Float64));
  check_equal(constant(g, "i64"), tensor({-(int64_t{1} << 40), int64_t{7}}));
  check_equal(constant(g, "i32"), tensor({-5, 1 << 20}, DType::Int32));
  check_equal(constant(g, "i8"), tensor({-128, 127}, DType::Int8));
  check_equal(constant(g, "u8"), tensor({0, 255}, DType::UInt8));
  check_equal(constant(g, "b"), tensor({true, false, true}));
  check_equal(constant(g, "f16"), tensor({0.5, -3.25}, DType::Float16));
  check_equal(constant(g, "f16raw"), tensor({1.0, 65504.0}, DType::Float16));
}

TEST_CASE("cnn: BatchNorm folded into Conv, Conv+Relu/Clip fused, Cast of constants folded") {
  Graph g = load("cnn_opset13");
  CHECK(*g.value(g.inputs[0]).shape ==
        std::vector<Dim>{Dim::named("batch"), Dim::fixed(3), Dim::fixed(8), Dim::fixed(8)});
  CHECK(g.op_histogram() == std::map<std::string, int>{{"BatchNormalization", 2}, {"Cast", 2}, {"Clip", 1},
                                                       {"Conv", 2}, {"Flatten", 1}, {"Gemm", 1},
                                                       {"GlobalAveragePool", 1}, {"Relu", 1}});
  CHECK(only_node(g, "Relu").kind == OpKind::Relu);
  check_equal(constant(g, "conv1.weight"), expected("cnn.conv1.weight"));
  check_equal(constant(g, "bn1.running_var"), expected("cnn.bn1.running_var"));
  const std::string out_name = g.value(g.outputs[0]).name;

  auto report = run_passes(g);
  REQUIRE_MESSAGE(report.ok(), report.diag().message);
  CHECK(report->constants_folded == 2);  // the two Casts of Clip's bounds
  CHECK(report->batchnorms_folded == 2);
  CHECK(report->activations_fused == 2);
  CHECK(report->identities_removed == 0);
  CHECK(report->summary().find("folded 2 BatchNorms, fused 2 activations") != std::string::npos);
  CHECK(g.op_histogram() ==
        std::map<std::string, int>{{"Conv", 2}, {"Flatten", 1}, {"Gemm", 1}, {"GlobalAveragePool", 1}});
  CHECK(g.value(g.outputs[0]).name == out_name);
  CHECK(g.validate().ok());
  const Node& conv1 = g.nodes[0];
  const Node& conv2 = g.nodes[1];
  REQUIRE(conv1.op_type == "Conv");
  REQUIRE(conv2.op_type == "Conv");
  CHECK(conv1.get_string("activation", "") == "Relu");
  CHECK(conv2.get_string("activation", "") == "Clip");
  CHECK(conv2.get_float("activation_min", -1) == 0.0);
  CHECK(conv2.get_float("activation_max", -1) == 6.0);
  // The BatchNorm outputs' names survive on the convs' outputs.
  CHECK(g.value(conv1.outputs[0]).name == "/Relu_output_0");
  for (int i : {1, 2}) {
    const Node& conv = i == 1 ? conv1 : conv2;
    REQUIRE(conv.inputs.size() == 3);
    // The folded constants keep the convs' ONNX names (`ember finetune --train 'conv1.*'`).
    CHECK(g.value(conv.inputs[1]).name == "conv" + std::to_string(i) + ".weight");
    CHECK(g.value(conv.inputs[2]).name == "conv" + std::to_string(i) + ".bias");
    check_close(g.value(conv.inputs[1]).constant, expected("cnn.conv" + std::to_string(i) + ".folded_weight"),
                1e-5, 1e-6);
    check_close(g.value(conv.inputs[2]).constant, expected("cnn.conv" + std::to_string(i) + ".folded_bias"),
                1e-5, 1e-6);
  }
  // Nothing unreferenced is left: the BatchNorm parameters are gone.
  CHECK(g.find_value("bn1.running_var") < 0);
  CHECK(g.find_value("bn1.weight") < 0);
}

TEST_CASE("view: Shape of a static shape folds through Gather/Unsqueeze/Concat into Reshape's target") {
  Graph g = load("view_static_opset13");
  CHECK(g.nodes.size() == 8);  // the 4 Constant nodes became constant values
  CHECK(g.op_histogram().at("Shape") == 1);
  auto report = run_passes(g);
  REQUIRE_MESSAGE(report.ok(), report.diag().message);
  CHECK(report->shapes_folded == 2);     // Shape, and the Gather of its dim 0
  CHECK(report->constants_folded == 3);  // 2 Unsqueeze, Concat
  CHECK(g.op_histogram() == std::map<std::string, int>{{"Conv", 1}, {"Gemm", 1}, {"Reshape", 1}});
  const Node& reshape = only_node(g, "Reshape");
  REQUIRE(g.is_constant(reshape.inputs[1]));
  check_equal(g.value(reshape.inputs[1]).constant, expected("view.reshape_target"));
  // ONNX's inference left the Reshape's output without a shape; the importer computed it.
  REQUIRE(g.value(reshape.outputs[0]).shape.has_value());
  CHECK(*g.value(reshape.outputs[0]).shape == std::vector<Dim>{Dim::fixed(3), Dim::fixed(64)});
}

TEST_CASE("view: with a symbolic batch the Reshape copies the batch dim (a 0 in a constant target)") {
  for (int opset : {11, 13}) {
    CAPTURE(opset);
    Graph g = load("view_dynamic_opset" + std::to_string(opset));
    // Unsqueeze's axes: an attribute at opset 11, an input at 13; both read as an input.
    for (const Node& n : g.nodes) {
      if (n.op_type != "Unsqueeze") continue;
      REQUIRE(n.inputs.size() == 2);
      REQUIRE(g.is_constant(n.inputs[1]));
      check_equal(g.value(n.inputs[1]).constant, tensor({int64_t{0}}));
      CHECK(!n.has("axes"));
    }
    CHECK(g.nodes.size() == 8);
    auto report = run_passes(g);
    REQUIRE_MESSAGE(report.ok(), report.diag().message);
    // Gather(Shape(x), 0) is the symbolic batch, x's own dim 0 at position 0 of
    // x's Reshape: a 0 there (allowzero 0: copy it), so the target is constant.
    CHECK(report->shapes_folded == 1);
    CHECK(report->constants_folded == 1);  // Unsqueeze of the constant -1
    CHECK(g.op_histogram() == std::map<std::string, int>{{"Conv", 1}, {"Gemm", 1}, {"Reshape", 1}});
    const Node& reshape = only_node(g, "Reshape");
    REQUIRE(g.is_constant(reshape.inputs[1]));
    CHECK(g.value(reshape.inputs[1]).constant.to_vector<int64_t>() == std::vector<int64_t>{0, -1});
  }
}

TEST_CASE("transformer encoder layer: import and passes (opsets 13 and 17)") {
  for (int opset : {13, 17}) {
    CAPTURE(opset);
    Graph g = load("transformer_opset" + std::to_string(opset));
    CHECK(*g.value(g.inputs[0]).shape == std::vector<Dim>{Dim::named("batch"), Dim::fixed(8), Dim::fixed(32)});
    auto before = g.op_histogram();
    CHECK(before.at("MatMul") == 5);
    CHECK(before.at("Shape") == 7);
    CHECK(before.at("Identity") == 3);
    CHECK(before.at("Softmax") == 1);
    if (opset == 17) CHECK(before.at("LayerNormalization") == 2);
    else CHECK(before.at("ReduceMean") == 4);
    check_equal(constant(g, "linear1.weight"), expected("transformer.linear1.weight"));
    check_equal(constant(g, "norm1.weight"), expected("transformer.norm1.weight"));
    const size_t n_before = g.nodes.size();
    auto report = run_passes(g);
    REQUIRE_MESSAGE(report.ok(), report.diag().message);
    CHECK(report->identities_removed == 3);
    CHECK(report->shapes_folded > 0);  // x.size(1), x.size(2): static under a symbolic batch
    CHECK(g.nodes.size() < n_before);
    auto after = g.op_histogram();
    CHECK(after.count("Identity") == 0);
    // The three MatMuls of a constant weight followed by a bias Add become
    // Gemms (fuse_matmul_bias); the attention's two products, its Softmax and
    // its scale become one ScaledDotProductAttention (fuse_attention).
    CHECK(report->matmul_biases_fused == 3);
    CHECK(report->attentions_fused == 1);
    CHECK(after.count("MatMul") == 0);
    CHECK(after.count("Softmax") == 0);
    CHECK(after.at("ember::ScaledDotProductAttention") == 1);
    CHECK(after.at("Gemm") == before.count("Gemm") + 3);
    CHECK(after.at("Shape") < before.at("Shape"));
    CHECK(g.validate().ok());
    CHECK(g.value(g.outputs[0]).name == "output");
  }
}

TEST_CASE("evaluate_node: ONNX semantics through ember's ops") {
  Node gather_node;
  gather_node.op_type = "Gather";
  gather_node.attrs["axis"] = int64_t{1};
  gather_node.outputs = {0};
  const Tensor x = tensor({{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}});
  auto r = evaluate_node(gather_node, {x, tensor({{int64_t{0}, int64_t{-1}}})});
  REQUIRE(r.ok());
  check_equal((*r)[0], tensor({{{1.f, 3.f}}, {{4.f, 6.f}}}));

  Node div_node;
  div_node.op_type = "Div";
  div_node.outputs = {0};
  r = evaluate_node(div_node, {tensor({int64_t{7}, int64_t{-7}}), tensor({int64_t{2}, int64_t{2}})});
  REQUIRE(r.ok());
  check_equal((*r)[0], tensor({int64_t{3}, int64_t{-3}}));  // truncates, as ONNX integer Div

  Node conv_node;
  conv_node.op_type = "Conv";
  r = evaluate_node(conv_node, {x});
  REQUIRE(!r.ok());
  CHECK(r.diag().status == Status::NotSupported);
}

TEST_CASE("unsupported ops are listed all at once, with counts and node names") {
  auto g = import_onnx(kDir + "unsupported_ops.onnx");
  REQUIRE(!g.ok());
  CHECK(g.diag().status == Status::NotSupported);
  CHECK(g.diag().message == "'" + kDir +
                                "unsupported_ops.onnx' uses ops the converter does not support (3 nodes of 2 "
                                "types): Bernoulli x2 (bernoulli_0, bernoulli_1), TfIdfVectorizer x1 (tfidf_0)");
}

TEST_CASE("bad files: opset, missing initializer, missing, empty, truncated, random bytes") {
  auto old = import_onnx(kDir + "opset9.onnx");  // opsets 7 to 28 import (opset_test.cc)
  REQUIRE_MESSAGE(old.ok(), old.diag().message);
  CHECK(old->opset == 9);
  onnx::ModelProto newer;
  REQUIRE(newer.ParseFromString(read_bytes(kDir + "opset9.onnx")));
  newer.mutable_opset_import(0)->set_version(29);
  auto refused = import_onnx_bytes(newer.SerializeAsString(), "opset29.onnx");
  REQUIRE(!refused.ok());
  CHECK(refused.diag().status == Status::NotSupported);
  CHECK(refused.diag().message == "'opset29.onnx' uses ONNX opset 29; supported opsets are 7 to 28");
  CHECK(error_of("missing_initializer") ==
        "Add 'add_0' reads 'bias', which is no initializer (missing initializer), graph input or earlier "
        "node's output");
  auto missing = import_onnx(kDir + "no_such_model.onnx");
  REQUIRE(!missing.ok());
  CHECK(missing.diag().status == Status::IoError);
  CHECK(missing.diag().message == "cannot open '" + kDir + "no_such_model.onnx'");

  auto empty = import_onnx_bytes("", "empty.onnx");
  REQUIRE(!empty.ok());
  CHECK(empty.diag().message == "'empty.onnx' is empty: not an ONNX model");

  const std::string cnn = read_bytes(kDir + "cnn_opset13.onnx");
  REQUIRE(cnn.size() > 1000);
  for (size_t keep : {cnn.size() / 2, cnn.size() - 1, size_t{7}}) {
    CAPTURE(keep);
    auto t = import_onnx_bytes(cnn.substr(0, keep), "cut.onnx");
    REQUIRE(!t.ok());
    CHECK(t.diag().status == Status::InvalidModel);
    CHECK(t.diag().message.rfind("'cut.onnx' is not an ONNX model", 0) == 0);
  }
  std::mt19937 rng(42);
  for (int trial = 0; trial < 20; ++trial) {
    std::string bytes(1 + rng() % 4096, '\0');
    for (char& c : bytes) c = static_cast<char>(rng() & 0xff);
    auto r = import_onnx_bytes(bytes, "random.onnx");
    REQUIRE(!r.ok());
    CHECK(r.diag().status == Status::InvalidModel);
  }
  // Text is not a protobuf either.
  auto text = import_onnx_bytes("this is not a model\n", "notes.txt");
  REQUIRE(!text.ok());
  CHECK(text.diag().message.rfind("'notes.txt' is not an ONNX model", 0) == 0);
}

TEST_CASE("passes on a hand-built graph: identity to a graph output, dead nodes, compact") {
  Graph g;
  Value in;
  in.name = "x";
  in.dtype = DType::Float32;
  in.shape = std::vector<Dim>{Dim::fixed(2)};
  const int x = g.add_value(in);
  g.inputs = {x};
  auto node = [&](const std::string& op, std::vector<int> ins, const std::string& out) {
    return add_node(g, op, std::move(ins), out);
  };
  const int r = node("Relu", {x}, "r");
  node("Exp", {r}, "unused");  // dead
  const int y = node("Identity", {r}, "y");
  g.outputs = {y};
  REQUIRE(g.validate().ok());
  CHECK(remove_identities(g) == 1);
  CHECK(g.value(g.outputs[0]).name == "y");  // Relu now writes "y"
  CHECK(eliminate_dead_nodes(g) == 1);
  CHECK(g.compact() == 2);  // "r" and "unused"
  CHECK(g.op_histogram() == std::map<std::string, int>{{"Relu", 1}});
  CHECK(g.validate().ok());
}

TEST_CASE("remove_identities leaves an Identity without its output or input to the lowering") {
  // Found by tools/fuzz.sh onnx: an Identity with no outputs in a Loop body
  // (subgraph passes run before any arity check) was read past its outputs.
  Graph g;
  Value in;
  in.name = "x";
  in.dtype = DType::Float32;
  const int x = g.add_value(in);
  g.inputs = {x};
  g.outputs = {x};
  Node no_output;
  no_output.op_type = "Identity";
  no_output.name = "i0";
  no_output.inputs = {x};
  g.nodes.push_back(no_output);
  Node omitted_input = no_output;
  omitted_input.name = "i1";
  omitted_input.inputs = {-1};
  Value v;
  v.name = "y";
  omitted_input.outputs = {g.add_value(v)};
  g.nodes.push_back(omitted_input);
  Node no_input = no_output;
  no_input.name = "i2";
  no_input.inputs.clear();
  g.nodes.push_back(no_input);
  CHECK(remove_identities(g) == 0);
  CHECK(g.nodes.size() == 3);
}

}  // namespace ember::converter

namespace ember::converter {
namespace {

const std::string kZoo = "tests/golden/model_zoo/";

// The distinct .onnx files of the conformance manifest (tests/golden/model_zoo.py).
std::vector<std::string> zoo_models() {
  std::istringstream manifest(read_bytes(kZoo + "manifest.txt"));
  std::vector<std::string> files;
  std::string line;
  while (std::getline(manifest, line)) {
    const size_t at = line.find(" file=");
    REQUIRE(at != std::string::npos);
    const std::string file = line.substr(at + 6, line.find(' ', at + 6) - at - 6);
    if (std::find(files.begin(), files.end(), file) == files.end()) files.push_back(file);
  }
  return files;
}

onnx::ModelProto parse(const std::string& path) {
  onnx::ModelProto m;
  REQUIRE(m.ParseFromString(read_bytes(path)));
  return m;
}

std::string serialize(const onnx::ModelProto& m) {
  std::string bytes;
  REQUIRE(m.SerializeToString(&bytes));
  return bytes;
}

}  // namespace

TEST_CASE("model zoo: every model imports, every value has a dtype and a rank, passes run") {
  const std::vector<std::string> files = zoo_models();
  REQUIRE(files.size() > 80);
  std::set<std::string> ops_seen;
  for (const std::string& file : files) {
    CAPTURE(file);
    auto g = import_onnx(kZoo + file);
    REQUIRE_MESSAGE(g.ok(), g.diag().message);
    for (const auto& [op, n] : g->op_histogram()) ops_seen.insert(op);
    for (const Node& n : g->nodes) {
      if (n.op_type == "Gelu") continue;  // newer than libonnx's schemas: ONNX cannot tell
      for (int o : n.outputs) {
        if (o < 0) continue;
        CAPTURE(g->value(o).name);
        CHECK(g->value(o).dtype.has_value());
        CHECK(g->value(o).shape.has_value());
      }
    }
    auto report = run_passes(*g);
    REQUIRE_MESSAGE(report.ok(), report.diag().message);
    CHECK(g->validate().ok());
    for (const auto& [op, n] : g->op_histogram()) ops_seen.insert(op);  // what the passes make (fuse_attention's)
  }
  // Every op the importer supports appears in some model (Constant is folded on
  // import), except the detection and signal ops of opsets 10-20 that torch
  // 1.13 cannot export: tests/converter/lower_detect_test.cc builds their ONNX
  // models itself and checks them against torchvision and onnx.reference
  // (AffineGrid: only ONNX's conformance cases, which CI's conformance check runs;
  // If, Loop, Scan: tests/converter/control_flow_test.cc; DeformConv, opset 19:
  // lower_detect_test.cc against onnx.reference).
  const std::set<std::string> kTestedElsewhere = {"NonMaxSuppression", "RoiAlign", "DFT",  "STFT", "AffineGrid",
                                                  "Col2Im", "MaxUnpool", "If", "Loop", "Scan", "DeformConv"};
  for (const std::string& op : supported_onnx_ops()) {
    CAPTURE(op);
    CHECK((ops_seen.count(op) == 1 || op == "Constant" || kTestedElsewhere.count(op) == 1));
  }
}

TEST_CASE("shape inference: a model without value_info gets every intermediate dtype and shape") {
  onnx::ModelProto m = parse(kZoo + "bert_opset14.onnx");
  REQUIRE(m.graph().value_info_size() > 0);
  m.mutable_graph()->clear_value_info();
  auto g = import_onnx_bytes(serialize(m), "bert_no_value_info.onnx");
  REQUIRE_MESSAGE(g.ok(), g.diag().message);
  int checked = 0;
  for (const Node& n : g->nodes) {
    for (int o : n.outputs) {
      if (o < 0) continue;
      CAPTURE(g->value(o).name);
      REQUIRE(g->value(o).dtype.has_value());
      REQUIRE(g->value(o).shape.has_value());
      ++checked;
    }
  }
  CHECK(checked > 100);
  // The additive mask: Cast of the int64 mask to float, [batch, 1, 1, seq].
  const Node* cast = nullptr;
  for (const Node& n : g->nodes) {
    if (n.op_type == "Cast") cast = &n;
  }
  REQUIRE(cast != nullptr);
  const Value& mask = g->value(cast->outputs[0]);
  CHECK(mask.dtype == DType::Float32);
  CHECK(*mask.shape == std::vector<Dim>{Dim::named("batch"), Dim::fixed(1), Dim::fixed(1), Dim::named("seq")});
  // The graph output keeps the dims the file declares.
  CHECK(*g->value(g->outputs[0]).shape ==
        std::vector<Dim>{Dim::named("batch"), Dim::named("seq"), Dim::fixed(128)});
}

TEST_CASE("shape inference: value_info in the file is kept; a contradicting one leaves the model as written") {
  onnx::ModelProto m = parse(kZoo + "op_relu.onnx");
  // op_relu: input [2, 5] -> Relu -> output. Declare the output [2, 7]: ONNX cannot merge that.
  auto* dim = m.mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(1);
  REQUIRE(dim->dim_value() == 5);
  dim->set_dim_value(7);
  onnx::ModelProto copy = m;
  CHECK(!infer_shapes(copy));
  CHECK(serialize(copy) == serialize(m));  // untouched
  auto g = import_onnx_bytes(serialize(m), "bad_value_info.onnx");
  REQUIRE_MESSAGE(g.ok(), g.diag().message);
  CHECK(*g->value(g->outputs[0]).shape == std::vector<Dim>{Dim::fixed(2), Dim::fixed(7)});

  // Inference carries the symbolic batch to the intermediate values.
  onnx::ModelProto mlp = parse(kDir + "mlp_opset13.onnx");
  mlp.mutable_graph()->clear_value_info();
  REQUIRE(infer_shapes(mlp));
  REQUIRE(mlp.graph().value_info_size() == 2);  // the first Gemm's output and the Relu's
  for (const auto& vi : mlp.graph().value_info()) {
    CAPTURE(vi.name());
    CHECK(vi.type().tensor_type().shape().dim(0).dim_param() == "batch");
  }
}

}  // namespace ember::converter

namespace ember::converter {

TEST_CASE("infer_missing_shapes: ranks after a Slice whose bounds come from a Shape sub-graph") {
  // torch's MultiheadAttention splits the packed in-projection with Slices whose
  // bounds are computed from Shape: ONNX's inference stops there.
  onnx::ModelProto m = parse(kZoo + "transformer.onnx");
  m.mutable_graph()->clear_value_info();
  REQUIRE(infer_shapes(m));
  std::set<std::string> typed;
  for (const auto& vi : m.graph().value_info()) {
    if (vi.type().tensor_type().has_shape()) typed.insert(vi.name());
  }
  auto g = import_onnx_bytes(serialize(m), "transformer.onnx");
  REQUIRE_MESSAGE(g.ok(), g.diag().message);
  int completed = 0;
  const Node* softmax = nullptr;
  for (const Node& n : g->nodes) {
    if (n.op_type == "Softmax" && softmax == nullptr) softmax = &n;
    for (int o : n.outputs) {
      if (o < 0 || typed.count(g->value(o).name) || g->is_graph_output(o)) continue;
      CAPTURE(g->value(o).name);
      CHECK(g->value(o).dtype.has_value());
      CHECK(g->value(o).shape.has_value());
      ++completed;
    }
  }
  CHECK(completed > 50);  // ONNX left these out; the importer completed them
  REQUIRE(softmax != nullptr);
  // Attention weights [batch * heads, seq, seq]: rank 3, the head split not yet known.
  REQUIRE(g->value(softmax->outputs[0]).shape.has_value());
  CHECK(g->value(softmax->outputs[0]).shape->size() == 3);
  const std::string softmax_out = g->value(softmax->outputs[0]).name;

  // After folding, the Slice bounds are constants and the dims follow: the
  // attention the Softmax became part of (fuse_attention) reads [batch * heads,
  // 128, 128] scores' operands, q [batch * heads, 128, 64] and k likewise.
  auto report = run_passes(*g);
  REQUIRE_MESSAGE(report.ok(), report.diag().message);
  CHECK(g->find_value(softmax_out) < 0);
  const Node* attention = nullptr;
  for (const Node& n : g->nodes) {
    if (n.op_type == "ember::ScaledDotProductAttention") attention = &n;
  }
  REQUIRE(attention != nullptr);
  for (int i : {0, 1}) {
    const auto& dims = *g->value(attention->inputs[static_cast<size_t>(i)]).shape;
    REQUIRE(dims.size() == 3);
    CHECK(dims[1] == Dim::fixed(128));
    CHECK(dims[2] == Dim::fixed(64));
  }
}

TEST_CASE("infer_missing_shapes: fills unknown dims and never changes a known one") {
  Graph g;
  Value a;
  a.name = "a";
  a.dtype = DType::Float32;
  a.shape = std::vector<Dim>{Dim::named("batch"), Dim::fixed(1), Dim::fixed(4)};
  const int ia = g.add_value(a);
  Value b = a;
  b.name = "b";
  b.shape = std::vector<Dim>{Dim::fixed(3), Dim::fixed(1)};
  const int ib = g.add_value(b);
  g.inputs = {ia, ib};
  Value sum;
  sum.name = "sum";
  sum.shape = std::vector<Dim>{Dim{}, Dim{}, Dim::fixed(9)};  // a (wrong) dim from the file stays
  const int is = g.add_value(sum);
  Value cmp;
  cmp.name = "cmp";
  const int ic = g.add_value(cmp);
  Node add;
  add.op_type = "Add";
  add.inputs = {ia, ib};
  add.outputs = {is};
  Node less;
  less.op_type = "Less";
  less.inputs = {is, ib};
  less.outputs = {ic};
  g.nodes = {add, less};
  g.outputs = {ic};
  CHECK(infer_missing_shapes(g) == 2);
  CHECK(g.value(is).dtype == DType::Float32);
  CHECK(*g.value(is).shape == std::vector<Dim>{Dim::named("batch"), Dim::fixed(3), Dim::fixed(9)});
  CHECK(g.value(ic).dtype == DType::Bool);
  CHECK(*g.value(ic).shape == std::vector<Dim>{Dim::named("batch"), Dim::fixed(3), Dim::fixed(9)});
  CHECK(infer_missing_shapes(g) == 0);  // nothing left to fill
}

}  // namespace ember::converter

namespace ember::converter {

TEST_CASE("evaluate_node: Slice with negative steps (ONNX clamping), a zero step is an error") {
  Node slice;
  slice.op_type = "Slice";
  slice.name = "rev";
  slice.outputs = {0};
  const Tensor x = tensor({0.f, 1.f, 2.f, 3.f, 4.f, 5.f});
  auto run = [&](int64_t start, int64_t end, int64_t step) {
    auto r = evaluate_node(slice, {x, tensor({start}), tensor({end}), tensor({int64_t{0}}), tensor({step})});
    REQUIRE_MESSAGE(r.ok(), r.diag().message);
    return (*r)[0];
  };
  const int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  check_equal(run(-1, lo, -1), tensor({5.f, 4.f, 3.f, 2.f, 1.f, 0.f}));  // x[::-1], as torch exports flip
  check_equal(run(4, 0, -2), tensor({4.f, 2.f}));
  check_equal(run(hi, -5, -2), tensor({5.f, 3.f}));  // start clamped to 5, end -5 -> 1
  check_equal(run(-100, lo, -1), tensor({0.f}));     // start clamped to 0
  CHECK(run(1, 3, -1).numel() == 0);
  auto zero = evaluate_node(slice, {x, tensor({int64_t{0}}), tensor({int64_t{3}}), tensor({int64_t{0}}),
                                    tensor({int64_t{0}})});
  REQUIRE(!zero.ok());
  CHECK(zero.diag().status == Status::InvalidArgument);
  CHECK(zero.diag().message == "Slice 'rev': Slice with a step of 0");
}

TEST_CASE("passes: torch's F.pad pads sub-graph (reversing Slice) folds to ONNX pads") {
  // F.pad(x, (2, 1, 1, 2)) on [N, C, H, W]: W gets (2, 1), H (1, 2).
  for (const char* model : {"op_pad_reflect", "op_pad_constant", "op_pad_edge"}) {
    CAPTURE(model);
    auto g = import_onnx(kZoo + std::string(model) + ".onnx");
    REQUIRE_MESSAGE(g.ok(), g.diag().message);
    auto report = run_passes(*g);
    REQUIRE_MESSAGE(report.ok(), report.diag().message);
    CHECK(g->op_histogram() == std::map<std::string, int>{{"Pad", 1}});
    const Node& pad = only_node(*g, "Pad");
    REQUIRE(g->is_constant(pad.inputs[1]));
    const Tensor pads = g->value(pad.inputs[1]).constant;
    if (std::string(model) == "op_pad_reflect") {
      check_equal(pads, tensor({int64_t{0}, int64_t{0}, int64_t{1}, int64_t{2}, int64_t{0}, int64_t{0}, int64_t{2},
                                int64_t{1}}));
      CHECK(pad.get_string("mode", "") == "reflect");
    } else if (std::string(model) == "op_pad_edge") {
      // F.pad(x, (1, 2, 2, 0), mode="replicate")
      check_equal(pads, tensor({int64_t{0}, int64_t{0}, int64_t{2}, int64_t{1}, int64_t{0}, int64_t{0}, int64_t{0},
                                int64_t{2}}));
      CHECK(pad.get_string("mode", "") == "edge");
    }
  }
}

TEST_CASE("passes: a 1-D Conv becomes Unsqueeze, 2-D Conv, Squeeze") {
  auto g = import_onnx(kZoo + "op_conv1d.onnx");  // nn.Conv1d(3, 5, 3, padding=1) on [2, 3, 12]
  REQUIRE_MESSAGE(g.ok(), g.diag().message);
  auto report = run_passes(*g);
  REQUIRE_MESSAGE(report.ok(), report.diag().message);
  CHECK(report->convs_made_2d == 1);
  CHECK(report->summary().find("made 1 1-D convolutions 2-D") != std::string::npos);
  REQUIRE(g->nodes.size() == 3);
  CHECK(g->nodes[0].op_type == "Unsqueeze");
  CHECK(g->nodes[1].op_type == "Conv");
  CHECK(g->nodes[2].op_type == "Squeeze");
  const Node& conv = g->nodes[1];
  CHECK(g->value(conv.inputs[1]).constant.sizes() == Shape{5, 3, 1, 3});
  CHECK(conv.get_ints("kernel_shape") == std::vector<int64_t>{1, 3});
  CHECK(conv.get_ints("pads") == std::vector<int64_t>{0, 1, 0, 1});
  CHECK(conv.get_ints("strides") == std::vector<int64_t>{1, 1});
  CHECK(*g->value(conv.inputs[0]).shape == std::vector<Dim>{Dim::fixed(2), Dim::fixed(3), Dim::fixed(1), Dim::fixed(12)});
  CHECK(*g->value(conv.outputs[0]).shape == std::vector<Dim>{Dim::fixed(2), Dim::fixed(5), Dim::fixed(1), Dim::fixed(12)});
  CHECK(g->nodes[2].outputs[0] == g->outputs[0]);  // the graph output keeps its name
  CHECK(g->value(g->outputs[0]).name == "output");
  CHECK(g->validate().ok());
}

}  // namespace ember::converter

namespace ember::converter {

TEST_CASE("dim_param '?' is an anonymous dim, not one symbol shared by every '?' (PaddlePaddle's exports)") {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  onnx::GraphProto* g = m.mutable_graph();
  onnx::NodeProto* n = g->add_node();
  n->set_op_type("Relu");
  n->add_input("x");
  n->add_output("y");
  for (const char* name : {"x", "y"}) {
    onnx::ValueInfoProto* v = name[0] == 'x' ? g->add_input() : g->add_output();
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    tt->mutable_shape()->add_dim()->set_dim_param("batch");
    tt->mutable_shape()->add_dim()->set_dim_param("?");
    tt->mutable_shape()->add_dim()->set_dim_value(48);
    tt->mutable_shape()->add_dim()->set_dim_param("?");
  }
  auto r = import_onnx_bytes(m.SerializeAsString(), "paddle.onnx");
  REQUIRE_MESSAGE(r.ok(), r.diag().message);
  const Value& x = r->value(r->find_value("x"));
  REQUIRE(x.shape.has_value());
  CHECK(*x.shape == std::vector<Dim>{Dim::named("batch"), Dim{}, Dim::fixed(48), Dim{}});
}

TEST_CASE("infer_missing_shapes: GatherElements has its indices' shape; fold_shapes: Size of a static shape") {
  Graph g;
  Value x;
  x.name = "x";
  x.dtype = DType::Float32;
  x.shape = std::vector<Dim>{Dim::fixed(3), Dim::fixed(5), Dim::fixed(2)};
  const int ix = g.add_value(x);
  Value idx;
  idx.name = "idx";
  idx.dtype = DType::Int64;
  idx.shape = std::vector<Dim>{Dim::named("n"), Dim::fixed(1), Dim::fixed(2)};
  const int ii = g.add_value(idx);
  g.inputs = {ix, ii};
  Value gathered, size;
  gathered.name = "gathered";
  size.name = "size";
  const int ig = g.add_value(gathered), iz = g.add_value(size);
  Node ge;
  ge.op_type = "GatherElements";
  ge.inputs = {ix, ii};
  ge.outputs = {ig};
  ge.attrs["axis"] = int64_t{1};
  Node sz;
  sz.op_type = "Size";
  sz.inputs = {ix};
  sz.outputs = {iz};
  g.nodes = {ge, sz};
  g.outputs = {ig, iz};
  CHECK(infer_missing_shapes(g) >= 1);
  CHECK(g.value(ig).dtype == DType::Float32);
  CHECK(*g.value(ig).shape == std::vector<Dim>{Dim::named("n"), Dim::fixed(1), Dim::fixed(2)});
  CHECK(fold_shapes(g) == 1);  // Size: 3 * 5 * 2
  REQUIRE(g.is_constant(iz));
  CHECK(g.value(iz).constant.to_vector<int64_t>() == std::vector<int64_t>{30});
}

TEST_CASE("fold_shapes: a Reshape to its input's own dims (Gather(Shape(x), i) at position i) gets a 0 there") {
  // x [batch, seq, 384] reshaped to Concat(x.size(0), pieces..., [12, 32]) as
  // torch's x.view(x.size(0), ..., 12, 32) exports it: only pieces that are x's
  // dim at their own position become 0 (copy); any other piece keeps the
  // Shape sub-graph: dim 1 at position 0, the Shape of another value, a
  // rank-0 Gather not unsqueezed, allowzero 1.
  struct Case {
    std::string what;
    int64_t index;     // Gather's index into Shape(x)
    bool other_shape;  // Shape(y) instead of Shape(x)
    bool unsqueeze;
    int64_t allowzero;
    bool folds;
  };
  const Case cases[] = {{"x's dim 0 at position 0", 0, false, true, 0, true},
                        {"negative index -3 (dim 0)", -3, false, true, 0, true},
                        {"dim 1 at position 0", 1, false, true, 0, false},
                        {"Shape of another value", 0, true, true, 0, false},
                        {"a rank-0 piece", 0, false, false, 0, false},
                        {"allowzero 1", 0, false, true, 1, false}};
  for (const Case& c : cases) {
    CAPTURE(c.what);
    Graph g;
    auto input = [&](const std::string& name) {
      Value v;
      v.name = name;
      v.dtype = DType::Float32;
      v.shape = std::vector<Dim>{Dim::named("batch"), Dim::named("seq"), Dim::fixed(384)};
      return g.add_value(v);
    };
    const int x = input("x"), y = input("y");
    g.inputs = {x, y};
    auto node = [&](const std::string& op, std::vector<int> ins, const std::string& out) {
      return add_node(g, op, std::move(ins), out);
    };
    const int shape = node("Shape", {c.other_shape ? y : x}, "shape");
    const int dim = node("Gather", {shape, g.add_constant("i", scalar_tensor(c.index, DType::Int64))}, "dim");
    const int piece = c.unsqueeze ? node("Unsqueeze", {dim, g.add_constant("axes", tensor({int64_t{0}}))}, "piece")
                                  : dim;
    const int rest = g.add_constant("rest", tensor({int64_t{-1}, int64_t{12}, int64_t{32}}));
    const int target = node("Concat", {piece, rest}, "target");
    g.nodes.back().attrs["axis"] = int64_t{0};
    const int out = node("Reshape", {x, target}, "out");
    g.nodes.back().attrs["allowzero"] = c.allowzero;
    g.outputs = {out};
    REQUIRE(g.validate().ok());
    CHECK(fold_shapes(g) == (c.folds ? 1 : 0));
    const Node& reshape = only_node(g, "Reshape");
    CHECK(g.is_constant(reshape.inputs[1]) == c.folds);
    if (!c.folds) continue;
    CHECK(g.value(reshape.inputs[1]).constant.to_vector<int64_t>() == std::vector<int64_t>{0, -1, 12, 32});
    CHECK(eliminate_dead_nodes(g) == 4);  // Shape, Gather, Unsqueeze, Concat
    CHECK(g.op_histogram() == std::map<std::string, int>{{"Reshape", 1}});
  }
  // Malformed graphs reach the passes before the lowering checks arity: a
  // Shape without its input, an Unsqueeze without any, and a Reshape whose
  // data input is absent are left alone (no read past a node's inputs).
  for (int broken = 0; broken < 3; ++broken) {
    CAPTURE(broken);
    Graph g;
    Value in;
    in.name = "x";
    in.dtype = DType::Float32;
    in.shape = std::vector<Dim>{Dim::named("batch"), Dim::fixed(384)};
    const int x = g.add_value(in);
    g.inputs = {x};
    const int shape = add_node(g, "Shape", broken == 0 ? std::vector<int>{} : std::vector<int>{x}, "shape");
    const int dim = add_node(g, "Gather", {shape, g.add_constant("i", scalar_tensor(int64_t{0}, DType::Int64))}, "dim");
    const int piece = add_node(g, "Unsqueeze",
                               broken == 1 ? std::vector<int>{} : std::vector<int>{dim, g.add_constant("axes", tensor({int64_t{0}}))},
                               "piece");
    const int target = add_node(g, "Concat", {piece, g.add_constant("rest", tensor({int64_t{-1}}))}, "target");
    g.nodes.back().attrs["axis"] = int64_t{0};
    g.outputs = {add_node(g, "Reshape", {broken == 2 ? -1 : x, target}, "out")};
    CHECK(fold_shapes(g) == 0);
  }
}

}  // namespace ember::converter
