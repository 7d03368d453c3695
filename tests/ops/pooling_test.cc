// 2-D pooling: max_pool2d, avg_pool2d, adaptive_avg_pool2d.
#include <cmath>

#include "runtime/core/thread_pool.h"
#include "runtime/ops/dispatch.h"
#include "tests/harness/testing.h"

using namespace ember;
using ember::testing::check_close;
using ember::testing::check_equal;
using ember::testing::check_error;
using ember::testing::golden;
using ember::testing::has_golden;

namespace {
std::vector<int64_t> ints(const Tensor& t) { return t.to_vector<int64_t>(); }

// The inputs every golden case runs on: as stored, non-contiguous (H and W
// strides swapped), and channels_last for 4-D inputs. The flag says whether
// the output must be channels_last.
std::vector<std::pair<Tensor, bool>> layouts(const Tensor& x) {
  std::vector<std::pair<Tensor, bool>> out{{x, false}, {x.transpose(-1, -2).contiguous().transpose(-1, -2), false}};
  if (x.dim() == 4) {
    const Tensor cl = x.contiguous(MemoryFormat::ChannelsLast);
    // PyTorch keeps channels_last when the strides say so (not for C == 1 or empty tensors).
    out.emplace_back(cl, x.size(1) > 1 && x.numel() > 0);
  }
  return out;
}

void check_pool(const Tensor& actual, const Tensor& expected, bool channels_last) {
  if (actual.dtype() == DType::BFloat16) {
    check_close(actual, expected, 1e-2, 1e-2);
  } else if (actual.dtype() == DType::Float32) {
    check_close(actual, expected, 1e-6, 1e-6);
  } else if (actual.dtype() == DType::Float64) {
    // PyTorch sums some windows in another order (1x1 adaptive pooling is a mean()).
    check_close(actual, expected, 1e-13, 1e-14);
  } else {
    check_equal(actual, expected);
  }
  if (actual.numel() > 0 && actual.dim() == 4 && actual.size(1) > 1) {
    CHECK(actual.is_contiguous(channels_last ? MemoryFormat::ChannelsLast : MemoryFormat::Contiguous));
  }
}
}  // namespace

TEST_CASE("max_pool2d matches PyTorch: padding, dilation, ceil_mode, NaN, layouts") {
  int cases = 0;
  for (int i = 0; has_golden("pool.max." + std::to_string(i) + ".x"); ++i, ++cases) {
    const std::string name = "pool.max." + std::to_string(i);
    CAPTURE(name);
    const std::vector<int64_t> a = ints(golden(name + ".args"));
    const Tensor expected = golden(name + ".out");
    for (const auto& [x, cl] : layouts(golden(name + ".x"))) {
      // max is exact: no rounding anywhere.
      Tensor out = max_pool2d(x, {a[0], a[1]}, {a[2], a[3]}, {a[4], a[5]}, {a[6], a[7]}, a[8] != 0);
      check_equal(out, expected);
      if (out.dim() == 4 && out.numel() > 0 && out.size(1) > 1) {
        CHECK(out.is_contiguous(cl ? MemoryFormat::ChannelsLast : MemoryFormat::Contiguous));
      }
      // return_indices=True: the same values and the plane index of each maximum (NaN: the last NaN).
      const auto [values, indices] =
          max_pool2d_with_indices(x, {a[0], a[1]}, {a[2], a[3]}, {a[4], a[5]}, {a[6], a[7]}, a[8] != 0);
      check_equal(values, expected);
      check_equal(indices, golden(name + ".indices"));
    }
  }
  CHECK(cases == 10);
}

TEST_CASE("max_pool2d: the float32 CPU kernel equals the float64 reference, threaded, with NaN") {
  const int saved = get_num_threads();
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    Tensor x = randn({2, 5, 23, 37});
    x.data_ptr<float>()[100] = std::nanf("");
    x.data_ptr<float>()[5 * 23 * 37 + 7] = std::nanf("");
    const int64_t args[][7] = {{3, 3, 2, 2, 1, 1, 0}, {2, 3, 1, 2, 0, 1, 1}, {3, 2, 2, 3, 1, 0, 1},
                               {5, 5, 3, 3, 2, 2, 0}, {3, 3, 1, 1, 1, 1, 0}};
    for (const auto& a : args) {
      for (int64_t dil : {1, 2}) {
        for (bool ceil : {false, true}) {
          CAPTURE(a[0]);
          CAPTURE(a[2]);
          CAPTURE(dil);
          CAPTURE(ceil);
          if (dil == 2 && a[4] * 2 > dil * (a[0] - 1) + 1) continue;  // padding at most half the window
          const Tensor out = max_pool2d(x, {a[0], a[1]}, {a[2], a[3]}, {a[4], a[5]}, {dil, dil}, ceil);
          const Tensor ref = max_pool2d(x.to(DType::Float64), {a[0], a[1]}, {a[2], a[3]}, {a[4], a[5]}, {dil, dil},
                                        ceil);
          check_equal(out.to(DType::Float64), ref);
        }
      }
    }
  }
  set_num_threads(saved);
}

TEST_CASE("max_pool2d: hand-computed windows and default stride") {
  const Tensor x = arange(16.0).reshape({1, 1, 4, 4});
  check_equal(max_pool2d(x, {2}), tensor({{5.0, 7.0}, {13.0, 15.0}}).unsqueeze(0).unsqueeze(0));
  // ceil_mode adds a window that starts inside the input: [3, 7, 11, 15] rows/cols.
  check_equal(max_pool2d(x, {3}, {2}, {0}, {1}, true), tensor({{10.0, 11.0}, {14.0, 15.0}}).unsqueeze(0).unsqueeze(0));
  check_equal(max_pool2d(x, {2, 1}, {2, 3}), tensor({{4.0, 7.0}, {12.0, 15.0}}).unsqueeze(0).unsqueeze(0));
}

TEST_CASE("avg_pool2d matches PyTorch: count_include_pad, divisor_override, ceil_mode, int64") {
  int cases = 0;
  for (int i = 0; has_golden("pool.avg." + std::to_string(i) + ".x"); ++i, ++cases) {
    const std::string name = "pool.avg." + std::to_string(i);
    CAPTURE(name);
    const std::vector<int64_t> a = ints(golden(name + ".args"));
    const std::optional<int64_t> divisor = a[8] ? std::optional<int64_t>(a[8]) : std::nullopt;
    for (const auto& [x, cl] : layouts(golden(name + ".x"))) {
      check_pool(avg_pool2d(x, {a[0], a[1]}, {a[2], a[3]}, {a[4], a[5]}, a[6] != 0, a[7] != 0, divisor),
                 golden(name + ".out"), cl);
    }
  }
  CHECK(cases == 11);
}

TEST_CASE("avg_pool2d: hand-computed values") {
  const Tensor x = arange(16.0).reshape({1, 1, 4, 4});
  // Padded border windows: with and without the padding in the count.
  check_equal(avg_pool2d(x, {3}, {2}, {1}, true, false),
              tensor({{2.5, 4.0, 5.0}, {8.5, 10.0, 11.0}, {12.5, 14.0, 15.0}}).unsqueeze(0).unsqueeze(0));
  // Integers divide with truncation, as PyTorch's CPU kernel does.
  check_equal(avg_pool2d(arange(16).reshape({1, 1, 4, 4}), {3}, {2}, {1}, true, true),
              tensor({{1, 2, 1}, {5, 10, 5}, {4, 7, 3}}).unsqueeze(0).unsqueeze(0));
  check_equal(avg_pool2d(x, {2}, {}, {0}, false, true, 3), tensor({{10.0 / 3, 18.0 / 3}, {42.0 / 3, 50.0 / 3}}).unsqueeze(0).unsqueeze(0));
}

TEST_CASE("adaptive_avg_pool2d matches PyTorch") {
  int cases = 0;
  for (int i = 0; has_golden("pool.adaptive." + std::to_string(i) + ".x"); ++i, ++cases) {
    const std::string name = "pool.adaptive." + std::to_string(i);
    CAPTURE(name);
    const std::vector<int64_t> a = ints(golden(name + ".args"));
    for (const auto& [x, cl] : layouts(golden(name + ".x"))) {
      check_pool(adaptive_avg_pool2d(x, {a[0], a[1]}), golden(name + ".out"), cl);
    }
  }
  CHECK(cases == 9);
  // Windows [floor(i*5/3), ceil((i+1)*5/3)): rows {0,1}, {1,2,3}, {3,4}.
  const Tensor x = arange(5.0).reshape({1, 5, 1});
  check_equal(adaptive_avg_pool2d(x, {3, 1}), tensor({{{0.5}, {2.0}, {3.5}}}));
}

// The 1 x 1 pool of channels_last float32 (the CPU sums each image's position
// rows of C channels in double, position after position as the reference
// walks a plane): bitwise the float64 reference's mean rounded to float, and
// within check_pool's float32 tolerance (1e-6 relative and absolute) of the
// contiguous CPU path (which sums in double in another order). The float32
// reference (a non-dense view; it sums in float) rounds differently somewhere
// on the large planes: the witness that the channels_last inputs did not take it.
TEST_CASE("adaptive_avg_pool2d to 1x1 of channels_last inputs: the float64 reference's mean, threaded") {
  const int saved = get_num_threads();
  manual_seed(23);
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    for (int64_t c : {1, 12, 17, 72, 960}) {  // 12, 72: the 8- and 4-channel steps after the 16s
      for (int64_t hw : {1, 7, 28, 112}) {
        CAPTURE(threads);
        CAPTURE(c);
        CAPTURE(hw);
        const int64_t n = c * hw * hw > 1000000 ? 1 : 2;
        const Tensor x = randn({n, c, hw, hw}) + 0.25;
        const Tensor xc = x.contiguous(MemoryFormat::ChannelsLast);
        const Tensor out = adaptive_avg_pool2d(xc, {1, 1});
        const Tensor expected = adaptive_avg_pool2d(x.to(DType::Float64), {1, 1}).to(DType::Float32);
        check_equal(out, expected);
        check_pool(out, adaptive_avg_pool2d(x, {1, 1}), c > 1 && hw > 1);
        if (c == 17 && hw == 112) {
          Tensor strided = zeros({n, c, hw, 2 * hw}).narrow(3, 0, hw);
          strided.copy_(x);
          const Tensor slow = adaptive_avg_pool2d(strided, {1, 1});
          check_pool(slow, expected, false);
          bool differs = false;
          for (int64_t i = 0; i < slow.numel(); ++i) {
            differs |= slow.contiguous().data_ptr<float>()[i] != expected.data_ptr<float>()[i];
          }
          CHECK(differs);
        }
      }
    }
  }
  set_num_threads(saved);
  // The summation order: 2^54, then ones (each lost to rounding in double), then
  // -2^54 at the last position sums to exactly 0 position after position, as the
  // float64 reference walks a plane; chunk sums added to a running total would
  // keep some ones. 29 channels: the 16-, 8-, 4- and 1-channel steps; 81 positions: three chunks.
  {
    Tensor x = ones({2, 29, 9, 9});
    x.narrow(2, 0, 1).narrow(3, 0, 1).fill_(18014398509481984.0);
    x.narrow(2, 8, 1).narrow(3, 8, 1).fill_(-18014398509481984.0);
    const Tensor expected = adaptive_avg_pool2d(x.to(DType::Float64), {1, 1}).to(DType::Float32);
    check_equal(expected, zeros({2, 29, 1, 1}));
    check_equal(adaptive_avg_pool2d(x.contiguous(MemoryFormat::ChannelsLast), {1, 1}), expected);
  }
  // Into a channels_last output of odd strides: the [N, C, 1, 1] result's own strides are honoured.
  const Tensor x = randn({2, 19, 5, 3}).contiguous(MemoryFormat::ChannelsLast);
  Tensor y = zeros({2, 19, 1, 2}).narrow(3, 1, 1);
  REQUIRE(run_kernel(OpKind::AdaptiveAvgPool2d, {x}, {y}) == Status::Ok);
  check_equal(y, adaptive_avg_pool2d(x.to(DType::Float64), {1, 1}).to(DType::Float32));
}

TEST_CASE("pooling errors carry PyTorch 1.13's messages") {
  const Tensor x = zeros({1, 2, 5, 5});
  check_error([&] { max_pool2d(x, {3}, {}, {2}); },
              "pad should be at most half of kernel size, but got pad=2 and kernel_size=3");
  check_error([&] { avg_pool2d(x, {3}, {}, {2}); },
              "pad should be at most half of kernel size, but got pad=2 and kernel_size=3");
  check_error([&] { max_pool2d(x, {3}, {0}); }, "stride should not be zero");
  check_error([&] { max_pool2d(x, {0}); }, "stride should not be zero");
  check_error([&] { avg_pool2d(x, {0}); }, "stride should not be zero");
  check_error([&] { max_pool2d(x, {2, 2, 2}); },
              "max_pool2d: kernel_size must either be a single int, or a tuple of two ints");
  check_error([&] { max_pool2d(x, {2}, {1, 1, 1}); },
              "max_pool2d: stride must either be omitted, a single int, or a tuple of two ints");
  check_error([&] { max_pool2d(x, {2}, {1}, {1, 1, 1}); },
              "max_pool2d: padding must be either be a single int, or a tuple of two ints");
  check_error([&] { max_pool2d(x, {2}, {1}, {1}, {1, 1, 1}); },
              "max_pool2d: dilation must be either a single int, or a tuple of two ints");
  check_error([&] { avg_pool2d(x, {2, 2, 2}); },
              "avg_pool2d: kernel_size must either be a single int, or a tuple of two ints");
  check_error([&] { avg_pool2d(x, {2}, {1, 1, 1}); },
              "avg_pool2d: stride must either be omitted, a single int, or a tuple of two ints");
  check_error([&] { avg_pool2d(x, {2}, {1}, {1, 1, 1}); },
              "avg_pool2d: padding must either be a single int, or a tuple of two ints");
  check_error([&] { max_pool2d(x, {2}, {}, {0}, {0}); },
              "dilation should be greater than zero, but got dilationH: 0 dilationW: 0");
  check_error([&] { max_pool2d(x, {2}, {}, {-1}); }, "pad must be non-negative, but got pad: -1");
  check_error([&] { max_pool2d(x, {2}, {-1}); }, "stride should be greater than zero, but got dH: -1 dW: -1");
  check_error([&] { avg_pool2d(x, {2}, {-1}); }, "stride should be greater than zero, but got dH: -1 dW: -1");
  check_error([&] { max_pool2d(x, {0}, {1}); }, "kernel size should be greater than zero, but got kH: 0 kW: 0");
  check_error([&] { avg_pool2d(x, {-1}, {1}); }, "kernel size should be greater than zero, but got kH: -1 kW: -1");
  check_error([&] { max_pool2d(x, {6}); },
              "Given input size: (2x5x5). Calculated output size: (2x0x0). Output size is too small");
  check_error([&] { avg_pool2d(x, {6}); },
              "Given input size: (2x5x5). Calculated output size: (2x0x0). Output size is too small");
  check_error([&] { avg_pool2d(x, {2}, {}, {0}, false, true, 0); }, "divisor must be not zero");
  check_error([&] { max_pool2d(zeros({5, 5}), {2}); }, "non-empty 3D or 4D (batch mode) tensor expected for input");
  check_error([&] { max_pool2d(zeros({1, 1, 1, 5, 5}), {2}); },
              "non-empty 3D or 4D (batch mode) tensor expected for input");
  check_error([&] { max_pool2d(zeros({1, 0, 5, 5}), {2}); },
              "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:[1, 0, 5, 5]");
  check_error([&] { avg_pool2d(zeros({1, 1, 0, 5}), {2}); },
              "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:[1, 1, 0, 5]");
  check_error([&] { max_pool2d(zeros({0, 5, 5}), {2}); },
              "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:[0, 5, 5]");
  check_error([&] { max_pool2d(zeros({1, 2, 4, 4}, DType::Int64), {2}); },
              "\"max_pool2d\" not implemented for 'Long'");
  check_error([&] { max_pool2d(zeros({1, 2, 4, 4}, DType::Float16), {2}); },
              "\"max_pool2d\" not implemented for 'Half'");
  check_error([&] { max_pool2d(zeros({2, 3, 4, 4}, DType::Int64).contiguous(MemoryFormat::ChannelsLast), {2}); },
              "\"max_pool2d_channels_last\" not implemented for 'Long'");
  check_error([&] { avg_pool2d(zeros({1, 2, 4, 4}, DType::Int32), {2}); },
              "\"avg_pool2d\" not implemented for 'Int'");
  check_error([&] { avg_pool2d(zeros({2, 3, 4, 4}, DType::Float16).contiguous(MemoryFormat::ChannelsLast), {2}); },
              "\"avg_pool2d_channels_last\" not implemented for 'Half'");
  // adaptive
  check_error([&] { adaptive_avg_pool2d(x, {3}); }, "adaptive_avg_pool2d: output_size must be 2");
  check_error([&] { adaptive_avg_pool2d(x, {3, 2, 1}); }, "adaptive_avg_pool2d: output_size must be 2");
  check_error([&] { adaptive_avg_pool2d(x, {-1, 2}); },
              "adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 but received {-1, 2}");
  check_error([&] { adaptive_avg_pool2d(zeros({5, 5}), {2, 2}); }, "Input dimension should be at least 3");
  check_error([&] { adaptive_avg_pool2d(zeros({1, 1, 0, 5}), {2, 2}); },
              "adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch dimensions, but input has "
              "sizes [1, 1, 0, 5] with dimension 2 being empty");
  check_error([&] { adaptive_avg_pool2d(zeros({2, 0, 5}), {2, 2}); },
              "adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch dimensions, but input has "
              "sizes [2, 0, 5] with dimension 1 being empty");
  check_error([&] { adaptive_avg_pool2d(zeros({2, 3, 5, 5, 1}), {2, 2}); },
              "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got [2, 3, 5, 5, 1]");
  check_error([&] { adaptive_avg_pool2d(x.to(DType::Int64), {2, 2}); },
              "\"adaptive_avg_pool2d\" not implemented for 'Long'");
  check_error([&] { adaptive_avg_pool2d(zeros({2, 3, 5, 5}, DType::Float16).contiguous(MemoryFormat::ChannelsLast),
                                        {2, 2}); },
              "\"adaptive_avg_pool2d_channels_last\" not implemented for 'Half'");
  // adaptive allows an empty channel dim (PyTorch checks only H and W).
  CHECK(adaptive_avg_pool2d(zeros({1, 0, 5, 5}), {2, 2}).sizes() == Shape{1, 0, 2, 2});
}

TEST_CASE("pool kernels reject bad parameters with a Status") {
  Tensor x = zeros({1, 1, 4, 4});
  Tensor out = empty({1, 1, 2, 2});
  Pool2dParams p;
  p.kernel[0] = p.kernel[1] = 0;
  check_error([&] { unwrap(run_kernel(OpKind::MaxPool2d, {x}, {out}, p)); },
              "kernel \"max_pool2d\" on cpu failed: InvalidArgument");
  Tensor wrong = empty({1, 2, 2, 2});
  check_error([&] { unwrap(run_kernel(OpKind::AdaptiveAvgPool2d, {x}, {wrong})); },
              "kernel \"adaptive_avg_pool2d\" on cpu failed: InvalidArgument");
}
