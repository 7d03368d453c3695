// convert_file(): ONNX file -> `.ember` file that the loader accepts (Full
// verification), its metadata and report; refused inputs write nothing.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include <onnx/onnx_pb.h>

#include "converter/convert.h"
#include "runtime/model/loader.h"
#include "tests/harness/testing.h"

namespace ember::converter {

using ember::testing::tmp_path;
using ember::testing::check_equal;

namespace {

const std::string kDir = "tests/golden/onnx/";

bool exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

// sha256sum's digest of a file, as an independent reference.
std::string sha256sum(const std::string& path) {
  FILE* p = ::popen(("sha256sum '" + path + "'").c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[65] = {};
  const size_t n = std::fread(buf, 1, 64, p);
  ::pclose(p);
  REQUIRE(n == 64);
  return std::string(buf, 64);
}

Model load(const std::string& path) {
  std::string error;
  auto m = Model::load(path, Verification::Full, &error);
  REQUIRE_MESSAGE(m.ok(), error);
  return std::move(m.get());
}

// An ONNX file with one Gemm whose B is 3-D (Gemm takes matrices).
std::string write_gemm_3d_b(const std::string& path) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(13);
  onnx::GraphProto* g = model.mutable_graph();
  g->set_name("gemm_3d_b");
  for (const char* name : {"x", "y"}) {
    onnx::ValueInfoProto* v = std::string(name) == "x" ? g->add_input() : g->add_output();
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    tt->mutable_shape()->add_dim()->set_dim_value(2);
    tt->mutable_shape()->add_dim()->set_dim_value(2);
  }
  onnx::TensorProto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(2);
  w->add_dims(2);
  w->add_dims(1);
  for (float f : {1.f, 2.f, 3.f, 4.f}) w->add_float_data(f);
  onnx::NodeProto* n = g->add_node();
  n->set_op_type("Gemm");
  n->set_name("scaled_gemm");
  n->add_input("x");
  n->add_input("w");
  n->add_output("y");
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name("alpha");
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(2.f);
  std::ofstream f(path, std::ios::binary);
  REQUIRE(model.SerializeToOstream(&f));
  return path;
}

}  // namespace

TEST_CASE("convert_file: a Gemm with a 3-D B is a lowering error, nothing written") {
  const std::string onnx = write_gemm_3d_b(tmp_path("gemm_3d_b.onnx"));
  const std::string out = tmp_path("gemm_3d_b.ember");
  const Diag d = convert_file(onnx, out, {});
  CHECK(d.status == Status::NotSupported);
  CHECK(d.message ==
        "the graph cannot be lowered to ember ops (1 problem): Gemm 'scaled_gemm': B 'w' is not 2-D");
  CHECK(!exists(out));
}

TEST_CASE("convert_file: mlp and cnn load with Full verification, metadata and report") {
  for (const char* model : {"mlp_opset13", "cnn_opset13"}) {
    CAPTURE(model);
    const std::string onnx = kDir + model + ".onnx";
    const std::string out = tmp_path(std::string(model) + ".ember");
    ConvertReport report;
    const Diag d = convert_file(onnx, out, ConvertOptions{}, &report);
    REQUIRE_MESSAGE(d.ok(), d.message);
    Model m = load(out);
    const ModelMetadata md = m.metadata();
    CHECK(md.producer == "ember");
    CHECK(md.producer_version == "0.1");
    CHECK(md.source_hash == "sha256:" + sha256sum(onnx));
    CHECK(report.source_hash == md.source_hash);
    CHECK(md.converter_options == std::vector<std::pair<std::string, std::string>>{
                                      {"optimize", "true"}, {"quantize", "none"}, {"sparse_coo", "false"},
                                      {"prune", "none"}, {"weights", "fp32"}});
    CHECK(report.ops == m.num_ops());
    CHECK(report.tensors == m.num_tensors());
    REQUIRE(m.inputs().size() == 1);
    CHECK(m.tensor_name(m.inputs()[0]) == "input");
    CHECK(m.tensor(m.inputs()[0]).dim_names()->Get(0)->str() == "batch");
    CHECK(m.tensor_name(m.outputs()[0]) == "output");
    int64_t weight_bytes = 0;
    for (int i = 0; i < m.num_tensors(); ++i) {
      if (m.weight(i).defined()) weight_bytes += static_cast<int64_t>(m.weight(i).nbytes());
    }
    CHECK(report.weight_bytes == weight_bytes);
    if (std::string(model) == "mlp_opset13") {
      CHECK(report.onnx_nodes == 3);
      CHECK(report.passes.activations_fused == 1);
      REQUIRE(m.num_ops() == 2);
      CHECK(m.op_kind(0) == OpKind::Linear);
      CHECK(m.op(0).name()->str() == "/fc1/Gemm");
      CHECK(std::get<LinearParams>(m.op_params(0).get()).activation.kind == ActivationKind::Relu);
      const int w = m.find_tensor("fc1.weight");
      REQUIRE(w >= 0);
      CHECK(m.tensor(w).trainable());
      CHECK(m.tensor_shape(w) == std::vector<int64_t>{16, 10});
      CHECK(weight_bytes == (16 * 10 + 16 + 4 * 16 + 4) * 4);
    } else {
      CHECK(report.passes.batchnorms_folded == 2);
      REQUIRE(m.num_ops() == 5);
      CHECK(m.op_kind(0) == OpKind::Conv2d);
      const auto conv = std::get<Conv2dParams>(m.op_params(1).get());
      CHECK(conv.activation.kind == ActivationKind::Clamp);
      CHECK(conv.activation.max == 6.0);
      CHECK(conv.padding[0] == 1);
      CHECK(m.op_kind(3) == OpKind::Flatten);
      CHECK(std::get<AxisParams>(m.op_params(3).get()).axis == 1);
      CHECK(m.tensor_shape(m.outputs()[0]) == std::vector<int64_t>{-1, 5});
    }
  }
}

TEST_CASE("convert_file: without the passes the options say so and the unfused ops remain") {
  const std::string out = tmp_path("mlp_noopt.ember");
  ConvertOptions o;
  o.optimize = false;
  ConvertReport report;
  const Diag d = convert_file(kDir + "mlp_opset11.onnx", out, o, &report);
  REQUIRE_MESSAGE(d.ok(), d.message);
  Model m = load(out);
  CHECK(m.metadata().converter_options.at(0) == std::pair<std::string, std::string>{"optimize", "false"});
  REQUIRE(m.num_ops() == 3);
  CHECK(m.op_kind(1) == OpKind::Relu);
  CHECK(report.passes.activations_fused == 0);
}

TEST_CASE("convert_file: errors write nothing") {
  const std::string out = tmp_path("bad.ember");
  // Unsupported op types: the importer's message, nothing written.
  Diag d = convert_file(kDir + "unsupported_ops.onnx", out, {});
  CHECK(d.status == Status::NotSupported);
  CHECK(d.message.find("uses ops the converter does not support (3 nodes of 2 types)") != std::string::npos);
  CHECK(!exists(out));
  // A missing file.
  d = convert_file(kDir + "no_such.onnx", out, {});
  CHECK(d.status == Status::IoError);
  CHECK(d.message == "cannot open '" + kDir + "no_such.onnx'");
  CHECK(!exists(out));
  // Without the passes the transformer still converts: its Identity nodes are Copies.
  ConvertOptions raw;
  raw.optimize = false;
  d = convert_file(kDir + "transformer_opset17.onnx", out, raw);
  REQUIRE_MESSAGE(d.ok(), d.message);
  const Model unoptimized = load(out);
  int copies = 0;
  for (int k = 0; k < unoptimized.num_ops(); ++k) copies += unoptimized.op_kind(k) == OpKind::Copy;
  CHECK(copies > 0);
  std::remove(out.c_str());
  // An existing file is left as it was.
  { std::ofstream(out) << "keep"; }
  d = convert_file(kDir + "unsupported_ops.onnx", out, {});
  CHECK(!d.ok());
  std::ifstream in(out);
  std::string kept;
  in >> kept;
  CHECK(kept == "keep");
  std::remove(out.c_str());
  // An unwritable destination.
  d = convert_file(kDir + "mlp_opset13.onnx", tmp_path("no_dir/x.ember"), {});
  CHECK(d.status != Status::Ok);
  CHECK(d.message.rfind("cannot write '" + tmp_path("no_dir/x.ember") + "': ", 0) == 0);
}

TEST_CASE("convert_file: weights and report options are checked") {
  const std::string out = tmp_path("reserved.ember");
  ConvertOptions q;
  q.quantize = "int8";
  Diag d = convert_file(kDir + "mlp_opset13.onnx", out, q);
  CHECK(d.status == Status::InvalidArgument);  // quantize is real now: "dynamic-int8" only
  CHECK(d.message == "unknown quantization 'int8' (supported: dynamic-int8)");
  ConvertOptions w;
  w.weights = "fc1.weight";  // no longer reserved: fp32 or fp16
  d = convert_file(kDir + "mlp_opset13.onnx", out, w);
  CHECK(d.status == Status::InvalidArgument);
  CHECK(d.message == "unknown weights 'fc1.weight' (supported: fp32, fp16)");
  ConvertOptions c;
  c.calibration_inputs = "calib.npz";
  d = convert_file(kDir + "mlp_opset13.onnx", out, c);
  CHECK(d.status == Status::InvalidArgument);
  CHECK(d.message == "--calibration-inputs needs --report or --min-snr");
  c.report = true;
  d = convert_file(kDir + "mlp_opset13.onnx", out, c);
  CHECK(d.status == Status::IoError);
  CHECK(d.message == "cannot open calibration inputs 'calib.npz'");
  CHECK(!exists(out));
}

}  // namespace ember::converter
