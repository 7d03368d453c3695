// Malformed ONNX files give a clear error, never a crash; absurd sizes are
// refused at conversion before anything of that size is allocated (a
// ConstantOfShape, Expand or initializer of 2^40 elements and more). Cases the
// importer's fuzz target (tools/fuzz.sh onnx) found are kept here.
#include <onnx/onnx_pb.h>

#include "converter/convert.h"
#include "converter/onnx_import.h"
#include "converter/passes.h"
#include "runtime/model/writer.h"
#include "tests/converter/one_node.h"
#include "tests/harness/testing.h"

namespace ember::converter {
namespace {

// A model whose graph holds one float32 initializer of shape `dims` with
// `values` values, read by an Identity.
std::string model_with_initializer(const std::vector<int64_t>& dims, int values, bool raw) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  onnx::GraphProto* g = m.mutable_graph();
  onnx::TensorProto* t = g->add_initializer();
  t->set_name("w");
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  if (raw) t->set_raw_data(std::string(static_cast<size_t>(values) * 4, '\0'));
  else for (int i = 0; i < values; ++i) t->add_float_data(1.0f);
  onnx::NodeProto* n = g->add_node();
  n->set_op_type("Identity");
  n->add_input("w");
  n->add_output("y");
  onnx::ValueInfoProto* out = g->add_output();
  out->set_name("y");
  out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  return m.SerializeAsString();
}

TEST_CASE("an initializer whose shape the file holds no data for is refused before allocating") {
  const int64_t big = int64_t{1} << 20;  // [2^20, 2^20]: 2^40 floats, 4 TiB
  auto r = import_onnx_bytes(model_with_initializer({big, big}, 3, false), "big.onnx");
  REQUIRE(!r.ok());
  CHECK(r.diag().status == Status::InvalidModel);
  CHECK(r.diag().message == "initializer 'w': holds 3 values, shape [1048576, 1048576] needs 1099511627776");
  r = import_onnx_bytes(model_with_initializer({big, big}, 2, true), "big.onnx");
  REQUIRE(!r.ok());
  CHECK(r.diag().message ==
        "initializer 'w': raw_data holds 8 bytes, shape [1048576, 1048576] of float32 needs 4398046511104");
  r = import_onnx_bytes(model_with_initializer({big, big, 2}, 0, true), "big.onnx");
  REQUIRE(!r.ok());
  CHECK(r.diag().message == "initializer 'w': element count overflows");
}

// ConstantOfShape (or Expand) of constant shape `dims` feeding the output.
std::string model_with_constant_of_shape(const std::vector<int64_t>& dims, bool expand) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  onnx::GraphProto* g = m.mutable_graph();
  onnx::TensorProto* t = g->add_initializer();
  t->set_name("shape");
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_dims(static_cast<int64_t>(dims.size()));
  for (int64_t d : dims) t->add_int64_data(d);
  if (expand) {
    onnx::TensorProto* one = g->add_initializer();
    one->set_name("one");
    one->set_data_type(onnx::TensorProto::FLOAT);
    one->add_dims(1);
    one->add_float_data(1.0f);
  }
  onnx::NodeProto* n = g->add_node();
  n->set_op_type(expand ? "Expand" : "ConstantOfShape");
  n->set_name("big");
  if (expand) n->add_input("one");
  n->add_input("shape");
  n->add_output("y");
  onnx::ValueInfoProto* out = g->add_output();
  out->set_name("y");
  out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  return m.SerializeAsString();
}

TEST_CASE("a ConstantOfShape or Expand of 2^32 to 2^62 elements is not folded: it stays a node") {
  const int64_t b31 = int64_t{1} << 31, b16 = int64_t{1} << 16;
  for (bool expand : {false, true}) {
    for (const std::vector<int64_t>& dims : {std::vector<int64_t>{b31, b31}, std::vector<int64_t>{b16, b16}}) {
      CAPTURE(expand);
      CAPTURE(dims[0]);
      auto g = import_onnx_bytes(model_with_constant_of_shape(dims, expand), "big.onnx");
      REQUIRE(g.ok());
      auto passes = run_passes(*g);
      REQUIRE(passes.ok());
      REQUIRE(g->nodes.size() == 1);  // not folded: nothing was allocated
      CHECK(g->nodes[0].op_type == (expand ? "Expand" : "ConstantOfShape"));
      CHECK(lower(*g).ok());  // and it lowers: the run-time op checks the sizes (executor_test)
    }
  }
  // A small one folds.
  auto g = import_onnx_bytes(model_with_constant_of_shape({2, 3}, false), "small.onnx");
  REQUIRE(g.ok());
  REQUIRE(run_passes(*g).ok());
  CHECK(g->nodes.empty());
}

TEST_CASE("a node reading an undefined value is an error, not a crash in libonnx's shape inference") {
  // Found by tools/fuzz.sh onnx: a Shape node whose input names nothing.
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(15);
  onnx::GraphProto* g = m.mutable_graph();
  onnx::ValueInfoProto* x = g->add_input();
  x->set_name("x");
  x->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  onnx::NodeProto* n = g->add_node();
  n->set_op_type("Shape");
  n->set_name("shape");
  n->add_input("\370");
  n->add_output("y");
  onnx::ValueInfoProto* out = g->add_output();
  out->set_name("y");
  out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT64);
  auto r = import_onnx_bytes(m.SerializeAsString(), "bad.onnx");
  REQUIRE(!r.ok());
  CHECK(r.diag().status == Status::InvalidModel);
  CHECK(r.diag().message.find("Shape 'shape' reads '\370', which is no initializer") != std::string::npos);
}

TEST_CASE("a graph input without a type is an error, not a crash in libonnx's shape inference") {
  // Found by tools/fuzz.sh onnx: Shape(x) where x has no type at all.
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(15);
  onnx::GraphProto* g = m.mutable_graph();
  g->add_input()->set_name("x");
  onnx::NodeProto* n = g->add_node();
  n->set_op_type("Shape");
  n->add_input("x");
  n->add_output("y");
  onnx::ValueInfoProto* out = g->add_output();
  out->set_name("y");
  out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT64);
  auto r = import_onnx_bytes(m.SerializeAsString(), "untyped.onnx");
  REQUIRE(!r.ok());
  CHECK(r.diag().status == Status::NotSupported);
  CHECK(r.diag().message == "graph input 'x' is not a tensor");
}

TEST_CASE("a constant node missing an input its op needs is an error when folded, not a crash") {
  // Found by tools/fuzz.sh onnx: an Expand of a constant with no shape input.
  Graph g;
  g.opset = 17;
  const int x = g.add_constant("x", ones({2}));
  Value y;
  y.name = "y";
  const int yid = g.add_value(std::move(y));
  Node n;
  n.op_type = "Expand";
  n.name = "ex";
  n.inputs = {x};
  n.outputs = {yid};
  g.nodes.push_back(n);
  g.outputs.push_back(yid);
  auto r = fold_constants(g);
  REQUIRE(!r.ok());
  CHECK(r.diag().status == Status::InvalidModel);
  CHECK(r.diag().message == "Expand 'ex': has fewer inputs than Expand needs");
}

TEST_CASE("Shape of a rank-0 value folds to an empty shape") {
  // Found by tools/fuzz.sh onnx: the stand-in for a static shape [] raised.
  Graph g;
  g.opset = 17;
  Value x;
  x.name = "x";
  x.dtype = DType::Float32;
  x.shape = std::vector<Dim>{};
  const int xid = g.add_value(std::move(x));
  g.inputs.push_back(xid);
  Value y;
  y.name = "y";
  const int yid = g.add_value(std::move(y));
  Node n;
  n.op_type = "Shape";
  n.name = "shape";
  n.inputs = {xid};
  n.outputs = {yid};
  g.nodes.push_back(n);
  g.outputs.push_back(yid);
  REQUIRE(fold_shapes(g) == 1);
  REQUIRE(g.is_constant(yid));
  CHECK(g.value(yid).constant.sizes() == Shape{0});
  CHECK(g.value(yid).constant.dtype() == DType::Int64);
}

}  // namespace
}  // namespace ember::converter

namespace ember::converter {
namespace {

// ---- one-node models with bad attributes (found by tools/fuzz.sh onnx) ----

onnx::AttributeProto* add_attr(onnx::NodeProto* n, const std::string& name) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  return a;
}

void set_ints(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  onnx::AttributeProto* a = add_attr(n, name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

void set_int(onnx::NodeProto* n, const std::string& name, int64_t v) {
  onnx::AttributeProto* a = add_attr(n, name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

void set_string(onnx::NodeProto* n, const std::string& name, const std::string& v) {
  onnx::AttributeProto* a = add_attr(n, name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}

// A model of one node `op` named `name` reading the float input x of shape
// `x_dims` (and then `inputs`), writing y (float, shape not declared). A
// float initializer [1, 1, 1, 1] named "w" is there for a Conv to read.
struct OneNodeModel {
  onnx::ModelProto m;
  onnx::NodeProto* n = nullptr;

  OneNodeModel(const std::string& op, const std::string& name, const std::vector<int64_t>& x_dims,
               const std::vector<std::string>& inputs = {}) {
    m.set_ir_version(8);
    m.add_opset_import()->set_version(17);
    onnx::GraphProto* g = m.mutable_graph();
    onnx::ValueInfoProto* x = g->add_input();
    x->set_name("x");
    x->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : x_dims) x->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
    onnx::TensorProto* w = g->add_initializer();
    w->set_name("w");
    w->set_data_type(onnx::TensorProto::FLOAT);
    for (int k = 0; k < 4; ++k) w->add_dims(1);
    w->add_float_data(1.0f);
    n = g->add_node();
    n->set_op_type(op);
    n->set_name(name);
    n->add_input("x");
    for (const std::string& i : inputs) n->add_input(i);
    n->add_output("y");
    onnx::ValueInfoProto* out = g->add_output();
    out->set_name("y");
    out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  }

  // Whether libonnx's shape inference takes the model (it leaves out what would crash it).
  bool inferred() const {
    onnx::ModelProto copy = m;
    return infer_shapes(copy);
  }

  // The first error of import, passes, lowering and serialization ("" if none).
  std::string error() const {
    auto g = import_onnx_bytes(m.SerializeAsString(), "bad.onnx");
    if (!g.ok()) return g.diag().message;
    auto passes = run_passes(*g);
    if (!passes.ok()) return passes.diag().message;
    auto def = lower(*g);
    if (!def.ok()) return def.diag().message;
    std::vector<std::byte> bytes;
    std::string error;
    if (serialize_model(*def, &bytes, &error) != Status::Ok) return error;
    return "";
  }
};

constexpr const char* kLowered1 = "the graph cannot be lowered to ember ops (1 problem): ";
constexpr const char* kLowered2 = "the graph cannot be lowered to ember ops (2 problems): ";

TEST_CASE("an If, Loop or Scan without its graph attribute is an import error; libonnx is not given it") {
  // Found by tools/fuzz.sh onnx: libonnx 1.12's Scan inference dereferences the missing body.
  OneNodeModel scan("Scan", "s", {1, 4});
  set_int(scan.n, "num_scan_inputs", 1);
  CHECK(!scan.inferred());
  CHECK(scan.error() == "Scan 's' has no graph attribute 'body'");
  OneNodeModel loop("Loop", "l", {1, 4});
  loop.n->set_input(0, "");
  loop.n->add_input("");
  loop.n->add_input("x");
  CHECK(!loop.inferred());
  CHECK(loop.error() == "Loop 'l' has no graph attribute 'body'");
  OneNodeModel branch("If", "i", {1});
  CHECK(!branch.inferred());
  CHECK(branch.error() == "If 'i' has no graph attribute 'then_branch'");
  // Found by tools/fuzz.sh onnx: a body attribute typed GRAPH that holds no
  // graph, in a model importing the default domain twice (opsets 0 and 13:
  // the schema check looked for opset 0's Scan, found none and passed it),
  // crashed libonnx's Scan inference.
  OneNodeModel typed_only("Scan", "s", {1, 4});
  typed_only.m.mutable_opset_import(0)->set_version(0);
  typed_only.m.add_opset_import()->set_version(13);
  set_int(typed_only.n, "num_scan_inputs", 1);
  onnx::AttributeProto* body = typed_only.n->add_attribute();
  body->set_name("body");
  body->set_type(onnx::AttributeProto::GRAPH);
  CHECK(!typed_only.inferred());
  CHECK(typed_only.error() ==
        std::string(kLowered2) + "Scan 's': its subgraph has 0 outputs, expected 1; value 'y': rank unknown");
}

TEST_CASE("a model with local functions is not given to libonnx's inference") {
  OneNodeModel relu("Relu", "r", {2, 3});
  CHECK(relu.inferred());
  onnx::FunctionProto* f = relu.m.add_functions();
  f->set_name("f");
  f->set_domain("local");
  CHECK(!relu.inferred());
  CHECK(relu.error().empty());  // the importer takes it all the same
}

TEST_CASE("strides, dilations, kernel_shape, group or blocksize below 1: a clear error, never a division by zero") {
  // Found by tools/fuzz.sh onnx: libonnx 1.12's Conv, pooling and
  // DepthToSpace inference divide by these (SIGFPE), and so did the 2-D
  // lowering's auto_pad SAME arithmetic.
  struct Case {
    std::string op;
    std::vector<int64_t> x_dims;
    std::string attr;
    std::vector<int64_t> value;  // one value: an INT attribute
    std::string error;
  };
  const std::vector<int64_t> x4 = {1, 1, 4, 4}, x3 = {1, 1, 4};
  const std::string kRankUnknown = "; value 'y': rank unknown";
  const std::vector<Case> cases = {
      {"Conv", x4, "strides", {0, 1}, "Conv 'n': strides [0, 1] must be >= 1"},
      {"Conv", x4, "dilations", {1, 0}, "Conv 'n': dilations [1, 0] must be >= 1"},
      {"Conv", x4, "kernel_shape", {0, 1}, "Conv 'n': kernel_shape [0, 1] must be >= 1"},
      {"Conv", x4, "group", {0}, "Conv 'n': group 0 must be >= 1"},
      {"ConvTranspose", x4, "strides", {0, 1}, "ConvTranspose 'n': strides [0, 1] must be >= 1"},
      {"ConvTranspose", x4, "dilations", {1, 0}, "ConvTranspose 'n': dilations [1, 0] must be >= 1"},
      {"MaxPool", x4, "strides", {0, 1}, "MaxPool 'n': strides [0, 1] must be >= 1"},
      {"MaxPool", x4, "dilations", {0, 1}, "MaxPool 'n': dilations [0, 1] must be >= 1"},
      {"MaxPool", x4, "kernel_shape", {0, 1}, "MaxPool 'n': kernel_shape [0, 1] must be >= 1"},
      {"AveragePool", x4, "strides", {1, 0}, "AveragePool 'n': strides [1, 0] must be >= 1"},
      {"AveragePool", x4, "kernel_shape", {0, 0}, "AveragePool 'n': kernel_shape [0, 0] must be >= 1"},
      {"LpPool", x4, "strides", {0, 1}, "LpPool 'n': strides [0, 1] must be >= 1" + kRankUnknown},
      {"MaxPool", x3, "strides", {0}, "MaxPool 'n': strides [0] must be >= 1"},
      {"AveragePool", x3, "strides", {0}, "AveragePool 'n': strides [0] must be >= 1"},
      {"LpPool", x3, "strides", {0}, "LpPool 'n': strides [0] must be >= 1" + kRankUnknown},
      {"DepthToSpace", x4, "blocksize", {0}, "DepthToSpace 'n': blocksize 0 must be >= 1" + kRankUnknown},
      {"SpaceToDepth", x4, "blocksize", {0}, "SpaceToDepth 'n': blocksize 0 must be >= 1" + kRankUnknown},
  };
  for (const std::string& auto_pad : {"NOTSET", "SAME_UPPER"}) {
    for (const Case& c : cases) {
      CAPTURE(c.op);
      CAPTURE(c.attr);
      CAPTURE(auto_pad);
      const bool conv = c.op == "Conv" || c.op == "ConvTranspose";
      OneNodeModel m(c.op, "n", c.x_dims, conv ? std::vector<std::string>{"w"} : std::vector<std::string>{});
      if (c.x_dims.size() == 3 && conv) continue;
      const bool pool = c.op.find("Pool") != std::string::npos;
      if (pool && c.attr != "kernel_shape") set_ints(m.n, "kernel_shape", std::vector<int64_t>(c.x_dims.size() - 2, 1));
      if (c.attr == "group" || c.attr == "blocksize") set_int(m.n, c.attr, c.value[0]);
      else set_ints(m.n, c.attr, c.value);
      if (std::string(auto_pad) != "NOTSET") {
        if (!conv && !pool) continue;
        set_string(m.n, "auto_pad", auto_pad);
      }
      CHECK(!m.inferred());
      const bool two = c.error.find(kRankUnknown) != std::string::npos;
      CHECK(m.error() == std::string(two ? kLowered2 : kLowered1) + c.error);
    }
  }
}

TEST_CASE("an Einsum with an omitted or missing operand is an error naming the input") {
  // Found by tools/fuzz.sh onnx: operand 1 named "" was read as value -1.
  OneNodeModel e("Einsum", "e", {2, 2}, {""});
  set_string(e.n, "equation", "ij,jk->ik");
  CHECK(e.error() == std::string(kLowered2) + "Einsum 'e': input 1 is missing; value 'y': rank unknown");
  OneNodeModel one("Einsum", "e", {2, 2});
  set_string(one.n, "equation", "ij,jk->ik");
  CHECK(one.error() == std::string(kLowered2) +
                           "Einsum 'e': equation 'ij,jk->ik' has 2 operands, the node 1 inputs; value 'y': rank unknown");
}

TEST_CASE("folding allocates nothing beyond its limit, even where no output shape was inferred") {
  // A MatMul of constant [2^20, 1] x [1, 2^20] (2^40 floats: 4 TiB) in a model
  // libonnx does not infer (it has local functions): no static output shape
  // tells folding the size, so it used to allocate it (a conversion failing
  // with OutOfMemory; under the fuzzer's ASan, a crash).
  const int64_t big = int64_t{1} << 20;
  OneNodeModel m("MatMul", "big", {1}, {"b"});
  onnx::GraphProto* g = m.m.mutable_graph();
  g->clear_input();
  for (const char* name : {"x", "b"}) {
    onnx::TensorProto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(name == std::string("x") ? big : 1);
    t->add_dims(name == std::string("x") ? 1 : big);
    t->set_raw_data(std::string(static_cast<size_t>(big) * 4, '\0'));
  }
  m.m.add_functions()->set_name("f");
  CHECK(!m.inferred());
  auto graph = import_onnx_bytes(m.m.SerializeAsString(), "big.onnx");
  REQUIRE_MESSAGE(graph.ok(), graph.diag().message);
  auto passes = run_passes(*graph);
  REQUIRE_MESSAGE(passes.ok(), passes.diag().message);
  REQUIRE(graph->nodes.size() == 1);  // not folded: left to run time
  CHECK(graph->nodes[0].op_type == "MatMul");
}

TEST_CASE("a Pad of run-time pads near 2^62 is an error, not an empty tensor; 2^30 fails before any work") {
  // Found by tools/fuzz.sh onnx: n + before + after wrapped around int64 (an
  // output [0, 0]); pads of 2^26 ran for half a minute filling memory before
  // the last allocation failed (RunOptions::max_tensor_bytes bounds that).
  OneNodeModel pad("Pad", "pad", {2, 2}, {"pads"});
  onnx::ValueInfoProto* p = pad.m.mutable_graph()->add_input();
  p->set_name("pads");
  p->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT64);
  p->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(4);
  auto g = import_onnx_bytes(pad.m.SerializeAsString(), "pad.onnx");
  REQUIRE(g.ok());
  REQUIRE(run_passes(*g).ok());
  auto def = lower(*g);
  REQUIRE_MESSAGE(def.ok(), def.diag().message);
  ExecutionContext ctx(testing::executor_of(*def));
  const Tensor x = ones({2, 2});
  RunOptions options;
  options.max_tensor_bytes = size_t{1} << 20;
  std::string error;
  auto r = ctx.run({x, full({4}, 1, DType::Int64)}, options, &error);
  REQUIRE_MESSAGE(r.ok(), error);
  CHECK(r.get()[0].sizes() == Shape{4, 4});
  for (int e : {30, 62}) {
    CAPTURE(e);
    auto big = ctx.run({x, full({4}, int64_t{1} << e, DType::Int64)}, options, &error);
    REQUIRE(!big.ok());
    CHECK(big.status() == Status::OutOfMemory);
    const int64_t length = 2 + 2 * (int64_t{1} << std::min(e, 40));  // the pads are bounded by 2^40
    CHECK(error == "node 'y/axis0/j/range' (range): a tensor of " + std::to_string(length * 8) +
                       " bytes is over RunOptions::max_tensor_bytes (1048576)");
  }
}

TEST_CASE("an AveragePool that excludes padding on a huge input allocates no mask at conversion") {
  // Found by tools/fuzz.sh onnx: a Pad of 2^30 before an AveragePool with
  // pads; the mask of ones over the input's spatial size was a weight made at
  // conversion (17 GB). It is a ConstantOfShape at run time now.
  const int64_t big = int64_t{1} << 20;  // [2^20, 2^20]: a 4 TiB float32 mask
  OneNodeModel pool("AveragePool", "p", {1, 1, big, big});
  set_ints(pool.n, "kernel_shape", {2, 2});
  set_ints(pool.n, "pads", {1, 1, 1, 1});
  CHECK(pool.error() == "");
  // The window of a dilated AveragePool is a weight: bounded.
  OneNodeModel dilated("AveragePool", "p", {1, big, 128, 128});
  set_ints(dilated.n, "kernel_shape", {64, 64});
  set_ints(dilated.n, "dilations", {2, 2});
  CHECK(dilated.error() == std::string(kLowered1) +
                               "AveragePool 'p': the averaging window of shape [1048576, 1, 64, 64] would hold more "
                               "than 2^24 elements");
}

TEST_CASE("a Concat of rank-0 values is an error, not a read past the end of their dims") {
  // Found by tools/fuzz.sh onnx: infer_missing_shapes indexed the dims of a
  // scalar at axis 0 (wrap_dim accepts it for rank 0); so did Gather,
  // Split, Squeeze, Unsqueeze, Transpose and the reductions.
  OneNodeModel concat("Concat", "c", {}, {"x"});
  concat.m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  set_int(concat.n, "axis", 0);
  CHECK(concat.error() == "'bad.onnx': Concat 'c': axis 0 of a rank-0 value");
}

TEST_CASE("a Conv whose input rank is not its weight's is an error, not a crash in libonnx's inference") {
  // Found by tools/fuzz.sh onnx: libonnx 1.12's convPoolShapeInference
  // dereferences null for a [1, 5] input and a 4-D weight.
  OneNodeModel conv("Conv", "c", {1, 5}, {"w"});
  CHECK(!conv.inferred());
  CHECK(conv.error() == std::string(kLowered1) + "Conv 'c': input 'x' has rank 2, the 4-D weight needs 4");
  OneNodeModel pool("MaxPool", "p", {1, 5});
  set_ints(pool.n, "kernel_shape", {1});
  CHECK(!pool.inferred());
}

TEST_CASE("a Constant whose raw_data is shorter than its shape needs is an error, never read by libonnx") {
  // Found by tools/fuzz.sh onnx: libonnx 1.12's ParseData copied 8 bytes out
  // of a 7-byte raw_data (an Unsqueeze's axes).
  OneNodeModel m("Constant", "k", {1});
  m.n->clear_input();
  onnx::AttributeProto* a = add_attr(m.n, "value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(onnx::TensorProto::INT64);
  a->mutable_t()->add_dims(1);
  a->mutable_t()->set_raw_data(std::string(7, '\0'));
  CHECK(!m.inferred());
  CHECK(m.error() == "Constant 'k' value: raw_data holds 7 bytes, shape [1] of int64 needs 8");
}

}  // namespace
}  // namespace ember::converter

namespace ember::converter {
namespace {

TEST_CASE("a LayerNormalization axis outside its input's rank: libonnx is not given it; the lowering names it") {
  // Found by tools/fuzz.sh onnx: libonnx 1.12's LayerNormalization inference
  // indexes the input's dims at axis + rank unchecked (axis -4 on a rank-3
  // input, -1 on a rank-0 one, 2^63 - 2 crashed it).
  for (const int64_t axis : {int64_t{-4}, int64_t{3}, int64_t{9223372036854775806}}) {
    CAPTURE(axis);
    OneNodeModel ln("LayerNormalization", "ln", {2, 3, 4}, {"w"});
    set_int(ln.n, "axis", axis);
    CHECK(!ln.inferred());
    CHECK(ln.error().find("LayerNormalization 'ln'") != std::string::npos);
  }
  OneNodeModel scalar("LayerNormalization", "ln", {}, {"w"});
  CHECK(!scalar.inferred());
  CHECK(scalar.error().find("LayerNormalization 'ln'") != std::string::npos);
  // In range, with a known input rank: inferred by libonnx as before.
  OneNodeModel last("LayerNormalization", "ln", {2, 3, 4}, {"w"});
  set_int(last.n, "axis", -1);
  CHECK(last.inferred());
}

}  // namespace
}  // namespace ember::converter
