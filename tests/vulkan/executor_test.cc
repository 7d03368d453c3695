// The executor on Vulkan (ExecutorOptions::device): placement decisions and
// their messages, the create-time error without allow_fallback, outputs equal
// to the CPU executor's, one submit per run when every node runs on the
// device, host placement of int64 shape arithmetic, fp16 precision, profiles.
// Models are built by hand (tests/model/graph_builder.h). Nodes that fall
// back use dtypes Vulkan has no kernel for (float64; int64 gathers).
#include "runtime/model/executor.h"

#include "tests/model/graph_builder.h"
#include "tests/vulkan/vulkan_testing.h"

using namespace ember;
using namespace ember::testing;

namespace {

ExecutorOptions on_vulkan(bool allow_fallback = false, Precision precision = Precision::Float32) {
  ExecutorOptions o;
  o.device = DeviceType::Vulkan;
  o.allow_fallback = allow_fallback;
  o.precision = precision;
  return o;
}

vk::Context* context() {
  Result<vk::Context*> c = vk::Context::get();
  REQUIRE(c.ok());
  return c.get();
}

Backend& vulkan() { return *get_backend(DeviceType::Vulkan); }

ScalarParams scalar(double v) {
  ScalarParams p;
  p.value = v;
  return p;
}

// y = fill(2.5) [2, 3]: the one op main has a Vulkan kernel for.
Graph fill_model(DType dtype = DType::Float32) {
  Graph g;
  const int y = g.act("y", {2, 3}, dtype);
  g.op(OpKind::Fill, {}, {y}, "fill0", scalar(2.5));
  g.output(y);
  return g;
}

}  // namespace

TEST_CASE("a model whose every node has a Vulkan kernel runs on the device and submits once per run") {
  const auto ex = fill_model().build(on_vulkan());
  CHECK(ex->options().device == DeviceType::Vulkan);
  CHECK(ex->placement(0) == Placement::Device);
  CHECK(ex->fallback_ops().empty());
  CHECK(ex->fallback_reason(0).empty());
  CHECK(ex->describe_op(0) == "node 'fill0' (fill, float32)");
  ExecutionContext ctx(ex);
  for (int run = 0; run < 3; ++run) {
    const uint64_t submits = context()->submit_count();
    const uint64_t dispatches = context()->dispatch_count();
    const std::vector<Tensor> out = run_ok(ctx, {});
    CHECK(context()->submit_count() - submits == 1);
    CHECK(context()->dispatch_count() - dispatches == 1);  // the fill ran on the device
    REQUIRE(out.size() == 1);
    CHECK(out[0].device().is_cpu());
    check_equal(out[0], full({2, 3}, 2.5f));
  }
  // int32 too (Fill has an int32 kernel).
  const auto ex32 = fill_model(DType::Int32).build(on_vulkan());
  CHECK(ex32->placement(0) == Placement::Device);
  ExecutionContext ctx32(ex32);
  check_equal(run_ok(ctx32, {})[0], full({2, 3}, 2, DType::Int32));
}

TEST_CASE("a node without a Vulkan kernel is a create-time error naming it, unless allow_fallback") {
  // float64 has no Vulkan kernels (no shaderFloat64 path in ember).
  Graph g;
  const int a = g.input("a", {4}, DType::Float64);
  const int b = g.input("b", {4}, DType::Float64);
  const int s = g.act("s", {4}, DType::Float64);
  const int r = g.act("r", {4}, DType::Float64);
  g.op(OpKind::Add, {a, b}, {s}, "add64");
  g.op(OpKind::Relu, {s}, {r}, "relu64");
  g.output(r);
  REQUIRE(!vulkan().supports(OpKind::Add, DType::Float64));
  REQUIRE(!vulkan().supports(OpKind::Relu, DType::Float64));
  std::string error;
  Result<std::shared_ptr<const Executor>> ex = g.create(on_vulkan(), &error);
  REQUIRE(!ex.ok());
  CHECK(ex.status() == Status::NotSupported);
  CHECK(error.find("node 'add64' (add, float64): not implemented for vulkan (no float64 kernel for ") == 0);
  CHECK(error.find("'add'") != std::string::npos);
  CHECK(error.find("; 1 more node cannot run on vulkan (allow_fallback, ember's --allow-fallback, runs such "
                   "nodes on the CPU)") != std::string::npos);

  // With allow_fallback both run on the CPU and the result is the CPU executor's.
  const auto fb = g.build(on_vulkan(/*allow_fallback=*/true));
  CHECK(fb->fallback_ops() == std::vector<int>{0, 1});
  CHECK(fb->placement(0) == Placement::Fallback);
  CHECK(fb->fallback_reason(1).find("not implemented for vulkan (no float64 kernel for ") == 0);
  CHECK(fb->fallback_reason(1).find("'relu'") != std::string::npos);
  const Tensor x = tensor(std::vector<double>{-1.5, 2, -3, 4}, {4});
  const Tensor y = tensor(std::vector<double>{1, -5, 1, 0.25}, {4});
  ExecutionContext ctx(fb);
  const uint64_t submits = context()->submit_count();
  const std::vector<Tensor> out = run_ok(ctx, {x, y});
  CHECK(context()->submit_count() == submits);  // nothing ran on the device
  check_equal(out[0], relu(add(x, y)));
}

TEST_CASE("a device node feeding a fallback node: the value crosses once, results match the CPU executor") {
  // c = fill(7) int64 [3, 2] on the device; g = gather(c, [2, 0]) on the CPU
  // (Vulkan's embedding has no int64 kernel); outputs g and c.
  Graph g;
  const int c = g.act("c", {3, 2}, DType::Int64);
  const int idx = g.ints("idx", {2, 0});
  const int out = g.act("g", {2, 2}, DType::Int64);
  g.op(OpKind::Fill, {}, {c}, "fill_c", scalar(7));
  g.op(OpKind::Gather, {c, idx}, {out}, "gather_c", AxisParams{});
  g.output(out);
  g.output(c);
  REQUIRE(!vulkan().supports(OpKind::Embedding, DType::Int64));
  const auto ex = g.build(on_vulkan(/*allow_fallback=*/true));
  CHECK(ex->placement(0) == Placement::Device);
  CHECK(ex->placement(1) == Placement::Fallback);
  CHECK(ex->fallback_reason(1) == "not implemented for vulkan (no int64 kernel for 'embedding')");
  CHECK(ex->describe_op(1) == "node 'gather_c' (gather, int64)");
  ExecutionContext ctx(ex);
  for (int run = 0; run < 2; ++run) {
    const uint64_t submits = context()->submit_count();
    const std::vector<Tensor> outs = run_ok(ctx, {});
    // One submit: the fill, read back once by the CPU gather; the output c
    // reuses that copy.
    CHECK(context()->submit_count() - submits == 1);
    REQUIRE(outs.size() == 2);
    check_equal(outs[0], full({2, 2}, int64_t{7}));
    check_equal(outs[1], full({3, 2}, int64_t{7}));
    CHECK(outs[0].device().is_cpu());
    CHECK(outs[1].device().is_cpu());
  }
  // The profile names each op's device.
  RunOptions profiled;
  profiled.profile = true;
  run_ok(ctx, {}, profiled);
  REQUIRE(ctx.profile().size() == 2);
  CHECK(ctx.profile()[0].device == "vulkan");
  CHECK(ctx.profile()[1].device == "cpu (fallback)");
  CHECK(ctx.profile()[1].name == "gather_c");
}

TEST_CASE("a convolution network on the device: one upload per input, one submit, the CPU executor's values") {
  // x [2, 3, 9, 7] -> conv 3->8 3x3 s1 p1 (+bias) -> conv 8->4 3x3 s2 (no bias) -> two outputs.
  REQUIRE(vulkan().supports(OpKind::Conv2d, DType::Float32));
  Graph g;
  const int x = g.input("x", {2, 3, 9, 7});
  const int h = g.act("h", {2, 8, 9, 7});
  const int y = g.act("y", {2, 4, 4, 3});
  Conv2dParams p1;
  p1.padding[0] = p1.padding[1] = 1;
  Conv2dParams p2;
  p2.stride[0] = p2.stride[1] = 2;
  const Tensor w1 = randn({8, 3, 3, 3}), b1 = randn({8}), w2 = randn({4, 8, 3, 3});
  g.op(OpKind::Conv2d, {x, g.weight("w1", w1), g.weight("b1", b1)}, {h}, "conv1", p1);
  g.op(OpKind::Conv2d, {h, g.weight("w2", w2), -1}, {y}, "conv2", p2);
  g.output(y);
  g.output(h);
  const auto ex = g.build(on_vulkan());
  CHECK(ex->fallback_ops().empty());
  CHECK(ex->placement(0) == Placement::Device);
  CHECK(ex->placement(1) == Placement::Device);
  const Tensor in = randn({2, 3, 9, 7});
  ExecutionContext cpu_ctx(g.build(ExecutorOptions{}));
  const std::vector<Tensor> expected = run_ok(cpu_ctx, {in});
  ExecutionContext ctx(ex);
  for (int run = 0; run < 2; ++run) {
    const uint64_t submits = context()->submit_count();
    const uint64_t dispatches = context()->dispatch_count();
    const std::vector<Tensor> out = run_ok(ctx, {in});
    CHECK(context()->submit_count() - submits == 1);
    CHECK(context()->dispatch_count() - dispatches >= 2);  // both convolutions ran on the device
    REQUIRE(out.size() == 2);
    CHECK(out[0].device().is_cpu());
    CHECK(out[1].device().is_cpu());
    check_close(out[0], expected[0], 1e-5, 1e-5);
    check_close(out[1], expected[1], 1e-5, 1e-5);
  }
  // The profile: both on vulkan, each op flushed (one submit per device op).
  RunOptions profiled;
  profiled.profile = true;
  const uint64_t submits = context()->submit_count();
  run_ok(ctx, {in}, profiled);
  // Plus one for reading the outputs back when the host cannot map device memory (discrete GPUs).
  CHECK(context()->submit_count() - submits == (context()->caps().host_visible_device_memory ? 2u : 3u));
  REQUIRE(ctx.profile().size() == 2);
  CHECK(ctx.profile()[0].device == "vulkan");
  CHECK(ctx.profile()[1].device == "vulkan");
  CHECK(ctx.profile()[1].ms > 0);
}

TEST_CASE("a convolution with a residual (a fused Add) and ReLU runs on the device: conv, Add, ReLU there") {
  Graph g;
  const int x = g.input("x", {1, 4, 6, 6});
  const int r = g.input("r", {1, 8, 6, 6});
  const int y = g.act("y", {1, 8, 6, 6});
  Conv2dParams p;
  p.padding[0] = p.padding[1] = 1;
  p.activation.kind = ActivationKind::Relu;
  const Tensor w = randn({8, 4, 3, 3}), b = randn({8});
  g.op(OpKind::Conv2d, {x, g.weight("w", w), g.weight("b", b), r}, {y}, "conv", p);
  g.output(y);
  const auto ex = g.build(on_vulkan());
  CHECK(ex->fallback_ops().empty());
  CHECK(ex->placement(0) == Placement::Device);
  const Tensor in = randn({1, 4, 6, 6}), res = randn({1, 8, 6, 6});
  ExecutionContext cpu_ctx(g.build(ExecutorOptions{}));
  const std::vector<Tensor> expected = run_ok(cpu_ctx, {in, res});
  check_close(expected[0], relu(conv2d(in, w, b, {1, 1}, {1, 1}) + res), 1e-6, 1e-6);
  CHECK(expected[0].min().item<float>() == 0.0f);
  ExecutionContext ctx(ex);
  check_close(run_ok(ctx, {in, res})[0], expected[0], 1e-5, 1e-5);
}

TEST_CASE("int64 shape arithmetic stays on the host; the MLP matches the CPU executor") {
  // x [2, 3] -> shape -> reshape(fill [6], shape(x)); an MLP with a fused relu.
  Graph g;
  const int x = g.input("x", {2, 3});
  const int f = g.act("f", {6});
  const int s = g.act("s", {2}, DType::Int64);
  const int r = g.act("r", {2, 3});
  g.op(OpKind::Fill, {}, {f}, "fill_f", scalar(-0.5));
  g.op(OpKind::ShapeOf, {x}, {s}, "shape_x");
  g.op(OpKind::Reshape, {f, s}, {r}, "reshape_f");
  const Tensor w1 = randn({8, 3}), b1 = randn({8}), w2 = randn({2, 8});
  const int h = g.act("h", {2, 8});
  const int sum = g.act("sum", {2, 3});
  const int y = g.act("y", {2, 2});
  g.op(OpKind::Add, {x, r}, {sum}, "add_xr");
  LinearParams relu;
  relu.activation.kind = ActivationKind::Relu;
  g.op(OpKind::Linear, {sum, g.weight("w1", w1), g.weight("b1", b1)}, {h}, "fc1", relu);
  g.op(OpKind::Linear, {h, g.weight("w2", w2), -1}, {y}, "fc2", LinearParams{});
  g.output(y);
  g.output(r);
  const auto ex = g.build(on_vulkan(/*allow_fallback=*/true));
  CHECK(ex->placement(1) == Placement::Host);  // ShapeOf: never a fallback
  for (int k : ex->fallback_ops()) CHECK(k != 1);
  CHECK(ex->fallback_ops().empty());
  CHECK(ex->placement(4) == Placement::Device);
  CHECK(ex->describe_op(4) == "node 'fc1' (linear, float32)");

  const Tensor in = randn({2, 3});
  ExecutionContext cpu_ctx(g.build(ExecutorOptions{}));
  const std::vector<Tensor> expected = run_ok(cpu_ctx, {in});
  ExecutionContext ctx(ex);
  const uint64_t submits = context()->submit_count();
  const std::vector<Tensor> out = run_ok(ctx, {in});
  CHECK(context()->submit_count() - submits == 1);
  check_close(out[0], expected[0], 1e-5, 1e-5);
  check_equal(out[1], full({2, 3}, -0.5f));
  // Two contexts share the executor (and its uploaded weights).
  ExecutionContext ctx2(ex);
  check_close(run_ok(ctx2, {in})[0], expected[0], 1e-5, 1e-5);
}

TEST_CASE("fp16 precision: float values are float16 on the device, outputs come back float32") {
  REQUIRE(context()->caps().float16);
  const auto ex = fill_model().build(on_vulkan(/*allow_fallback=*/true, Precision::Float16));
  CHECK(ex->options().precision == Precision::Float16);
  CHECK(ex->describe_op(0) == "node 'fill0' (fill, float16)");
  CHECK(ex->placement(0) == Placement::Device);
  ExecutionContext ctx(ex);
  const std::vector<Tensor> out = run_ok(ctx, {});
  CHECK(out[0].dtype() == DType::Float32);
  check_equal(out[0], full({2, 3}, 2.5f));

  // fp16 on the CPU executor is refused.
  std::string error;
  ExecutorOptions cpu16;
  cpu16.precision = Precision::Float16;
  Result<std::shared_ptr<const Executor>> bad = fill_model().create(cpu16, &error);
  REQUIRE(!bad.ok());
  CHECK(bad.status() == Status::InvalidArgument);
  CHECK(error.find("fp16 precision needs a device (vulkan, cuda)") == 0);
}

TEST_CASE("fp16 with a fallback node: inputs and device values convert at the boundary") {
  Graph g;
  const int x = g.input("x", {3});
  const int c = g.act("c", {3});
  const int y = g.act("y", {3});
  g.op(OpKind::Fill, {}, {c}, "fill_c", scalar(0.25));
  g.op(OpKind::Mul, {x, c}, {y}, "mul_xc");
  g.output(y);
  const auto ex = g.build(on_vulkan(/*allow_fallback=*/true, Precision::Float16));
  ExecutionContext ctx(ex);
  const Tensor in = tensor(std::vector<float>{1000.f, -3.f, 0.1f}, {3});
  const std::vector<Tensor> out = run_ok(ctx, {in});
  CHECK(out[0].dtype() == DType::Float32);
  check_close(out[0], mul(in, 0.25), 1e-3, 1e-4);
}


TEST_CASE("an int8 Linear whose weight says per-row activations runs per row on vulkan, as on the CPU") {
  // x [3, 8]: rows 10^4 apart; w int8 [4, 8] per channel; per-row vs per-tensor
  // quantization differ visibly on the small row.
  auto build = [](ActivationQuant a) {
    Graph g;
    const int x = g.input("x", {3, 8});
    std::vector<int8_t> q(32);
    for (int i = 0; i < 32; ++i) q[static_cast<size_t>(i)] = static_cast<int8_t>((i * 37) % 255 - 127);
    TensorDef w;
    w.name = "w";
    w.shape = {4, 8};
    w.dtype = DType::Int8;
    w.data.resize(32);
    std::memcpy(w.data.data(), q.data(), 32);
    w.has_data = true;
    QuantDef qd;
    qd.scales = {0.01f, 0.02f, 0.005f, 0.03f};
    qd.axis = 0;
    qd.activations = a;
    w.quant = qd;
    const int wi = g.def.add_tensor(std::move(w));
    const int y = g.act("y", {3, 4});
    g.op(OpKind::Linear, {x, wi, -1}, {y}, "fc", LinearParams{});
    g.output(y);
    return g;
  };
  std::vector<float> xv(24);
  const float row_scale[3] = {1.0f, 100.0f, 0.01f};
  for (int i = 0; i < 24; ++i) xv[static_cast<size_t>(i)] = row_scale[i / 8] * (static_cast<float>((i * 7) % 11) - 5.0f);
  const Tensor x = tensor<float>(xv, {3, 8});
  auto run_on = [&](ActivationQuant a, const ExecutorOptions& o) {
    ExecutionContext ctx(build(a).build(o));
    return run_ok(ctx, {x})[0].contiguous().to_vector<float>();  // outputs come back to the host
  };
  const std::vector<float> cpu_row = run_on(ActivationQuant::PerRow, ExecutorOptions{});
  const std::vector<float> vk_row = run_on(ActivationQuant::PerRow, on_vulkan());
  const std::vector<float> cpu_tensor = run_on(ActivationQuant::PerTensor, ExecutorOptions{});
  REQUIRE(vk_row.size() == 12);
  float d_row = 0, d_tensor = 0;
  for (size_t i = 0; i < 12; ++i) {
    d_row = std::max(d_row, std::abs(vk_row[i] - cpu_row[i]) / std::max(1e-3f, std::abs(cpu_row[i])));
    if (i >= 8) d_tensor = std::max(d_tensor, std::abs(cpu_tensor[i] - cpu_row[i]) / std::max(1e-3f, std::abs(cpu_row[i])));
  }
  MESSAGE("max relative |vulkan - cpu| per row " << d_row << "; per tensor vs per row on the small row " << d_tensor);
  CHECK(d_row <= 1e-5f);
  CHECK(d_tensor >= 0.1f);  // the test would see a per-tensor device result
}

TEST_CASE("create() warms up: the pipelines exist before the first run (warm_up = false: at first use)") {
  vk::Context* c = vk::Context::get().get();
  for (const bool warm : {true, false}) {
    CAPTURE(warm);
    // An op this suite runs nowhere else, so its pipeline is new here.
    Graph g;
    const int x = g.input("x", {2, 3, 5});
    const int y = g.act("y", {2, 3, 5});
    g.op(warm ? OpKind::Sigmoid : OpKind::Tanh, {x}, {y}, "act");
    g.output(y);
    ExecutorOptions options = on_vulkan();
    options.warm_up = warm;
    const size_t before = c->pipeline_count();
    const std::shared_ptr<const Executor> ex = g.build(options);
    const size_t created = c->pipeline_count();
    CHECK(created == before + (warm ? 1 : 0));
    ExecutionContext ctx(ex);
    const Tensor in = randn({2, 3, 5});
    std::string error;
    Result<std::vector<Tensor>> out = ctx.run({in}, {}, &error);
    REQUIRE_MESSAGE(out.ok(), error);
    CHECK(c->pipeline_count() == before + 1);
    check_close(out.get()[0], warm ? sigmoid(in) : tanh(in), 1e-5, 1e-6);
  }
}

EMBER_VULKAN_NO_VALIDATION_ERRORS()
