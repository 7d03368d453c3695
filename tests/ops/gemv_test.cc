// The unpacked small-M paths of sgemm (kernels/cpu/gemv.h): W^T-layout dot
// products (Linear) and row-broadcast FMAs (x @ W), for every micro-kernel family
// the CPU supports, against a float64 product with a tolerance that grows with K.
#include <cmath>
#include <string>
#include <vector>

#include "kernels/cpu/gemm.h"
#include "runtime/core/thread_pool.h"
#include "tests/harness/testing.h"

using namespace ember;
using ember::testing::check_close;

namespace {

enum class Layout {
  WeightT,      // B = W^T with W [n, k] row-major (B columns contiguous), A rows contiguous: dot path
  RowMajor,     // A and B row-major with padded rows: broadcast-FMA path
  ATransposed,  // A column-major, B row-major: broadcast-FMA path (A of any strides)
  BothT,        // A column-major and B = W^T: neither fast layout, packed GEMM
};

struct Operands {
  Tensor a, b;
};

Operands make(int64_t m, int64_t n, int64_t k, Layout layout) {
  Operands o;
  switch (layout) {
    case Layout::WeightT:
      o.a = randn({m, k + 3}).narrow(1, 1, k);
      o.b = randn({n, k + 2}).narrow(1, 2, k).t();
      break;
    case Layout::RowMajor:
      o.a = randn({m, k + 1}).narrow(1, 0, k);
      o.b = randn({k, n + 5}).narrow(1, 3, n);
      break;
    case Layout::ATransposed:
      o.a = randn({k, m + 2}).narrow(1, 1, m).t();
      o.b = randn({k, n}).contiguous();
      break;
    case Layout::BothT:
      o.a = randn({k, m}).t();
      o.b = randn({n, k}).t();
      break;
  }
  return o;
}

void check_product(int64_t m, int64_t n, int64_t k, Layout layout, int threads, bool accumulate) {
  CAPTURE(m);
  CAPTURE(n);
  CAPTURE(k);
  CAPTURE(static_cast<int>(layout));
  CAPTURE(threads);
  CAPTURE(accumulate);
  const Operands o = make(m, n, k, layout);
  Tensor c_store = randn({m, n + 3});
  Tensor c = c_store.narrow(1, 2, n);
  Tensor expected = mm(o.a.to(DType::Float64), o.b.to(DType::Float64));
  if (accumulate) expected = expected + c.to(DType::Float64);
  std::vector<char> ws(cpu::sgemm_workspace(m, n, k, threads));
  REQUIRE(cpu::sgemm(m, n, k, {o.a.data_ptr<float>(), o.a.stride(0), o.a.stride(1)},
                     {o.b.data_ptr<float>(), o.b.stride(0), o.b.stride(1)},
                     {c.data_ptr<float>(), c.stride(0), c.stride(1)}, accumulate, ws.data(), ws.size(), threads));
  // fp32 summation of k products of N(0, 1) values: error grows about like
  // sqrt(k) * eps * |sum|; 4 * k * eps bounds it with margin for any order.
  const double tol = 4.0 * static_cast<double>(k) * 1.2e-7;
  check_close(c, expected.to(DType::Float32), tol, tol);
}

}  // namespace

TEST_CASE("sgemm small M: odd sizes, every layout, every micro-kernel family") {
  for (cpu::GemmIsa isa : cpu::sgemm_supported_isas()) {
    REQUIRE(cpu::sgemm_set_isa(isa));
    CAPTURE(std::string(cpu::sgemm_kernel_name()));
    for (Layout layout : {Layout::WeightT, Layout::RowMajor, Layout::ATransposed, Layout::BothT}) {
      for (int64_t m : {1, 2, 3, 4, 5, 7, 8, 9, 16, 37, 64, 65}) {
        for (int64_t n : {1, 3, 4, 5, 15, 16, 17, 33, 63, 64, 65, 130}) {
          for (int64_t k : {1, 3, 8, 15, 16, 17, 31, 37}) {
            check_product(m, n, k, layout, 1, (m + n + k) % 2 == 0);
          }
        }
      }
    }
  }
  REQUIRE(cpu::sgemm_set_isa(cpu::GemmIsa::Auto));
}

TEST_CASE("sgemm small M: Linear-sized products, threads, accumulate") {
  for (cpu::GemmIsa isa : cpu::sgemm_supported_isas()) {
    REQUIRE(cpu::sgemm_set_isa(isa));
    CAPTURE(std::string(cpu::sgemm_kernel_name()));
    for (Layout layout : {Layout::WeightT, Layout::RowMajor}) {
      for (int64_t m : {1, 4, 9, 16}) {
        check_product(m, 3072, 768, layout, 1, false);
        check_product(m, 768, 3072, layout, 4, true);
        check_product(m, 1001, 3071, layout, 3, false);  // thread chunks end mid-vector
      }
    }
  }
  REQUIRE(cpu::sgemm_set_isa(cpu::GemmIsa::Auto));
}

TEST_CASE("sgemm small M: the unpacked layouts need no workspace") {
  // W^T (Linear) and row-major x @ W with few rows skip packing entirely, so
  // even an empty workspace works; the packed GEMM refuses it.
  const Tensor a = randn({2, 5}), w = randn({3, 5}), b = randn({5, 3});
  Tensor c = zeros({2, 3});
  REQUIRE(cpu::sgemm(2, 3, 5, {a.data_ptr<float>(), 5, 1}, {w.data_ptr<float>(), 1, 5}, {c.data_ptr<float>(), 3, 1},
                     false, nullptr, 0, 1));
  check_close(c, mm(a, w.t()), 1e-6, 1e-6);
  REQUIRE(cpu::sgemm(2, 3, 5, {a.data_ptr<float>(), 5, 1}, {b.data_ptr<float>(), 3, 1}, {c.data_ptr<float>(), 3, 1},
                     true, nullptr, 0, 1));
  check_close(c, mm(a, w.t()) + mm(a, b), 1e-6, 1e-6);
  const Tensor at = a.t().contiguous();  // A column-major with B = W^T: packed, needs a workspace
  CHECK_FALSE(cpu::sgemm(2, 3, 5, {at.data_ptr<float>(), 1, 2}, {w.data_ptr<float>(), 1, 5},
                         {c.data_ptr<float>(), 3, 1}, false, nullptr, 0, 1));
}

TEST_CASE("linear: batch-1 and batch-4 against float64 at BERT sizes") {
  const Tensor w = randn({3072, 768}), bias = randn({3072});
  for (int64_t batch : {1, 4}) {
    const Tensor x = randn({batch, 768});
    const Tensor expected = linear(x.to(DType::Float64), w.to(DType::Float64), bias.to(DType::Float64));
    check_close(linear(x, w, bias), expected.to(DType::Float32), 4 * 768 * 1.2e-7, 4 * 768 * 1.2e-7);
  }
}
