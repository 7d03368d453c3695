// Malformed ONNX files give a clear error, never a crash; absurd sizes are
// refused at conversion before anything of that size is allocated (a
// ConstantOfShape, Expand or initializer of 2^40 elements and more). Cases the
// importer's fuzz target (tools/fuzz.sh onnx) found are kept here.
#include <onnx/onnx_pb.h>

#include "converter/convert.h"
#include "converter/onnx_import.h"
#include "converter/passes.h"
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
