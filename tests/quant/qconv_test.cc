// Dynamic int8 Conv2d (quant/dynamic_conv.h) against the reference formulas:
// the same quantized input and weights, dequantized, convolved in double. The
// integer sums are exact, so only the final float rounding may differ.
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/qgemm.h"
#include "quant/dynamic_conv.h"
#include "quant/qscheme.h"
#include "tests/harness/testing.h"

using namespace ember;

TEST_CASE("dynamic_conv2d: equals the dequantized reference (stride, padding, dilation, bias, relu), NCHW and channels last") {
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  struct Case {
    int64_t n, ci, h, w, co, kh, kw, s0, s1, p0, p1, d0, d1;
    bool per_channel, relu;
  };
  const Case cases[] = {{1, 3, 8, 8, 5, 3, 3, 1, 1, 1, 1, 1, 1, true, false},
                        {2, 4, 9, 7, 17, 3, 2, 2, 1, 0, 1, 1, 2, false, true},
                        {1, 1, 5, 5, 1, 1, 1, 1, 1, 0, 0, 1, 1, true, false},
                        {2, 6, 11, 10, 33, 5, 5, 2, 3, 2, 2, 1, 1, true, true},
                        {2, 37, 9, 13, 40, 1, 1, 1, 1, 0, 0, 1, 1, true, false},  // pointwise: m, c_in > 32
                        {1, 70, 6, 7, 5, 1, 1, 1, 1, 0, 0, 1, 1, false, true},
                        // 64 channels fill the depth of every family (a multiple of 4, and of 64 on
                        // AMX): the channels-last input is the GEMM's A as it is
                        {2, 64, 5, 6, 24, 1, 1, 1, 1, 0, 0, 1, 1, true, true},
                        // kernel rows inside the image (one copy each) and at its borders, 7x7 stride 2
                        {1, 3, 19, 21, 8, 7, 7, 2, 2, 3, 3, 1, 1, true, true},
                        // runs of 9, 21 (above), 48 and 60 bytes: copies of 16, 32 and 64 past their end,
                        // but where they would spill past the output row (its last positions)
                        {2, 16, 7, 9, 10, 3, 3, 1, 1, 1, 1, 1, 1, true, false},
                        {1, 12, 6, 8, 9, 2, 5, 1, 2, 0, 2, 1, 1, false, true}};
  const cpu::QGemmIsa isas[] = {cpu::QGemmIsa::Portable, cpu::QGemmIsa::Avx2, cpu::QGemmIsa::Avx512Vnni,
                                cpu::QGemmIsa::Amx, cpu::QGemmIsa::Neon};
  for (const cpu::QGemmIsa isa : isas) {
  if (!cpu::qgemm_set_isa(isa)) continue;
  CAPTURE(std::string(cpu::qgemm_kernel_name()));
  for (const Case& c : cases) {
    std::vector<float> x(static_cast<size_t>(c.n * c.ci * c.h * c.w)), wt(static_cast<size_t>(c.co * c.ci * c.kh * c.kw)),
        bias(static_cast<size_t>(c.co));
    for (auto& v : x) v = nd(rng) + 0.4f;
    for (auto& v : wt) v = nd(rng) * 0.2f;
    for (auto& v : bias) v = nd(rng);
    const int64_t k = c.ci * c.kh * c.kw;
    std::vector<int8_t> q(wt.size());
    std::vector<float> s(static_cast<size_t>(c.per_channel ? c.co : 1));
    quant::quantize_weight_int8(wt.data(), c.co, k, c.per_channel, q.data(), s.data());
    Conv2dParams p;
    p.stride[0] = c.s0;
    p.stride[1] = c.s1;
    p.padding[0] = c.p0;
    p.padding[1] = c.p1;
    p.dilation[0] = c.d0;
    p.dilation[1] = c.d1;
    const quant::PackedConv2d packed =
        quant::pack_conv2d(q.data(), c.co, c.ci, c.kh, c.kw, s.data(), c.per_channel, bias.data(), p);
    const int64_t oh = quant::conv_out_size(packed, 0, c.h), ow = quant::conv_out_size(packed, 1, c.w);
    CHECK(oh == (c.h + 2 * c.p0 - c.d0 * (c.kh - 1) - 1) / c.s0 + 1);
    Activation act;
    if (c.relu) act.kind = ActivationKind::Relu;
    std::vector<float> y(static_cast<size_t>(c.n * c.co * oh * ow));
    quant::dynamic_conv2d(x.data(), c.n, c.h, c.w, packed, y.data(), act, {}, 2);
    // Channels last in and out: the same values, bit for bit.
    std::vector<float> x_cl(x.size()), y_cl(y.size());
    for (int64_t b = 0; b < c.n; ++b) {
      for (int64_t i = 0; i < c.ci * c.h * c.w; ++i) {
        x_cl[static_cast<size_t>((b * c.h * c.w + i % (c.h * c.w)) * c.ci + i / (c.h * c.w))] =
            x[static_cast<size_t>(b * c.ci * c.h * c.w + i)];
      }
    }
    quant::dynamic_conv2d(x_cl.data(), c.n, c.h, c.w, packed, y_cl.data(), act, {}, 2, true, true);
    int64_t cl_mismatches = 0;
    for (int64_t b = 0; b < c.n; ++b) {
      for (int64_t i = 0; i < c.co * oh * ow; ++i) {
        cl_mismatches += y_cl[static_cast<size_t>((b * oh * ow + i % (oh * ow)) * c.co + i / (oh * ow))] !=
                         y[static_cast<size_t>(b * c.co * oh * ow + i)];
      }
    }
    CHECK(cl_mismatches == 0);
    // NCHW in, channels last out (an image's stem in a channels_last model): the same, bit for bit.
    std::vector<float> y_mixed(y.size());
    quant::dynamic_conv2d(x.data(), c.n, c.h, c.w, packed, y_mixed.data(), act, {}, 2, false, true);
    CHECK(y_mixed == y_cl);
    // Reference: the input's per-tensor quantization, dequantized; weights dequantized.
    const int64_t total = static_cast<int64_t>(x.size());
    std::vector<uint8_t> qx(x.size());
    float as;
    int32_t az;
    quant::quantize_activations_u8(x.data(), 1, total, total, false, false, qx.data(), total, &as, &az);
    double worst = 0;
    for (int64_t b = 0; b < c.n; ++b) {
      for (int64_t co = 0; co < c.co; ++co) {
        for (int64_t oy = 0; oy < oh; ++oy) {
          for (int64_t ox = 0; ox < ow; ++ox) {
            int64_t acc = 0;
            for (int64_t ci = 0; ci < c.ci; ++ci) {
              for (int64_t ky = 0; ky < c.kh; ++ky) {
                for (int64_t kx = 0; kx < c.kw; ++kx) {
                  const int64_t iy = oy * c.s0 - c.p0 + ky * c.d0, ix = ox * c.s1 - c.p1 + kx * c.d1;
                  if (iy < 0 || iy >= c.h || ix < 0 || ix >= c.w) continue;
                  const int64_t xa = qx[static_cast<size_t>(((b * c.ci + ci) * c.h + iy) * c.w + ix)] - az;
                  acc += xa * q[static_cast<size_t>(((co * c.ci + ci) * c.kh + ky) * c.kw + kx)];
                }
              }
            }
            // The epilogue's formula: float(acc) * (as * ws) + bias.
            float want = static_cast<float>(acc) * (as * s[c.per_channel ? co : 0]) + bias[co];
            if (c.relu && want < 0) want = 0;
            const float got = y[static_cast<size_t>(((b * c.co + co) * oh + oy) * ow + ox)];
            worst = std::max(worst, static_cast<double>(std::abs(got - want)));
          }
        }
      }
    }
    CAPTURE(c.co);
    CHECK(worst == 0.0);
  }
  }
  REQUIRE(cpu::qgemm_set_isa(cpu::QGemmIsa::Auto));
}
