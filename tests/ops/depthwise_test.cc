// The float32 CPU depthwise convolution (kernels/cpu/depthwise.cc) against the
// float64 reference kernel: every vector width (the GEMM's ISA selection),
// strides 1, 2 and 3, padding, dilation, kernel shapes, rows narrower and wider
// than a vector, channels_last and strided layouts, 1 and 2 threads (every
// path: row_block, the generic tap loop, channel lanes); and the
// fused activation (ReLU, ReLU6, one-sided clamps, NaN kept) of
// conv2d_activated on both the depthwise and the GEMM paths; its residual
// (ember convert's fused Add) on every path, bit for bit the convolution, an
// Add and the activation.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kernels/cpu/depthwise.h"
#include "kernels/cpu/gemm.h"
#include "runtime/core/thread_pool.h"
#include "runtime/ops/qlinear.h"
#include "tests/harness/testing.h"

using namespace ember;
using ember::testing::check_close;
using ember::testing::check_equal;

namespace {

struct Case {
  int64_t n, c, h, w, kh, kw, stride, pad, dil;
};

// conv2d of x (NCHW, channels_last, W-major strides) with and without the
// bias against the float64 reference kernel. The absolute tolerance grows
// with the terms an output sums (4 float32 roundings of 2^-24 each): a 7x7
// stem over 3 channels sums 147 unit-normal products, whose float32 sum was
// 1.2e-5 off an output of 0.0083 for one draw of the values.
void check_layouts(const Tensor& x, const Tensor& w, const Tensor& b, const Shape& st, const Shape& pd, const Shape& dl,
                   int64_t groups) {
  const Tensor x64 = x.to(DType::Float64), w64 = w.to(DType::Float64);
  const Tensor expected = conv2d(x64, w64, b.to(DType::Float64), st, pd, dl, groups).to(DType::Float32);
  const double atol = std::max(1e-5, 4.0 * static_cast<double>(w.numel() / w.size(0)) * 0x1p-24);
  check_close(conv2d(x, w, b, st, pd, dl, groups), expected, 1e-4, atol);
  check_close(conv2d(x, w, Tensor(), st, pd, dl, groups),
              conv2d(x64, w64, Tensor(), st, pd, dl, groups).to(DType::Float32), 1e-4, atol);
  check_close(conv2d(x.contiguous(MemoryFormat::ChannelsLast), w, b, st, pd, dl, groups), expected, 1e-4, atol);
  check_close(conv2d(x.transpose(2, 3).contiguous().transpose(2, 3), w, b, st, pd, dl, groups), expected, 1e-4,
              atol);
}

// fn(threads) on every vector width (the GEMM's ISA selection) at 1, 2 and 3 threads.
template <typename F>
void each_kernel(F fn) {
  const int saved = get_num_threads();
  for (cpu::GemmIsa isa : cpu::sgemm_supported_isas()) {
    REQUIRE(cpu::sgemm_set_isa(isa));
    CAPTURE(std::string(cpu::sgemm_kernel_name()));
    for (int threads : {1, 2, 3}) {
      CAPTURE(threads);
      set_num_threads(threads);
      fn(threads);
    }
  }
  REQUIRE(cpu::sgemm_set_isa(cpu::GemmIsa::Auto));
  set_num_threads(saved);
}

// y against the activated expected values: the same NaNs (at least one), the
// rest within 1e-5 (relative and absolute).
void check_activated(const Tensor& y, const Tensor& expected) {
  REQUIRE(y.sizes() == expected.sizes());
  const Tensor yc = y.contiguous(), ec = expected.contiguous();
  const float* py = yc.data_ptr<float>();
  const float* pe = ec.data_ptr<float>();
  int64_t nans = 0, bad = 0;
  for (int64_t i = 0; i < yc.numel(); ++i) {
    nans += std::isnan(py[i]);
    bad += std::isnan(py[i]) != std::isnan(pe[i]) ||
           (!std::isnan(pe[i]) && std::fabs(py[i] - pe[i]) > 1e-5f + 1e-5f * std::fabs(pe[i]));
  }
  CHECK(nans > 0);
  CHECK(bad == 0);
}

// The depthwise kernel on x copied to channels_last (1x1 planes too, whose
// contiguous() would keep NCHW strides) into a channels_last output; with
// the weight laid out per call, and bit for bit the same with the layout
// packed once (depthwise_cl_weight, as a model's prepared weight), whose
// result it returns.
Tensor channels_last_conv(const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dParams& p, int threads) {
  Tensor xcl = empty(x.sizes(), {}, MemoryFormat::ChannelsLast);
  xcl.copy_(x);
  int64_t out[2];
  for (int i = 0; i < 2; ++i) {
    const int64_t extent = p.dilation[i] * (w.size(2 + i) - 1) + 1;
    out[i] = (x.size(2 + i) + 2 * p.padding[i] - extent) / p.stride[i] + 1;
  }
  Tensor o = empty({x.size(0), w.size(0), out[0], out[1]}, {}, MemoryFormat::ChannelsLast);
  REQUIRE(xcl.strides()[1] == 1);
  REQUIRE(xcl.strides()[3] == x.size(1));
  REQUIRE(o.strides()[1] == 1);
  const TensorView xv = xcl.kernel_view(), wv = w.kernel_view(), ov = o.kernel_view();
  const TensorView bv = b.defined() ? b.kernel_view() : TensorView{};
  std::vector<char> ws(cpu::depthwise_workspace(xv, wv, ov, p, threads));
  cpu::depthwise_conv2d(xv, wv, bv, ov, p, ws.data(), ws.size(), threads);
  const Tensor per_call = o.clone();
  const cpu::DepthwiseClWeight packed = cpu::depthwise_cl_weight(w.data_ptr<float>(), w.size(0), w.size(2) * w.size(3));
  REQUIRE(packed.data.bytes() == cpu::depthwise_cl_weight_bytes(w.size(0), w.size(2) * w.size(3)));
  o.zero_();
  cpu::depthwise_conv2d(xv, wv, bv, ov, p, ws.data(), ws.size(), threads, &packed);
  check_equal(o, per_call);
  return o;
}

}  // namespace

TEST_CASE("depthwise conv2d: vector kernel matches the float64 reference") {
  const Case cases[] = {
      {1, 3, 7, 7, 3, 3, 1, 1, 1},     {2, 5, 14, 14, 3, 3, 1, 1, 1},  {1, 4, 15, 33, 3, 3, 2, 1, 1},
      {1, 3, 112, 40, 3, 3, 2, 1, 1},  {1, 2, 9, 50, 5, 5, 1, 2, 1},   {1, 2, 17, 19, 3, 3, 1, 2, 2},
      {1, 2, 11, 13, 3, 3, 3, 1, 1},   {1, 3, 6, 5, 1, 1, 1, 0, 1},    {1, 2, 8, 9, 3, 1, 2, 0, 1},
      {1, 2, 1, 1, 3, 3, 1, 1, 1},     {1, 3, 10, 64, 3, 3, 1, 0, 1},  {1, 3, 10, 65, 3, 3, 2, 3, 1},
      // stride 2, rows that end exactly on a (two-vector) deinterleave step, and odd / even tails
      {1, 2, 5, 32, 3, 3, 2, 1, 1},    {1, 2, 7, 112, 3, 3, 2, 1, 1},  {1, 2, 6, 14, 3, 3, 2, 0, 1},
      {1, 2, 6, 47, 3, 3, 2, 1, 1},
      // 8 channels or more on output rows of up to 8: channels in the vector lanes (channel_group),
      // whole and partial groups of 4, 8 and 16, two images, dilation, 5x5 and 1x3 windows
      {1, 20, 7, 7, 3, 3, 1, 1, 1},    {2, 19, 14, 14, 3, 3, 2, 1, 1}, {1, 33, 9, 11, 5, 5, 1, 2, 2},
      {1, 16, 15, 15, 3, 3, 2, 1, 1},  {1, 8, 5, 6, 1, 3, 2, 0, 1},    {1, 24, 1, 1, 3, 3, 1, 1, 1},
      {1, 17, 12, 16, 3, 3, 2, 1, 1},
      // row_block: rows of more vectors than it keeps in registers (150 and 151 wide), blocks of
      // four, two and one rows; channel lanes on rows of up to 32 with a partial last transpose
      {1, 2, 11, 150, 3, 3, 1, 1, 1},  {1, 2, 9, 301, 3, 3, 2, 1, 1},  {1, 3, 7, 44, 3, 3, 1, 1, 1},
      {1, 18, 30, 30, 3, 3, 1, 1, 1},  {1, 9, 23, 33, 3, 3, 2, 1, 1},
      // 5x5 windows on channel lanes: lane_block's runs of outputs and the single-output tail
      {1, 20, 14, 14, 5, 5, 1, 2, 1},  {1, 17, 15, 13, 5, 5, 2, 2, 1},  {1, 20, 14, 14, 5, 5, 1, 4, 2},
      // planes large enough for threads to split their output rows (2 and 3 threads) where the
      // shares start on whole cache lines (64 and 16 wide), stride 1 and 2, shares that start and
      // end inside a block of four rows; and planes whose shares would not (then whole planes a
      // thread), padding 0, a second image
      {1, 4, 64, 64, 3, 3, 1, 1, 1},   {1, 3, 90, 32, 3, 3, 2, 1, 1},  {1, 5, 90, 70, 3, 3, 2, 1, 1},
      {2, 3, 61, 50, 3, 3, 1, 0, 1},   {1, 3, 77, 140, 3, 3, 2, 1, 1},
      // row_block through a sliding window of rows (planes taller than it, rows of one pass): rows
      // narrow enough for the 4- and 8-lane kernels too, stride 1 and 2, padding 1 and 3
      {1, 2, 40, 12, 3, 3, 1, 1, 1},   {2, 3, 41, 7, 3, 3, 2, 1, 1},   {1, 2, 33, 30, 3, 3, 1, 3, 1},
  };
  each_kernel([&](int) {
    for (const Case& k : cases) {
      CAPTURE(k.c);
      CAPTURE(k.h);
      CAPTURE(k.w);
      CAPTURE(k.kh);
      CAPTURE(k.stride);
      CAPTURE(k.pad);
      CAPTURE(k.dil);
      check_layouts(randn({k.n, k.c, k.h, k.w}), randn({k.c, 1, k.kh, k.kw}), randn({k.c}), {k.stride, k.stride},
                    {k.pad, k.pad}, {k.dil, k.dil}, k.c);
    }
  });
}

TEST_CASE("depthwise conv2d on channels_last tensors: the channels-in-lanes path, bit for bit the NCHW one") {
  // Input and output channels_last (depthwise.cc's cl_rows): 3x3 and 5x5
  // windows, strides 1 and 2, padding 0 to 2, dilation 1 and 2, whole and
  // partial channel vectors (4, 8 and 16 lanes), two images, planes of 1x1,
  // 7x7, odd and even, and narrower than the window (padding); with and
  // without the bias. Against the float64 reference, and equal to the NCHW
  // paths' result on the same values (they add the taps in the same order).
  struct Plane {
    int64_t h, w;
  };
  const Plane planes[] = {{1, 1}, {7, 7}, {6, 9}, {12, 11}, {2, 3}};
  const int64_t channels[] = {1, 3, 8, 15, 16, 17, 40, 72, 120};
  manual_seed(5);
  each_kernel([&](int threads) {
    // n images of c channels of a plane, a k x k window: bit for bit the NCHW
    // paths, and (`reference`) close to the float64 reference.
    auto check = [&](int64_t n, int64_t c, const Plane& pl, int64_t k, int64_t stride, int64_t pad, int64_t dil,
                     bool with_bias, bool reference) {
      CAPTURE(k);
      CAPTURE(stride);
      CAPTURE(pad);
      CAPTURE(dil);
      CAPTURE(pl.h);
      CAPTURE(pl.w);
      CAPTURE(c);
      CAPTURE(with_bias);
      const Tensor x = randn({n, c, pl.h, pl.w}), w = randn({c, 1, k, k}), b = with_bias ? randn({c}) : Tensor();
      Conv2dParams p;
      p.stride[0] = p.stride[1] = stride;
      p.padding[0] = p.padding[1] = pad;
      p.dilation[0] = p.dilation[1] = dil;
      p.groups = c;
      const Tensor y = channels_last_conv(x, w, b, p, threads);
      check_equal(y, conv2d(x, w, b, {stride, stride}, {pad, pad}, {dil, dil}, c));
      if (!reference) return;
      const Tensor expected = conv2d(x.to(DType::Float64), w.to(DType::Float64),
                                     with_bias ? b.to(DType::Float64) : Tensor(), {stride, stride}, {pad, pad},
                                     {dil, dil}, c);
      check_close(y, expected.to(DType::Float32), 1e-4, 1e-5);
    };
    int64_t checked = 0;
    for (const int64_t k : {3, 5}) {
      for (const int64_t stride : {1, 2}) {
        for (const int64_t pad : {0, 1, 2}) {
          for (const int64_t dil : {1, 2}) {
            for (const Plane& pl : planes) {
              const int64_t extent = dil * (k - 1) + 1;
              if (pl.h + 2 * pad < extent || pl.w + 2 * pad < extent) continue;
              // (two threads: every case; one and three: every third, to bound the time)
              if (threads != 2 && (checked++ % 3) != 0) continue;
              for (const int64_t c : channels) {
                for (const bool with_bias : {true, false}) check(2, c, pl, k, stride, pad, dil, with_bias, true);
              }
            }
          }
        }
      }
    }
    // Dilation 2 (LR-ASPP's dilated stage): planes wider and narrower than a
    // block, padding 0, 2 and 4, stride 1 and 2, 960 channels.
    const Plane dplanes[] = {{28, 28}, {7, 7}, {9, 5}, {1, 1}, {3, 3}};
    for (const int64_t k : {3, 5}) {
      for (const int64_t stride : {1, 2}) {
        for (const int64_t pad : {0, 2, 4}) {
          for (const Plane& pl : dplanes) {
            if (pl.h + 2 * pad < 2 * (k - 1) + 1 || pl.w + 2 * pad < 2 * (k - 1) + 1) continue;
            for (const int64_t c : {8, 17, 960}) {
              if (c == 960 && (threads != 2 || stride != 1 || pl.h != 28)) continue;  // (bounds the time)
              check(1, c, pl, k, stride, pad, 2, true, false);
            }
          }
        }
      }
    }
    // The fused activations (ReLU, clamp 0..6, HardSwish), 3x3 and 5x5, bit for bit the NCHW paths.
    for (const int64_t k : {3, 5}) {
      for (const int64_t c : {17, 72}) {
        const Tensor x = randn({2, c, 9, 10}) * 4.0, w = randn({c, 1, k, k}), b = randn({c});
        const Tensor xcl = x.contiguous(MemoryFormat::ChannelsLast);
        for (const ActivationKind kind : {ActivationKind::Relu, ActivationKind::Clamp, ActivationKind::HardSwish}) {
          for (const int64_t stride : {1, 2}) {
            CAPTURE(k);
            CAPTURE(c);
            CAPTURE(static_cast<int>(kind));
            Conv2dParams p;
            p.stride[0] = p.stride[1] = stride;
            p.padding[0] = p.padding[1] = k / 2;
            p.groups = c;
            p.activation = {kind, 0.0, 6.0};
            bool fused = false;
            const Tensor y = conv2d_activated(xcl, w, b, p, &fused);
            CHECK(fused);
            CHECK(y.is_contiguous(MemoryFormat::ChannelsLast));
            check_equal(y, conv2d_activated(x, w, b, p, &fused));
            const Tensor plain = conv2d(x, w, b, {stride, stride}, {k / 2, k / 2}, {1, 1}, c);
            check_close(y,
                        kind == ActivationKind::Relu        ? relu(plain)
                        : kind == ActivationKind::HardSwish ? hardswish(plain)
                                                            : clamp(plain, Scalar(0.0), Scalar(6.0)),
                        1e-5, 1e-5);
          }
        }
      }
    }
  });
}

TEST_CASE("depthwise conv2d on channels_last tensors: a weight packed for another kernel's lanes is not read") {
  // A prepared weight packed under one kernel family (its vector width)
  // and run under another (tests switch families; a process does not): the
  // kernel lays the weight out itself, and the result is that kernel's own.
  manual_seed(9);
  const Tensor x = randn({1, 40, 9, 9}), w = randn({40, 1, 3, 3}), b = randn({40});
  Conv2dParams p;
  p.padding[0] = p.padding[1] = 1;
  p.groups = 40;
  Tensor xcl = empty(x.sizes(), {}, MemoryFormat::ChannelsLast);
  xcl.copy_(x);
  Tensor o = empty({1, 40, 9, 9}, {}, MemoryFormat::ChannelsLast);
  const TensorView xv = xcl.kernel_view(), wv = w.kernel_view(), bv = b.kernel_view(), ov = o.kernel_view();
  struct Restore {
    ~Restore() { cpu::sgemm_set_isa(cpu::GemmIsa::Auto); }
  } restore;
  int64_t mismatched = 0;
  for (cpu::GemmIsa packed_for : cpu::sgemm_supported_isas()) {
    REQUIRE(cpu::sgemm_set_isa(packed_for));
    const cpu::DepthwiseClWeight packed = cpu::depthwise_cl_weight(w.data_ptr<float>(), 40, 9);
    for (cpu::GemmIsa run_on : cpu::sgemm_supported_isas()) {
      REQUIRE(cpu::sgemm_set_isa(run_on));
      CAPTURE(std::string(cpu::sgemm_kernel_name()));
      std::vector<char> ws(cpu::depthwise_workspace(xv, wv, ov, p, 1));
      o.zero_();
      cpu::depthwise_conv2d(xv, wv, bv, ov, p, ws.data(), ws.size(), 1, &packed);
      check_equal(o, conv2d(x, w, b, {1, 1}, {1, 1}, {1, 1}, 40));  // the NCHW paths of this family
      mismatched += packed_for != run_on;
    }
  }
  // More than one family here (x86: portable, AVX2, AVX-512 where the CPU has them).
  if (cpu::sgemm_supported_isas().size() > 1) CHECK(mismatched > 0);
}

TEST_CASE("depthwise conv2d: channels_last with other strides, and mixed layouts, through the kernel") {
  // x and o by TensorView into cpu::depthwise_conv2d with its workspace:
  // channels_last views of wider tensors (a position's channels followed by
  // others: W stride > C), and one side channels_last, the other NCHW.
  const int64_t c = 19, k = 3;
  const Tensor x = randn({2, c, 11, 13}), w = randn({c, 1, k, k}), b = randn({c});
  Tensor wide = randn({2, c + 5, 11, 13}).contiguous(MemoryFormat::ChannelsLast).narrow(1, 2, c);
  wide.copy_(x);
  each_kernel([&](int threads) {
    for (const int64_t stride : {1, 2}) {
      CAPTURE(stride);
      Conv2dParams p;
      p.stride[0] = p.stride[1] = stride;
      p.padding[0] = p.padding[1] = 1;
      p.groups = c;
      const int64_t oh = (11 + 2 - k) / stride + 1, ow = (13 + 2 - k) / stride + 1;
      const Tensor expected = conv2d(x, w, b, {stride, stride}, {1, 1}, {1, 1}, c);
      const Tensor outs[] = {
          empty({2, c, oh, ow}),
          empty({2, c, oh, ow}, {}, MemoryFormat::ChannelsLast),
          empty({2, c + 3, oh, ow}, {}, MemoryFormat::ChannelsLast).narrow(1, 1, c),
      };
      const Tensor ins[] = {x, x.contiguous(MemoryFormat::ChannelsLast), wide};
      for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) {
          CAPTURE(i);
          CAPTURE(j);
          const TensorView xv = ins[i].kernel_view(), ov = outs[j].kernel_view();
          std::vector<char> ws(cpu::depthwise_workspace(xv, w.kernel_view(), ov, p, threads));
          cpu::depthwise_conv2d(xv, w.kernel_view(), b.kernel_view(), ov, p, ws.data(), ws.size(), threads);
          check_equal(outs[j], expected);
        }
      }
    }
  });
}

TEST_CASE("conv2d_activated: the kernel applies ReLU, clamps and HardSwish, NaN stays NaN") {
  const double inf = std::numeric_limits<double>::infinity();
  const Activation acts[] = {
      {ActivationKind::Relu, -inf, inf},
      {ActivationKind::Clamp, 0.0, 6.0},
      {ActivationKind::Clamp, -0.5, inf},
      {ActivationKind::Clamp, -inf, 0.25},
      {ActivationKind::HardSwish, -inf, inf},
  };
  for (cpu::GemmIsa isa : cpu::sgemm_supported_isas()) {
    REQUIRE(cpu::sgemm_set_isa(isa));
    CAPTURE(std::string(cpu::sgemm_kernel_name()));
    // The GEMM path, the depthwise one (planes, channel lanes), and a 1x1 convolution of a 1x1 input (gemv's
    // dot kernels, the bias and activation as a column epilogue).
    for (int64_t groups : {1, 6, 18, 0}) {
      CAPTURE(groups);
      const int64_t c = groups == 18 ? 18 : groups == 0 ? 70 : 6;
      const bool single = groups == 0;
      if (single) groups = 1;
      const Tensor x = (single ? randn({1, c, 1, 1}) : randn({1, c, 9, groups == 18 ? 8 : 21})) * 4.0;
      const int64_t k = single ? 1 : 3, pad = single ? 0 : 1;
      const Tensor w = randn({c, c / groups, k, k}), b = randn({c});
      // A NaN input (in a 1x1 input's every output: there, a NaN bias instead).
      (single ? b : x).data_ptr<float>()[single ? 5 : 30] = std::nanf("");
      const Tensor plain = conv2d(x, w, b, {1, 1}, {pad, pad}, {1, 1}, groups);
      for (const Activation& a : acts) {
        Conv2dParams p;
        p.padding[0] = p.padding[1] = pad;
        p.groups = groups;
        p.activation = a;
        bool fused = false;
        const Tensor y = conv2d_activated(x, w, b, p, &fused);
        CHECK(fused);
        Tensor expected = a.kind == ActivationKind::Relu ? relu(plain) : hardswish(plain);
        if (a.kind == ActivationKind::Clamp) {
          expected = clamp(plain, std::isfinite(a.min) ? std::optional<Scalar>(a.min) : std::nullopt,
                           std::isfinite(a.max) ? std::optional<Scalar>(a.max) : std::nullopt);
        }
        check_activated(y, expected);
      }
    }
  }
  REQUIRE(cpu::sgemm_set_isa(cpu::GemmIsa::Auto));
  // float64 (the reference kernel) is not fused: the caller applies the activation.
  Conv2dParams p;
  p.activation.kind = ActivationKind::Relu;
  bool fused = true;
  conv2d_activated(randn({1, 2, 4, 4}).to(DType::Float64), randn({2, 2, 1, 1}).to(DType::Float64), Tensor(), p, &fused);
  CHECK_FALSE(fused);
}

TEST_CASE("few input channels (image stems): the direct kernel matches the float64 reference") {
  // depthwise.cc's stem_conv2d (groups 1, up to 4 input channels, rows of at
  // least 16 outputs): MobileNet's 3x3 and ResNet's 7x7 stride-2 stems, stride
  // 1, output channels not a multiple of the register block (8 on AVX-512, 4
  // otherwise), rows of whole and partial vectors, two images, no padding,
  // channels_last and strided inputs, several bands of rows, 1 to 3
  // threads; then its fused activations (HardSwish, ReLU6, NaN kept).
  struct Stem {
    int64_t n, cin, cout, h, w, k, stride, pad;
  };
  const Stem cases[] = {
      {1, 3, 32, 37, 45, 3, 2, 1}, {1, 3, 16, 30, 33, 3, 2, 1}, {2, 3, 64, 40, 41, 7, 2, 3},
      {1, 1, 8, 20, 40, 5, 1, 2},  {1, 4, 12, 19, 50, 3, 1, 0}, {1, 2, 20, 16, 64, 3, 2, 1},
      {1, 3, 9, 21, 70, 3, 1, 1},  {1, 3, 24, 12, 97, 7, 2, 3},
      // Over 32 output channels and tall enough for several bands of output
      // rows (stem_band: 61 rows of this 7x7 stride 2, 254 of this 3x3
      // stride 1), the last one partial.
      {1, 3, 40, 260, 40, 7, 2, 3}, {1, 3, 36, 300, 20, 3, 1, 1},
  };
  each_kernel([&](int threads) {
    for (const Stem& k : cases) {
      CAPTURE(k.cin);
      CAPTURE(k.cout);
      CAPTURE(k.w);
      CAPTURE(k.k);
      CAPTURE(k.stride);
      check_layouts(randn({k.n, k.cin, k.h, k.w}), randn({k.cout, k.cin, k.k, k.k}), randn({k.cout}),
                    {k.stride, k.stride}, {k.pad, k.pad}, {1, 1}, 1);
    }
    if (threads != 2) return;
    Tensor x = randn({1, 3, 24, 40}) * 4.0;
    x.data_ptr<float>()[100] = std::nanf("");
    const Tensor w = randn({16, 3, 3, 3}), b = randn({16});
    const Tensor plain = conv2d(x, w, b, {2, 2}, {1, 1}, {1, 1}, 1);
    for (const ActivationKind kind : {ActivationKind::HardSwish, ActivationKind::Clamp}) {
      Conv2dParams p;
      p.stride[0] = p.stride[1] = 2;
      p.padding[0] = p.padding[1] = 1;
      p.activation = {kind, 0.0, 6.0};
      bool fused = false;
      const Tensor y = conv2d_activated(x, w, b, p, &fused);
      CHECK(fused);
      check_activated(y, kind == ActivationKind::HardSwish ? hardswish(plain) : clamp(plain, Scalar(0.0), Scalar(6.0)));
    }
  });
}

TEST_CASE("stem_conv2d into channels_last outputs: the float64 reference, bit for bit the NCHW output") {
  // The stem kernel by TensorView: NCHW and channels_last inputs into
  // NCHW, channels_last and wider channels_last outputs (a position's
  // channels followed by others); the channels_last stores transposed
  // (stem_store_cl), partial channel blocks and vector tails; every fused
  // activation, with and without the bias, every ISA, 1 to 3 threads.
  struct Stem {
    int64_t n, cin, cout, h, w, k, stride, pad;
  };
  const Stem cases[] = {
      {1, 3, 32, 23, 45, 3, 2, 1}, {2, 3, 64, 20, 41, 7, 2, 3}, {1, 1, 8, 9, 33, 3, 1, 1},  {1, 2, 20, 11, 40, 3, 1, 1},
      {1, 4, 12, 10, 50, 3, 2, 1}, {1, 3, 9, 8, 70, 7, 2, 3},   {1, 3, 40, 70, 36, 7, 2, 3}, {1, 3, 24, 12, 17, 3, 1, 1},
      {1, 3, 36, 300, 20, 3, 1, 1},  // several bands of rows
  };
  const double inf = std::numeric_limits<double>::infinity();
  const Activation acts[] = {{ActivationKind::None, -inf, inf},
                             {ActivationKind::Relu, -inf, inf},
                             {ActivationKind::Clamp, 0.0, 6.0},
                             {ActivationKind::HardSwish, -inf, inf}};
  manual_seed(5);
  each_kernel([&](int threads) {
    int round = 0;
    for (const Stem& k : cases) {
      CAPTURE(k.cin);
      CAPTURE(k.cout);
      CAPTURE(k.w);
      CAPTURE(k.k);
      CAPTURE(k.stride);
      const Tensor x = randn({k.n, k.cin, k.h, k.w}) * 2.0, w = randn({k.cout, k.cin, k.k, k.k});
      const Tensor b = round % 2 == 0 ? randn({k.cout}) : Tensor();
      const Activation act = acts[round++ % 4];
      CAPTURE(static_cast<int>(act.kind));
      Conv2dParams p;
      p.stride[0] = p.stride[1] = k.stride;
      p.padding[0] = p.padding[1] = k.pad;
      p.activation = act;
      Tensor want = conv2d(x.to(DType::Float64), w.to(DType::Float64), b.defined() ? b.to(DType::Float64) : Tensor(),
                           {k.stride, k.stride}, {k.pad, k.pad}, {1, 1}, 1);
      if (act.kind == ActivationKind::Relu) want = ember::relu(want);
      if (act.kind == ActivationKind::Clamp) want = ember::clamp(want, Scalar(act.min), Scalar(act.max));
      if (act.kind == ActivationKind::HardSwish) want = ember::hardswish(want);
      want = want.to(DType::Float32);
      const Shape os = want.sizes();
      const Tensor outs[] = {ember::empty(os), ember::empty(os, {}, MemoryFormat::ChannelsLast),
                             empty({os[0], os[1] + 3, os[2], os[3]}, {}, MemoryFormat::ChannelsLast).narrow(1, 2, k.cout)};
      const Tensor ins[] = {x, x.contiguous(MemoryFormat::ChannelsLast)};
      for (int i = 0; i < 2; ++i) {
        for (int j = 0; j < 3; ++j) {
          CAPTURE(i);
          CAPTURE(j);
          const TensorView xv = ins[i].kernel_view(), wv = w.kernel_view(), ov = outs[j].kernel_view();
          const TensorView bv = b.defined() ? b.kernel_view() : TensorView{};
          REQUIRE(cpu::stem_applies(xv, wv, ov, p));
          std::vector<char> ws(cpu::stem_workspace(xv, wv, ov, p, threads));
          REQUIRE(cpu::stem_conv2d(xv, wv, bv, ov, p, ws.data(), ws.size(), threads));
          check_close(outs[j], want, 1e-4, 1e-4);  // up to 147 taps of values up to about 8
          check_equal(outs[j], outs[0]);
        }
      }
    }
  });
}

TEST_CASE("conv2d_activated with a residual: every path adds it before the activation, as an Add would") {
  // Winograd (adds it as it stores its tiles) and the paths after which a
  // pass adds it: the GEMM on the input itself (1x1) and on im2col columns
  // (by output rows per thread too), the depth split across threads (K 384,
  // M 64), depthwise, the stem kernel, batched few-position images, one
  // output position (gemv); channels_last outputs, a residual of other
  // strides. Bits equal conv2d, add and the activation op on the same
  // kernel; a NaN in the residual stays NaN.
  struct Res {
    int64_t n, cin, cout, h, w, k, stride, pad, groups;
  };
  const Res cases[] = {
      {1, 64, 64, 56, 56, 3, 1, 1, 1}, {1, 32, 48, 14, 14, 1, 1, 0, 1}, {1, 384, 64, 7, 7, 1, 1, 0, 1},
      {1, 16, 24, 17, 19, 3, 2, 1, 1}, {1, 8, 12, 9, 9, 3, 1, 1, 1},    {1, 16, 16, 12, 12, 3, 1, 1, 16},
      {1, 3, 16, 20, 36, 3, 2, 1, 1},  {4, 8, 8, 5, 5, 3, 1, 1, 1},     {1, 64, 32, 1, 1, 1, 1, 0, 1},
      {1, 16, 24, 60, 60, 3, 2, 1, 1},  // im2col split over output rows at 2 and 3 threads
  };
  manual_seed(21);
  each_kernel([&](int) {
    for (const Res& k : cases) {
      CAPTURE(k.cin);
      CAPTURE(k.cout);
      CAPTURE(k.h);
      CAPTURE(k.k);
      CAPTURE(k.groups);
      const Tensor x = randn({k.n, k.cin, k.h, k.w}), w = randn({k.cout, k.cin / k.groups, k.k, k.k}) * 0.2;
      const Tensor b = randn({k.cout});
      Conv2dParams p;
      p.stride[0] = p.stride[1] = k.stride;
      p.padding[0] = p.padding[1] = k.pad;
      p.groups = k.groups;
      for (const bool channels_last : {false, true}) {
        CAPTURE(channels_last);
        const Tensor xi = channels_last ? x.contiguous(MemoryFormat::ChannelsLast) : x;
        const Tensor plain = conv2d(xi, w, b, {k.stride, k.stride}, {k.pad, k.pad}, {1, 1}, k.groups);
        const Tensor r = (randn(plain.sizes()) * 2.0).contiguous(plain.suggest_memory_format());  // the output's strides
        for (const Activation& act : ember::testing::fused_activations()) {
          CAPTURE(static_cast<int>(act.kind));
          Tensor want = add(plain, r);
          if (act.kind == ActivationKind::Relu) want = ember::relu(want);
          if (act.kind == ActivationKind::Clamp) want = ember::clamp(want, Scalar(act.min), Scalar(act.max));
          if (act.kind == ActivationKind::HardSwish) want = ember::hardswish(want);
          p.activation = act;
          bool fused = false;
          check_equal(conv2d_activated(xi, w, b, p, &fused, r), want);
          CHECK(fused);
          if (act.kind == ActivationKind::Relu && !channels_last) {  // a residual of other strides: the pass
            check_equal(conv2d_activated(xi, w, b, p, &fused, r.contiguous(MemoryFormat::ChannelsLast)), want);
          }
        }
      }
    }
  });
  // NaN stays NaN through the residual and the ReLU.
  const Tensor x = randn({1, 8, 6, 6}), w = randn({8, 8, 1, 1}), b = randn({8});
  Tensor r = zeros({1, 8, 6, 6});
  r.data_ptr<float>()[7] = std::nanf("");
  Conv2dParams p;
  p.activation.kind = ActivationKind::Relu;
  bool fused = false;
  const Tensor y = conv2d_activated(x, w, b, p, &fused, r);
  CHECK(fused);
  CHECK(std::isnan(y.data_ptr<float>()[7]));
  check_equal(y, ember::relu(add(conv2d(x, w, b), r)));
  // Not the float32 CPU kernel: the plain convolution, the caller adds (*fused false).
  const Tensor y64 = conv2d_activated(x.to(DType::Float64), w.to(DType::Float64), b.to(DType::Float64), p, &fused,
                                      r.to(DType::Float64));
  CHECK_FALSE(fused);
  check_equal(y64, conv2d(x.to(DType::Float64), w.to(DType::Float64), b.to(DType::Float64)));
  // A residual of another shape is not the kernel's: the caller's Add broadcasts it or reports the mismatch.
  conv2d_activated(x, w, b, p, &fused, zeros({1, 8, 1, 1}));
  CHECK_FALSE(fused);
}

