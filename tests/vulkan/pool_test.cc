// Vulkan MaxPool2d, AvgPool2d, AdaptiveAvgPool2d and Embedding (the gather-
// like ops) against the CPU reference of the same front-end call. Pooling
// accumulates float32 in float in the same order as the reference: results
// agree to rounding (1e-6; float16: 2e-3 vs the float32 result rounded);
// embedding copies bits: exact.
#include <vector>

#include "kernels/vulkan/vk_kernels.h"
#include "tests/vulkan/vulkan_testing.h"

using namespace ember;
using namespace ember::testing;

namespace {

void check_vk(const Tensor& vk, const Tensor& cpu) {
  REQUIRE(vk.device() == kVulkan);
  check_close(to_cpu(vk), cpu, 1e-6, 1e-6);
}

const std::vector<Shape> kPoolShapes = {{1, 1, 1, 1}, {2, 3, 7, 9}, {1, 2, 17, 5}, {1, 1, 257, 3}};

}  // namespace

TEST_CASE("max_pool2d: kernels, strides, padding, dilation, ceil_mode") {
  manual_seed(21);
  struct Case {
    std::vector<int64_t> k, s, p, d;
    bool ceil;
  };
  const std::vector<Case> cases = {
      {{1}, {}, {0}, {1}, false},        {{2}, {}, {0}, {1}, false},         {{3}, {2}, {1}, {1}, false},
      {{3}, {2}, {1}, {1}, true},        {{3, 2}, {1, 2}, {1, 0}, {2, 1}, false}, {{2, 3}, {3, 2}, {1, 1}, {1, 2}, true},
  };
  for (const Shape& s : kPoolShapes) {
    const Tensor x = randn(s);
    for (const Case& c : cases) {
      CAPTURE(shape_str(s));
      Tensor cpu;
      try {
        cpu = max_pool2d(x, c.k, c.s, c.p, c.d, c.ceil);
      } catch (const Error&) {
        continue;  // output too small for this input: the front-end's error, not the kernel's
      }
      check_vk(max_pool2d(to_vk(x), c.k, c.s, c.p, c.d, c.ceil), cpu);
    }
  }
}

TEST_CASE("max_pool2d: NaN wins, channels-last in and out, unbatched input") {
  manual_seed(22);
  Tensor x = randn({1, 2, 6, 6});
  x[0][1][2][3].fill_(NAN);
  check_vk(max_pool2d(to_vk(x), {3}, {2}, {1}), max_pool2d(x, {3}, {2}, {1}));
  const Tensor nhwc = randn({2, 5, 7, 3});
  const Tensor vx = to_vk(nhwc).permute({0, 3, 1, 2});  // [2, 3, 5, 7], channels last
  const Tensor y = max_pool2d(vx, {2}, {1}, {1});
  CHECK(y.suggest_memory_format() == MemoryFormat::ChannelsLast);
  check_close(to_cpu(y.permute({0, 2, 3, 1})).permute({0, 3, 1, 2}),
              max_pool2d(nhwc.permute({0, 3, 1, 2}), {2}, {1}, {1}), 1e-6, 1e-6);
  const Tensor u = randn({3, 8, 8});
  check_vk(max_pool2d(to_vk(u), {2}), max_pool2d(u, {2}));
}

TEST_CASE("avg_pool2d: padding counted or not, divisor override, ceil_mode windows past the edge") {
  manual_seed(23);
  for (const Shape& s : kPoolShapes) {
    const Tensor x = randn(s);
    for (bool include : {true, false}) {
      for (bool ceil : {false, true}) {
        for (std::optional<int64_t> div : {std::optional<int64_t>(), std::optional<int64_t>(5)}) {
          CAPTURE(shape_str(s));
          CAPTURE(include);
          CAPTURE(ceil);
          Tensor cpu;
          try {
            cpu = avg_pool2d(x, {3, 2}, {2, 2}, {1, 1}, ceil, include, div);
          } catch (const Error&) {
            continue;  // output too small: the front-end's error
          }
          check_vk(avg_pool2d(to_vk(x), {3, 2}, {2, 2}, {1, 1}, ceil, include, div), cpu);
          check_vk(avg_pool2d(to_vk(x), {1}, {1}, {0}, ceil, include, div),
                   avg_pool2d(x, {1}, {1}, {0}, ceil, include, div));
        }
      }
    }
  }
  const Tensor nhwc = randn({1, 6, 5, 4});
  const Tensor vx = to_vk(nhwc).permute({0, 3, 1, 2});
  check_close(to_cpu(avg_pool2d(vx, {2}, {2}, {1}, true, false).permute({0, 2, 3, 1})).permute({0, 3, 1, 2}),
              avg_pool2d(nhwc.permute({0, 3, 1, 2}), {2}, {2}, {1}, true, false), 1e-6, 1e-6);
}

TEST_CASE("adaptive_avg_pool2d: smaller, equal and larger outputs, non-contiguous input") {
  manual_seed(24);
  for (const Shape& s : kPoolShapes) {
    const Tensor x = randn(s);
    for (const std::vector<int64_t>& o :
         std::vector<std::vector<int64_t>>{{1, 1}, {3, 4}, {5, 7}, {s[2], s[3]}, {2 * s[2] + 1, 1}}) {
      CAPTURE(shape_str(s));
      CAPTURE(o[0]);
      CAPTURE(o[1]);
      check_vk(adaptive_avg_pool2d(to_vk(x), o), adaptive_avg_pool2d(x, o));
    }
  }
  const Tensor x = randn({2, 3, 9, 10});
  const Tensor t = to_vk(x.transpose(2, 3).contiguous()).transpose(2, 3);
  REQUIRE(!t.is_contiguous());
  check_vk(adaptive_avg_pool2d(t, {4, 3}), adaptive_avg_pool2d(x, {4, 3}));
  check_vk(adaptive_avg_pool2d(t, {0, 3}), adaptive_avg_pool2d(x, {0, 3}));  // empty output
}

TEST_CASE("pooling errors: dtypes without a Vulkan kernel") {
  const Tensor l = to_vk(arange(16, DType::Int64).reshape({1, 1, 4, 4}));
  CHECK_THROWS_WITH_AS(avg_pool2d(l, {2}), "\"avg_pool2d\" not implemented for 'Long' on vulkan", ember::Error);
  const Tensor d = to_vk(arange(16, DType::Float64).reshape({1, 1, 4, 4}));
  CHECK_THROWS_WITH_AS(max_pool2d(d, {2}), "\"max_pool2d\" not implemented for 'Double' on vulkan", ember::Error);
}

// float16 pooling (float32 arithmetic in the shader): the CPU refuses Half
// pooling (as PyTorch 1.13), so the reference pools the float16 values in
// float32 and rounds the result to float16; within 2e-3 (max: exact).
TEST_CASE("max_pool2d, avg_pool2d, adaptive_avg_pool2d: float16") {
  REQUIRE(vk::Context::get().ok());
  if (!vk::Context::get().get()->caps().float16) {
    MESSAGE("device without shaderFloat16: skipped");
    return;
  }
  manual_seed(25);
  const auto f32 = [](const Tensor& t) { return t.to(DType::Float32); };
  const auto f16 = [](const Tensor& t) { return t.to(DType::Float16); };
  for (const Shape& s : {Shape{1, 1, 3, 3}, Shape{2, 3, 7, 9}, Shape{1, 2, 17, 5}, Shape{1, 1, 257, 3}}) {
    CAPTURE(shape_str(s));
    const Tensor h = f16(randn(s));
    const Tensor vh = to_vk(h);
    Tensor y = to_cpu(max_pool2d(vh, {2}, {1}, {1}));
    REQUIRE(y.dtype() == DType::Float16);
    check_equal(y, f16(max_pool2d(f32(h), {2}, {1}, {1})));
    check_equal(to_cpu(max_pool2d(vh, {3, 2}, {2, 1}, {1, 0}, {2, 1}, true)),
                f16(max_pool2d(f32(h), {3, 2}, {2, 1}, {1, 0}, {2, 1}, true)));
    for (const bool include : {true, false}) {
      check_close(to_cpu(avg_pool2d(vh, {3, 2}, {2, 2}, {1, 1}, true, include)),
                  f16(avg_pool2d(f32(h), {3, 2}, {2, 2}, {1, 1}, true, include)), 2e-3, 2e-3);
    }
    check_close(to_cpu(avg_pool2d(vh, {2}, {2}, {0}, false, true, 3)),
                f16(avg_pool2d(f32(h), {2}, {2}, {0}, false, true, 3)), 2e-3, 2e-3);
    for (const std::vector<int64_t>& o : {std::vector<int64_t>{1, 1}, {3, 2}, {5, 7}}) {
      check_close(to_cpu(adaptive_avg_pool2d(vh, o)), f16(adaptive_avg_pool2d(f32(h), o)), 2e-3, 2e-3);
    }
  }
  // Non-contiguous (channels-last and transposed) float16 input, NaN in a max window.
  Tensor h = f16(randn({2, 5, 7, 3}));
  h[1][2][3][1].fill_(NAN);
  const Tensor vx = to_vk(h).permute({0, 3, 1, 2});
  const Tensor cx = f32(h).permute({0, 3, 1, 2});
  check_equal(to_cpu(max_pool2d(vx, {3}, {2}, {1})), f16(max_pool2d(cx, {3}, {2}, {1})));
  check_close(to_cpu(adaptive_avg_pool2d(vx, {2, 3})), f16(adaptive_avg_pool2d(cx, {2, 3})), 2e-3, 2e-3);
  const Tensor t = f16(randn({1, 2, 6, 9}));
  check_close(to_cpu(avg_pool2d(vk_transposed_view(t), {2}, {2})), f16(avg_pool2d(f32(t), {2}, {2})), 2e-3, 2e-3);
  // The CPU keeps PyTorch 1.13's refusal.
  CHECK_THROWS_WITH_AS(max_pool2d(t, {2}), "\"max_pool2d\" not implemented for 'Half'", ember::Error);
  CHECK_THROWS_WITH_AS(avg_pool2d(t, {2}), "\"avg_pool2d\" not implemented for 'Half'", ember::Error);
  CHECK_THROWS_WITH_AS(adaptive_avg_pool2d(t, {2, 2}), "\"adaptive_avg_pool2d\" not implemented for 'Half'",
                       ember::Error);
}

TEST_CASE("embedding: int64 indices of any shape, float32 and int32 weights, strided weight") {
  manual_seed(25);
  const Tensor w = randn({10, 7});
  for (const Shape& s : std::vector<Shape>{{}, {1}, {5}, {3, 4}, {2, 3, 2}, {300}}) {
    const Tensor idx = randint(0, 10, s);
    CAPTURE(shape_str(s));
    check_equal(to_cpu(embedding(to_vk(w), to_vk(idx))), embedding(w, idx));
  }
  const Tensor wi = randint(-100, 100, {6, 3}, DType::Int32);
  const Tensor idx = tensor<int64_t>({5, 0, 0, 3});
  check_equal(to_cpu(embedding(to_vk(wi), to_vk(idx))), embedding(wi, idx));
  const Tensor wt = vk_transposed_view(w);  // w's values, column-major on the device
  REQUIRE(!wt.is_contiguous());
  check_equal(to_cpu(embedding(wt, to_vk(idx))), embedding(w, idx));
  const Tensor empty_idx = zeros({2, 0}, DType::Int64);
  CHECK(embedding(to_vk(w), to_vk(empty_idx)).sizes() == Shape{2, 0, 7});
}

TEST_CASE("embedding: float16 weights (16-bit words copied)") {
  manual_seed(27);
  const Tensor w = randn({11, 5}).to(DType::Float16);
  for (const Shape& s : std::vector<Shape>{{1}, {7}, {2, 3}}) {
    const Tensor idx = randint(0, 11, s);
    check_equal(to_cpu(embedding(to_vk(w), to_vk(idx))), embedding(w, idx));
  }
  const Tensor wt = vk_transposed_view(w);
  const Tensor idx = tensor<int64_t>({10, 0, 3});
  check_equal(to_cpu(embedding(wt, to_vk(idx))), embedding(w, idx));
}

TEST_CASE("embedding: int32 indices") {
  manual_seed(26);
  const Tensor w = randn({9, 4});
  const Tensor idx = randint(0, 9, {3, 5}, DType::Int32);
  check_equal(to_cpu(embedding(to_vk(w), to_vk(idx))), embedding(w, idx));
}

TEST_CASE("embedding: out-of-range indices are refused by the front-end; the kernel writes zeros for them") {
  const Tensor w = to_vk(arange(12, DType::Float32).reshape({4, 3}));
  CHECK_THROWS_WITH_AS(embedding(w, to_vk(tensor<int64_t>({1, 4}))), "index out of range in self", ember::Error);
  CHECK_THROWS_WITH_AS(embedding(w, to_vk(tensor<int64_t>({-1}))), "index out of range in self", ember::Error);
  // The kernel itself, bypassing the front-end's check.
  for (DType t : {DType::Int64, DType::Int32}) {
    const Tensor idx = to_vk(tensor<int64_t>({2, -1, 4, int64_t{1} << 32, 0}).to(t));
    Tensor out = to_vk(full({5, 3}, 7.0f));
    const TensorView in[] = {w.kernel_view(), idx.kernel_view()};
    TensorView outs[] = {out.kernel_view()};
    REQUIRE(vk::embedding(KernelContext{}, Span<const TensorView>(in, 2), Span<TensorView>(outs, 1), OpParams{}) ==
            Status::Ok);
    const Tensor expected = tensor<float>({6, 7, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2}, {5, 3});
    // int32: 2^32 truncates to 0, a valid row.
    const Tensor expected32 = tensor<float>({6, 7, 8, 0, 0, 0, 0, 0, 0, 0, 1, 2, 0, 1, 2}, {5, 3});
    check_equal(to_cpu(out), t == DType::Int64 ? expected : expected32);
  }
}

// Needs the Vulkan Copy kernel (feat/vk-elem): the front-end checks the
// indices on the host, and copying a non-contiguous Vulkan tensor there makes
// it contiguous on the device first.
TEST_CASE("embedding: non-contiguous indices") {
  manual_seed(28);
  const Tensor w = randn({8, 3});
  const Tensor idx = randint(0, 8, {4, 5});
  const Tensor t = vk_transposed_view(idx);
  REQUIRE(!t.is_contiguous());
  check_equal(to_cpu(embedding(to_vk(w), t)), embedding(w, idx));
}

EMBER_VULKAN_NO_VALIDATION_ERRORS()
