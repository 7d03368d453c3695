// sgemm_fused (kernels/cpu/gemm.h): a pre-packed A or B operand gives the same
// product, bit for bit, as the same operand packed per call (same panels, same
// summation order), for every micro-kernel family the CPU supports, at 1 and
// 2 threads, over sizes that are not multiples of MR, NR or KC; the fused
// epilogue (row / column bias, clamp) against exact and float64 values; a
// packed operand made stale by sgemm_set_isa is not read.
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "kernels/cpu/gemm.h"
#include "tests/harness/testing.h"

using namespace ember;
using ember::testing::check_close;

namespace {

// Restores the automatic kernel choice when a test case ends.
struct IsaGuard {
  ~IsaGuard() { cpu::sgemm_set_isa(cpu::GemmIsa::Auto); }
};

cpu::MatrixRef<const float> ref(const Tensor& t) { return {t.data_ptr<float>(), t.stride(0), t.stride(1)}; }

// C = A @ B with the epilogue, A and / or B given packed; C has padded rows.
Tensor run(int64_t m, int64_t n, int64_t k, const Tensor& a, const Tensor& b, const cpu::PackedOperand* pa,
           const cpu::PackedOperand* pb, const cpu::GemmEpilogue& e, int threads) {
  Tensor c = full({m, n + 3}, 7.0).narrow(1, 1, n);
  std::vector<char> ws(cpu::sgemm_workspace(m, n, k, threads));
  REQUIRE(cpu::sgemm_fused(m, n, k, {ref(a), pa}, {ref(b), pb}, {c.data_ptr<float>(), c.stride(0), 1}, e,
                           ws.data(), ws.size(), threads));
  return c.contiguous();
}

bool bitwise_equal(const Tensor& x, const Tensor& y) {
  return x.sizes() == y.sizes() && std::memcmp(x.data_ptr<float>(), y.data_ptr<float>(), x.nbytes()) == 0;
}

// A [m, k] row-major (a conv weight), B [k, n] = W^T with W [n, k] (a Linear weight).
void check_packed(int64_t m, int64_t n, int64_t k, int threads) {
  CAPTURE(m);
  CAPTURE(n);
  CAPTURE(k);
  CAPTURE(threads);
  CAPTURE(cpu::sgemm_kernel_name());
  const Tensor a = randn({m, k}), b = randn({n, k}).t(), row_bias = randn({m}), col_bias = randn({n});
  const cpu::PackedOperand pa = cpu::sgemm_pack_a(m, k, ref(a));
  const cpu::PackedOperand pb = cpu::sgemm_pack_b(k, n, ref(b));
  CHECK(cpu::sgemm_packed_current(pa));
  CHECK(pa.outer == m);
  CHECK(pa.k == k);
  // Conv-style: bias per row, ReLU.
  cpu::GemmEpilogue conv;
  conv.row_bias = row_bias.data_ptr<float>();
  conv.clamp = true;
  conv.lo = 0.0f;
  conv.hi = __builtin_inff();
  const Tensor c_conv = run(m, n, k, a, b, nullptr, nullptr, conv, threads);
  CHECK(bitwise_equal(run(m, n, k, a, b, &pa, nullptr, conv, threads), c_conv));
  // Linear-style: bias per column, clamp(-0.5, 0.5).
  cpu::GemmEpilogue lin;
  lin.col_bias = col_bias.data_ptr<float>();
  lin.clamp = true;
  lin.lo = -0.5f;
  lin.hi = 0.5f;
  const Tensor c_lin = run(m, n, k, a, b, nullptr, nullptr, lin, threads);
  CHECK(bitwise_equal(run(m, n, k, a, b, nullptr, &pb, lin, threads), c_lin));
  CHECK(bitwise_equal(run(m, n, k, a, b, &pa, &pb, lin, threads), c_lin));
  // Both against float64 (the epilogue's placement: bias once, clamp at the end).
  const Tensor p64 = mm(a.to(DType::Float64), b.to(DType::Float64));
  const double tol = 4.0 * static_cast<double>(k) * 1.2e-7;
  check_close(c_conv, relu(p64 + row_bias.to(DType::Float64).unsqueeze(1)).to(DType::Float32), tol, tol);
  check_close(c_lin, clamp(p64 + col_bias.to(DType::Float64), Scalar(-0.5), Scalar(0.5)).to(DType::Float32), tol,
              tol);
  // The same epilogue-free product as sgemm (m > 64 or a layout with no unpacked path: blocked there too).
  if (m > 64) {
    Tensor c = empty({m, n});
    std::vector<char> ws(cpu::sgemm_workspace(m, n, k, threads));
    REQUIRE(cpu::sgemm(m, n, k, ref(a), ref(b), {c.data_ptr<float>(), n, 1}, false, ws.data(), ws.size(), threads));
    CHECK(bitwise_equal(run(m, n, k, a, b, &pa, &pb, cpu::GemmEpilogue{}, threads), c));
  }
}

}  // namespace

TEST_CASE("sgemm_fused: packed operands give the unpacked product bit for bit, every kernel, 1 and 2 threads") {
  IsaGuard guard;
  manual_seed(0);
  for (cpu::GemmIsa isa : cpu::sgemm_supported_isas()) {
    REQUIRE(cpu::sgemm_set_isa(isa));
    for (int threads : {1, 2}) {
      check_packed(1, 1, 1, threads);
      check_packed(5, 3, 7, threads);          // smaller than one tile
      // K blocks of at most 256, AVX-512's of at most 512 (gemm.cc: most_depth).
      check_packed(13, 17, 300, threads);      // two K blocks (AVX-512: one), partial tiles
      check_packed(37, 45, 513, threads);      // 3 x 160 + 33 (AVX-512: 288 + 225)
      check_packed(13, 17, 1100, threads);     // 5 x 192 + 140 (AVX-512: 3 x 288 + 236)
      check_packed(64, 100, 256, threads);     // exactly one K block
      check_packed(150, 70, 600, threads);     // several M blocks (mc), threads over M
      check_packed(24, 600, 33, threads);      // threads over N
      check_packed(100, 3000, 40, threads);    // shallow: several L2-sized B blocks, row panels outer
    }
  }
}

TEST_CASE("sgemm_fused: A read in place (contiguous rows, up to 64 or 768 columns) gives the packed A's product bit for bit") {
  // Attention's P V: A's rows are read where they lie when C is at most 768
  // columns (the portable kernel: 64), a multiple of the tile width (else A is packed; on AVX2 and
  // AVX-512 any width, B packed: 24, 29 and 40 columns end in a tile of 8, 13 and 8; 200 in 8,
  // 776 is packed on every kernel): against the
  // same A pre-packed, B row-major (read in place too) and B = W^T (packed),
  // rows of A padded (rs > k) or 1024 floats apart (packed: the rows would
  // share an L1 set), partial row tiles, several K blocks and M blocks.
  IsaGuard guard;
  manual_seed(5);
  for (cpu::GemmIsa isa : cpu::sgemm_supported_isas()) {
    REQUIRE(cpu::sgemm_set_isa(isa));
    // 200, 768 and 776 only where they differ (the x86 families' limit; the portable one's is 64): they made
    // qemu's aarch64 run time out.
    std::vector<int64_t> widths{24, 29, 32, 40, 64};
    if (isa != cpu::GemmIsa::Portable) widths.insert(widths.end(), {200, 768, 776});
    for (int threads : {1, 2}) {
      for (int64_t m : {1, 5, 12, 13, 25, 150}) {
        for (int64_t n : widths) {
          for (int64_t k : {1, 7, 300}) {
            for (int64_t rs : {k + 3, int64_t{1024}}) {
              for (bool b_rows : {true, false}) {
                CAPTURE(cpu::sgemm_kernel_name());
                CAPTURE(threads);
                CAPTURE(m);
                CAPTURE(n);
                CAPTURE(k);
                CAPTURE(rs);
                CAPTURE(b_rows);
                const Tensor a = randn({m, rs}).narrow(1, 0, k);
                const Tensor b = b_rows ? randn({k, n}) : randn({n, k}).t();
                const Tensor row_bias = randn({m});
                const cpu::PackedOperand pa = cpu::sgemm_pack_a(m, k, ref(a));
                cpu::GemmEpilogue e;
                e.row_bias = row_bias.data_ptr<float>();
                e.clamp = true;
                e.lo = -1.0f;
                e.hi = 6.0f;
                const Tensor c = run(m, n, k, a, b, nullptr, nullptr, e, threads);
                CHECK(bitwise_equal(c, run(m, n, k, a, b, &pa, nullptr, e, threads)));
                check_close(c, clamp(mm(a.to(DType::Float64), b.to(DType::Float64)) +
                                         row_bias.to(DType::Float64).unsqueeze(1),
                                     Scalar(-1.0), Scalar(6.0))
                                   .to(DType::Float32),
                            1e-4, 1e-4);
              }
            }
          }
        }
      }
    }
  }
}

TEST_CASE("sgemm_fused: exact epilogue values") {
  IsaGuard guard;
  for (cpu::GemmIsa isa : cpu::sgemm_supported_isas()) {
    REQUIRE(cpu::sgemm_set_isa(isa));
    CAPTURE(cpu::sgemm_kernel_name());
    // A = [[1, 2], [3, 4], [-5, -6]], B = [[1, 0, 2], [0, 1, -1]]: A @ B = [[1, 2, 0], [3, 4, 2], [-5, -6, -4]].
    const Tensor a = tensor(std::vector<float>{1, 2, 3, 4, -5, -6}, {3, 2});
    const Tensor b = tensor(std::vector<float>{1, 0, 2, 0, 1, -1}, {2, 3});
    const Tensor rb = tensor(std::vector<float>{0.5f, -10.0f, 1.0f}, {3});
    const Tensor cb = tensor(std::vector<float>{0.25f, 0.0f, -1.0f}, {3});
    const cpu::PackedOperand pa = cpu::sgemm_pack_a(3, 2, ref(a));
    cpu::GemmEpilogue e;
    e.row_bias = rb.data_ptr<float>();
    e.col_bias = cb.data_ptr<float>();
    e.clamp = true;
    e.lo = -3.0f;
    e.hi = 2.0f;
    // + row bias, + column bias, clamp to [-3, 2].
    const std::vector<float> expected{1.75f, 2.5f, -0.5f, -6.75f, -6.0f, -9.0f, -3.75f, -5.0f, -4.0f};
    const std::vector<float> clamped{1.75f, 2.0f, -0.5f, -3.0f, -3.0f, -3.0f, -3.0f, -3.0f, -3.0f};
    for (const cpu::PackedOperand* p : {static_cast<const cpu::PackedOperand*>(nullptr), &pa}) {
      const Tensor c = run(3, 3, 2, a, b, p, nullptr, e, 1);
      CHECK(c.to_vector<float>() == clamped);
      cpu::GemmEpilogue no_clamp = e;
      no_clamp.clamp = false;
      CHECK(run(3, 3, 2, a, b, p, nullptr, no_clamp, 1).to_vector<float>() == expected);
    }
    // k = 0: C is the epilogue of zeros.
    Tensor c = empty({3, 3});
    REQUIRE(cpu::sgemm_fused(3, 3, 0, {ref(a), nullptr}, {ref(b), nullptr}, {c.data_ptr<float>(), 3, 1}, e, nullptr,
                             0, 1));
    CHECK(c.to_vector<float>() == std::vector<float>{0.75f, 0.5f, -0.5f, -3.0f, -3.0f, -3.0f, 1.25f, 1.0f, 0.0f});
  }
}

TEST_CASE("sgemm_fused: a packed operand from another kernel is not read") {
  IsaGuard guard;
  const std::vector<cpu::GemmIsa> isas = cpu::sgemm_supported_isas();
  if (isas.size() < 2) return;  // one kernel family only: nothing can go stale
  manual_seed(1);
  const int64_t m = 20, n = 30, k = 270;
  const Tensor a = randn({m, k}), b = randn({k, n});
  REQUIRE(cpu::sgemm_set_isa(isas[0]));
  const cpu::PackedOperand stale = cpu::sgemm_pack_a(m, k, ref(a));
  const cpu::PackedOperand stale_b = cpu::sgemm_pack_b(k, n, ref(b));
  REQUIRE(cpu::sgemm_set_isa(isas.back()));
  CHECK_FALSE(cpu::sgemm_packed_current(stale));
  const Tensor expected = run(m, n, k, a, b, nullptr, nullptr, {}, 1);
  CHECK(bitwise_equal(run(m, n, k, a, b, &stale, &stale_b, {}, 1), expected));
  // Without the matrix to fall back on, it refuses.
  Tensor c = empty({m, n});
  std::vector<char> ws(cpu::sgemm_workspace(m, n, k, 1));
  CHECK_FALSE(cpu::sgemm_fused(m, n, k, {{nullptr, 0, 0}, &stale}, {ref(b), nullptr}, {c.data_ptr<float>(), n, 1}, {},
                               ws.data(), ws.size(), 1));
  // Packed for this kernel, the matrix is not needed.
  const cpu::PackedOperand current = cpu::sgemm_pack_a(m, k, ref(a));
  REQUIRE(cpu::sgemm_fused(m, n, k, {{nullptr, 0, 0}, &current}, {ref(b), nullptr}, {c.data_ptr<float>(), n, 1}, {},
                           ws.data(), ws.size(), 1));
  CHECK(bitwise_equal(c, expected));
  // A too-small workspace is refused, not overrun.
  CHECK_FALSE(cpu::sgemm_fused(m, n, k, {ref(a), &current}, {ref(b), nullptr}, {c.data_ptr<float>(), n, 1}, {},
                               ws.data(), 16, 1));
}

TEST_CASE("sgemm_fused: edge tiles (the last rows and columns) give the full tiles' values bit for bit") {
  // C's first m rows and n columns with A and B padded by zero rows and
  // columns to multiples of every kernel's MR and NR (then no tile has an
  // edge) against C of m x n alone: AVX-512 runs 49 columns as 32 + 16 + 1,
  // 196's last tile as 4 columns, 40's as 8, 58's as 16 + 10 (a full tile);
  // 64 rows as 5 x 12 + 4, 70 as 5 x 12 + 10; with the conv epilogue over K blocks.
  // (AVX2: 64 = 10 x 6 + 4, 70 = 11 x 6 + 4; 17, 49 and 196 end in 1 or 4 columns.)
  IsaGuard guard;
  manual_seed(2);
  for (cpu::GemmIsa isa : cpu::sgemm_supported_isas()) {
    REQUIRE(cpu::sgemm_set_isa(isa));
    for (int64_t m : {64, 70}) {
      for (int64_t n : {1, 4, 9, 16, 17, 24, 25, 32, 40, 49, 58, 196}) {
        for (int64_t k : {7, 300}) {
          CAPTURE(cpu::sgemm_kernel_name());
          CAPTURE(m);
          CAPTURE(n);
          CAPTURE(k);
          const int64_t tall = 72, wide = (n + 63) / 64 * 64;  // multiples of 8, 6, 12 and of 8, 16, 32
          const Tensor a_tall = cat({randn({m, k}), zeros({tall - m, k})}, 0);
          const Tensor b_wide = cat({randn({k, n}), zeros({k, wide - n})}, 1);
          const Tensor bias_tall = cat({randn({m}), zeros({tall - m})}, 0);
          const Tensor a = a_tall.narrow(0, 0, m).contiguous(), b = b_wide.narrow(1, 0, n).contiguous();
          const Tensor row_bias = bias_tall.narrow(0, 0, m).contiguous();
          cpu::GemmEpilogue conv;
          conv.row_bias = row_bias.data_ptr<float>();
          conv.clamp = true;
          conv.lo = -1.0f;
          conv.hi = 6.0f;
          const Tensor edge = run(m, n, k, a, b, nullptr, nullptr, conv, 1);
          cpu::GemmEpilogue conv_tall = conv;
          conv_tall.row_bias = bias_tall.data_ptr<float>();
          const Tensor full =
              run(tall, wide, k, a_tall, b_wide, nullptr, nullptr, conv_tall, 1).narrow(0, 0, m).narrow(1, 0, n).contiguous();
          CHECK(bitwise_equal(edge, full));
          // A pre-packed (a conv weight): AVX2 runs a right edge of up to 4
          // columns for a block's tiles a call, 8 / nv of them side by side.
          if (isa == cpu::GemmIsa::Avx2) {
            const cpu::PackedOperand pa = cpu::sgemm_pack_a(m, k, ref(a));
            for (int threads : {1, 2}) CHECK(bitwise_equal(run(m, n, k, a, b, &pa, nullptr, conv, threads), full));
          }
          check_close(edge, clamp(mm(a.to(DType::Float64), b.to(DType::Float64)) +
                                      row_bias.to(DType::Float64).unsqueeze(1),
                                  Scalar(-1.0), Scalar(6.0))
                                .to(DType::Float32),
                      1e-4, 1e-4);
          // A Linear's epilogue: a column bias (the right edge's read only up to n) and HardSwish.
          const Tensor bias_wide = cat({randn({n}), zeros({wide - n})}, 0);
          const Tensor col_bias = bias_wide.narrow(0, 0, n).contiguous();
          cpu::GemmEpilogue linear;
          linear.col_bias = col_bias.data_ptr<float>();
          linear.hardswish = true;
          cpu::GemmEpilogue linear_wide = linear;
          linear_wide.col_bias = bias_wide.data_ptr<float>();
          const Tensor edge_l = run(m, n, k, a, b, nullptr, nullptr, linear, 1);
          CHECK(bitwise_equal(edge_l, run(tall, wide, k, a_tall, b_wide, nullptr, nullptr, linear_wide, 1)
                                          .narrow(0, 0, m)
                                          .narrow(1, 0, n)
                                          .contiguous()));
          check_close(edge_l, hardswish(mm(a, b) + col_bias), 1e-4, 1e-4);
        }
      }
    }
  }
}

TEST_CASE("sgemm_fused: a shallow product's rows of tiles, a call a row, give the tile-by-tile values bit for bit") {
  // Depth up to 64: the AVX2 family runs a row of tiles a call
  // (UkernelInfo::sweep), A's rows read in place where contiguous (deeper
  // products whose A is read in place: the test of A in place). Against
  // the same product into a column-major C (tile by tile there: C's columns
  // are not contiguous), which sums each output in the same order: A with
  // contiguous or padded rows (in place), A transposed (packed), A pre-packed;
  // right edges of 1-8 and 9-15 columns, bottom edges, both epilogues, 1 and
  // 2 threads, and a product that accumulates into C.
  IsaGuard guard;
  manual_seed(7);
  for (cpu::GemmIsa isa : cpu::sgemm_supported_isas()) {
    REQUIRE(cpu::sgemm_set_isa(isa));
    for (int threads : {1, 2}) {
      for (int64_t m : {6, 13, 121, 150}) {
        for (int64_t n : {8, 16, 24, 29, 96}) {
          for (int64_t k : {1, 16, 33, 64}) {
            for (int a_form = 0; a_form < 4; ++a_form) {  // contiguous, padded rows, transposed, pre-packed
              CAPTURE(cpu::sgemm_kernel_name());
              CAPTURE(threads);
              CAPTURE(m);
              CAPTURE(n);
              CAPTURE(k);
              CAPTURE(a_form);
              const Tensor a = a_form == 1   ? randn({m, k + 3}).narrow(1, 0, k)
                               : a_form == 2 ? randn({k, m}).t()
                                             : randn({m, k});
              const Tensor b = randn({k, n}), row_bias = randn({m}), col_bias = randn({n});
              const cpu::PackedOperand pa = cpu::sgemm_pack_a(m, k, ref(a));
              const cpu::PackedOperand pb = cpu::sgemm_pack_b(k, n, ref(b));
              cpu::GemmEpilogue conv;
              conv.row_bias = row_bias.data_ptr<float>();
              conv.clamp = true;
              conv.lo = -1.0f;
              conv.hi = 6.0f;
              cpu::GemmEpilogue linear;
              linear.col_bias = col_bias.data_ptr<float>();
              linear.hardswish = true;
              for (const cpu::GemmEpilogue& e : {conv, linear}) {
                const Tensor rows = run(m, n, k, a, b, a_form == 3 ? &pa : nullptr, &pb, e, threads);
                Tensor cols = empty({n, m});
                std::vector<char> ws(cpu::sgemm_workspace(m, n, k, threads));
                REQUIRE(cpu::sgemm_fused(m, n, k, {ref(a), a_form == 3 ? &pa : nullptr}, {ref(b), &pb},
                                         {cols.data_ptr<float>(), 1, m}, e, ws.data(), ws.size(), threads));
                CHECK(bitwise_equal(rows, cols.t().contiguous()));
              }
              check_close(run(m, n, k, a, b, nullptr, &pb, linear, threads),
                          hardswish(mm(a.to(DType::Float64), b.to(DType::Float64)) +
                                    col_bias.to(DType::Float64))
                              .to(DType::Float32),
                          1e-4, 1e-4);
              // C += A @ B (sgemm, B row-major: packed per call).
              const Tensor c0 = randn({m, n});
              Tensor acc_rows = c0.clone(), acc_cols = c0.t().contiguous();
              std::vector<char> ws(cpu::sgemm_workspace(m, n, k, threads));
              REQUIRE(cpu::sgemm(m, n, k, ref(a), ref(b), {acc_rows.data_ptr<float>(), n, 1}, true, ws.data(),
                                 ws.size(), threads));
              REQUIRE(cpu::sgemm(m, n, k, ref(a), ref(b), {acc_cols.data_ptr<float>(), 1, m}, true, ws.data(),
                                 ws.size(), threads));
              CHECK(bitwise_equal(acc_rows, acc_cols.t().contiguous()));
              check_close(acc_rows, (c0.to(DType::Float64) + mm(a.to(DType::Float64), b.to(DType::Float64)))
                                        .to(DType::Float32),
                          1e-4, 1e-4);
            }
          }
        }
      }
    }
  }
}

TEST_CASE("GEMM epilogue HardSwish: the Hardswish op's value of the biased product, bit for bit") {
  // Every kernel family and edge tile (sgemm_fused), over K blocks, and the
  // few-row product's pass (sgemm_linear, 2 rows): x * clamp(x + 3, 0, 6) / 6
  // after the biases, in the op's order of operations.
  IsaGuard guard;
  manual_seed(3);
  int kinks = 0;
  for (cpu::GemmIsa isa : cpu::sgemm_supported_isas()) {
    REQUIRE(cpu::sgemm_set_isa(isa));
    for (int64_t m : {2, 13, 70}) {
      for (int64_t n : {5, 49, 64}) {
        for (int64_t k : {7, 300}) {
          CAPTURE(cpu::sgemm_kernel_name());
          CAPTURE(m);
          CAPTURE(n);
          CAPTURE(k);
          const Tensor a = randn({m, k}), b = randn({k, n}) * (4.0 / std::sqrt(static_cast<double>(k)));
          const Tensor row_bias = randn({m}), col_bias = randn({n});
          cpu::GemmEpilogue plain;
          plain.row_bias = row_bias.data_ptr<float>();
          plain.col_bias = col_bias.data_ptr<float>();
          cpu::GemmEpilogue hs = plain;
          hs.hardswish = true;
          const Tensor y = run(m, n, k, a, b, nullptr, nullptr, plain, 1);
          const Tensor got = run(m, n, k, a, b, nullptr, nullptr, hs, 1);
          CHECK(bitwise_equal(got, hardswish(y)));
          kinks += got.min().item<float>() < 0.0f && y.max().item<float>() > 3.0f;  // both sides of each kink
          // A Linear's product (column bias only): the few-row paths apply it as a pass.
          plain.row_bias = hs.row_bias = nullptr;
          Tensor lin = empty({m, n}), lin_hs = empty({m, n});
          std::vector<char> ws(cpu::sgemm_workspace(m, n, k, 1));
          for (auto [out, e] : {std::pair<Tensor*, cpu::GemmEpilogue*>{&lin, &plain}, {&lin_hs, &hs}}) {
            REQUIRE(cpu::sgemm_linear(m, n, k, {ref(a)}, {ref(b)}, {out->data_ptr<float>(), n, 1}, *e, ws.data(),
                                      ws.size(), 1));
          }
          CHECK(bitwise_equal(lin_hs, hardswish(lin)));
        }
      }
    }
  }
  CHECK(kinks > 10);
}

TEST_CASE("sgemm: with threads, a deep product of few rows splits its depth and gives one thread's product bit for bit") {
  // A 1x1 convolution's projection (K = 384 -> M = 64 at 14x14): the threads
  // take K blocks each and add their sums in one thread's order (gemm.cc:
  // sgemm_split_depth). Against one thread bit for bit and float64 closely:
  // the conv epilogue (row bias, ReLU), the Linear one (column bias, clamp),
  // HardSwish, C += A B, a C with strided columns (transposed), A packed or
  // per call; 2 K blocks, 4 (two partials for the second thread; AVX-512,
  // blocks of at most 512: K = 1920), 3 threads.
  IsaGuard guard;
  manual_seed(11);
  struct Shape {
    int64_t m, n, k;
  };
  for (cpu::GemmIsa isa : cpu::sgemm_supported_isas()) {
    REQUIRE(cpu::sgemm_set_isa(isa));
    for (const Shape& s : {Shape{64, 196, 384}, Shape{160, 49, 960}, Shape{13, 300, 600}, Shape{37, 200, 513},
                          Shape{40, 49, 1920}}) {
      const int64_t m = s.m, n = s.n, k = s.k;
      CAPTURE(cpu::sgemm_kernel_name());
      CAPTURE(m);
      CAPTURE(n);
      CAPTURE(k);
      // The workspace holds the second thread's partials (m x n floats each).
      CHECK(cpu::sgemm_workspace(m, n, k, 2) >= cpu::sgemm_workspace(m, n, k, 1) + m * n * sizeof(float));
      const Tensor a = randn({m, k}), b = randn({k, n}), row_bias = randn({m}), col_bias = randn({n});
      const cpu::PackedOperand pa = cpu::sgemm_pack_a(m, k, ref(a));
      const Tensor p64 = mm(a.to(DType::Float64), b.to(DType::Float64));
      const double tol = 4.0 * static_cast<double>(k) * 1.2e-7;
      cpu::GemmEpilogue conv;
      conv.row_bias = row_bias.data_ptr<float>();
      conv.clamp = true;
      conv.lo = 0.0f;
      conv.hi = __builtin_inff();
      cpu::GemmEpilogue lin;
      lin.col_bias = col_bias.data_ptr<float>();
      lin.clamp = true;
      lin.lo = -0.5f;
      lin.hi = 0.5f;
      cpu::GemmEpilogue hs;
      hs.row_bias = row_bias.data_ptr<float>();
      hs.hardswish = true;
      const Tensor c_conv = run(m, n, k, a, b, nullptr, nullptr, conv, 1);
      const Tensor c_lin = run(m, n, k, a, b, nullptr, nullptr, lin, 1);
      const Tensor c_hs = run(m, n, k, a, b, &pa, nullptr, hs, 1);
      for (int threads : {2, 3}) {
        CAPTURE(threads);
        CHECK(bitwise_equal(run(m, n, k, a, b, nullptr, nullptr, conv, threads), c_conv));
        CHECK(bitwise_equal(run(m, n, k, a, b, &pa, nullptr, conv, threads), c_conv));
        CHECK(bitwise_equal(run(m, n, k, a, b, &pa, nullptr, lin, threads), c_lin));
        CHECK(bitwise_equal(run(m, n, k, a, b, &pa, nullptr, hs, threads), c_hs));
      }
      const Tensor biased = p64 + row_bias.to(DType::Float64).unsqueeze(1);
      check_close(c_conv, relu(biased).to(DType::Float32), tol, tol);
      check_close(c_lin, clamp(p64 + col_bias.to(DType::Float64), Scalar(-0.5), Scalar(0.5)).to(DType::Float32), tol,
                  tol);
      check_close(c_hs, hardswish(biased).to(DType::Float32), tol, tol);
      // C += A B into a transposed C (columns m floats apart), 1 and 2 threads.
      const Tensor c0 = randn({n, m});
      Tensor acc[2];
      for (int threads : {1, 2}) {
        acc[threads - 1] = c0.clone();
        std::vector<char> ws(cpu::sgemm_workspace(m, n, k, threads));
        REQUIRE(cpu::sgemm_packed(m, n, k, {ref(a), &pa}, {ref(b), nullptr},
                                  {acc[threads - 1].data_ptr<float>(), 1, m}, true, ws.data(), ws.size(), threads));
      }
      CHECK(bitwise_equal(acc[1], acc[0]));
      check_close(acc[0], (c0.to(DType::Float64) + p64.t()).to(DType::Float32), tol, tol);
    }
  }
}
