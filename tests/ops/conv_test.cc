// conv2d against PyTorch 1.13 (golden_conv.py): stride, padding, dilation,
// groups (depthwise too), 1x1, bias or none, unbatched input, channels_last
// input and weight, non-contiguous input, dtypes, and every error message; and
// the float32 CPU kernel (im2col + GEMM) against the reference kernel.
#include <string>
#include <vector>

#include "runtime/core/thread_pool.h"
#include "runtime/ops/qlinear.h"
#include "tests/harness/testing.h"

using namespace ember;
using ember::testing::check_close;
using ember::testing::check_equal;
using ember::testing::check_error;
using ember::testing::golden;
using ember::testing::has_golden;

namespace {

struct Spec {
  const char* name;
  Shape stride, padding, dilation;
  int64_t groups;
};

const Spec kSpecs[] = {
    {"basic", {1, 1}, {0, 0}, {1, 1}, 1},      {"nobias", {1, 1}, {0, 0}, {1, 1}, 1},
    {"stride", {2, 3}, {0, 0}, {1, 1}, 1},     {"pad", {1, 1}, {1, 2}, {1, 1}, 1},
    {"dilation", {1, 1}, {1, 1}, {2, 3}, 1},   {"all", {2, 1}, {2, 1}, {1, 2}, 1},
    {"groups", {1, 1}, {1, 1}, {1, 1}, 2},     {"depthwise", {1, 1}, {1, 1}, {1, 1}, 5},
    {"depthwise_mult", {2, 2}, {1, 1}, {1, 1}, 3}, {"pointwise", {1, 1}, {0, 0}, {1, 1}, 1},
    {"pointwise_stride", {2, 2}, {0, 0}, {1, 1}, 1}, {"big", {1, 1}, {1, 1}, {1, 1}, 1},
    {"empty_batch", {1, 1}, {0, 0}, {1, 1}, 1},
};

Tensor run(const Spec& s, const Tensor& x, const Tensor& w) {
  const std::string p = std::string("conv.") + s.name;
  const Tensor bias = has_golden(p + ".bias") ? golden(p + ".bias") : Tensor();
  return conv2d(x, w, bias, s.stride, s.padding, s.dilation, s.groups);
}

Tensor f32(IntArrayRef shape) { return ones(shape); }

}  // namespace

TEST_CASE("conv2d: hand-computed values") {
  // 1x1x3x3 input, 2x2 kernel of ones: sums of 2x2 windows; bias 10.
  const Tensor x = arange(9.0).view({1, 1, 3, 3});
  const Tensor out = conv2d(x, ones({1, 1, 2, 2}), full({1}, 10.0));
  check_equal(out, tensor({18.0, 22.0, 30.0, 34.0}).view({1, 1, 2, 2}));
  // 1x1 kernel, padding 1, stride 2: only the centre of the padded 5x5 grid hits data.
  check_equal(conv2d(x, ones({1, 1, 1, 1}), Tensor(), {2, 2}, {1, 1}),
              tensor({{0.0, 0.0, 0.0}, {0.0, 4.0, 0.0}, {0.0, 0.0, 0.0}}).view({1, 1, 3, 3}));
  // A single value for stride / padding / dilation applies to both dims.
  check_equal(conv2d(x, ones({1, 1, 1, 1}), Tensor(), {2}, {1}, {1}),
              tensor({{0.0, 0.0, 0.0}, {0.0, 4.0, 0.0}, {0.0, 0.0, 0.0}}).view({1, 1, 3, 3}));
}

TEST_CASE("conv2d: stride, padding, dilation, groups, 1x1 against PyTorch") {
  for (const Spec& s : kSpecs) {
    CAPTURE(s.name);
    const std::string p = std::string("conv.") + s.name;
    const Tensor x = golden(p + ".x"), w = golden(p + ".w"), expected = golden(p + ".out");
    // "big" takes the Winograd path (kernels/cpu/winograd.h), whose rounding
    // scales with the output's spread (std 12 here: unit weights, 16 channels),
    // not with each element: about 1e-5 of it.
    const double atol = std::string(s.name) == "big" ? 2e-4 : 1e-5;
    check_close(run(s, x, w), expected, 1e-4, atol);
    // Non-contiguous input (W stride != 1): the strided im2col path.
    check_close(run(s, x.transpose(2, 3).contiguous().transpose(2, 3), w), expected, 1e-4, atol);
    // channels_last input: same values, channels_last output.
    const Tensor cl = run(s, x.contiguous(MemoryFormat::ChannelsLast), w);
    check_close(cl, expected, 1e-4, atol);
    if (expected.numel() > 0) CHECK(cl.is_contiguous(MemoryFormat::ChannelsLast));
    // channels_last weight: channels_last output too, as in PyTorch.
    const Tensor wcl = run(s, x, w.contiguous(MemoryFormat::ChannelsLast));
    check_close(wcl, expected, 1e-4, atol);
    // The float64 reference kernel on the same data.
    const Tensor bias = has_golden(p + ".bias") ? golden(p + ".bias").to(DType::Float64) : Tensor();
    check_close(conv2d(x.to(DType::Float64), w.to(DType::Float64), bias, s.stride, s.padding, s.dilation, s.groups),
                expected.to(DType::Float64), 1e-5, 1e-5);
  }
  // PyTorch's strides for channels_last output: [2, 4, 3, 3] -> (36, 1, 12, 4).
  const Tensor cl = conv2d(ones({2, 3, 5, 5}).contiguous(MemoryFormat::ChannelsLast), ones({4, 3, 3, 3}));
  CHECK(cl.strides() == Shape{36, 1, 12, 4});
  // Ambiguous layouts follow PyTorch's stride rules: C == 1 channels_last input.
  CHECK(conv2d(empty_strided({1, 1, 5, 5}, {25, 1, 5, 1}).fill_(1.0), ones({4, 1, 3, 3})).strides() ==
        Shape{36, 1, 12, 4});
  CHECK(conv2d(ones({1, 1, 5, 5}), ones({4, 1, 3, 3})).strides() == Shape{36, 9, 3, 1});
}

TEST_CASE("conv2d: unbatched input, dtypes, empty input") {
  const Tensor out = conv2d(golden("conv.unbatched.x"), golden("conv.unbatched.w"), golden("conv.unbatched.bias"),
                            {1, 1}, {1, 1});
  CHECK(out.sizes() == Shape{2, 6, 5});
  check_close(out, golden("conv.unbatched.out"), 1e-4, 1e-5);
  check_close(conv2d(golden("conv.f64.x"), golden("conv.f64.w"), golden("conv.f64.bias"), {1, 1}, {1, 1}),
              golden("conv.f64.out"), 1e-12, 1e-12);
  // bfloat16: the reference sums in double and rounds once; PyTorch rounds along the way.
  check_close(conv2d(golden("conv.bf16.x"), golden("conv.bf16.w"), golden("conv.bf16.bias"), {1, 1}, {1, 1}),
              golden("conv.bf16.out"), 2e-2, 5e-2);
  check_equal(conv2d(golden("conv.i64.x"), golden("conv.i64.w"), Tensor(), {1, 1}, {1, 1}), golden("conv.i64.out"));
  CHECK(conv2d(zeros({0, 3, 5, 5}), ones({4, 3, 3, 3})).sizes() == Shape{0, 4, 3, 3});
  CHECK(conv2d(zeros({1, 0, 5, 5}), ones({4, 0, 3, 3})).sizes() == Shape{1, 0, 3, 3});
}

// A large im2col product splits its output rows across the threads, each
// building and multiplying its own columns (ConvPlan::over_rows; 2 images of
// 2 groups: every unit's rows): each output column is the same product as on
// one thread, so the values are equal bit for bit, in blocks of rows or not.
TEST_CASE("conv2d: im2col products split by output rows give one thread's values") {
  manual_seed(11);
  const Tensor x = randn({1, 3, 100, 100}), w = randn({8, 3, 7, 7}), b = randn({8});
  const Tensor xg = randn({2, 8, 60, 50}), wg = randn({6, 4, 3, 3});
  const int saved = get_num_threads();
  set_num_threads(1);
  std::vector<Tensor> one;
  for (int64_t st : {1, 2}) one.push_back(conv2d(x, w, b, {st, st}, {3, 3}));
  one.push_back(conv2d(xg, wg, Tensor(), {2, 1}, {1, 1}, {1, 1}, 2));
  for (int threads : {2, 3, 5}) {
    CAPTURE(threads);
    set_num_threads(threads);
    check_equal(conv2d(x, w, b, {1, 1}, {3, 3}), one[0]);
    check_equal(conv2d(x, w, b, {2, 2}, {3, 3}), one[1]);
    check_equal(conv2d(xg, wg, Tensor(), {2, 1}, {1, 1}, {1, 1}, 2), one[2]);
  }
  set_num_threads(saved);
  check_close(one[1], conv2d(x.to(DType::Float64), w.to(DType::Float64), b.to(DType::Float64), {2, 2}, {3, 3})
                          .to(DType::Float32), 1e-4, 1e-5);
}

// A stride-2 3x3 convolution's im2col rows (ResNet's downsampling conv1): 16
// columns from two vectors' even lanes (copy_even), the rest one by one;
// rows of padding above and below.
TEST_CASE("conv2d: stride-2 im2col rows of every width against the float64 reference") {
  manual_seed(5);
  const Tensor w = randn({6, 16, 3, 3}), b = randn({6});
  for (int64_t width : {9, 31, 32, 33, 34, 63, 65, 70}) {
    for (int64_t pad : {0, 1, 2}) {
      CAPTURE(width);
      CAPTURE(pad);
      const Tensor x = randn({1, 16, 7, width});
      check_close(conv2d(x, w, b, {2, 2}, {pad, pad}),
                  conv2d(x.to(DType::Float64), w.to(DType::Float64), b.to(DType::Float64), {2, 2}, {pad, pad})
                      .to(DType::Float32),
                  1e-4, 1e-5);
    }
  }
}

TEST_CASE("conv2d: float32 CPU kernel matches float64 reference, threaded and not") {
  const Tensor x = randn({3, 6, 13, 11}), w = randn({8, 3, 3, 2}), b = randn({8});
  const Tensor expected = conv2d(x.to(DType::Float64), w.to(DType::Float64), b.to(DType::Float64), {2, 1}, {1, 2},
                                 {1, 2}, 2).to(DType::Float32);
  const int saved = get_num_threads();
  for (int threads : {1, saved}) {
    set_num_threads(threads);
    check_close(conv2d(x, w, b, {2, 1}, {1, 2}, {1, 2}, 2), expected, 1e-4, 1e-5);
    check_close(conv2d(x.contiguous(MemoryFormat::ChannelsLast), w, b, {2, 1}, {1, 2}, {1, 2}, 2), expected, 1e-4, 1e-5);
    // A sliced (non-mergeable H/W) input on the 1x1 path.
    const Tensor xs = randn({2, 4, 9, 9}).slice(3, std::nullopt, std::nullopt, 2);
    const Tensor w1 = randn({5, 4, 1, 1});
    check_close(conv2d(xs, w1), conv2d(xs.to(DType::Float64), w1.to(DType::Float64)).to(DType::Float32), 1e-4, 1e-5);
    // Many images of few output positions (a 1-D convolution over short frames): one GEMM takes several images'
    // columns (37 images of 25 positions: chunks of 20 and 17), the product scattered back to NCHW and to
    // channels_last.
    const Tensor xf = randn({37, 3, 1, 200}), wf = randn({6, 3, 1, 16}), bf = randn({6});
    const Tensor ef = conv2d(xf.to(DType::Float64), wf.to(DType::Float64), bf.to(DType::Float64), {1, 8}, {0, 4})
                          .to(DType::Float32);
    check_close(conv2d(xf, wf, bf, {1, 8}, {0, 4}), ef, 1e-4, 1e-5);
    check_close(conv2d(xf.contiguous(MemoryFormat::ChannelsLast), wf, bf, {1, 8}, {0, 4}), ef, 1e-4, 1e-5);
    const Tensor x1 = randn({5, 4, 3, 3});
    check_close(conv2d(x1, w1), conv2d(x1.to(DType::Float64), w1.to(DType::Float64)).to(DType::Float32), 1e-4, 1e-5);
    // An im2col buffer over 1 MiB (147 x 10000 floats) is built and multiplied in blocks of 17 output rows
    // (the last of 15), into the output at the block's rows; stride 2 and padding inside the blocks too.
    const Tensor xb = randn({1, 3, 100, 100}), wb = randn({8, 3, 7, 7}), bb = randn({8});
    for (int64_t st : {1, 2}) {
      CAPTURE(st);
      check_close(conv2d(xb, wb, bb, {st, st}, {3, 3}),
                  conv2d(xb.to(DType::Float64), wb.to(DType::Float64), bb.to(DType::Float64), {st, st}, {3, 3})
                      .to(DType::Float32),
                  1e-4, 1e-5);
    }
    // A 1x1 convolution of a 1x1 input (a squeeze-and-excitation FC): gemv's dot kernels, the bias a column bias.
    const Tensor xv = randn({1, 300, 1, 1}), wv = randn({77, 300, 1, 1}), bv = randn({77});
    check_close(conv2d(xv, wv, bv),
                conv2d(xv.to(DType::Float64), wv.to(DType::Float64), bv.to(DType::Float64)).to(DType::Float32), 1e-4,
                1e-5);
    // A kernel wider than im2col's cached column ranges (512): they are computed per row.
    const Tensor xw = randn({1, 2, 1, 700}), ww = randn({3, 2, 1, 600});
    check_close(conv2d(xw, ww, Tensor(), {1, 3}, {0, 20}),
                conv2d(xw.to(DType::Float64), ww.to(DType::Float64), Tensor(), {1, 3}, {0, 20}).to(DType::Float32),
                1e-4, 1e-3);
  }
  set_num_threads(saved);
}

// Channels_last input and output (groups 1): the kernel's product in the Linear
// orientation (positions x C_out), x itself as col for 1x1 stride 1, else col
// blocks of output positions; the output stays channels_last.
TEST_CASE("conv2d: channels_last activations against the float64 reference") {
  manual_seed(11);
  struct Case {
    Shape x, w, stride, padding, dilation;
  };
  const Case cases[] = {
      {{2, 16, 9, 7}, {24, 16, 1, 1}, {1, 1}, {0, 0}, {1, 1}},    // x is col, both images in one product
      {{1, 5, 6, 6}, {3, 5, 1, 1}, {2, 2}, {0, 0}, {1, 1}},       // 1x1 stride 2: col
      {{2, 3, 37, 41}, {16, 3, 3, 3}, {2, 2}, {1, 1}, {1, 1}},    // an image stem
      {{1, 8, 12, 10}, {9, 8, 3, 3}, {1, 1}, {1, 1}, {1, 1}},     // 3x3 (Winograd's in NCHW)
      {{1, 6, 11, 13}, {7, 6, 5, 5}, {1, 2}, {4, 3}, {2, 1}},     // dilation, asymmetric stride and padding
      {{1, 4, 3, 2}, {5, 4, 5, 5}, {1, 1}, {2, 2}, {1, 1}},       // a window wider than the plane
      {{1, 3, 100, 100}, {8, 3, 7, 7}, {1, 1}, {3, 3}, {1, 1}},   // col blocks of 1783 positions (147 wide)
  };
  const int saved = get_num_threads();
  for (int threads : {1, saved}) {
    set_num_threads(threads);
    for (const Case& c : cases) {
      CAPTURE(c.x);
      CAPTURE(c.w);
      const Tensor x = randn(c.x), w = randn(c.w), b = randn({c.w[0]});
      const Tensor expected = conv2d(x.to(DType::Float64), w.to(DType::Float64), b.to(DType::Float64), c.stride,
                                     c.padding, c.dilation).to(DType::Float32);
      const Tensor out = conv2d(x.contiguous(MemoryFormat::ChannelsLast), w, b, c.stride, c.padding, c.dilation);
      CHECK(out.is_contiguous(MemoryFormat::ChannelsLast));
      check_close(out, expected, 1e-4, 1e-5);
      const Tensor nobias = conv2d(x.contiguous(MemoryFormat::ChannelsLast), w, Tensor(), c.stride, c.padding,
                                   c.dilation);
      check_close(nobias,
                  conv2d(x.to(DType::Float64), w.to(DType::Float64), Tensor(), c.stride, c.padding, c.dilation)
                      .to(DType::Float32),
                  1e-4, 1e-5);
    }
  }
  set_num_threads(saved);
}

// An NCHW input into a channels_last output (core::conv2d_activated's
// out_format; the executor leaves an image's few channels NCHW): the stem
// kernel where it applies, else the input copied channels_last in the
// kernel's scratch and the channels_last product.
TEST_CASE("conv2d: an NCHW input into a channels_last output") {
  manual_seed(13);
  struct Case {
    Shape x, w, stride, padding;
  };
  const Case cases[] = {
      {{2, 3, 17, 19}, {8, 3, 1, 1}, {1, 1}, {0, 0}},    // 1x1: the copy is col
      {{1, 3, 20, 23}, {16, 3, 5, 5}, {2, 2}, {2, 2}},   // 5x5: no stem kernel
      {{1, 1, 12, 40}, {6, 1, 3, 3}, {1, 1}, {1, 1}},    // one channel
      {{1, 3, 40, 40}, {16, 3, 3, 3}, {2, 2}, {1, 1}},   // the stem kernel
      {{1, 16, 9, 9}, {12, 16, 3, 3}, {1, 1}, {1, 1}},   // many channels
  };
  for (const Case& c : cases) {
    CAPTURE(c.x);
    CAPTURE(c.w);
    const Tensor x = randn(c.x), w = randn(c.w), b = randn({c.w[0]});
    Conv2dParams p;
    for (int i = 0; i < 2; ++i) {
      p.stride[i] = c.stride[i];
      p.padding[i] = c.padding[i];
    }
    p.activation = Activation{ActivationKind::Relu};
    bool fused = false;
    const Tensor y = core::conv2d_activated(x, w, b, p, &fused, Tensor(), MemoryFormat::ChannelsLast).get();
    REQUIRE(fused);
    CHECK(y.is_contiguous(MemoryFormat::ChannelsLast));
    check_close(y,
                relu(conv2d(x.to(DType::Float64), w.to(DType::Float64), b.to(DType::Float64), c.stride, c.padding))
                    .to(DType::Float32),
                1e-4, 1e-5);
  }
}

// The fused activation and residual (conv2d_activated: ember convert's fused
// ops) on channels_last activations: the bias, then the residual, then the
// activation, as the unfused ops.
TEST_CASE("conv2d: channels_last with a fused activation and residual") {
  manual_seed(12);
  const Tensor x = randn({2, 8, 10, 9}).contiguous(MemoryFormat::ChannelsLast);
  for (const Shape& ws : {Shape{12, 8, 1, 1}, Shape{12, 8, 3, 3}}) {
    CAPTURE(ws);
    const Tensor w = randn(ws), b = randn({12});
    const int64_t pad = ws[2] / 2;
    const Tensor plain = conv2d(x, w, b, {1, 1}, {pad, pad});
    const Tensor residual = randn(plain.sizes()).contiguous(MemoryFormat::ChannelsLast);
    for (const Activation& a : {Activation{ActivationKind::Relu}, Activation{ActivationKind::Clamp, 0.0, 6.0},
                                Activation{ActivationKind::HardSwish}}) {
      Conv2dParams p;
      p.padding[0] = p.padding[1] = pad;
      p.activation = a;
      bool fused = false;
      const Tensor y = conv2d_activated(x, w, b, p, &fused, residual);
      REQUIRE(fused);
      CHECK(y.is_contiguous(MemoryFormat::ChannelsLast));
      const Tensor sum = add(plain, residual);
      const Tensor expected = a.kind == ActivationKind::Relu        ? relu(sum)
                              : a.kind == ActivationKind::HardSwish ? hardswish(sum)
                                                                    : clamp(sum, 0.0, 6.0);
      check_close(y, expected, 1e-6, 1e-6);
    }
  }
}

TEST_CASE("conv2d: PyTorch's errors") {
  check_error([] { conv2d(f32({1, 2, 5, 5}), f32({4, 3, 3, 3})); },
              "Given groups=1, weight of size [4, 3, 3, 3], expected input[1, 2, 5, 5] to have 3 channels, but got 2 "
              "channels instead");
  check_error([] { conv2d(f32({2, 5, 5}), f32({4, 3, 3, 3})); },
              "Given groups=1, weight of size [4, 3, 3, 3], expected input[1, 2, 5, 5] to have 3 channels, but got 2 "
              "channels instead");
  check_error([] { conv2d(f32({3, 5}), f32({4, 3, 3, 3})); },
              "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [3, 5]");
  check_error([] { conv2d(f32({1, 1, 3, 5, 5}), f32({4, 3, 3, 3})); },
              "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [1, 1, 3, 5, 5]");
  check_error([] { conv2d(f32({1, 3, 5, 5}), f32({4, 3})); }, "weight should have at least three dimensions");
  check_error([] { conv2d(f32({1, 3, 5, 5}), f32({4, 3, 3})); },
              "expected stride to be a single integer value or a list of 1 values to match the convolution "
              "dimensions, but got stride=[1, 1]");
  check_error([] { conv2d(f32({1, 3, 5, 5}), f32({4, 3, 3, 3, 1})); },
              "expected stride to be a single integer value or a list of 3 values to match the convolution "
              "dimensions, but got stride=[1, 1]");
  check_error([] { conv2d(f32({1, 3, 5, 5}), f32({4, 3, 3}), Tensor(), {1}, {0}, {1}); },
              "Expected 3-dimensional input for 3-dimensional weight [4, 3, 3], but got 4-dimensional input of size "
              "[1, 3, 5, 5] instead");
  check_error([] { conv2d(f32({1, 3, 5, 5}), f32({4, 3, 3, 3}), Tensor(), {1, 2, 3}); },
              "expected stride to be a single integer value or a list of 2 values to match the convolution "
              "dimensions, but got stride=[1, 2, 3]");
  check_error([] { conv2d(f32({1, 3, 5, 5}), f32({4, 3, 3, 3}), Tensor(), {1, 1}, {1, 2, 3}); },
              "expected padding to be a single integer value or a list of 2 values to match the convolution "
              "dimensions, but got padding=[1, 2, 3]");
  check_error([] { conv2d(f32({1, 3, 5, 5}), f32({4, 3, 3, 3}), Tensor(), {1, 1}, {0, 0}, {1, 2, 3}); },
              "expected dilation to be a single integer value or a list of 2 values to match the convolution "
              "dimensions, but got dilation=[1, 2, 3]");
  check_error([] { conv2d(f32({1, 3, 5, 5}), f32({4, 3, 3, 3}), Tensor(), {}); },
              "expected stride to be a single integer value or a list of 2 values to match the convolution "
              "dimensions, but got stride=[]");
  check_error([] { conv2d(f32({1, 3, 5, 5}), f32({4, 3, 3, 3}), Tensor(), {0, 0}, {-1, -1}); },
              "negative padding is not supported");
  check_error([] { conv2d(f32({1, 3, 5, 5}), f32({4, 3, 3, 3}), Tensor(), {0, 1}, {0, 0}, {0, 0}); },
              "non-positive stride is not supported");
  check_error([] { conv2d(f32({1, 3, 5, 5}), f32({4, 3, 3, 3}), Tensor(), {1, 1}, {0, 0}, {1, 0}); },
              "dilation should be greater than zero, but got [1, 0]");
  check_error([] { conv2d(f32({1, 3, 5, 5}), f32({4, 3, 3, 3}), Tensor(), {0, 0}, {0, 0}, {1, 1}, 0); },
              "non-positive groups is not supported");
  check_error([] { conv2d(f32({1, 6, 5, 5}), f32({4, 2, 3, 3}), Tensor(), {1, 1}, {0, 0}, {1, 1}, 3); },
              "Given groups=3, expected weight to be divisible by 3 at dimension 0, but got weight of size [[4, 2, 3, "
              "3]] instead");
  check_error([] { conv2d(f32({1, 6, 5, 5}), f32({2, 2, 3, 3}), Tensor(), {1, 1}, {0, 0}, {1, 1}, 4); },
              "Given groups=4, expected weight to be at least 4 at dimension 0, but got weight of size [2, 2, 3, 3] "
              "instead");
  check_error([] { conv2d(f32({1, 6, 5, 5}), f32({4, 2, 3, 3}), Tensor(), {1, 1}, {0, 0}, {1, 1}, 2); },
              "Given groups=2, weight of size [4, 2, 3, 3], expected input[1, 6, 5, 5] to have 4 channels, but got 6 "
              "channels instead");
  check_error([] { conv2d(f32({1, 3, 5, 5}), f32({4, 3, 3, 3}), f32({5})); },
              "Given weight of size [4, 3, 3, 3], expected bias to be 1-dimensional with 4 elements, but got bias of "
              "size [5] instead");
  check_error([] { conv2d(f32({1, 3, 5, 5}), f32({4, 3, 3, 3}), f32({2, 2})); },
              "Given weight of size [4, 3, 3, 3], expected bias to be 1-dimensional with 4 elements, but got bias of "
              "size [2, 2] instead");
  check_error([] { conv2d(f32({1, 3, 5, 5}), f32({4, 3, 6, 3})); },
              "Calculated padded input size per channel: (5 x 5). Kernel size: (6 x 3). Kernel size can't be greater "
              "than actual input size");
  check_error([] { conv2d(f32({1, 3, 0, 5}), f32({4, 3, 3, 3})); },
              "Calculated padded input size per channel: (0 x 5). Kernel size: (3 x 3). Kernel size can't be greater "
              "than actual input size");
  check_error([] { conv2d(f32({1, 3, 5, 5}), f32({4, 3, 3, 3}), ones({4}, DType::Float64)); },
              "Input type (float) and bias type (double) should be the same");
  check_error([] { conv2d(f32({1, 3, 5, 5}), f32({4, 3, 3, 3}), ones({4}, DType::Int64)); },
              "Input type (float) and bias type (long int) should be the same");
  check_error([] { conv2d(ones({1, 3, 5, 5}, DType::Float16), f32({4, 3, 3, 3}), f32({4})); },
              "Input type (c10::Half) and bias type (float) should be the same");
  check_error([] { conv2d(f32({1, 3, 5, 5}), ones({4, 3, 3, 3}, DType::Float64)); },
              "expected scalar type Float but found Double");
  check_error([] { conv2d(f32({1, 3, 5, 5}), ones({4, 3, 3, 3}, DType::Float16)); },
              "expected scalar type Float but found Half");
  check_error([] { conv2d(ones({1, 3, 5, 5}, DType::Float16), ones({4, 3, 3, 3}, DType::Float16)); },
              "\"slow_conv2d_cpu\" not implemented for 'Half'");
  check_error([] { conv2d(ones({1, 3, 5, 5}, DType::Bool), ones({4, 3, 3, 3}, DType::Bool)); },
              "\"slow_conv2d_cpu\" not implemented for 'Bool'");
}
