// ONNX opsets 7 to 28: the old attribute forms and the newer inputs and
// attributes of the ops the converter lowers, on one- and two-node models
// built here, converted with convert_file and run by the executor.
#include <cmath>
#include <fstream>
#include <memory>

#include <onnx/onnx_pb.h>

#include "converter/convert.h"
#include "converter/onnx_import.h"
#include "runtime/model/executor.h"
#include "runtime/model/loader.h"
#include "runtime/ops/ops.h"
#include "tests/harness/testing.h"

namespace ember::converter {

using ember::testing::check_close;
using ember::testing::check_equal;
using ember::testing::tmp_path;

namespace {

// A model of one graph at `opset`, built node by node.
struct OnnxModel {
  onnx::ModelProto m;
  onnx::GraphProto* g;

  explicit OnnxModel(int64_t opset) : g(m.mutable_graph()) {
    m.set_ir_version(opset > 17 ? 9 : 7);
    m.add_opset_import()->set_version(opset);
    g->set_name("opset_test");
  }
  static void typed(onnx::ValueInfoProto* v, const std::string& name, int elem, const std::vector<int64_t>& dims) {
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem);
    for (int64_t d : dims) {  // -1: the symbolic dim "batch"
      auto* dim = tt->mutable_shape()->add_dim();
      if (d < 0) dim->set_dim_param("batch");
      else dim->set_dim_value(d);
    }
  }
  void input(const std::string& name, const std::vector<int64_t>& dims, int elem = onnx::TensorProto::FLOAT) {
    typed(g->add_input(), name, elem, dims);
  }
  void output(const std::string& name, const std::vector<int64_t>& dims, int elem = onnx::TensorProto::FLOAT) {
    typed(g->add_output(), name, elem, dims);
  }
  void ints(const std::string& name, const std::vector<int64_t>& v) {
    onnx::TensorProto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(v.size()));
    for (int64_t x : v) t->add_int64_data(x);
  }
  void boolean(const std::string& name, bool v) {
    onnx::TensorProto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::BOOL);
    t->add_int32_data(v ? 1 : 0);
  }
  onnx::NodeProto* node(const std::string& op, const std::vector<std::string>& ins,
                        const std::vector<std::string>& outs) {
    onnx::NodeProto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(op + "_" + std::to_string(g->node_size()));
    for (const auto& i : ins) n->add_input(i);
    for (const auto& o : outs) n->add_output(o);
    return n;
  }
  static void attr(onnx::NodeProto* n, const std::string& name, int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void attr(onnx::NodeProto* n, const std::string& name, float v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(v);
  }
  static void attr(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }

  std::string write(const std::string& file) const {
    const std::string path = tmp_path(file + ".onnx");
    std::ofstream f(path, std::ios::binary);
    REQUIRE(m.SerializeToOstream(&f));
    return path;
  }

  // Converted with the default options and run on `inputs`.
  std::vector<Tensor> run(const std::string& file, const std::vector<Tensor>& inputs) const {
    const std::string onnx = write(file), out = tmp_path(file + ".ember");
    const Diag d = convert_file(onnx, out, {});
    REQUIRE_MESSAGE(d.ok(), d.message);
    std::string error;
    Result<Model> model = Model::load(out, Verification::Full, &error);
    REQUIRE_MESSAGE(model.ok(), error);
    auto ex = Executor::create(std::make_shared<const Model>(std::move(model.get())), &error);
    REQUIRE_MESSAGE(ex.ok(), error);
    ExecutionContext ctx(ex.get());
    Result<std::vector<Tensor>> r = ctx.run(inputs, {}, &error);
    REQUIRE_MESSAGE(r.ok(), error);
    std::vector<Tensor> kept;
    for (const Tensor& t : r.get()) kept.push_back(t.clone());
    return kept;
  }

  // The conversion's error message.
  std::string error(const std::string& file) const {
    const Diag d = convert_file(write(file), tmp_path(file + ".ember"), {});
    REQUIRE(!d.ok());
    return d.message;
  }
};

Tensor iota(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) * 0.25f - 1.0f;
  return tensor(v, shape);
}

}  // namespace

TEST_CASE("opsets 7 and 28 are accepted; 6 and 29 are refused, naming the range") {
  for (int64_t opset : {7, 17, 18, 28}) {
    OnnxModel m(opset);
    m.input("x", {2, 3});
    m.output("y", {2, 3});
    m.node("Relu", {"x"}, {"y"});
    const Tensor x = iota({2, 3});
    check_equal(m.run("relu_" + std::to_string(opset), {x})[0], relu(x));
  }
  for (int64_t opset : {6, 29}) {
    OnnxModel m(opset);
    m.input("x", {2, 3});
    m.output("y", {2, 3});
    m.node("Relu", {"x"}, {"y"});
    const std::string file = "relu_" + std::to_string(opset);
    CHECK(m.error(file) == "'" + tmp_path(file + ".onnx") + "' uses ONNX opset " + std::to_string(opset) +
                               "; supported opsets are 7 to 28");
  }
}

TEST_CASE("Softmax and LogSoftmax below opset 13: flatten to 2-D at axis (default 1), then back") {
  const Tensor x = iota({2, 3, 4});
  for (int64_t opset : {7, 11, 12}) {
    for (const std::string op : {"Softmax", "LogSoftmax"}) {
      OnnxModel m(opset);
      m.input("x", {2, 3, 4});
      m.output("y", {2, 3, 4});
      m.node(op, {"x"}, {"y"});  // default axis 1: over the last 12 values of each row
      const Tensor flat = x.reshape({2, 12});
      const Tensor want = (op == "Softmax" ? softmax(flat, -1) : log_softmax(flat, -1)).reshape({2, 3, 4});
      check_close(m.run(op + "_axis1_" + std::to_string(opset), {x})[0], want);
    }
  }
  OnnxModel m(11);  // axis 0: over every value
  m.input("x", {2, 3, 4});
  m.output("y", {2, 3, 4});
  OnnxModel::attr(m.node("Softmax", {"x"}, {"y"}), "axis", int64_t{0});
  check_close(m.run("softmax_axis0_11", {x})[0], softmax(x.reshape({1, 24}), -1).reshape({2, 3, 4}));
  OnnxModel dyn(12);  // a symbolic batch: the shape to restore is the input's, at run time
  dyn.input("x", {-1, 3, 4});
  dyn.output("y", {-1, 3, 4});
  dyn.node("LogSoftmax", {"x"}, {"y"});
  check_close(dyn.run("logsoftmax_batch_12", {x})[0], log_softmax(x.reshape({2, 12}), -1).reshape({2, 3, 4}));
  OnnxModel m13(13);  // opset 13: one axis
  m13.input("x", {2, 3, 4});
  m13.output("y", {2, 3, 4});
  OnnxModel::attr(m13.node("Softmax", {"x"}, {"y"}), "axis", int64_t{1});
  check_close(m13.run("softmax_axis1_13", {x})[0], softmax(x, 1));
}

TEST_CASE("Split: the split attribute (< 13), num_outputs (18) with ONNX's smaller last chunk") {
  const Tensor x = tensor(std::vector<float>{0, 1, 2, 3, 4, 5, 6}, {7});
  OnnxModel m(18);
  m.input("x", {7});
  for (const char* y : {"a", "b", "c"}) m.output(y, {std::string(y) == "c" ? 1 : 3});
  OnnxModel::attr(m.node("Split", {"x"}, {"a", "b", "c"}), "num_outputs", int64_t{3});
  const auto r = m.run("split_num_outputs", {x});
  check_equal(r[0], tensor(std::vector<float>{0, 1, 2}, {3}));
  check_equal(r[1], tensor(std::vector<float>{3, 4, 5}, {3}));
  check_equal(r[2], tensor(std::vector<float>{6}, {1}));
  OnnxModel old(7);
  old.input("x", {7});
  old.output("a", {5});
  old.output("b", {2});
  OnnxModel::attr(old.node("Split", {"x"}, {"a", "b"}), "split", std::vector<int64_t>{5, 2});
  const auto r7 = old.run("split_attr_7", {x});
  check_equal(r7[0], tensor(std::vector<float>{0, 1, 2, 3, 4}, {5}));
  check_equal(r7[1], tensor(std::vector<float>{5, 6}, {2}));
  OnnxModel bad(18);
  bad.input("x", {7});
  bad.output("a", {7});
  OnnxModel::attr(bad.node("Split", {"x"}, {"a"}), "num_outputs", int64_t{2});
  CHECK(bad.error("split_bad") == "the graph cannot be lowered to ember ops (1 problem): Split 'Split_1': "
                                  "num_outputs = 2 but the node has 1 outputs");
}

TEST_CASE("Shape with start and end (15), also past libonnx's opset 17") {
  for (int64_t opset : {15, 21}) {
    OnnxModel m(opset);
    m.input("x", {2, 3, 4, 5});
    m.output("y", {2}, onnx::TensorProto::INT64);
    auto* n = m.node("Shape", {"x"}, {"y"});
    OnnxModel::attr(n, "start", int64_t{1});
    OnnxModel::attr(n, "end", int64_t{-1});
    check_equal(m.run("shape_start_end_" + std::to_string(opset), {iota({2, 3, 4, 5})})[0],
                tensor(std::vector<int64_t>{3, 4}, {2}));
  }
}

TEST_CASE("Pad: pads and value attributes (< 11), the axes input (18)") {
  const Tensor x = tensor(std::vector<float>{1, 2, 3, 4}, {2, 2});
  OnnxModel m(10);
  m.input("x", {2, 2});
  m.output("y", {2, 5});
  auto* n = m.node("Pad", {"x"}, {"y"});
  OnnxModel::attr(n, "pads", std::vector<int64_t>{0, 1, 0, 2});
  OnnxModel::attr(n, "value", 9.0f);
  check_equal(m.run("pad_attrs_10", {x})[0], tensor(std::vector<float>{9, 1, 2, 9, 9, 9, 3, 4, 9, 9}, {2, 5}));
  OnnxModel a(18);
  a.input("x", {2, 2});
  a.output("y", {3, 2});
  a.ints("pads", {1, 0});
  a.ints("axes", {-2});
  a.node("Pad", {"x", "pads", "", "axes"}, {"y"});
  check_equal(a.run("pad_axes_18", {x})[0], tensor(std::vector<float>{0, 0, 1, 2, 3, 4}, {3, 2}));
}

TEST_CASE("Clip min/max attributes (< 11); Slice attributes (< 10)") {
  const Tensor x = tensor(std::vector<float>{-3, -1, 0, 2, 5, 7}, {2, 3});
  OnnxModel c(7);
  c.input("x", {2, 3});
  c.output("y", {2, 3});
  auto* n = c.node("Clip", {"x"}, {"y"});
  OnnxModel::attr(n, "min", -1.5f);
  OnnxModel::attr(n, "max", 4.0f);
  check_equal(c.run("clip_attrs_7", {x})[0], tensor(std::vector<float>{-1.5, -1, 0, 2, 4, 4}, {2, 3}));
  OnnxModel s(9);
  s.input("x", {2, 3});
  s.output("y", {2, 2});
  auto* sn = s.node("Slice", {"x"}, {"y"});
  OnnxModel::attr(sn, "starts", std::vector<int64_t>{1});
  OnnxModel::attr(sn, "ends", std::vector<int64_t>{100});
  OnnxModel::attr(sn, "axes", std::vector<int64_t>{1});
  check_equal(s.run("slice_attrs_9", {x})[0], tensor(std::vector<float>{-1, 0, 5, 7}, {2, 2}));
}

TEST_CASE("Reduce axes: an attribute (ReduceSum < 13, ReduceMean < 18), an input after; inferred past 17") {
  const Tensor x = iota({2, 3});
  OnnxModel s(11);
  s.input("x", {2, 3});
  s.output("y", {2, 1});
  OnnxModel::attr(s.node("ReduceSum", {"x"}, {"y"}), "axes", std::vector<int64_t>{1});
  check_close(s.run("reducesum_attr_11", {x})[0], sum(x, {1}, true));
  // Opset 18: a ReduceMean with an axes input libonnx (opset 17) cannot infer;
  // the converter's own inference gives the Relu after it its shape.
  OnnxModel m(18);
  m.input("x", {2, 3});
  m.output("z", {3});
  m.ints("axes", {0});
  auto* n = m.node("ReduceMean", {"x", "axes"}, {"y"});
  OnnxModel::attr(n, "keepdims", int64_t{0});
  m.node("Relu", {"y"}, {"z"});
  check_close(m.run("reducemean_input_18", {x})[0], relu(mean(x, {0}, false)));
}

TEST_CASE("refused forms name the node and the attribute") {
  OnnxModel bn(7);
  bn.input("x", {1, 2, 2});
  bn.output("y", {1, 2, 2});
  for (const char* p : {"scale", "bias", "mean", "var"}) bn.ints(p, {1, 1});
  OnnxModel::attr(bn.node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"y"}), "spatial",
                  int64_t{0});
  CHECK(bn.error("bn_spatial0") ==
        "BatchNormalization 'BatchNormalization_1': attribute 'spatial' = 0 (per-element statistics, opset < 9) "
        "is not supported");
  OnnxModel d(13);
  d.input("x", {2});
  d.output("y", {2});
  d.boolean("train", true);
  d.node("Dropout", {"x", "", "train"}, {"y"});
  CHECK(d.error("dropout_training") == "Dropout 'Dropout_1': input 'training_mode' 'train' is not a constant false "
                                       "(training-mode dropout is not supported)");
  OnnxModel c(19);
  c.input("x", {2});
  c.output("y", {2}, 27);  // FLOAT6E2M3 (float8, float4, int4... are supported)
  OnnxModel::attr(c.node("Cast", {"x"}, {"y"}), "to", int64_t{27});
  CHECK(c.error("cast_float6") == "graph output 'y': unsupported dtype FLOAT6E2M3");
}

TEST_CASE("AveragePool 19's dilations (lower_pool.cc: a depthwise Conv2d of weights 1/4)") {
  OnnxModel p(19);
  p.input("x", {1, 1, 5, 5});
  p.output("y", {1, 1, 3, 3});
  auto* n = p.node("AveragePool", {"x"}, {"y"});
  OnnxModel::attr(n, "kernel_shape", std::vector<int64_t>{2, 2});
  OnnxModel::attr(n, "dilations", std::vector<int64_t>{2, 2});
  // x = 0..24: each window holds a, a + 2, a + 10, a + 12 (a = 5 i + j), its mean a + 6.
  const Tensor x = arange(25.0, TensorOptions(DType::Float32)).reshape({1, 1, 5, 5});
  check_close(p.run("avgpool_dilations", {x})[0],
              tensor(std::vector<float>{6, 7, 8, 11, 12, 13, 16, 17, 18}, {1, 1, 3, 3}));
}

TEST_CASE("Clip without bounds (11+): the identity") {
  const Tensor x = tensor(std::vector<float>{-3, -1, 0, 2}, {4});
  OnnxModel c(13);
  c.input("x", {4});
  c.output("y", {4});
  c.node("Clip", {"x"}, {"y"});
  check_equal(c.run("clip_no_bounds_13", {x})[0], x);
}

TEST_CASE("Dropout below 12 (ratio attribute) and at 13 with training_mode false: the identity") {
  const Tensor x = iota({2, 3});
  OnnxModel d7(7);
  d7.input("x", {2, 3});
  d7.output("y", {2, 3});
  d7.node("Relu", {"x"}, {"r"});
  OnnxModel::attr(d7.node("Dropout", {"r"}, {"y"}), "ratio", 0.5f);
  check_equal(d7.run("dropout_7", {x})[0], relu(x));
  OnnxModel d13(13);
  d13.input("x", {2, 3});
  d13.output("y", {2, 3});
  d13.boolean("train", false);
  d13.node("Relu", {"x"}, {"r"});
  d13.node("Dropout", {"r", "", "train"}, {"y"});
  check_equal(d13.run("dropout_13", {x})[0], relu(x));
}

}  // namespace ember::converter

namespace ember::converter {

TEST_CASE("libonnx inference past opset 17: as opset 17 where every node infers the same, else not at all") {
  OnnxModel relu(21);  // unchanged after 17: inferred, the opset kept
  relu.input("x", {2, 3});
  relu.output("z", {2, 3});
  relu.node("Relu", {"x"}, {"y"});
  relu.node("Relu", {"y"}, {"z"});
  onnx::ModelProto m = relu.m;
  CHECK(infer_shapes(m));
  CHECK(m.opset_import(0).version() == 21);
  REQUIRE(m.graph().value_info_size() == 1);
  CHECK(m.graph().value_info(0).type().tensor_type().shape().dim(1).dim_value() == 3);
  OnnxModel reduce(18);  // ReduceMean 18 takes axes as an input: libonnx's 13 would reduce every axis
  reduce.input("x", {2, 3});
  reduce.output("z", {3});
  reduce.ints("axes", {0});
  OnnxModel::attr(reduce.node("ReduceMean", {"x", "axes"}, {"y"}), "keepdims", int64_t{0});
  reduce.node("Relu", {"y"}, {"z"});
  m = reduce.m;
  CHECK(!infer_shapes(m));
  CHECK(m.graph().value_info_size() == 0);
}

TEST_CASE("protobuf fields libonnx 1.12 does not know are skipped") {
  OnnxModel m(25);
  m.input("x", {2});
  m.output("y", {2});
  m.node("Relu", {"x"}, {"y"});
  const std::string bytes = m.m.SerializeAsString() + std::string("\xa0\x06\x01", 3);  // field 100 = 1
  auto g = import_onnx_bytes(bytes, "unknown_field.onnx");
  REQUIRE_MESSAGE(g.ok(), g.diag().message);
  CHECK(g->opset == 25);
}

}  // namespace ember::converter
