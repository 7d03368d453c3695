// The bfloat16 GEMM (kernels/cpu/gemm.h: sgemm_pack_a / sgemm_pack_b with
// bf16, run by gemm_bf16.cc's AVX-512 BF16 kernel): both operands are rounded
// to bf16 as VCVTNEPS2BF16 does (to nearest even, denormals to signed zero,
// NaN stays NaN) by the vector packers (unit-stride rows, full panels) and the
// scalar ones alike, and the products of rounded values are summed in
// float32: within float32 summation error of the float64 product of the
// rounded operands, for either operand packed or neither (GemmOperand::bf16),
// depths over one K block and odd, 1 and 2 threads, with the fused epilogue. On a CPU without AVX-512
// BF16 a bf16 request packs float32.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/cpu/gemm.h"
#include "tests/harness/testing.h"

using namespace ember;

namespace {

cpu::MatrixRef<const float> ref(const Tensor& t) { return {t.data_ptr<float>(), t.stride(0), t.stride(1)}; }

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

// bf16 rounding as the Intel SDM defines VCVTNEPS2BF16 (the bf16 value as a float).
float bf16(float f) {
  const uint32_t u = bits(f);
  if ((u & 0x7f800000u) == 0) return from_bits(u & 0x80000000u);
  if (std::isnan(f)) return f;
  return from_bits((u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u);
}

// C = A @ B (C m x n, contiguous) with the epilogue.
Tensor product(int64_t m, int64_t n, int64_t k, cpu::GemmOperand a, cpu::GemmOperand b, const cpu::GemmEpilogue& e,
               int threads) {
  Tensor c = empty({m, n});
  std::vector<char> ws(cpu::sgemm_workspace(m, n, k, threads));
  REQUIRE(cpu::sgemm_fused(m, n, k, a, b, {c.data_ptr<float>(), n, 1}, e, ws.data(), ws.size(), threads));
  return c;
}

// The values whose rounding the packers must get right, then ordinary ones.
std::vector<float> special_values(int64_t n) {
  std::vector<float> v = {1.0f + 0x1p-8f,         // tie: to even (1)
                          1.0f + 3 * 0x1p-8f,     // tie: to even (1 + 2^-6)
                          1.0f + 0x1p-8f + 0x1p-20f,  // above the tie: up
                          -3.0f,
                          1e-40f,                 // denormal: 0 (bf16 has it: 0x0001 if not flushed)
                          -1e-40f,
                          __builtin_inff(),
                          -__builtin_inff(),
                          __builtin_nanf(""),
                          3.3961514e38f,          // rounds up to infinity
                          -0.0f,
                          0.1f};
  for (int64_t j = static_cast<int64_t>(v.size()); j < n; ++j) v.push_back(0.37f * static_cast<float>(j) - 5.1f);
  v.resize(static_cast<size_t>(n));
  return v;
}

void check_rounded(const Tensor& c, const std::vector<float>& values, bool by_row) {
  for (int64_t i = 0; i < c.size(0); ++i) {
    for (int64_t j = 0; j < c.size(1); ++j) {
      const float want = bf16(values[static_cast<size_t>(by_row ? i : j)]);
      const float got = c.data_ptr<float>()[i * c.size(1) + j];
      CAPTURE(i);
      CAPTURE(j);
      CAPTURE(values[static_cast<size_t>(by_row ? i : j)]);
      if (std::isnan(want)) {
        CHECK(std::isnan(got));
      } else {  // == : C starts at +0, so a -0 product gives +0
        CHECK(got == want);
      }
    }
  }
}

// The bf16 families this CPU runs: AVX-512 BF16 (false), and AMX-BF16 (true) where it has it.
std::vector<bool> families() {
  std::vector<bool> f = {false};
  if (cpu::sgemm_set_bf16_amx(true)) f.push_back(true);
  return f;
}

// Selects the AVX-512 BF16 family (false) or AMX-BF16 (true) for one section, the default after.
struct BF16Family {
  explicit BF16Family(bool amx) { REQUIRE(cpu::sgemm_set_bf16_amx(amx)); }
  ~BF16Family() { cpu::sgemm_set_bf16_amx(true); }
};

}  // namespace

TEST_CASE("bf16 packing rounds as VCVTNEPS2BF16: vector and scalar packers, A and B") {
  if (!cpu::sgemm_bf16_supported()) {
    const Tensor a = randn({4, 4});
    CHECK(!cpu::sgemm_pack_a(4, 4, ref(a), /*bf16=*/true).bf16);  // float32 panels instead
    return;
  }
  for (bool amx : families()) {
    const BF16Family family(amx);
    CAPTURE(std::string(cpu::sgemm_bf16_kernel_name()));
    // B per call, A = ones packed as bf16 (depth 1): C[i, j] = bf16(B[0, j]).
    // 44 columns: one full 32-wide panel (vector packer) and a partial one (scalar).
    const int64_t n = 44, m = 13;
    std::vector<float> v = special_values(32);
    const std::vector<float> tail = special_values(12);
    v.insert(v.end(), tail.begin(), tail.end());
    const Tensor brow = from_blob(v.data(), {1, n}).clone();
    const Tensor ones = full({m, 1}, 1.0);
    const cpu::PackedOperand pa = cpu::sgemm_pack_a(m, 1, ref(ones), true);
    REQUIRE(pa.bf16);
    check_rounded(product(m, n, 1, {ref(ones), &pa}, {ref(brow), nullptr}, {}, 1), v, false);

    // A per call (rows of depth 1), B = ones packed as bf16: C[i, j] = bf16(A[i, 0]);
    // a unit-stride A (vector packer) and a strided one (scalar).
    const std::vector<float> w = special_values(m);
    const Tensor acol = from_blob(const_cast<float*>(w.data()), {m, 1}).clone();
    const Tensor acol_strided = from_blob(const_cast<float*>(w.data()), {1, m}).clone().t();  // strides (1, m)
    REQUIRE(acol_strided.stride(1) != 1);
    const Tensor ones_b = full({1, 40}, 1.0);
    const cpu::PackedOperand pb = cpu::sgemm_pack_b(1, 40, ref(ones_b), true);
    check_rounded(product(m, 40, 1, {ref(acol), nullptr}, {ref(ones_b), &pb}, {}, 1), w, true);
    check_rounded(product(m, 40, 1, {ref(acol_strided), nullptr}, {ref(ones_b), &pb}, {}, 1), w, true);
  }
}

TEST_CASE("bf16 products: float32 sums of the rounded operands, either operand packed, with the epilogue") {
  if (!cpu::sgemm_bf16_supported()) return;  // the case above checks the fallback
  manual_seed(5);
  for (bool amx : families()) {
    const BF16Family family(amx);
    CAPTURE(std::string(cpu::sgemm_bf16_kernel_name()));
    for (int64_t k : {1, 7, 64, 300, 301}) {
      for (int threads : {1, 2}) {
        const int64_t m = 37, n = 45;
        CAPTURE(k);
        CAPTURE(threads);
        const Tensor a = randn({m, k}), w = randn({n, k}), row_bias = randn({m});
        const Tensor b = w.t();                    // B = W^T: a Linear's weight (strides (1, k))
        const Tensor b_rows = w.t().contiguous();  // unit-stride rows (im2col's layout)
        const Tensor a_cols = a.t().contiguous().t();  // A with strides (1, m)
        // The float64 product of the rounded operands, and its bound: float32 sums.
        Tensor want = empty({m, n}, DType::Float64), bound = empty({m, n}, DType::Float64);
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t j = 0; j < n; ++j) {
            double s = row_bias.data_ptr<float>()[i], mag = 0;
            for (int64_t p = 0; p < k; ++p) {
              const double t = static_cast<double>(bf16(a.data_ptr<float>()[i * k + p])) *
                               static_cast<double>(bf16(w.data_ptr<float>()[j * k + p]));
              s += t;
              mag += std::fabs(t);
            }
            want.data_ptr<double>()[i * n + j] = std::max(s, 0.0);  // ReLU
            bound.data_ptr<double>()[i * n + j] = 1e-6 * (static_cast<double>(k) + 2) * (mag + 1.0);
          }
        }
        cpu::GemmEpilogue e;
        e.row_bias = row_bias.data_ptr<float>();
        e.clamp = true;
        e.lo = 0.0f;
        e.hi = __builtin_inff();
        const cpu::PackedOperand pb = cpu::sgemm_pack_b(k, n, ref(b), true);
        const cpu::PackedOperand pa = cpu::sgemm_pack_a(m, k, ref(a), true);
        CHECK(pb.bytes() == cpu::sgemm_packed_bytes(false, n, k, true));
        CHECK(pa.bytes() == cpu::sgemm_packed_bytes(true, m, k, true));
        const int64_t mr = cpu::sgemm_bf16_kernel_name() == std::string("amx-bf16 16x32") ? 16 : 12;
        CHECK(pa.bytes() == static_cast<size_t>((m + mr - 1) / mr * mr * ((k + 1) / 2)) * sizeof(float));
        CHECK(cpu::sgemm_packed_current(pb));
        const Tensor fp32 = product(m, n, k, {ref(a), nullptr}, {ref(b), nullptr}, e, threads);
        // (B = W^T: its full panels through the transposing packer, the partial one scalar.)
        for (const Tensor& c : {product(m, n, k, {ref(a), nullptr}, {ref(b), &pb}, e, threads),        // Linear-style
                                product(m, n, k, {ref(a_cols), nullptr}, {ref(b), &pb}, e, threads),   // scalar A packer
                                product(m, n, k, {ref(a), &pa}, {ref(b_rows), nullptr}, e, threads),   // conv-style
                                product(m, n, k, {ref(a), &pa}, {ref(b), nullptr}, e, threads),        // W^T per call
                                // Neither packed, both asked for in bf16 (GemmOperand::bf16: attention's products).
                                product(m, n, k, {ref(a), nullptr, true}, {ref(b), nullptr, true}, e, threads),
                                product(m, n, k, {ref(a_cols), nullptr, true}, {ref(b_rows), nullptr, true}, e, threads)}) {
          double worst = 0, differs = 0;
          for (int64_t i = 0; i < m * n; ++i) {
            const double d = std::fabs(static_cast<double>(c.data_ptr<float>()[i]) - want.data_ptr<double>()[i]);
            worst = std::max(worst, d / bound.data_ptr<double>()[i]);
            differs = std::max(differs, std::fabs(static_cast<double>(c.data_ptr<float>()[i] - fp32.data_ptr<float>()[i])));
          }
          CHECK(worst <= 1.0);
          if (k >= 7) CHECK(differs > 1e-4);  // the bf16 kernel ran, not the float32 one
        }
      }
    }
  }
}
