// Conv2d on Vulkan (kernels/vulkan/conv2d.cc: the implicit GEMM, the direct
// shader, the depthwise shader, 1x1 stride-1 convolutions on the tiled GEMM), compared
// with the CPU result of the same front-end call. fp32 within 1e-4 relative
// (plus 1e-4 absolute where sums cancel): the shaders sum the taps in another
// order than the CPU kernels.
#include "runtime/backend/backend.h"
#include "runtime/ops/dispatch.h"
#include "tests/vulkan/vulkan_testing.h"

using namespace ember;
using namespace ember::testing;

namespace {

struct ConvCase {
  const char* name;
  Shape x, w;
  bool bias;
  int64_t stride, padding, dilation, groups;
};

// Shapes from resnet18 and mobilenet_v2 (fewer channels, odd sizes), and the
// other parameters each path must honour.
const ConvCase kCases[] = {
    {"resnet18 stem 7x7 s2 p3", {1, 3, 33, 29}, {16, 3, 7, 7}, false, 2, 3, 1, 1},
    {"3x3 s1 p1", {2, 16, 15, 17}, {24, 16, 3, 3}, true, 1, 1, 1, 1},
    {"3x3 s2 p1", {1, 16, 15, 15}, {32, 16, 3, 3}, false, 2, 1, 1, 1},
    {"1x1 s2 downsample", {1, 16, 15, 15}, {32, 16, 1, 1}, true, 2, 0, 1, 1},
    {"1x1 pointwise (GEMM)", {2, 32, 7, 9}, {17, 32, 1, 1}, true, 1, 0, 1, 1},
    {"1x1 pointwise, 65 channels (GEMM)", {1, 65, 14, 14}, {257, 65, 1, 1}, false, 1, 0, 1, 1},
    {"1x1 with padding", {1, 8, 5, 5}, {4, 8, 1, 1}, true, 1, 1, 1, 1},
    {"depthwise 3x3 s1", {2, 32, 15, 13}, {32, 1, 3, 3}, true, 1, 1, 1, 32},
    {"depthwise 3x3 s2", {1, 24, 16, 17}, {24, 1, 3, 3}, false, 2, 1, 1, 24},
    {"depthwise 5x5 dilation 2", {1, 8, 13, 11}, {8, 1, 5, 5}, true, 1, 4, 2, 8},
    {"depthwise with a multiplier (groups = C, Cout = 2C)", {1, 4, 9, 9}, {8, 1, 3, 3}, true, 1, 1, 1, 4},
    {"groups 2", {1, 8, 11, 11}, {6, 4, 3, 3}, true, 1, 1, 1, 2},
    {"groups 2, 1x1", {2, 8, 5, 7}, {6, 4, 1, 1}, true, 1, 0, 1, 2},
    {"dilation 2", {1, 6, 17, 15}, {5, 6, 3, 3}, true, 1, 2, 2, 1},
    {"3x5 kernel, stride 3, no padding", {1, 3, 19, 23}, {7, 3, 3, 5}, true, 3, 0, 1, 1},
    {"1x1 input", {1, 5, 1, 1}, {3, 5, 1, 1}, true, 1, 0, 1, 1},
    // Few output channels per group run on the direct shader, 16 or more on the
    // implicit GEMM: each parameter on both.
    {"groups 2, 32 channels per group (implicit GEMM)", {2, 16, 9, 9}, {64, 8, 3, 3}, true, 1, 1, 1, 2},
    {"groups 4, 3 channels per group (direct)", {1, 8, 7, 7}, {12, 2, 3, 3}, false, 2, 1, 1, 4},
    {"dilation 2, 17 output channels (implicit GEMM)", {1, 6, 17, 15}, {17, 6, 3, 3}, true, 2, 2, 2, 1},
    {"3x5 kernel, stride 3, 65 output channels (implicit GEMM)", {1, 3, 19, 23}, {65, 3, 3, 5}, false, 3, 0, 1, 1},
    {"1x1 s2, 7 output channels (direct)", {1, 16, 15, 15}, {7, 16, 1, 1}, true, 2, 0, 1, 1},
};

Tensor conv(const Tensor& x, const Tensor& w, const Tensor& b, const ConvCase& c) {
  return conv2d(x, w, b, {c.stride}, {c.padding}, {c.dilation}, c.groups);
}

// A Vulkan channels_last view of the NCHW tensor t (NHWC uploaded, permuted back).
Tensor vk_channels_last(const Tensor& t) { return to_vk(t.permute({0, 2, 3, 1}).contiguous()).permute({0, 3, 1, 2}); }


}  // namespace

TEST_CASE("conv2d on vulkan matches the CPU: resnet18 / mobilenet_v2 shapes, groups, dilation, bias") {
  manual_seed(11);
  for (const ConvCase& c : kCases) {
    const std::string name = c.name;
    CAPTURE(name);
    const Tensor x = randn(c.x), w = randn(c.w), b = c.bias ? randn({c.w[0]}) : Tensor();
    const Tensor expected = conv(x, w, b, c);
    const Tensor got = conv(to_vk(x), to_vk(w), c.bias ? to_vk(b) : Tensor(), c);
    REQUIRE(got.is_contiguous());
    check_close(to_cpu(got), expected, 1e-4, 1e-4);
  }
}

TEST_CASE("conv2d on vulkan reads strided inputs in place: channels_last, narrowed, strided bias") {
  manual_seed(12);
  for (const ConvCase& c : kCases) {
    const std::string name = c.name;
    CAPTURE(name);
    const Tensor x = randn(c.x), w = randn(c.w), b = c.bias ? randn({c.w[0]}) : Tensor();
    const Tensor expected = conv(x, w, b, c);
    // channels_last input: the output is channels_last too (as on the CPU).
    const Tensor vx = vk_channels_last(x);
    if (c.x[2] * c.x[3] > 1) REQUIRE(!vx.is_contiguous());
    const Tensor got = conv(vx, to_vk(w), c.bias ? to_vk(b) : Tensor(), c);
    REQUIRE(got.is_contiguous(MemoryFormat::ChannelsLast));
    // Download the NHWC buffer and compare it with the CPU result laid out NHWC.
    const Tensor got_nhwc = got.permute({0, 2, 3, 1});
    REQUIRE(got_nhwc.is_contiguous());
    check_close(to_cpu(got_nhwc), expected.permute({0, 2, 3, 1}).contiguous(), 1e-4, 1e-4);
  }
  // An input narrowed along W (H and W no longer merge: the 1x1 conv leaves the
  // GEMM for the direct shader) and a bias with stride 2.
  const Tensor wide = randn({2, 8, 6, 11});
  const Tensor x = wide.narrow(3, 2, 7);
  const Tensor vx = to_vk(wide).narrow(3, 2, 7);
  const Tensor w = randn({5, 8, 1, 1}), b2 = randn({10});
  const Tensor b = b2.slice(0, 0, 10, 2);
  const Tensor vb = to_vk(b2).slice(0, 0, 10, 2);
  REQUIRE(vb.stride(0) == 2);
  check_close(to_cpu(conv2d(vx, to_vk(w), vb)), conv2d(x, w, b), 1e-4, 1e-4);
  const Tensor w3 = randn({5, 8, 3, 3});
  check_close(to_cpu(conv2d(vx, to_vk(w3), vb, {2}, {1})), conv2d(x, w3, b, {2}, {1}), 1e-4, 1e-4);
}

TEST_CASE("conv2d on vulkan: a 1x1 stride-1 convolution is one GEMM dispatch, others one dispatch") {
  manual_seed(13);
  vk::Context* c = vk::Context::get().get();
  const Tensor x = to_vk(randn({2, 16, 9, 9})), w1 = to_vk(randn({8, 16, 1, 1})), w3 = to_vk(randn({8, 16, 3, 3}));
  const Tensor b = to_vk(randn({8}));
  uint64_t before = c->dispatch_count();
  (void)conv2d(x, w1, b);
  CHECK(c->dispatch_count() - before == 1);
  before = c->dispatch_count();
  (void)conv2d(x, w3, b, {1}, {1});
  CHECK(c->dispatch_count() - before == 1);
  before = c->dispatch_count();
  (void)conv2d(x, to_vk(randn({16, 1, 3, 3})), Tensor(), {1}, {1}, {1}, 16);
  CHECK(c->dispatch_count() - before == 1);
}

TEST_CASE("conv2d on vulkan ignores Conv2dParams::activation (the executor applies it); the CPU float32 kernel applies it") {
  manual_seed(14);
  const Tensor x = randn({1, 4, 6, 6}), w = randn({3, 4, 3, 3}), b = randn({3});
  Conv2dParams p;
  p.padding[0] = p.padding[1] = 1;
  const Tensor plain = empty({1, 3, 6, 6});
  unwrap(run_kernel(OpKind::Conv2d, {x, w, b}, {plain}, p));
  p.activation.kind = ActivationKind::Clamp;
  p.activation.min = 0.0;
  p.activation.max = 6.0;
  const Tensor cpu_out = empty({1, 3, 6, 6});
  unwrap(run_kernel(OpKind::Conv2d, {x, w, b}, {cpu_out}, p));
  check_close(cpu_out, clamp(plain, 0.0, 6.0), 1e-6, 1e-6);  // fused in the CPU kernel
  CHECK(min(plain).item<float>() < 0.0f);
  const Tensor vk_out = empty({1, 3, 6, 6}, TensorOptions(kVulkan));
  unwrap(run_kernel(OpKind::Conv2d, {to_vk(x), to_vk(w), to_vk(b)}, {vk_out}, p));
  check_close(to_cpu(vk_out), plain, 1e-4, 1e-4);  // not applied on Vulkan
  // Conv + Relu / Clip (0, 6), as the executor runs a fused activation.
  const Tensor vx = to_vk(x), vw = to_vk(w), vb = to_vk(b);
  check_close(to_cpu(relu(conv2d(vx, vw, vb, {1}, {1}))), relu(conv2d(x, w, b, {1}, {1})), 1e-4, 1e-4);
  check_close(to_cpu(clamp(conv2d(vx, vw, vb, {1}, {1}), 0.0, 6.0)), clamp(conv2d(x, w, b, {1}, {1}), 0.0, 6.0),
              1e-4, 1e-4);
}

// float16 on the device against the CPU float32 convolution of the same
// (half-rounded) values: the shaders accumulate in float32 and round each
// output once, so the error is the output's rounding plus the accumulation
// order: within 1e-2 relative plus 1e-2 x max|y| absolute (sums cancel).
void check_f16(const Tensor& got, const Tensor& expected32) {
  REQUIRE(got.dtype() == DType::Float16);
  const double scale = max(abs(expected32)).item<float>();
  check_close(to_cpu(got).to(DType::Float32), expected32, 1e-2, 1e-2 * scale);
}

TEST_CASE("conv2d on vulkan, float16 storage with float32 accumulation: every path, contiguous and channels_last") {
  REQUIRE(vk::Context::get().get()->caps().float16);
  manual_seed(15);
  for (const ConvCase& c : kCases) {
    const std::string name = c.name;
    CAPTURE(name);
    const Tensor x = randn(c.x).to(DType::Float16), w = randn(c.w).to(DType::Float16);
    const Tensor b = c.bias ? randn({c.w[0]}).to(DType::Float16) : Tensor();
    const Tensor expected =
        conv(x.to(DType::Float32), w.to(DType::Float32), c.bias ? b.to(DType::Float32) : Tensor(), c);
    const Tensor got = conv(to_vk(x), to_vk(w), c.bias ? to_vk(b) : Tensor(), c);
    REQUIRE(got.is_contiguous());
    check_f16(got, expected);
    const Tensor got_cl = conv(vk_channels_last(x), to_vk(w), c.bias ? to_vk(b) : Tensor(), c);
    REQUIRE(got_cl.is_contiguous(MemoryFormat::ChannelsLast));
    check_f16(got_cl.permute({0, 2, 3, 1}), expected.permute({0, 2, 3, 1}).contiguous());
  }
  // A narrowed input (the 1x1 conv on the direct shader) and a bias with stride 2.
  const Tensor wide = randn({2, 8, 6, 11}).to(DType::Float16);
  const Tensor w = randn({5, 8, 1, 1}).to(DType::Float16), b2 = randn({10}).to(DType::Float16);
  const Tensor vx = to_vk(wide).narrow(3, 2, 7), vb = to_vk(b2).slice(0, 0, 10, 2);
  const Tensor x32 = wide.to(DType::Float32).narrow(3, 2, 7), b32 = b2.to(DType::Float32).slice(0, 0, 10, 2);
  check_f16(conv2d(vx, to_vk(w), vb), conv2d(x32, w.to(DType::Float32), b32));
}

TEST_CASE("conv2d on vulkan, float16: one dispatch per path, as float32") {
  manual_seed(16);
  vk::Context* c = vk::Context::get().get();
  const Tensor x = to_vk(randn({2, 16, 9, 9}).to(DType::Float16));
  const Tensor b = to_vk(randn({32}).to(DType::Float16));
  for (const Shape& ws : {Shape{32, 16, 1, 1}, Shape{32, 16, 3, 3}, Shape{16, 1, 3, 3}}) {
    const Tensor w = to_vk(randn(ws).to(DType::Float16));
    const int64_t groups = ws[1] == 1 ? 16 : 1;
    const Tensor vb = groups == 16 ? Tensor() : b;
    const uint64_t before = c->dispatch_count();
    (void)conv2d(x, w, vb, {1}, {ws[2] / 2}, {1}, groups);
    CHECK(c->dispatch_count() - before == 1);
  }
  const Tensor w4 = to_vk(randn({4, 16, 3, 3}).to(DType::Float16));  // direct: 4 output channels
  const uint64_t before = c->dispatch_count();
  (void)conv2d(x, w4, Tensor(), {2});
  CHECK(c->dispatch_count() - before == 1);
}

TEST_CASE("conv2d float16: the CPU refuses Half (as PyTorch 1.13), mixed dtypes are refused on vulkan") {
  const Tensor h = ones({1, 1, 3, 3}, DType::Float16);
  CHECK_THROWS_WITH_AS(conv2d(h, h), "\"slow_conv2d_cpu\" not implemented for 'Half'", ember::Error);
  const Tensor vh = to_vk(h);
  CHECK_THROWS_WITH_AS(conv2d(vh, to_vk(ones({1, 1, 3, 3}))), "expected scalar type Half but found Float",
                       ember::Error);
  CHECK_THROWS_WITH_AS(conv2d(vh, vh, to_vk(ones({1}))),
                       "Input type (c10::Half) and bias type (float) should be the same", ember::Error);
  // Straight to the kernel: a float32 output for half operands.
  const Tensor out = empty({1, 1, 1, 1}, TensorOptions(kVulkan));
  CHECK_THROWS_WITH_AS(unwrap(run_kernel(OpKind::Conv2d, {vh, vh, Tensor()}, {out}, Conv2dParams{})),
                       doctest::Contains("kernel \"conv2d\" on vulkan failed"), ember::Error);
}

TEST_CASE("conv2d on vulkan: empty batches and channels") {
  const Tensor w = to_vk(randn({4, 3, 3, 3}));
  const Tensor y = conv2d(to_vk(empty({0, 3, 8, 8})), w);
  CHECK(y.sizes() == Shape{0, 4, 6, 6});
  const Tensor y0 = conv2d(to_vk(empty({2, 0, 8, 8})), to_vk(empty({4, 0, 3, 3})));
  CHECK(y0.sizes() == Shape{2, 0, 6, 6});
}

TEST_CASE("conv2d on vulkan: what the kernel refuses, and why") {
  const Tensor x = to_vk(randn({1, 4, 5, 5})), out = empty({1, 4, 3, 3}, TensorOptions(kVulkan));
  // A weight that is not contiguous (the front-end always passes a contiguous one).
  const Tensor w = to_vk(randn({3, 3, 4, 4})).permute({3, 2, 0, 1});
  Conv2dParams p;
  CHECK_THROWS_WITH_AS(unwrap(run_kernel(OpKind::Conv2d, {x, w, Tensor()}, {out}, p)),
                       doctest::Contains("conv2d on vulkan needs a contiguous weight"), ember::Error);
  // Front-end checks as on the CPU.
  CHECK_THROWS_WITH_AS(conv2d(x, to_vk(randn({4, 3, 3, 3}))),
                       "Given groups=1, weight of size [4, 3, 3, 3], expected input[1, 4, 5, 5] to have 3 channels, "
                       "but got 4 channels instead",
                       ember::Error);
  // Integer convolutions have no Vulkan kernel.
  const Tensor xi = to_vk(ones({1, 1, 3, 3}, DType::Int32));
  CHECK_THROWS_WITH_AS(conv2d(xi, xi), "\"conv2d\" not implemented for 'Int' on vulkan", ember::Error);
}

EMBER_VULKAN_NO_VALIDATION_ERRORS()
