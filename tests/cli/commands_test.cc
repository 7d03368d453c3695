// The CLI's subcommands called as functions on small hand-made models: output
// file names sanitized and made unique, symbolic dims bound once across
// inputs, bench's generated inputs, and the helpers' formatting.
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "converter/cli/commands.h"
#include "converter/cli/model_io.h"
#include "runtime/model/npy.h"
#include "runtime/model/writer.h"
#include "tests/harness/testing.h"

using ember::testing::tmp_path;
using namespace ember;
using ember::testing::check_equal;

namespace {

TensorDef activation(std::string name, std::vector<int64_t> shape, std::vector<std::string> dims = {}) {
  TensorDef t;
  t.name = std::move(name);
  t.shape = std::move(shape);
  t.dim_names = std::move(dims);
  return t;
}

OpDef op(OpKind kind, std::vector<int32_t> in, std::vector<int32_t> out, std::string name) {
  OpDef o;
  o.op = kind;
  o.inputs = std::move(in);
  o.outputs = std::move(out);
  o.name = std::move(name);
  return o;
}

// a [batch, 3] + b [batch, 3] -> "sum/0:x" (relu of the sum), "sum\\0?x" (neg of the sum), "..": a copy of a via neg(neg)
std::string two_input_model() {
  ModelDef def;
  const int a = def.add_tensor(activation("a", {-1, 3}, {"batch", ""}));
  const int b = def.add_tensor(activation("b", {-1, 3}, {"batch", ""}));
  const int s = def.add_tensor(activation("s", {-1, 3}, {"batch", ""}));
  const int o1 = def.add_tensor(activation("sum/0:x", {-1, 3}, {"batch", ""}));
  const int o2 = def.add_tensor(activation("sum\\0?x", {-1, 3}, {"batch", ""}));
  const int o3 = def.add_tensor(activation("..", {-1, 3}, {"batch", ""}));
  def.ops.push_back(op(OpKind::Add, {a, b}, {s}, "add_0"));
  def.ops.push_back(op(OpKind::Relu, {s}, {o1}, "relu_0"));
  def.ops.push_back(op(OpKind::Neg, {s}, {o2}, "neg_0"));
  def.ops.push_back(op(OpKind::Neg, {o2}, {o3}, "neg_1"));
  def.inputs = {a, b};
  def.outputs = {o1, o2, o3};
  const std::string path = tmp_path("two_inputs.ember");
  std::string error;
  REQUIRE_MESSAGE(write_model(def, path, &error) == Status::Ok, error);
  return path;
}

void save(const std::string& name, const Tensor& t) {
  std::string error;
  REQUIRE_MESSAGE(write_npy(tmp_path(name), t, &error) == Status::Ok, error);
}

Tensor load(const std::string& path) {
  std::string error;
  Result<Tensor> r = read_npy(path, &error);
  REQUIRE_MESSAGE(r.ok(), error);
  return r.get();
}

}  // namespace

TEST_CASE("run: outputs named after sanitized, unique output names, values exact") {
  const std::string model = two_input_model();
  const Tensor a = tensor<float>({{1.0f, -2.0f, 3.0f}, {-4.0f, 5.0f, -6.0f}});
  const Tensor b = tensor<float>({{0.5f, 0.5f, -0.5f}, {1.0f, -1.0f, 1.0f}});
  save("a.npy", a);
  save("b.npy", b);
  cli::RunArgs args;
  args.model = model;
  args.inputs = {"b=" + tmp_path("b.npy"), "a=" + tmp_path("a.npy")};  // any order
  args.output_dir = tmp_path("run_out/nested");                       // created
  std::ostringstream out;
  cli::Diag d = cli::run(args, out);
  REQUIRE_MESSAGE(d.ok(), d.message);
  const std::string dir = args.output_dir + "/";
  check_equal(load(dir + "sum_0_x.npy"), relu(a + b));
  check_equal(load(dir + "sum_0_x_1.npy"), -(a + b));  // "sum\0?x" sanitizes to the same name
  check_equal(load(dir + "_...npy"), a + b);
  CHECK(out.str().find("wrote " + dir + "sum_0_x_1.npy (sum\\0?x: float32 [2, 3])\n") != std::string::npos);
}

TEST_CASE("run: a symbolic dim takes one value across inputs") {
  const std::string model = two_input_model();
  save("a2.npy", zeros({2, 3}));
  save("b4.npy", zeros({4, 3}));
  cli::RunArgs args;
  args.model = model;
  args.inputs = {"a=" + tmp_path("a2.npy"), "b=" + tmp_path("b4.npy")};
  args.output_dir = tmp_path("run_bad");
  std::ostringstream out;
  cli::Diag d = cli::run(args, out);
  CHECK(d.status == Status::ShapeMismatch);
  CHECK(d.message == "input 'b' ('" + tmp_path("b4.npy") + "'): dim 0 ('batch') is 4 but input 'a' has batch = 2");
  CHECK(!std::filesystem::exists(tmp_path("run_bad")));
}

TEST_CASE("read_inputs for bench: missing inputs made with the given inputs' symbolic dims") {
  const std::string model = two_input_model();
  cli::Expected<cli::LoadedModel> loaded = cli::load_model(model);
  REQUIRE_MESSAGE(loaded.ok(), loaded.diag().message);
  save("a5.npy", ones({5, 3}));
  cli::Expected<std::vector<Tensor>> in =
      cli::read_inputs(*loaded->executor, {"a=" + tmp_path("a5.npy")}, /*fill_missing=*/true, /*random=*/true);
  REQUIRE_MESSAGE(in.ok(), in.diag().message);
  REQUIRE(in->size() == 2);
  check_equal((*in)[0], ones({5, 3}));
  CHECK((*in)[1].sizes() == Shape{5, 3});
  CHECK((*in)[1].abs().sum().item<float>() > 0.0f);  // random normal, not zeros
  // Nothing given: symbolic dims 1, zeros when not random.
  cli::Expected<std::vector<Tensor>> z = cli::read_inputs(*loaded->executor, {}, true, false);
  REQUIRE(z.ok());
  check_equal((*z)[0], zeros({1, 3}));

  cli::BenchArgs bench;
  bench.model = model;
  bench.warmup = 1;
  bench.iterations = 3;
  bench.json = true;
  std::ostringstream out;
  cli::Diag d = cli::bench(bench, out);
  REQUIRE_MESSAGE(d.ok(), d.message);
  CHECK(out.str().find("\"iterations\": 3, \"load_ms\": ") != std::string::npos);
  CHECK(out.str().find(", \"latency_ms\": {\"min\": ") != std::string::npos);
}

TEST_CASE("helpers: shapes, names, numbers, devices") {
  IOInfo io;
  io.shape = {-1, 3, -1, 224};
  io.dim_names = {"batch", "", "", ""};
  CHECK(cli::io_shape_str(io) == "[batch, 3, ?, 224]");
  CHECK(cli::shape_str({}) == "[]");
  CHECK(cli::shape_str({2, 0}) == "[2, 0]");
  CHECK(cli::sanitize_file_name("logits") == "logits");
  CHECK(cli::sanitize_file_name("/fc/Gemm_output_0") == "_fc_Gemm_output_0");
  CHECK(cli::sanitize_file_name("a b\xc3\xa9.npy") == "a_b__.npy");
  CHECK(cli::sanitize_file_name("") == "_");
  CHECK(cli::sanitize_file_name(".hidden") == "_.hidden");
  CHECK(cli::sanitize_file_name("..") == "_..");
  CHECK(cli::with_commas(0) == "0");
  CHECK(cli::with_commas(999) == "999");
  CHECK(cli::with_commas(1000) == "1,000");
  CHECK(cli::with_commas(-13951264) == "-13,951,264");
  CHECK(cli::check_device("cpu").ok());
  CHECK(cli::check_device("vulkan").ok());
  CHECK(cli::check_device("vulkan:0").ok());
  if (get_backend(DeviceType::CUDA) == nullptr) {  // the default build (--config=cuda links the backend)
    CHECK(cli::check_device("cuda:0").message ==
          "device 'cuda:0' is not available in this build (build with --config=cuda)");
    CHECK(cli::check_device("cuda").status == Status::UnsupportedHardware);
  }
  CHECK(cli::executor_options("cpu", false, "fp32")->device == DeviceType::CPU);
  CHECK(cli::executor_options("vulkan", true, "fp16")->device == DeviceType::Vulkan);
  CHECK(cli::executor_options("vulkan", true, "fp16")->allow_fallback);
  CHECK(cli::executor_options("vulkan", false, "fp16")->precision == Precision::Float16);
  CHECK(cli::executor_options("vulkan", false, "fp8").diag().message ==
        "--precision: unknown precision 'fp8' (supported: fp32, fp16, bf16)");
  CHECK(cli::executor_options("cpu", false, "fp16").diag().message.find("--precision fp16 needs --device vulkan") == 0);
  CHECK(cli::executor_options("cpu", false, "fp32")->conv_layout == ConvLayout::Auto);
  CHECK(cli::executor_options("cpu", false, "fp32", "nchw")->conv_layout == ConvLayout::Contiguous);
  CHECK(cli::executor_options("cpu", false, "fp32", "channels_last")->conv_layout == ConvLayout::ChannelsLast);
  CHECK(cli::executor_options("cpu", false, "fp32", "nhwc").diag().message ==
        "--conv-layout: unknown layout 'nhwc' (supported: auto, nchw, channels_last)");
  CHECK(cli::executor_options("cpu", true, "fp32").diag().message == "--allow-fallback needs a device other than cpu");
  CHECK(cli::executor_options("cuda", true, "fp32").diag().status == Status::UnsupportedHardware);
  CHECK(cli::check_device("tpu").status == Status::InvalidArgument);
  CHECK(!cli::check_device("tpu").message.empty());
}

namespace {

// x [2, 4] -> fc_rows (int8 weight per channel, activations per row) -> h [2, 3]
//          -> fc_tensor (int8 weight per tensor, activations per tensor) -> y [2, 2]
std::string two_int8_linears() {
  ModelDef def;
  auto weight = [&](const char* name, std::vector<int64_t> shape, std::vector<float> scales, ActivationQuant a) {
    TensorDef w;
    w.name = name;
    w.shape = shape;
    w.dtype = DType::Int8;
    w.data.assign(static_cast<size_t>(shape[0] * shape[1]), std::byte{2});
    w.has_data = true;
    QuantDef q;
    q.scales = std::move(scales);
    q.axis = q.scales.size() > 1 ? 0 : -1;
    q.activations = a;
    w.quant = q;
    return def.add_tensor(w);
  };
  const int x = def.add_tensor(activation("x", {2, 4}));
  const int w1 = weight("w_rows", {3, 4}, {0.5f, 0.25f, 1.0f}, ActivationQuant::PerRow);
  const int h = def.add_tensor(activation("h", {2, 3}));
  const int w2 = weight("w_tensor", {2, 3}, {0.5f}, ActivationQuant::PerTensor);
  const int y = def.add_tensor(activation("y", {2, 2}));
  def.ops.push_back(op(OpKind::Linear, {x, w1, -1}, {h}, "fc_rows"));
  def.ops.back().params = LinearParams{};
  def.ops.push_back(op(OpKind::Linear, {h, w2, -1}, {y}, "fc_tensor"));
  def.ops.back().params = LinearParams{};
  def.inputs = {x};
  def.outputs = {y};
  const std::string path = tmp_path("int8_linears.ember");
  std::string error;
  REQUIRE_MESSAGE(write_model(def, path, &error) == Status::Ok, error);
  return path;
}

}  // namespace

TEST_CASE("inspect: quantized layers with their weight and activation schemes") {
  cli::InspectArgs args;
  args.model = two_int8_linears();
  std::ostringstream out;
  const cli::Diag d = cli::inspect(args, out);
  REQUIRE_MESSAGE(d.ok(), d.message);
  const std::string s = out.str();
  INFO(s);
  CHECK(s.find("\nquantized tensors: 2 (w_rows, w_tensor)\n") != std::string::npos);
  CHECK(s.find("\nquantized layers: 2 (activations: 1 per tensor, 1 per row)\n"
               "  fc_rows    linear  weight int8 per channel  activations uint8 per row\n"
               "  fc_tensor  linear  weight int8 per tensor   activations uint8 per tensor\n") != std::string::npos);
}

TEST_CASE("inspect: an If's branches: their ops on a subgraphs line, their weights among the parameters") {
  auto weight = [](std::string name, Tensor t, bool trainable) {
    TensorDef d;
    d.name = std::move(name);
    d.shape = t.sizes();
    d.tensor = t;
    d.has_data = true;
    d.trainable = trainable;
    return d;
  };
  // y = If(c, then: x * [1, 2, 3], else: x + [4, 5, 6] - [7, 8, 9]) + b
  ModelDef then_g, else_g, def;
  {
    const int x = then_g.add_tensor(activation("x", {3}));
    const int w = then_g.add_tensor(weight("w_then", tensor<float>({1, 2, 3}), true));
    const int y = then_g.add_tensor(activation("y", {3}));
    then_g.ops.push_back(op(OpKind::Mul, {x, w}, {y}, "mul"));
    then_g.inputs = {x};
    then_g.outputs = {y};
  }
  {
    const int x = else_g.add_tensor(activation("x", {3}));
    const int w = else_g.add_tensor(weight("w_else", tensor<float>({4, 5, 6}), true));
    const int v = else_g.add_tensor(weight("v_else", tensor<float>({7, 8, 9}), true));
    const int s = else_g.add_tensor(activation("s", {3}));
    const int y = else_g.add_tensor(activation("y", {3}));
    else_g.ops.push_back(op(OpKind::Add, {x, w}, {s}, "add"));
    else_g.ops.push_back(op(OpKind::Sub, {s, v}, {y}, "sub"));
    else_g.inputs = {x};
    else_g.outputs = {y};
  }
  def.subgraphs = {then_g, else_g};
  const int c = def.add_tensor(activation("c", {}));
  def.tensors[static_cast<size_t>(c)].dtype = DType::Bool;
  const int x = def.add_tensor(activation("x", {3}));
  const int b = def.add_tensor(weight("b", tensor<float>({1, 1, 1}), true));
  const int y = def.add_tensor(activation("y", {3}));
  const int z = def.add_tensor(activation("z", {3}));
  OpDef branch = op(OpKind::If, {c, x}, {y}, "if");
  branch.params = IfParams{0, 1};
  def.ops.push_back(branch);
  def.ops.push_back(op(OpKind::Add, {y, b}, {z}, "add"));
  def.inputs = {c, x};
  def.outputs = {z};
  std::string error;
  cli::InspectArgs args;
  args.model = tmp_path("if_branches.ember");
  REQUIRE_MESSAGE(write_model(def, args.model, &error) == Status::Ok, error);
  std::ostringstream out;
  const cli::Diag d = cli::inspect(args, out);
  REQUIRE_MESSAGE(d.ok(), d.message);
  const std::string text = out.str();
  INFO(text);
  CHECK(text.find("\nops: 2\n") != std::string::npos);
  CHECK(text.find("\nsubgraphs: 2 (If/Loop/Scan bodies, 3 ops; their weights count as parameters, not as "
                  "trainable)\nparameters: 12 in 4 tensors (48 bytes)\n  float32  12 (48 bytes)\n"
                  "trainable: 3 in 1 tensors\n") != std::string::npos);
}

TEST_CASE("inspect: no quantized layers line for a float model") {
  cli::InspectArgs args;
  args.model = two_input_model();
  std::ostringstream out;
  REQUIRE(cli::inspect(args, out).ok());
  CHECK(out.str().find("quantized layers") == std::string::npos);
  CHECK(out.str().find("\nquantized tensors: none\n") != std::string::npos);
}
