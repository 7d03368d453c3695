// The Vulkan backend's run-time ops QLinear (dynamic int8 Linear) and
// SparseLinear (kernels/vulkan/quant_linear.h), run through the eager
// front-ends the executor runs (runtime/ops/qlinear.h) with weights the
// backend prepared, against quant/'s CPU references: the activation
// quantization (scales, zero points, bytes), the int32 sums of both GEMM
// shaders (portable and OpSUDotKHR), the outputs of quant::dynamic_linear_ref,
// and the sparse Linear against the dense CPU linear.
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/ref/qgemm.h"
#include "kernels/vulkan/quant_linear.h"
#include "quant/coo.h"
#include "quant/dynamic_linear.h"
#include "quant/qscheme.h"
#include "runtime/ops/qlinear.h"
#include "tests/vulkan/vulkan_testing.h"

using namespace ember;
using namespace ember::testing;

namespace {

std::vector<float> floats(const Tensor& t) {
  const Tensor c = to_cpu(t).contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}
std::vector<int32_t> ints(const Tensor& t) {
  const Tensor c = to_cpu(t).contiguous();
  return std::vector<int32_t>(c.data_ptr<int32_t>(), c.data_ptr<int32_t>() + c.numel());
}
// The kernels' test switches, restored at the end of the scope.
struct TestOptions {
  vk::QuantLinearTestOptions saved = vk::quant_linear_test_options();
  explicit TestOptions(bool dot = true, bool skew = false, bool reduce = false) {
    vk::quant_linear_test_options() = {dot, skew, reduce};
  }
  ~TestOptions() { vk::quant_linear_test_options() = saved; }
};

Tensor vk_empty(Shape shape, DType dtype) { return empty(std::move(shape), TensorOptions(dtype).device(kVulkan)); }

// The quantization stage: q (Int32 [m, k4]) and params (Float32 [(m + 1) * 4]).
struct Quantized {
  Tensor q, params;
};
Quantized quantize_activations(const Tensor& x, int64_t k4, bool per_row, bool reduce_range = false,
                               bool skew = false) {
  const TestOptions options(true, skew, reduce_range);
  const int64_t m = x.size(0);
  const Tensor xv = to_vk(x);
  Quantized r{vk_empty({m, k4}, DType::Int32), zeros({(m + 1) * 4}, TensorOptions(DType::Float32).device(kVulkan))};
  REQUIRE(vk::quantize_activations(xv.kernel_view(), r.q.kernel_view(), r.params.kernel_view(), per_row) ==
          Status::Ok);
  return r;
}

Tensor accumulators(const Tensor& q, const vk::VkQuantLinear& w, bool dot) {
  const TestOptions options(dot);
  Tensor acc = vk_empty({q.size(0), w.out_features}, DType::Int32);
  REQUIRE(vk::quant_linear_accumulators(q.kernel_view(), w, acc.kernel_view()) == Status::Ok);
  return acc;
}

// y = the QLinear kernel through its front-end, as the executor runs it.
Tensor int8_linear(const Tensor& x, const vk::VkQuantLinear& w, const Activation& act, bool per_row = false) {
  QLinearParams p;
  p.weight = &w;
  p.activation = act;
  p.per_row_activations = per_row;
  return qlinear(x, p);
}

Tensor sparse_lin(const Tensor& x, const vk::VkSparseLinear& w, const Tensor& bias = Tensor(), const Activation& act = {}) {
  QLinearParams p;
  p.weight = &w;
  p.activation = act;
  return sparse_linear(x, p, bias);
}

uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// Activations with a wide spread of ranges: row i is randn * 2^(i % 13 - 6),
// shifted on some rows so that min or max is clipped at 0.
Tensor activations(int64_t m, int64_t k, uint64_t seed) {
  manual_seed(seed);
  Tensor x = randn({m, k}).contiguous();
  float* p = x.data_ptr<float>();
  for (int64_t i = 0; i < m; ++i) {
    const float s = std::ldexp(1.0f, static_cast<int>(i % 13) - 6);
    const float shift = i % 5 == 3 ? 3.0f : (i % 5 == 4 ? -3.0f : 0.0f);
    for (int64_t c = 0; c < k; ++c) p[i * k + c] = (p[i * k + c] + shift) * s;
  }
  return x;
}

struct IntWeights {
  std::vector<int8_t> q;
  std::vector<float> scales;
  std::vector<float> bias;
};
IntWeights int_weights(int64_t n, int64_t k, bool per_channel, uint64_t seed) {
  manual_seed(seed);
  const Tensor w = (randn({n, k}) * 0.1).contiguous();
  const Tensor b = randn({n}).contiguous();
  IntWeights r;
  r.q.resize(static_cast<size_t>(n * k));
  r.scales.resize(static_cast<size_t>(per_channel ? n : 1));
  quant::quantize_weight_int8(w.data_ptr<float>(), n, k, per_channel, r.q.data(), r.scales.data());
  r.bias.assign(b.data_ptr<float>(), b.data_ptr<float>() + n);
  return r;
}

// The device's quantization of x against quant::quantize_activations_u8:
// scales bit for bit, zero points and every byte equal.
// skew: every device quotient is first put off by up to 2 ulp (as a device
// whose division is not correctly rounded), which the shaders must correct.
void check_quantized(const Tensor& x, bool per_row, bool reduce_range, bool skew) {
  const int64_t m = x.size(0), k = x.size(1), k4 = (k + 3) / 4;
  const Tensor xc = x.contiguous();
  const size_t rows = static_cast<size_t>(per_row ? m : 1);
  std::vector<uint8_t> q(static_cast<size_t>(m * k4 * 4));
  std::vector<float> scales(rows);
  std::vector<int32_t> zps(rows);
  quant::quantize_activations_u8(xc.data_ptr<float>(), m, k, k, per_row, reduce_range, q.data(), k4 * 4,
                                 scales.data(), zps.data());
  const Quantized qa = quantize_activations(x, k4, per_row, reduce_range, skew);
  const std::vector<float> params = floats(qa.params);
  for (size_t r = 0; r < rows; ++r) {
    const size_t o = (per_row ? r : static_cast<size_t>(m)) * 4;
    CAPTURE(r);
    CHECK(bits(params[o + 2]) == bits(scales[r]));
    CHECK(params[o + 3] == static_cast<float>(zps[r]));
  }
  const std::vector<int32_t> words = ints(qa.q);
  REQUIRE(words.size() * 4 == q.size());
  int64_t wrong = 0;
  for (size_t i = 0; i < q.size(); ++i) wrong += ((static_cast<uint32_t>(words[i / 4]) >> (8 * (i % 4))) & 0xFF) != q[i];
  CHECK(wrong == 0);
}

const std::vector<std::pair<int64_t, int64_t>> kShapes = {{768, 3072}, {3072, 768}, {5, 7}, {64, 1}};
const std::vector<int64_t> kRows = {1, 3, 16, 128};

}  // namespace

TEST_CASE("the device has what the shaders use (lavapipe: integer dot product)") {
  Result<vk::Context*> c = vk::Context::get();
  REQUIRE(c.ok());
  // Both GEMM shaders are tested below only if the dot-product one can run.
  CHECK(c.get()->caps().integer_dot_product);
}

TEST_CASE("activation quantization matches quant/qscheme.cc bit for bit, also with skewed divisions") {
  for (bool skew : {false, true}) {
    CAPTURE(skew);
    // Many row ranges (per row: one scale per row, 2^-6 .. 2^6, clipped mins and maxes).
    for (bool reduce : {false, true}) {
      check_quantized(activations(130, 37, 1), true, reduce, skew);
      check_quantized(activations(3, 768, 2), false, reduce, skew);
      check_quantized(activations(1, 5, 3), false, reduce, skew);
    }
    // 1000 random ranges: scales and zero points from every kind of quotient.
    manual_seed(9);
    Tensor x = randn({1000, 8}).contiguous();
    const Tensor e = (randn({1000, 1}) * 4.0).exp().contiguous();
    x = (x * e + randn({1000, 1})).contiguous();
    check_quantized(x, true, false, skew);
    // ChooseQuantizationParams' special cases: a zero row (scale 0.1), tiny
    // ranges below SMALL_SCALE_THRESHOLD (one-sided: the clipped bound is
    // stretched; two-sided: both amplified), a constant row, a wide range,
    // zero points from either bound.
    const std::vector<std::vector<float>> special = {
        {0.0f, 0.0f, 0.0f, 0.0f, 0.0f},         {1e-6f, 3e-6f, 2e-6f, 0.0f, 1e-7f},
        {-1e-6f, -3e-6f, -2e-6f, 0.0f, -1e-7f}, {-1e-6f, 2e-6f, 5e-7f, -3e-7f, 1e-6f},
        {2.5f, 2.5f, 2.5f, 2.5f, 2.5f},         {-1e4f, 3e3f, 1.0f, -0.5f, 7e3f},
        {-1.0f, 254.0f, 0.5f, 3.0f, -0.25f},    {-254.0f, 1.0f, 0.5f, 3.0f, -0.25f}};
    for (const auto& row : special) {
      const Tensor t = tensor(row, {1, 5});
      check_quantized(t, false, false, skew);
      check_quantized(t, true, true, skew);
    }
  }
}

TEST_CASE("int32 sums equal kernels/ref's for the device's quantized activations, both shaders") {
  for (const auto& [k, n] : kShapes) {
    for (int64_t m : kRows) {
      if (m * k * n > 100000000) continue;  // 128 x 768 x 3072 below, end to end
      CAPTURE(m);
      CAPTURE(k);
      CAPTURE(n);
      const IntWeights w = int_weights(n, k, true, static_cast<uint64_t>(k + n));
      Result<std::shared_ptr<const vk::VkQuantLinear>> vw =
          vk::pack_quant_linear(w.q.data(), n, k, w.scales.data(), true, nullptr);
      REQUIRE(vw.ok());
      const int64_t k4 = vw.get()->k4;
      const Quantized qa = quantize_activations(activations(m, k, 5), k4, false);
      const std::vector<int32_t> words = ints(qa.q);
      std::vector<uint8_t> q(static_cast<size_t>(m * k));
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t c = 0; c < k; ++c)
          q[static_cast<size_t>(i * k + c)] = static_cast<uint8_t>(static_cast<uint32_t>(words[static_cast<size_t>(i * k4 + c / 4)]) >> (8 * (c % 4)));
      }
      std::vector<int32_t> expected(static_cast<size_t>(m * n));
      ref::qgemm_u8s8s32(m, n, k, q.data(), k, w.q.data(), k, expected.data(), n);
      for (bool dot : {true, false}) {
        CAPTURE(dot);
        CHECK(ints(accumulators(qa.q, *vw.get(), dot)) == expected);
      }
    }
  }
}

TEST_CASE("dynamic int8 linear matches quant::dynamic_linear_ref (M x (K, N), scales, bias, relu, per row)") {
  double max_diff = 0.0, max_steps = 0.0;
  int cases = 0;
  for (const auto& [k, n] : kShapes) {
    for (int64_t m : kRows) {
      const bool big = m * k * n > 1000000;
      // Every combination on the small shapes, four on the big ones.
      for (int config = 0; config < 16; ++config) {
        if (big && config % 5 != static_cast<int>(m % 5)) continue;
        const bool per_channel = config & 1, has_bias = config & 2, relu = config & 4, per_row = config & 8;
        const bool dot = !big || config % 2 == 0;
        CAPTURE(m);
        CAPTURE(k);
        CAPTURE(n);
        CAPTURE(config);
        const IntWeights w = int_weights(n, k, per_channel, static_cast<uint64_t>(config + 7 * k));
        const float* bias = has_bias ? w.bias.data() : nullptr;
        Result<std::shared_ptr<const vk::VkQuantLinear>> vw =
            vk::pack_quant_linear(w.q.data(), n, k, w.scales.data(), per_channel, bias);
        REQUIRE(vw.ok());
        const Tensor x = activations(m, k, static_cast<uint64_t>(m + config));
        Activation act;
        if (relu) act.kind = ActivationKind::Relu;
        quant::DynamicQuantOptions opt;
        opt.per_row = per_row;
        std::vector<float> expected(static_cast<size_t>(m * n));
        quant::dynamic_linear_ref(x.data_ptr<float>(), m, k, w.q.data(), n, w.scales.data(), per_channel, bias,
                                  expected.data(), act, opt);
        const TestOptions options(dot, config % 3 == 0);
        const Tensor y = int8_linear(to_vk(x), *vw.get(), act, per_row);
        REQUIRE(y.sizes() == Shape{m, n});
        const std::vector<float> got = floats(y);
        // One output quantization step: a_scale * w_scale (the scales differ
        // at most in the last bit; the integer parts are equal).
        std::vector<float> as(static_cast<size_t>(per_row ? m : 1));
        std::vector<int32_t> az(as.size());
        std::vector<uint8_t> qx(static_cast<size_t>(m * k));
        quant::quantize_activations_u8(x.data_ptr<float>(), m, k, k, per_row, false, qx.data(), k, as.data(),
                                       az.data());
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t j = 0; j < n; ++j) {
            const size_t o = static_cast<size_t>(i * n + j);
            const double step = static_cast<double>(as[per_row ? static_cast<size_t>(i) : 0]) *
                                w.scales[per_channel ? static_cast<size_t>(j) : 0];
            const double d = std::fabs(static_cast<double>(got[o]) - expected[o]);
            max_diff = std::max(max_diff, d);
            max_steps = std::max(max_steps, d / step);
            REQUIRE_MESSAGE(d <= step, "y[" << i << ", " << j << "] = " << got[o] << " vs " << expected[o]);
          }
        }
        ++cases;
      }
    }
  }
  MESSAGE("dynamic int8 linear: " << cases << " cases, max |vulkan - cpu| = " << max_diff << " (" << max_steps
                                  << " output steps)");
  // The quantization is bit-exact (above), so the outputs are too.
  CHECK(max_diff == 0.0);
}

TEST_CASE("dynamic int8 linear: strided and batched inputs, clamp, empty input") {
  const int64_t k = 37, n = 9;
  const IntWeights w = int_weights(n, k, true, 3);
  Result<std::shared_ptr<const vk::VkQuantLinear>> vw =
      vk::pack_quant_linear(w.q.data(), n, k, w.scales.data(), true, w.bias.data());
  REQUIRE(vw.ok());
  const vk::VkQuantLinear& vq = *vw.get();
  const Tensor x = activations(6, k, 11);
  Activation clamp;
  clamp.kind = ActivationKind::Clamp;
  clamp.min = -0.5;
  clamp.max = 0.75;
  std::vector<float> expected(static_cast<size_t>(6 * n));
  quant::dynamic_linear_ref(x.data_ptr<float>(), 6, k, w.q.data(), n, w.scales.data(), true, w.bias.data(),
                            expected.data(), clamp);
  const Tensor want = tensor(expected, {6, n});
  // A transposed view (column stride 6), and [2, 3, K] (leading dims collapse).
  check_equal(to_cpu(int8_linear(vk_transposed_view(x), vq, clamp)), want);
  check_equal(to_cpu(int8_linear(to_vk(x.reshape({2, 3, k})), vq, clamp)),
              want.reshape({2, 3, n}));
  // Rows 0, 2, 4 (row stride 2k) against the same rows alone.
  std::vector<float> even(static_cast<size_t>(3 * n));
  const Tensor xe = x.narrow(0, 0, 6).reshape({3, 2, k}).select(1, 0).contiguous();
  quant::dynamic_linear_ref(xe.data_ptr<float>(), 3, k, w.q.data(), n, w.scales.data(), true, w.bias.data(),
                            even.data(), clamp);
  check_equal(to_cpu(int8_linear(to_vk(x).reshape({3, 2, k}).select(1, 0), vq, clamp)),
              tensor(even, {3, n}));
  const Tensor y0 = int8_linear(to_vk(zeros({0, k})), vq, clamp);
  CHECK(y0.sizes() == Shape{0, n});
  CHECK(y0.device() == kVulkan);
}

TEST_CASE("dynamic int8 linear errors") {
  const IntWeights w = int_weights(4, 6, false, 1);
  Result<std::shared_ptr<const vk::VkQuantLinear>> vw =
      vk::pack_quant_linear(w.q.data(), 4, 6, w.scales.data(), false, nullptr);
  REQUIRE(vw.ok());
  check_error([&] { int8_linear(to_vk(zeros({2, 5})), *vw.get(), {}); },
              "int8 linear: the input's last dimension 5 does not match the weight's 6");
  check_error([&] { int8_linear(zeros({2, 6}), *vw.get(), {}); },
              "int8 linear: the weight was prepared for vulkan, the input is on cpu");
  check_error([&] { int8_linear(to_vk(zeros({2, 6}, DType::Int32)), *vw.get(), {}); },
              "int8 linear: expected a float32 input, got int32");
  Result<std::shared_ptr<const vk::VkQuantLinear>> bad = vk::pack_quant_linear(w.q.data(), 0, 6, w.scales.data(), false, nullptr);
  CHECK(bad.status() == Status::InvalidArgument);
  CHECK(vk::Context::why() == "int8 linear on vulkan: bad weight [0, 6] (sizes must be positive, in <= 2^24)");
}

TEST_CASE("sparse linear matches the dense CPU linear within 1e-5 of sum |w x|") {
  for (const auto& [k, n] : kShapes) {
    for (int64_t m : kRows) {
      for (int config = 0; config < 4; ++config) {
        const bool has_bias = config & 1, relu = config & 2;
        if (m * k * n > 1000000 && config != static_cast<int>(m % 4)) continue;
        CAPTURE(m);
        CAPTURE(k);
        CAPTURE(n);
        CAPTURE(config);
        manual_seed(static_cast<uint64_t>(k * 3 + n + config));
        // ~80 % zeros, and one all-zero output row.
        Tensor w = where(lt(rand({n, k}), 0.8), 0.0, randn({n, k})).contiguous();
        w.select(0, 0).fill_(0.0);
        const Tensor b = has_bias ? randn({n}) : Tensor();
        const Tensor x = randn({m, k});
        Result<std::shared_ptr<const vk::VkSparseLinear>> vw = vk::pack_sparse_linear(sparse::pack_csr_dense(w));
        REQUIRE(vw.ok());
        Activation act;
        if (relu) act.kind = ActivationKind::Relu;
        Tensor expected = linear(x, w, b);
        Tensor bound = linear(abs(x), abs(w), has_bias ? abs(b) : Tensor());
        if (relu) expected = ember::relu(expected);  // relu is 1-Lipschitz: the bound holds
        const Tensor y = to_cpu(sparse_lin(to_vk(x), *vw.get(), has_bias ? to_vk(b) : Tensor(), act));
        REQUIRE(y.sizes() == expected.sizes());
        const std::vector<float> got = floats(y), want = floats(expected), tol = floats(bound);
        for (size_t i = 0; i < got.size(); ++i) {
          REQUIRE_MESSAGE(std::fabs(got[i] - want[i]) <= 1e-5 * tol[i] + 1e-30,
                          "element " << i << ": " << got[i] << " vs " << want[i]);
        }
      }
    }
  }
}

TEST_CASE("sparse linear: strided and batched inputs, clamp, empty input, errors") {
  const int64_t k = 300, n = 70;
  manual_seed(4);
  const Tensor w = where(lt(rand({n, k}), 0.9), 0.0, randn({n, k})).contiguous();
  const Tensor b = randn({n}), x = randn({6, k});
  Result<std::shared_ptr<const vk::VkSparseLinear>> vw = vk::pack_sparse_linear(sparse::pack_csr_dense(w));
  REQUIRE(vw.ok());
  const vk::VkSparseLinear& vs = *vw.get();
  Activation clamp;
  clamp.kind = ActivationKind::Clamp;
  clamp.min = -1.0;
  clamp.max = 1.5;
  const Tensor want = ember::clamp(linear(x, w, b), -1.0, 1.5);
  check_close(to_cpu(sparse_lin(vk_transposed_view(x), vs, to_vk(b), clamp)), want, 1e-5, 1e-5);
  check_close(to_cpu(sparse_lin(to_vk(x.reshape({3, 2, k})), vs, to_vk(b), clamp)), want.reshape({3, 2, n}), 1e-5,
              1e-5);
  const Tensor y0 = sparse_lin(to_vk(zeros({0, k})), vs, to_vk(b));
  CHECK(y0.sizes() == Shape{0, n});
  check_error([&] { sparse_lin(to_vk(zeros({2, 5})), vs, to_vk(b)); },
              "sparse linear: input [2, 5] does not end in 300 (weight [70, 300])");
  check_error([&] { sparse_lin(to_vk(zeros({2, k})), vs, to_vk(zeros({3}))); },
              "sparse linear: bias [3] is not [70]");
  check_error([&] { sparse_lin(zeros({2, k}), vs, b); },
              "sparse linear: the weight was prepared for vulkan, the input is on cpu");
  // An all-zero weight: y = bias.
  Result<std::shared_ptr<const vk::VkSparseLinear>> zero = vk::pack_sparse_linear(sparse::pack_csr_dense(zeros({n, k})));
  REQUIRE(zero.ok());
  CHECK(zero.get()->nnz == 0);
  check_equal(to_cpu(sparse_lin(to_vk(x), *zero.get(), to_vk(b))), b.expand({6, n}).contiguous());
  sparse::CsrMatrix broken = sparse::pack_csr_dense(w);
  broken.col16.clear();  // K = 300: narrow columns
  broken.col32.clear();
  CHECK(vk::pack_sparse_linear(broken).status() == Status::InvalidArgument);
  CHECK(vk::Context::why().find("sparse linear on vulkan: bad CSR matrix [70, 300] with 0 nonzeros") == 0);
  sparse::CsrMatrix empty_matrix;
  CHECK(vk::pack_sparse_linear(empty_matrix).status() == Status::InvalidArgument);
  CHECK(vk::Context::why() == "sparse linear on vulkan: bad CSR matrix [0, 0] with 0 nonzeros");
}

TEST_CASE("sparse linear with int8 values and per-row scales") {
  for (const auto& [k, n] : kShapes) {
    for (int64_t m : {int64_t{1}, int64_t{3}, int64_t{16}}) {
      CAPTURE(m);
      CAPTURE(k);
      CAPTURE(n);
      manual_seed(static_cast<uint64_t>(k + n + m));
      // int8 values in [-128, 127] (~85 % zeros), scales per row.
      const Tensor q = where(lt(rand({n, k}), 0.85), 0.0, randint(-128, 128, {n, k}).to(DType::Float32)).contiguous();
      const Tensor scale = (rand({n}) * 0.01 + 0.001).contiguous();
      const Tensor b = randn({n}), x = randn({m, k});
      sparse::CsrMatrix w = sparse::pack_csr_dense(q);
      for (float v : w.values) w.qvalues.push_back(static_cast<int8_t>(v));
      w.values.clear();  // int8 only, as pack_csr leaves it
      w.int8 = true;
      w.row_scale.assign(scale.data_ptr<float>(), scale.data_ptr<float>() + n);
      Result<std::shared_ptr<const vk::VkSparseLinear>> vw = vk::pack_sparse_linear(w);
      REQUIRE(vw.ok());
      CHECK(vw.get()->int8);
      const Tensor expected = linear(x, q) * scale + b;
      const Tensor bound = linear(abs(x), abs(q)) * scale + abs(b);
      const std::vector<float> got = floats(sparse_lin(to_vk(x), *vw.get(), to_vk(b))),
                               want = floats(expected), tol = floats(bound);
      REQUIRE(got.size() == want.size());
      for (size_t i = 0; i < got.size(); ++i) {
        REQUIRE_MESSAGE(std::fabs(got[i] - want[i]) <= 1e-5 * tol[i] + 1e-30,
                        "element " << i << ": " << got[i] << " vs " << want[i]);
      }
    }
  }
  sparse::CsrMatrix bad = sparse::pack_csr_dense(eye(4));
  bad.int8 = true;
  bad.qvalues = {1, 1, 1};  // 4 nonzeros
  bad.row_scale = {1.0f, 1.0f, 1.0f, 1.0f};
  CHECK(vk::pack_sparse_linear(bad).status() == Status::InvalidArgument);
  CHECK(vk::Context::why() == "sparse linear on vulkan: bad CSR matrix [4, 4] with 4 nonzeros");
}

EMBER_VULKAN_NO_VALIDATION_ERRORS()
