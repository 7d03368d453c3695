// int8 GEMM and dynamic int8 Linear: every micro-kernel this CPU has (and the
// portable one) against kernels/ref's int32 sums, exactly, on odd sizes; the
// fused epilogue bit for bit against the reference formulas; the quantization
// parameters against values PyTorch 1.13 computes.
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/qgemm.h"
#include "kernels/ref/qgemm.h"
#include "quant/dynamic_linear.h"
#include "quant/qscheme.h"
#include "runtime/core/thread_pool.h"
#include "tests/harness/testing.h"

using namespace ember;

namespace {

std::vector<cpu::QGemmIsa> isas() {
  std::vector<cpu::QGemmIsa> out;
  for (auto isa : {cpu::QGemmIsa::Portable, cpu::QGemmIsa::Avx2, cpu::QGemmIsa::Avx512Vnni, cpu::QGemmIsa::Amx,
                   cpu::QGemmIsa::Neon}) {
    if (cpu::qgemm_isa_supported(isa)) out.push_back(isa);
  }
  return out;
}

struct IsaRestore {
  ~IsaRestore() { cpu::qgemm_set_isa(cpu::QGemmIsa::Auto); }
};

}  // namespace

TEST_CASE("qgemm: int32 sums equal the reference on odd sizes, every kernel") {
  IsaRestore restore;
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> u8(0, 255), s8(-128, 127);
  // Every remainder of the 6- and 4-row tiles (m = 1 .. 13, 49, 50), depths that
  // are not a multiple of 2 or 4, columns that are not a multiple of 16.
  const int64_t sizes[][3] = {{1, 1, 1},   {1, 17, 3},   {5, 33, 7},    {7, 65, 129}, {13, 100, 31},
                              {49, 70, 61}, {2, 16, 4},   {6, 64, 256},  {50, 129, 1027}, {3, 48, 2},
                              {4, 31, 5},   {8, 16, 384}, {9, 47, 6},    {10, 80, 9},   {11, 15, 1536},
                              {12, 33, 10},  {128, 200, 40}, {100, 64, 8}};  // (row chunks 48, 48, 32 / 48, 48, 4)
  for (auto isa : isas()) {
    REQUIRE(cpu::qgemm_set_isa(isa));
    INFO(cpu::qgemm_kernel_name());
    for (const auto& s : sizes) {
      const int64_t m = s[0], n = s[1], k = s[2];
      const int64_t k4 = (k + 63) / 64 * 64;  // A's rows hold the widest padding (AMX: a multiple of 64)
      std::vector<uint8_t> a(static_cast<size_t>(m * k4));
      std::vector<int8_t> w(static_cast<size_t>(n * k));
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t p = 0; p < k4; ++p) a[i * k4 + p] = static_cast<uint8_t>(p < k ? u8(rng) : 0);
      }
      // The extremes too: all 255 x -128 must not saturate anywhere.
      for (auto& v : w) v = static_cast<int8_t>(s8(rng));
      if (m == 50) {
        std::fill(a.begin(), a.end(), 255);
        std::fill(w.begin(), w.end(), -128);
      }
      cpu::PackedInt8Weights pw;
      cpu::pack_int8_weights(w.data(), n, k, k, &pw);
      std::vector<int32_t> ref(static_cast<size_t>(m * n)), got(static_cast<size_t>(m * n), -1);
      ref::qgemm_u8s8s32(m, n, k, a.data(), k4, w.data(), k, ref.data(), n);
      // Threads 2 and 3 with one task per thread allowed (min macs 1): the
      // threads take ranges of tasks of equal work, and with the pool's
      // workers lagging (set_worker_lag_for_testing) the caller takes the
      // ends of theirs; the sums do not depend on who ran them.
      for (int threads : {1, 2, 3}) {
        for (int64_t lag : {0, 20000}) {
          if (threads == 1 && lag > 0) continue;
          const int64_t previous =
              cpu::qgemm_set_min_macs_per_thread(threads > 1 ? 1 : cpu::kDefaultMinMacsPerThread);
          std::fill(got.begin(), got.end(), -1);
          set_worker_lag_for_testing(lag);
          cpu::qgemm_u8s8(m, a.data(), k4, pw, nullptr, got.data(), nullptr, n, threads);
          set_worker_lag_for_testing(0);
          cpu::qgemm_set_min_macs_per_thread(previous);
          CAPTURE(m);
          CAPTURE(n);
          CAPTURE(k);
          CAPTURE(threads);
          CAPTURE(lag);
          CHECK(got == ref);
        }
      }
      for (int64_t j = 0; j < n; ++j) {
        int32_t sum = 0;
        for (int64_t p = 0; p < k; ++p) sum += w[j * k + p];
        CHECK(pw.row_sums[j] == sum);
      }
    }
  }
}

TEST_CASE("qgemm: weights within [-64, 64] (AVX2: vpmaddubsw) equal the reference, extremes too") {
  IsaRestore restore;
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> u8(0, 255), s7(-64, 64);
  const int64_t sizes[][3] = {{1, 1, 1}, {7, 17, 5}, {13, 33, 130}, {6, 16, 384}, {50, 40, 1027}};
  for (auto isa : isas()) {
    REQUIRE(cpu::qgemm_set_isa(isa));
    for (const auto& s : sizes) {
      const int64_t m = s[0], n = s[1], k = s[2], k4 = (k + 63) / 64 * 64;  // AMX's padding
      std::vector<uint8_t> a(static_cast<size_t>(m * k4), 0);
      std::vector<int8_t> w(static_cast<size_t>(n * k));
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t p = 0; p < k; ++p) a[i * k4 + p] = static_cast<uint8_t>(u8(rng));
      }
      for (auto& v : w) v = static_cast<int8_t>(s7(rng));
      if (m == 50) {  // the largest pair sums: 255 x (-64) and 255 x 64
        for (int64_t i = 0; i < m; ++i) std::fill(a.begin() + i * k4, a.begin() + i * k4 + k, 255);
        for (int64_t j = 0; j < n; ++j) std::fill(w.begin() + j * k, w.begin() + (j + 1) * k, j % 2 ? 64 : -64);
      }
      cpu::PackedInt8Weights pw;
      cpu::pack_int8_weights(w.data(), n, k, k, &pw);
      CHECK(pw.w7);
      std::vector<int32_t> ref(static_cast<size_t>(m * n)), got(static_cast<size_t>(m * n), -1);
      ref::qgemm_u8s8s32(m, n, k, a.data(), k4, w.data(), k, ref.data(), n);
      for (int threads : {1, 2}) {
        const int64_t previous = cpu::qgemm_set_min_macs_per_thread(threads > 1 ? 1 : cpu::kDefaultMinMacsPerThread);
        std::fill(got.begin(), got.end(), -1);
        cpu::qgemm_u8s8(m, a.data(), k4, pw, nullptr, got.data(), nullptr, n, threads);
        cpu::qgemm_set_min_macs_per_thread(previous);
        CAPTURE(cpu::qgemm_kernel_name());
        CAPTURE(m);
        CAPTURE(n);
        CAPTURE(k);
        CAPTURE(threads);
        CHECK(got == ref);
      }
    }
    // One weight outside [-64, 64] and the full-range kernel runs (it would saturate).
    std::vector<int8_t> w(64 * 8, 64);
    w[100] = 65;
    cpu::PackedInt8Weights pw;
    cpu::pack_int8_weights(w.data(), 8, 64, 64, &pw);
    CHECK_FALSE(pw.w7);
    std::vector<uint8_t> a(64, 255);
    std::vector<int32_t> got(8), ref(8);
    cpu::qgemm_u8s8(1, a.data(), 64, pw, nullptr, got.data(), nullptr, 8, 1);
    ref::qgemm_u8s8s32(1, 8, 64, a.data(), 64, w.data(), 64, ref.data(), 8);
    CHECK(got == ref);
  }
}

TEST_CASE("qgemm: the extremes reach the exact int32 value") {
  std::vector<uint8_t> a(1088, 255);  // 1028 values, read up to the padded depth (AMX: 1088)
  std::vector<int8_t> w(1028, -128);
  IsaRestore restore;
  for (auto isa : isas()) {
    REQUIRE(cpu::qgemm_set_isa(isa));
    cpu::PackedInt8Weights pw;  // packed for the selected kernel, which then runs it
    cpu::pack_int8_weights(w.data(), 1, 1028, 1028, &pw);
    CHECK(pw.isa == isa);
    int32_t c = 0;
    cpu::qgemm_u8s8(1, a.data(), 1028, pw, nullptr, &c, nullptr, 1, 1);
    CHECK(c == 255 * -128 * 1028);
  }
}

TEST_CASE("qparams: ChooseQuantizationParams as torch computes them") {
  struct Case {
    float lo, hi;
    bool rr;
    float scale;
    int32_t zp;
  };
  // torch._choose_qparams_per_tensor(torch.tensor([lo, hi]), reduce_range), torch 1.13.1.
  const Case cases[] = {{-1.0f, 3.0f, false, 0.015686275f, 64},    {-1.0f, 3.0f, true, 0.031496063f, 32},
                        {0.5f, 2.0f, false, 0.007843138f, 0},      {-7.25f, -0.5f, false, 0.028431373f, 255},
                        {0.0f, 0.0f, false, 0.1f, 0},              {-1e-6f, 2e-6f, false, 6.1e-05f, 85},
                        {-0.3f, 0.0001f, true, 0.0023629921f, 127}};
  for (const auto& c : cases) {
    const quant::QParams p = quant::choose_qparams(c.lo, c.hi, 0, 255, c.rr);
    CAPTURE(c.lo);
    CAPTURE(c.hi);
    CHECK(p.scale == c.scale);
    CHECK(p.zero_point == c.zp);
  }
}

TEST_CASE("qparams: symmetric int8 weights, per tensor and per channel, as torch's observers") {
  const float w[] = {-1.0f, 0.5f, 0.25f, 0.1f, 0.2f, -0.05f};
  int8_t q[6];
  float s[2];
  quant::quantize_weight_int8(w, 2, 3, /*per_channel=*/true, q, s);
  CHECK(s[0] == 0.007843138f);
  CHECK(s[1] == 0.0015686274f);
  const int8_t want[] = {-127, 64, 32, 64, 127, -32};
  CHECK(std::memcmp(q, want, 6) == 0);
  quant::quantize_weight_int8(w, 2, 3, /*per_channel=*/false, q, s);
  CHECK(s[0] == 0.007843138f);  // MinMaxObserver(qint8, per_tensor_symmetric)
  const int8_t want_t[] = {-127, 64, 32, 13, 25, -6};  // torch.quantize_per_tensor
  CHECK(std::memcmp(q, want_t, 6) == 0);
  // reduce_range: over [-64, 64], scale max|w| / 64 (ONNX Runtime's reduce_range).
  quant::quantize_weight_int8(w, 2, 3, /*per_channel=*/true, q, s, /*reduce_range=*/true);
  CHECK(s[0] == 1.0f / 64);
  CHECK(s[1] == 0.2f / 64);
  const int8_t want_r[] = {-64, 32, 16, 32, 64, -16};
  CHECK(std::memcmp(q, want_r, 6) == 0);
  // An all-zero weight: the scale is float32 epsilon, not zero.
  const float z[3] = {0, 0, 0};
  quant::quantize_weight_int8(z, 1, 3, false, q, s);
  CHECK(s[0] == std::numeric_limits<float>::epsilon());
}

TEST_CASE("quantize_activations_u8: round half to even, clamp, per tensor and per row") {
  // scale 0.5 / zp 0 over [0, 127.5]: x / 0.5 = 0.5, 1.5, 2.5 -> 0, 2, 2.
  const float x[] = {0.25f, 0.75f, 1.25f, 127.5f};
  uint8_t q[8];
  float s[2];
  int32_t z[2];
  quant::quantize_activations_u8(x, 1, 4, 4, false, false, q, 8, s, z);
  CHECK(s[0] == 0.5f);
  CHECK(z[0] == 0);
  const uint8_t want[] = {0, 2, 2, 255, 0, 0, 0, 0};
  CHECK(std::memcmp(q, want, 8) == 0);
  // Per row: each row its own range.
  const float x2[] = {-1.0f, 3.0f, 0.5f, 2.0f};
  quant::quantize_activations_u8(x2, 2, 2, 2, true, false, q, 2, s, z);
  CHECK(s[0] == 0.015686275f);
  CHECK(z[0] == 64);
  CHECK(s[1] == 0.007843138f);
  CHECK(z[1] == 0);
  CHECK(q[0] == 0);    // -1 / s + 64 = 0.25 -> 0
  CHECK(q[1] == 255);  // 3 / s + 64 = 255.25 -> 255
  CHECK(q[2] == 64);   // 0.5 / 0.007843138 = 63.75 -> 64
  CHECK(q[3] == 255);
}

TEST_CASE("quantize_activations_u8: ties to even at every position of rows of 2 to 290 values, as quantize_val") {
  // Rows holding 0 and 255 (scale 1, zero point 0), then the halves 0.5,
  // 1.5, ..., 254.5, so that every vector lane and the masked tails round
  // ties (to even). (Clamps: the reduce_range cases of dynamic_linear.)
  for (int64_t n = 2; n <= 290; n += n < 40 ? 1 : 50) {
    CAPTURE(n);
    std::vector<float> x(static_cast<size_t>(n));
    x[0] = 0.0f;
    x[1] = 255.0f;
    for (int64_t i = 2; i < n; ++i) x[static_cast<size_t>(i)] = std::min(254.5f, static_cast<float>(i - 2) + 0.5f);
    std::vector<uint8_t> q(static_cast<size_t>(n));
    float s = 0.0f;
    int32_t z = 0;
    quant::quantize_activations_u8(x.data(), 1, n, n, false, false, q.data(), n, &s, &z);
    REQUIRE(s == 1.0f);
    REQUIRE(z == 0);
    int64_t wrong = 0;
    for (size_t i = 0; i < q.size(); ++i) wrong += q[i] != quant::quantize_val(x[i], 1.0f, 0, 0, 255);
    CHECK(wrong == 0);
    if (n > 4) CHECK(q[4] == 2);  // 2.5 -> 2
  }
}

TEST_CASE("quantize_activations_u8: each row's range wherever its extremes sit, NaN ignored") {
  // Rows of 1 to 200 values with the minimum and the maximum first, in the
  // middle or last, and a NaN: the row's scale and zero point are
  // choose_qparams' of its true range.
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int64_t n = 1; n <= 200; ++n) {
    CAPTURE(n);
    const int64_t m = 3;
    std::vector<float> x(static_cast<size_t>(m * n));
    for (auto& v : x) v = u(rng);
    for (int64_t r = 0; r < m; ++r) {
      float* row = x.data() + r * n;
      row[(n - 1) * r / 2] = -3.0f - static_cast<float>(r);        // first, middle, last
      row[(n - 1) * (2 - r) / 2] = 5.0f + static_cast<float>(r);  // last, middle, first
      if (n > 2) row[n / 3] = std::nanf("");
    }
    std::vector<uint8_t> q(static_cast<size_t>(m * n));
    std::vector<float> s(static_cast<size_t>(m));
    std::vector<int32_t> z(static_cast<size_t>(m));
    quant::quantize_activations_u8(x.data(), m, n, n, true, false, q.data(), n, s.data(), z.data());
    for (int64_t r = 0; r < m; ++r) {
      float lo = INFINITY, hi = -INFINITY;
      for (int64_t i = 0; i < n; ++i) {
        const float v = x[static_cast<size_t>(r * n + i)];
        if (v < lo) lo = v;
        if (v > hi) hi = v;
      }
      const quant::QParams want = quant::choose_qparams(lo, hi, 0, 255);
      CHECK(s[static_cast<size_t>(r)] == want.scale);
      CHECK(z[static_cast<size_t>(r)] == want.zero_point);
    }
  }
}

TEST_CASE("quantize_activations_u8: rows split across threads give the one-thread values") {
  // 300 x 250: the per-tensor range is scanned in two chunks (at least 32768
  // values each), the rows quantized in chunks; the extremes sit in different
  // chunks, and padding past k is zeroed.
  const int64_t m = 300, k = 250, ldq = 256;
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(m * k));
  for (auto& v : x) v = nd(rng);
  x[7] = -9.0f;
  x[static_cast<size_t>(290 * k + 3)] = 11.0f;
  const int saved = get_num_threads();
  for (bool per_row : {false, true}) {
    CAPTURE(per_row);
    std::vector<uint8_t> q1(static_cast<size_t>(m * ldq), 7), q2(q1);
    std::vector<float> s1(static_cast<size_t>(m)), s2(s1);
    std::vector<int32_t> z1(static_cast<size_t>(m)), z2(z1);
    set_num_threads(1);
    quant::quantize_activations_u8(x.data(), m, k, k, per_row, false, q1.data(), ldq, s1.data(), z1.data());
    set_num_threads(2);
    quant::quantize_activations_u8(x.data(), m, k, k, per_row, false, q2.data(), ldq, s2.data(), z2.data());
    CHECK(q1 == q2);
    CHECK(s1 == s2);
    CHECK(z1 == z2);
    if (!per_row) {  // the range of the whole tensor: [-9, 11]
      const quant::QParams p = quant::choose_qparams(-9.0f, 11.0f, 0, 255);
      CHECK(s2[0] == p.scale);
      CHECK(z2[0] == p.zero_point);
    }
    CHECK(q2[static_cast<size_t>(299 * ldq + 250)] == 0);
    CHECK(q2[static_cast<size_t>(299 * ldq + 255)] == 0);
  }
  set_num_threads(saved);
}

TEST_CASE("quantize_activations_u8: one scale over dense short rows, as one run, at 1 and 2 threads") {
  // 40001 rows of 3 values (a convolution's channels): 120003 values, scanned
  // and quantized in 4 chunks across the threads; the extremes and a NaN in
  // different chunks; each value as quantize_val with the tensor's range.
  const int64_t m = 40001, k = 3, total = m * k;
  std::mt19937 rng(9);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(total));
  for (auto& v : x) v = nd(rng);
  x[5] = -7.5f;
  x[static_cast<size_t>(total - 1)] = 12.25f;
  x[static_cast<size_t>(total / 2)] = std::nanf("");
  const quant::QParams p = quant::choose_qparams(-7.5f, 12.25f, 0, 255);
  const int saved = get_num_threads();
  for (int threads : {1, 2}) {
    CAPTURE(threads);
    set_num_threads(threads);
    std::vector<uint8_t> q(static_cast<size_t>(total));
    float s = 0.0f;
    int32_t z = -1;
    quant::quantize_activations_u8(x.data(), m, k, k, false, false, q.data(), k, &s, &z);
    CHECK(s == p.scale);
    CHECK(z == p.zero_point);
    int64_t wrong = 0;
    for (int64_t i = 0; i < total; ++i) {
      const float v = x[static_cast<size_t>(i)];
      if (i != total / 2) wrong += q[static_cast<size_t>(i)] != quant::quantize_val(v, 1.0f / p.scale, p.zero_point, 0, 255);
    }
    CHECK(wrong == 0);
  }
  set_num_threads(saved);
}

TEST_CASE("dynamic_linear: the fused epilogue equals the reference formulas bit for bit") {
  IsaRestore restore;
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int64_t shapes[][3] = {{1, 37, 19}, {5, 64, 48}, {17, 129, 33}, {64, 96, 200}};
  for (auto isa : isas()) {
    REQUIRE(cpu::qgemm_set_isa(isa));
    for (const auto& sh : shapes) {
      const int64_t m = sh[0], k = sh[1], n = sh[2];
      std::vector<float> x(static_cast<size_t>(m * k)), w(static_cast<size_t>(n * k)), b(static_cast<size_t>(n));
      for (auto& v : x) v = nd(rng) * 2.0f + 0.3f;
      for (auto& v : w) v = nd(rng) * 0.1f;
      for (auto& v : b) v = nd(rng);
      for (int scheme = 0; scheme < 3; ++scheme) {  // per tensor, per channel, per channel in [-64, 64]
        const bool per_channel = scheme > 0;
        std::vector<int8_t> q(w.size());
        std::vector<float> s(static_cast<size_t>(per_channel ? n : 1));
        quant::quantize_weight_int8(w.data(), n, k, per_channel, q.data(), s.data(), /*reduce_range=*/scheme == 2);
        for (const bool with_bias : {true, false}) {
          const float* bias = with_bias ? b.data() : nullptr;
          const quant::PackedLinear packed = quant::pack_linear(q.data(), n, k, s.data(), per_channel, bias);
          for (int variant = 0; variant < 6; ++variant) {
            quant::DynamicQuantOptions opt;
            opt.per_row = variant & 1;
            opt.reduce_range = variant & 2;
            Activation act;
            if (variant == 1) act.kind = ActivationKind::Relu;
            if (variant == 3) {
              act.kind = ActivationKind::Clamp;
              act.min = -0.5;
              act.max = 0.75;
            }
            if (variant >= 4) act.kind = ActivationKind::HardSwish;
            std::vector<float> ref(static_cast<size_t>(m * n)), got(static_cast<size_t>(m * n));
            quant::dynamic_linear_ref(x.data(), m, k, q.data(), n, s.data(), per_channel, bias, ref.data(), act, opt);
            quant::dynamic_linear(x.data(), m, k, packed, got.data(), n, act, opt, 2);
            CAPTURE(cpu::qgemm_kernel_name());
            CAPTURE(m);
            CAPTURE(variant);
            CAPTURE(with_bias);
            CHECK(std::memcmp(ref.data(), got.data(), ref.size() * sizeof(float)) == 0);
          }
        }
      }
    }
  }
}

TEST_CASE("qgemm: a transposed output (an NCHW convolution's) holds the rows' floats, transposed") {
  IsaRestore restore;
  std::mt19937 rng(13);
  std::uniform_int_distribution<int> u8(0, 255), s8(-128, 127);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  // Partial and whole 16 x 16 blocks, tiles of every family's rows, several row chunks.
  const int64_t sizes[][3] = {{1, 5, 7}, {17, 40, 64}, {50, 70, 33}, {100, 16, 130}};
  for (auto isa : isas()) {
    REQUIRE(cpu::qgemm_set_isa(isa));
    for (const auto& sz : sizes) {
      const int64_t m = sz[0], n = sz[1], k = sz[2], k4 = (k + 63) / 64 * 64;
      std::vector<uint8_t> a(static_cast<size_t>(m * k4), 0);
      std::vector<int8_t> w(static_cast<size_t>(n * k));
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t p = 0; p < k; ++p) a[i * k4 + p] = static_cast<uint8_t>(u8(rng));
      }
      for (auto& v : w) v = static_cast<int8_t>(s8(rng));
      std::vector<float> ws(static_cast<size_t>(n)), bias(static_cast<size_t>(n)), as(static_cast<size_t>(m));
      std::vector<int32_t> az(static_cast<size_t>(m));
      for (auto& v : ws) v = 0.01f + std::abs(nd(rng)) * 0.01f;
      for (auto& v : bias) v = nd(rng);
      for (int64_t i = 0; i < m; ++i) {
        as[i] = 0.02f + std::abs(nd(rng)) * 0.01f;
        az[i] = u8(rng);
      }
      cpu::PackedInt8Weights pw;
      cpu::pack_int8_weights(w.data(), n, k, k, &pw);
      for (const bool per_row : {false, true}) {
        cpu::QGemmEpilogue ep;
        ep.a_scale = as.data();
        ep.a_zero_point = az.data();
        ep.a_per_row = per_row;
        ep.w_scale = ws.data();
        ep.w_per_channel = true;
        ep.bias = bias.data();
        ep.activation.kind = ActivationKind::Relu;
        std::vector<float> rows(static_cast<size_t>(m * n)), cols(static_cast<size_t>(n * m), -1.0f);
        cpu::qgemm_u8s8(m, a.data(), k4, pw, &ep, nullptr, rows.data(), n, 2);
        ep.y_transposed = true;
        cpu::qgemm_u8s8(m, a.data(), k4, pw, &ep, nullptr, cols.data(), m, 2);
        CAPTURE(cpu::qgemm_kernel_name());
        CAPTURE(m);
        CAPTURE(n);
        CAPTURE(per_row);
        int64_t differ = 0;
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t j = 0; j < n; ++j) differ += std::memcmp(&rows[i * n + j], &cols[j * m + i], sizeof(float)) != 0;
        }
        CHECK(differ == 0);
      }
    }
  }
}
