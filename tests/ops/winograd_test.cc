// The Winograd F(4x4, 3x3) float32 convolution (kernels/cpu/winograd.h)
// against the float64 reference convolution: images smaller than a tile and
// not multiples of it, padding 0, 1 and 2, batch 2, bias or none, ReLU and
// clamp fused, strided (channels_last) input and output, 1 and 2 threads, every
// transform width the CPU runs (the GEMM's ISA selection), tiles in one block
// or in several (tile_block). The pre-transformed
// weight gives the same bits as the per-call transform, on every ISA; the
// error on ResNet-like data (weights ~N(0, 2/fan_in), inputs ~N(0, 1)) stays
// within the conformance tolerance; eager conv2d takes the Winograd path. A
// residual is added before the activation, bit for bit as an Add after the
// convolution would.
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/winograd.h"
#include "runtime/core/thread_pool.h"
#include "runtime/ops/qlinear.h"
#include "tests/harness/testing.h"

using namespace ember;
using ember::testing::check_close;

namespace {

std::vector<cpu::GemmIsa> supported_isas() {
  std::vector<cpu::GemmIsa> isas;
  for (cpu::GemmIsa isa : {cpu::GemmIsa::Portable, cpu::GemmIsa::Avx2, cpu::GemmIsa::Avx512}) {
    if (cpu::sgemm_isa_supported(isa)) isas.push_back(isa);
  }
  return isas;
}

struct Case {
  int64_t n, cin, cout, h, w, pad;
};

// The kernel on (x, w, b) into a fresh [N, Cout, OH, OW] tensor (channels_last
// when asked), u: the pre-transformed weight or nullptr.
// `residual`: added before the activation (made of the output's layout).
Tensor winograd(const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dParams& prm,
                const cpu::PackedOperand* u, int threads, bool channels_last = false,
                const Tensor& residual = Tensor()) {
  const int64_t oh = x.size(2) + 2 * prm.padding[0] - 2, ow = x.size(3) + 2 * prm.padding[1] - 2;
  const MemoryFormat format = channels_last ? MemoryFormat::ChannelsLast : MemoryFormat::Contiguous;
  const Tensor out = empty({x.size(0), w.size(0), oh, ow}).contiguous(format);
  const Tensor r = residual.defined() ? residual.contiguous(format) : Tensor();
  const TensorView xv = x.kernel_view(), wv = w.kernel_view(), ov = out.kernel_view();
  const TensorView bv = b.defined() ? b.kernel_view() : TensorView{};
  const float* pr = r.defined() ? r.data_ptr<float>() : nullptr;
  REQUIRE(cpu::winograd_applies(xv, wv, ov, prm));
  std::vector<char> scratch(cpu::winograd_workspace(xv, ov, u != nullptr, threads));
  REQUIRE_FALSE(cpu::winograd_conv2d(xv, wv, bv, ov, prm, u, scratch.data(), scratch.size() - 1, threads, pr));
  REQUIRE(cpu::winograd_conv2d(xv, wv, bv, ov, prm, u, scratch.data(), scratch.size(), threads, pr));
  return out;
}

Tensor reference(const Tensor& x, const Tensor& w, const Tensor& b, int64_t pad, const Activation& act) {
  const Tensor bias = b.defined() ? b.to(DType::Float64) : Tensor();
  const Tensor y = conv2d(x.to(DType::Float64), w.to(DType::Float64), bias, {1, 1}, {pad, pad}, {1, 1}, 1);
  const Tensor f = y.to(DType::Float32).contiguous();
  float* p = f.data_ptr<float>();
  for (int64_t i = 0; i < f.numel(); ++i) p[i] = activate(p[i], act);
  return f;
}

std::vector<float> weight_transform(const Tensor& w, int threads) {
  std::vector<float> u(cpu::winograd_weight_bytes(w.size(0), w.size(1)) / sizeof(float));
  cpu::winograd_transform_weight(w.data_ptr<float>(), w.size(0), w.size(1), u.data(), threads);
  return u;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  return ca.sizes() == cb.sizes() && std::memcmp(ca.data_ptr<float>(), cb.data_ptr<float>(), ca.numel() * 4) == 0;
}

}  // namespace

// fn(threads, k, x, w, b, prm) for each case k (random x, w and b; prm's
// padding k.pad) on every ISA, 1 and 2 threads.
template <typename F>
void each_case(std::initializer_list<Case> cases, F fn) {
  const int saved = get_num_threads();
  for (cpu::GemmIsa isa : supported_isas()) {
    REQUIRE(cpu::sgemm_set_isa(isa));
    CAPTURE(std::string(cpu::sgemm_kernel_name()));
    for (int threads : {1, 2}) {
      set_num_threads(threads);
      for (const Case& k : cases) {
        CAPTURE(k.n);
        CAPTURE(k.cin);
        CAPTURE(k.cout);
        CAPTURE(k.h);
        CAPTURE(k.w);
        CAPTURE(k.pad);
        const Tensor x = randn({k.n, k.cin, k.h, k.w}), w = randn({k.cout, k.cin, 3, 3}), b = randn({k.cout});
        Conv2dParams prm;
        prm.padding[0] = prm.padding[1] = k.pad;
        fn(threads, k, x, w, b, prm);
      }
    }
  }
  REQUIRE(cpu::sgemm_set_isa(cpu::GemmIsa::Auto));
  set_num_threads(saved);
}

TEST_CASE("winograd: matches the float64 reference on odd shapes, every ISA, 1 and 2 threads") {
  const std::vector<Activation> acts = ember::testing::fused_activations();
  const Activation &relu = acts[1], &clamp = acts[2], &hardswish = acts[3];
  each_case({{1, 3, 5, 1, 1, 1}, {1, 4, 3, 2, 2, 1}, {2, 5, 7, 9, 11, 1}, {1, 8, 8, 6, 6, 0}, {2, 3, 4, 13, 7, 0},
             {1, 17, 19, 10, 23, 2}, {1, 2, 2, 3, 3, 0}, {2, 33, 20, 14, 14, 1},
             // 240 tiles whose V and M outgrow a tile block: blocks across the two images, a partial last one
             {2, 16, 24, 45, 37, 1}},
            [&](int threads, const Case& k, const Tensor& x, const Tensor& w, const Tensor& b, Conv2dParams prm) {
              // y's standard deviation is sqrt(9 * cin) (unit weights): the transforms'
              // rounding grows with it (F(4x4, 3x3): about 1e-5 of it, see the ResNet case).
              const double tol = 5e-5 * std::sqrt(9.0 * k.cin);
              check_close(winograd(x, w, b, prm, nullptr, threads), reference(x, w, b, k.pad, prm.activation), 1e-5,
                          tol);
              check_close(winograd(x, w, Tensor(), prm, nullptr, threads),
                          reference(x, w, Tensor(), k.pad, prm.activation), 1e-5, tol);
              prm.activation = relu;
              check_close(winograd(x.contiguous(MemoryFormat::ChannelsLast), w, b, prm, nullptr, threads, true),
                          reference(x, w, b, k.pad, relu), 1e-5, tol);
              prm.activation = clamp;
              check_close(winograd(x, w, b, prm, nullptr, threads), reference(x, w, b, k.pad, clamp), 1e-5, tol);
              prm.activation = hardswish;
              check_close(winograd(x, w, b, prm, nullptr, threads), reference(x, w, b, k.pad, hardswish), 1e-5, tol);
            });
}

TEST_CASE("winograd: a residual, then the activation, bit for bit an Add after the convolution") {
  // Partial tiles, blocks of tiles, batch 2, channels_last output and
  // residual; every ISA (AVX-512: added as the tiles are stored), 1 and 2 threads.
  each_case({{1, 4, 3, 2, 2, 1}, {2, 5, 7, 9, 11, 1}, {1, 17, 19, 10, 23, 2}, {2, 16, 24, 45, 37, 1}},
            [&](int threads, const Case&, const Tensor& x, const Tensor& w, const Tensor& b, Conv2dParams prm) {
              const Tensor plain = winograd(x, w, b, prm, nullptr, threads).contiguous();
              const Tensor r = randn(plain.sizes()) * 3.0;
              for (const Activation& act : ember::testing::fused_activations()) {
                CAPTURE(static_cast<int>(act.kind));
                Tensor want = plain.clone();
                float* pw = want.data_ptr<float>();
                const float* pr = r.data_ptr<float>();
                for (int64_t i = 0; i < want.numel(); ++i) pw[i] = activate(pw[i] + pr[i], act);
                prm.activation = act;
                for (const bool channels_last : {false, true}) {
                  CAPTURE(channels_last);
                  CHECK(same_bits(winograd(x, w, b, prm, nullptr, threads, channels_last, r), want));
                }
              }
            });
}

TEST_CASE("winograd: the pre-transformed weight gives the per-call bits on every ISA and thread count") {
  const Tensor x = randn({2, 20, 11, 9}), w = randn({12, 20, 3, 3}), b = randn({12});
  Conv2dParams prm;
  prm.padding[0] = prm.padding[1] = 1;
  REQUIRE(cpu::sgemm_set_isa(cpu::GemmIsa::Portable));
  const std::vector<float> u0 = weight_transform(w, 1);
  const std::vector<cpu::PackedOperand> p0 = cpu::winograd_pack_weight(w.data_ptr<float>(), 12, 20, 1);
  REQUIRE(p0.size() == 36);
  const Tensor y0 = winograd(x, w, b, prm, p0.data(), 1);
  for (cpu::GemmIsa isa : supported_isas()) {
    REQUIRE(cpu::sgemm_set_isa(isa));
    CAPTURE(std::string(cpu::sgemm_kernel_name()));
    for (int threads : {1, 2}) {
      const std::vector<float> u = weight_transform(w, threads);
      CHECK(std::memcmp(u.data(), u0.data(), u.size() * sizeof(float)) == 0);
      const std::vector<cpu::PackedOperand> packed = cpu::winograd_pack_weight(w.data_ptr<float>(), 12, 20, threads);
      CHECK(same_bits(winograd(x, w, b, prm, packed.data(), threads), winograd(x, w, b, prm, nullptr, threads)));
    }
    if (isa != cpu::GemmIsa::Portable) {  // U packed for another kernel is refused, nothing written
      Tensor out = empty({2, 12, 11, 9});
      const TensorView xv = x.kernel_view(), ov = out.kernel_view();
      std::vector<char> scratch(cpu::winograd_workspace(xv, ov, true, 1));
      CHECK_FALSE(cpu::winograd_conv2d(xv, w.kernel_view(), b.kernel_view(), ov, prm, p0.data(), scratch.data(),
                                       scratch.size(), 1));
    }
  }
  // The transforms agree across ISAs too; only the GEMM's summation order differs.
  check_close(winograd(x, w, b, prm, nullptr, 2), y0, 1e-5, 5e-5 * std::sqrt(9.0 * 20));
  REQUIRE(cpu::sgemm_set_isa(cpu::GemmIsa::Auto));
}

TEST_CASE("winograd: error on ResNet-like data within 1e-4 of the largest output") {
  // ResNet-18's 3x3 stride-1 layers (spatial size cut where the float64
  // reference would be slow): weights ~N(0, 2 / fan_in), inputs ~N(0, 1).
  const Case cases[] = {{1, 64, 64, 56, 56, 1}, {1, 128, 128, 28, 28, 1}, {1, 256, 256, 14, 14, 1},
                        {1, 512, 512, 7, 7, 1}};
  for (const Case& k : cases) {
    CAPTURE(k.cin);
    const Tensor x = randn({k.n, k.cin, k.h, k.w});
    const Tensor w = randn({k.cout, k.cin, 3, 3}) * std::sqrt(2.0 / (9.0 * k.cin));
    Conv2dParams prm;
    prm.padding[0] = prm.padding[1] = k.pad;
    const Tensor y = winograd(x, w, Tensor(), prm, nullptr, get_num_threads());
    const Tensor r = reference(x, w, Tensor(), k.pad, prm.activation);
    const float* py = y.data_ptr<float>();
    const float* pr = r.data_ptr<float>();
    double err = 0.0, peak = 0.0;
    for (int64_t i = 0; i < y.numel(); ++i) {
      err = std::max(err, std::fabs(static_cast<double>(py[i]) - pr[i]));
      peak = std::max(peak, std::fabs(static_cast<double>(pr[i])));
    }
    MESSAGE("cin " << k.cin << ": max |error| " << err << ", max |y| " << peak << ", ratio " << err / peak);
    CHECK(err <= 1e-4 * peak);
    check_close(y, r, 1e-4, 1e-4);
  }
}

TEST_CASE("winograd: conv2d and conv2d_activated take it with the fused activation") {
  const Tensor x = randn({1, 64, 28, 28}), w = randn({64, 64, 3, 3}) * 0.06, b = randn({64});
  Conv2dParams prm;
  prm.padding[0] = prm.padding[1] = 1;
  const Tensor direct = conv2d(x, w, b, {1, 1}, {1, 1}, {1, 1}, 1);
  CHECK(same_bits(direct, winograd(x, w, b, prm, nullptr, get_num_threads())));
  check_close(direct, reference(x, w, b, 1, prm.activation), 1e-4, 1e-4);
  prm.activation.kind = ActivationKind::Relu;
  bool fused = false;
  const Tensor y = conv2d_activated(x, w, b, prm, &fused);
  REQUIRE(fused);
  CHECK(same_bits(y, winograd(x, w, b, prm, nullptr, get_num_threads())));
}
