// mm, bmm, matmul, linear against PyTorch 1.13 (golden_linalg.py), and the
// blocked SGEMM (kernels/cpu/gemm.h) against the reference MatMul kernel over a
// sweep of sizes around its tiles, strides and transposes, for every micro-kernel
// the CPU supports.
#include <string>
#include <vector>

#include "kernels/cpu/gemm.h"
#include "kernels/ref/ref_kernels.h"
#include "runtime/core/thread_pool.h"
#include "tests/harness/testing.h"

using namespace ember;
using ember::testing::check_close;
using ember::testing::check_equal;
using ember::testing::check_error;
using ember::testing::golden;

namespace {
Tensor f32(IntArrayRef shape) { return ones(shape); }
Tensor of(IntArrayRef shape, DType d) { return ones(shape, d); }
}  // namespace

TEST_CASE("matmul: hand-computed values") {
  const Tensor a = tensor({{1.0, 2.0}, {3.0, 4.0}});
  const Tensor b = tensor({{5.0, 6.0}, {7.0, 8.0}});
  check_equal(mm(a, b), tensor({{19.0, 22.0}, {43.0, 50.0}}));
  check_equal(a.matmul(b), tensor({{19.0, 22.0}, {43.0, 50.0}}));
  check_equal(a.mm(b.t()), tensor({{17.0, 23.0}, {39.0, 53.0}}));
  const Tensor d = matmul(tensor({1, 2, 3}), tensor({4, 5, 6}));
  CHECK(d.dim() == 0);
  CHECK(d.item<int64_t>() == 32);
  check_equal(matmul(tensor({1, 2}), tensor({{1, 2, 3}, {4, 5, 6}})), tensor({9, 12, 15}));
  check_equal(matmul(tensor({{1, 2, 3}, {4, 5, 6}}), tensor({1, 0, -1})), tensor({-2, -2}));
  // A stride-0 (expanded) batch and an expanded matrix.
  const Tensor e = matmul(a.expand({3, 2, 2}), b);
  CHECK(e.sizes() == Shape{3, 2, 2});
  for (int64_t i = 0; i < 3; ++i) check_equal(e[i], tensor({{19.0, 22.0}, {43.0, 50.0}}));
  check_equal(mm(full({2, 3}, 2.0).expand({2, 3}), full({1, 4}, 3.0).expand({3, 4})), full({2, 4}, 18.0));
}

TEST_CASE("matmul: every rank combination and broadcasting against PyTorch") {
  for (const char* name : {"dot", "mv", "vm", "mm", "mm_odd", "b3_v", "v_b3", "b3_m", "m_b3", "b3_b3", "bcast4",
                           "bcast_b1", "b4_v", "v_b4", "b4_m", "empty_m", "empty_k", "empty_dot", "big"}) {
    CAPTURE(name);
    const std::string p = std::string("linalg.matmul.") + name;
    const Tensor out = matmul(golden(p + ".a"), golden(p + ".b"));
    check_close(out, golden(p + ".out"), 1e-5, 1e-5);
    CHECK(out.is_contiguous());
  }
}

TEST_CASE("matmul: transposed, sliced and permuted operands") {
  check_close(matmul(golden("linalg.trans.a").t(), golden("linalg.trans.b").t()), golden("linalg.trans.out"), 1e-5,
              1e-6);
  check_close(mm(golden("linalg.trans.a").t(), golden("linalg.trans.b").t()), golden("linalg.trans.out"), 1e-5, 1e-6);
  check_close(matmul(golden("linalg.trans3.a").transpose(1, 2), golden("linalg.trans3.b")), golden("linalg.trans3.out"),
              1e-5, 1e-6);
  const Tensor a = golden("linalg.slice.a").slice(0, std::nullopt, std::nullopt, 2).slice(1, 1, std::nullopt, 2);
  const Tensor b = golden("linalg.slice.b").slice(1, std::nullopt, std::nullopt, 2);
  check_close(matmul(a, b), golden("linalg.slice.out"), 1e-5, 1e-6);
}

TEST_CASE("matmul: batch dims that do not merge (attention's permuted heads) give the contiguous operands' values") {
  manual_seed(5);
  // [B, H, S, D] views of [B, S, H, D]: B and H do not merge into one stride.
  const Tensor q = randn({2, 5, 3, 4}).permute({0, 2, 1, 3});
  const Tensor k = randn({2, 6, 3, 4}).permute({0, 2, 3, 1});
  const Tensor v = randn({2, 6, 3, 7}).permute({0, 2, 1, 3});
  const Tensor s = matmul(q, k);
  CHECK(s.sizes() == Shape{2, 3, 5, 6});
  CHECK(s.is_contiguous());
  // Within rounding: a product this small may sum in another order for another layout.
  check_close(s, matmul(q.contiguous(), k.contiguous()), 1e-6, 1e-6);
  check_close(s, matmul(q.to(DType::Float64), k.to(DType::Float64)).to(DType::Float32), 1e-5, 1e-6);
  check_close(matmul(softmax(s, -1), v), matmul(softmax(s, -1), v.contiguous()), 1e-6, 1e-6);
  // A broadcast (stride-0) batch dim beside a permuted one, and a 2-D second operand.
  const Tensor a = randn({2, 5, 1, 4}).permute({0, 2, 1, 3});  // [2, 1, 5, 4]
  const Tensor b = randn({3, 4, 6});
  check_close(matmul(a, b), matmul(a.contiguous().expand({2, 3, 5, 4}).contiguous(), b.expand({2, 3, 4, 6})), 1e-6,
              1e-6);
  // Threads splitting the 6 images (bmm_in_place: 2 and 3 threads each take
  // whole images; 4 do not divide 6 and split each image's heads): the values
  // of one thread's, bit for bit.
  {
    const Tensor q6 = randn({6, 5, 3, 4}).permute({0, 2, 1, 3}), k6 = randn({6, 6, 3, 4}).permute({0, 2, 3, 1});
    const int saved = get_num_threads();
    set_num_threads(1);
    const Tensor one = matmul(q6, k6);
    for (int threads : {2, 3, 4}) {
      set_num_threads(threads);
      check_equal(matmul(q6, k6), one);
    }
    set_num_threads(saved);
    check_close(one, matmul(q6.contiguous(), k6.contiguous()), 1e-6, 1e-6);
  }
  const Tensor i = randint(-5, 5, {2, 5, 3, 4}).permute({0, 2, 1, 3});
  check_equal(matmul(i, i.transpose(-2, -1)), matmul(i.contiguous(), i.transpose(-2, -1).contiguous()));
  // With a gradient to record, the copying path (one bmm): the same values within rounding.
  const Tensor qg = q.detach().requires_grad_(true);
  const Tensor sg = matmul(qg, k);
  check_close(sg.detach(), s, 1e-6, 1e-6);
  sg.sum().backward();
  check_close(qg.grad(), k.sum({-1}).unsqueeze(2).expand({2, 3, 5, 4}), 1e-5, 1e-6);
  check_error([&] { matmul(q, randn({2, 3, 5, 6})); },
              "Expected size for first two dimensions of batch2 tensor to be: [6, 4] but got: [6, 5].");
}

TEST_CASE("bmm and dtypes against PyTorch") {
  check_close(bmm(golden("linalg.bmm.a"), golden("linalg.bmm.b")), golden("linalg.bmm.out"), 1e-5, 1e-6);
  check_close(matmul(golden("linalg.dtype.f64.a"), golden("linalg.dtype.f64.b")), golden("linalg.dtype.f64.out"),
              1e-12, 1e-12);
  // bfloat16: each product and partial sum is rounded to bfloat16, as PyTorch does: bit-exact.
  const Tensor a = golden("linalg.dtype.bf16.a"), b = golden("linalg.dtype.bf16.b");
  check_equal(matmul(a, b), golden("linalg.dtype.bf16.out"));
  check_equal(matmul(a[0][0], b.select(1, 0)), golden("linalg.dtype.bf16.dot"));
  for (const char* tag : {"i64", "i32", "u8", "i8"}) {
    CAPTURE(tag);
    const std::string p = std::string("linalg.dtype.") + tag;
    check_equal(matmul(golden(p + ".a"), golden(p + ".b")), golden(p + ".out"));
  }
  check_equal(mm(full({1, 2}, int64_t{1} << 30, DType::Int32), full({2, 1}, 3, DType::Int32)), golden("linalg.wrap.out"));
}

TEST_CASE("linear against PyTorch") {
  for (const char* name : {"x2_bias", "x2", "x1_bias", "x3_bias", "x4_bias", "x3"}) {
    CAPTURE(name);
    const std::string p = std::string("linalg.linear.") + name;
    const Tensor bias = testing::has_golden(p + ".bias") ? golden(p + ".bias") : Tensor();
    check_close(linear(golden(p + ".x"), golden(p + ".w"), bias), golden(p + ".out"), 1e-5, 1e-6);
  }
  check_close(linear(golden("linalg.linear.x3t.x").transpose(0, 1), golden("linalg.linear.x3t.w"),
                     golden("linalg.linear.x3t.bias")),
              golden("linalg.linear.x3t.out"), 1e-5, 1e-6);
  check_equal(linear(of({2, 3}, DType::Int64), of({4, 3}, DType::Int64), of({4}, DType::Int64)),
              full({2, 4}, 4, DType::Int64));
}

TEST_CASE("mm, bmm, matmul: PyTorch's errors") {
  check_error([] { mm(f32({2, 3}), f32({4, 5})); }, "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)");
  check_error([] { mm(f32({2, 3}), of({3, 5}, DType::Float64)); }, "expected scalar type Float but found Double");
  check_error([] { mm(of({2, 3}, DType::Float64), f32({3, 5})); }, "expected scalar type Double but found Float");
  check_error([] { mm(of({2, 3}, DType::Int64), of({3, 5}, DType::BFloat16)); },
              "expected scalar type Long but found BFloat16");
  check_error([] { mm(f32({3}), f32({3, 5})); }, "self must be a matrix");
  check_error([] { mm(f32({2, 3}), f32({3})); }, "mat2 must be a matrix");
  check_error([] { mm(of({2, 3}, DType::Bool), of({3, 2}, DType::Bool)); },
              "\"addmm_impl_cpu_\" not implemented for 'Bool'");
  check_error([] { mm(of({2, 3}, DType::Float16), f32({3, 2})); }, "\"addmm_impl_cpu_\" not implemented for 'Half'");
  check_error([] { bmm(f32({2, 3, 4}), f32({3, 4, 5})); },
              "Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [3, 4].");
  check_error([] { bmm(f32({3, 4}), f32({2, 4, 5})); }, "batch1 must be a 3D tensor");
  check_error([] { bmm(f32({2, 3, 4}), f32({4, 5})); }, "batch2 must be a 3D tensor");
  check_error([] { bmm(f32({2, 3, 4}), of({2, 4, 5}, DType::Float64)); }, "expected scalar type Float but found Double");
  check_error([] { bmm(of({2, 3, 4}, DType::Bool), of({2, 4, 5}, DType::Bool)); }, "\"bmm\" not implemented for 'Bool'");
  check_error([] { bmm(of({2, 3, 4}, DType::Float16), of({2, 4, 5}, DType::Float16)); },
              "\"bmm\" not implemented for 'Half'");
  // matmul: each path raises what PyTorch's path raises.
  check_error([] { matmul(scalar_tensor(1.0), f32({3})); },
              "both arguments to matmul need to be at least 1D, but they are 0D and 1D");
  check_error([] { matmul(f32({3}), scalar_tensor(1.0)); },
              "both arguments to matmul need to be at least 1D, but they are 1D and 0D");
  check_error([] { matmul(f32({3}), f32({4})); },
              "inconsistent tensor size, expected tensor [3] and src [4] to have the same number of elements, but got "
              "3 and 4 elements respectively");
  check_error([] { matmul(f32({3}), of({3}, DType::Float64)); },
              "dot : expected both vectors to have same dtype, but found Float and Double");
  check_error([] { matmul(of({3}, DType::Bool), of({3}, DType::Bool)); }, "\"dot\" not implemented for 'Bool'");
  check_error([] { matmul(of({3}, DType::Float16), of({3}, DType::Float16)); }, "\"dot\" not implemented for 'Half'");
  check_error([] { matmul(f32({2, 3}), f32({4})); }, "size mismatch, got 2, 2x3,4");
  check_error([] { matmul(f32({2, 3}), of({3}, DType::Float64)); }, "expected scalar type Float but found Double");
  check_error([] { matmul(of({2, 3}, DType::Bool), of({3}, DType::Bool)); },
              "\"addmv_impl_cpu\" not implemented for 'Bool'");
  check_error([] { matmul(of({2, 3}, DType::Float16), of({3}, DType::Float16)); },
              "\"addmv_impl_cpu\" not implemented for 'Half'");
  check_error([] { matmul(f32({3}), f32({4, 5})); }, "mat1 and mat2 shapes cannot be multiplied (1x3 and 4x5)");
  check_error([] { matmul(f32({2, 2, 3}), f32({4, 5})); }, "mat1 and mat2 shapes cannot be multiplied (4x3 and 4x5)");
  check_error([] { matmul(f32({2, 3}), f32({2, 4, 5})); }, "mat1 and mat2 shapes cannot be multiplied (10x4 and 3x2)");
  check_error([] { matmul(f32({3}), f32({2, 4, 5})); }, "size mismatch, got 10, 10x4,3");
  check_error([] { matmul(f32({2, 4, 5}), f32({3})); }, "size mismatch, got 8, 8x5,3");
  check_error([] { matmul(f32({2, 4, 5}).transpose(1, 2), f32({3, 7})); },
              "Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [2, 3].");
  check_error([] { matmul(f32({2, 2, 3}), f32({2, 4, 5})); },
              "Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [2, 4].");
  check_error([] { matmul(f32({2, 2, 3}), f32({3, 3, 5})); },
              "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0");
  check_error([] { matmul(f32({2, 2, 3}), of({3}, DType::Float64)); }, "expected scalar type Float but found Double");
  check_error([] { matmul(f32({3}), of({2, 3, 5}, DType::Float64)); }, "expected scalar type Double but found Float");
  check_error([] { matmul(f32({2, 1, 4, 5}), of({3, 5, 3}, DType::Float64)); },
              "expected scalar type Float but found Double");
  check_error([] { matmul(of({2, 3, 4}, DType::Bool), of({2, 4, 5}, DType::Bool)); },
              "\"bmm\" not implemented for 'Bool'");
  check_error([] { matmul(of({2, 3, 4}, DType::Bool), of({4, 5}, DType::Bool)); },
              "\"addmm_impl_cpu_\" not implemented for 'Bool'");
  check_error([] { matmul(of({4}, DType::Float16), of({2, 4, 5}, DType::Float16)); },
              "\"addmv_impl_cpu\" not implemented for 'Half'");
  check_error([] { matmul(of({2, 3, 4}, DType::Float16), of({2, 4, 5}, DType::Float16)); },
              "\"bmm\" not implemented for 'Half'");
}

TEST_CASE("linear: PyTorch's errors") {
  check_error([] { linear(f32({2, 3}), f32({4, 5})); }, "mat1 and mat2 shapes cannot be multiplied (2x3 and 5x4)");
  check_error([] { linear(f32({2, 3}), f32({4, 3}), f32({5})); },
              "The expanded size of the tensor (4) must match the existing size (5) at non-singleton dimension 1.  "
              "Target sizes: [2, 4].  Tensor sizes: [5]");
  check_error([] { linear(f32({2, 2, 3}), f32({4, 3}), f32({3})); },
              "The expanded size of the tensor (4) must match the existing size (3) at non-singleton dimension 1.  "
              "Target sizes: [4, 4].  Tensor sizes: [3]");
  check_error([] { linear(f32({2, 3}), f32({3}), scalar_tensor(1.0)); }, "mat2 must be a matrix, got 1-D tensor");
  check_error([] { linear(f32({2, 3}), of({4, 3}, DType::Float64)); }, "expected scalar type Float but found Double");
  check_error([] { linear(of({2, 3}, DType::Float64), f32({4, 3})); }, "expected scalar type Double but found Float");
  check_error([] { linear(f32({2, 3}), f32({4, 3}), of({4}, DType::Float64)); }, "self and mat2 must have the same dtype");
  check_error([] { linear(f32({2, 2, 3}), f32({4, 3}), of({4}, DType::Int64)); },
              "self and mat2 must have the same dtype");
  check_error([] { linear(f32({2, 2, 3}), f32({4, 3, 1})); }, "t() expects a tensor with <= 2 dimensions, but self is 3D");
  check_error([] { linear(scalar_tensor(1.0), f32({4, 3})); },
              "both arguments to matmul need to be at least 1D, but they are 0D and 2D");
  check_error([] { linear(f32({3}), f32({4, 3}), f32({2, 4})); },
              "output with shape [4] doesn't match the broadcast shape [2, 4]");
  check_error([] { linear(of({2, 3}, DType::Bool), of({4, 3}, DType::Bool)); },
              "\"addmm_impl_cpu_\" not implemented for 'Bool'");
  check_error([] { linear(of({2, 3}, DType::Float16), of({4, 3}, DType::Float16), of({4}, DType::Float16)); },
              "\"addmm_impl_cpu_\" not implemented for 'Half'");
}

// --- the blocked SGEMM against the reference kernel ------------------------------

namespace {

// Reference product through ref::matmul on [1, M, K] x [1, K, N] views.
Tensor ref_product(const Tensor& a, const Tensor& b) {
  Tensor out = empty({1, a.size(0), b.size(1)});
  const TensorView in[2] = {a.unsqueeze(0).kernel_view(), b.unsqueeze(0).kernel_view()};
  TensorView o[1] = {out.kernel_view()};
  REQUIRE(ref::matmul(KernelContext{}, Span<const TensorView>(in, 2), Span<TensorView>(o, 1), NoParams{}) == Status::Ok);
  return out.squeeze(0);
}

// `rows x cols` random values seen through a view with padded (odd) strides,
// transposed in memory when `transposed`.
Tensor strided_matrix(int64_t rows, int64_t cols, bool transposed) {
  if (transposed) return randn({cols + 3, rows + 2}).narrow(0, 1, cols).narrow(1, 0, rows).t();
  return randn({rows, cols + 5}).narrow(1, 2, cols);
}

void check_sgemm(int64_t m, int64_t n, int64_t k, int transposes, int threads, bool accumulate) {
  CAPTURE(m);
  CAPTURE(n);
  CAPTURE(k);
  CAPTURE(transposes);
  CAPTURE(threads);
  const Tensor a = strided_matrix(m, k, (transposes & 1) != 0);
  const Tensor b = strided_matrix(k, n, (transposes & 2) != 0);
  // C with an odd row stride; accumulate adds onto its prior values.
  Tensor c_store = randn({m, n + 3});
  Tensor c = c_store.narrow(1, 1, n);
  Tensor expected = ref_product(a, b);
  if (accumulate) expected = expected + c;
  std::vector<char> ws(cpu::sgemm_workspace(m, n, k, threads) + 1);
  // An unaligned workspace pointer is fine.
  const bool ok = cpu::sgemm(m, n, k, {a.data_ptr<float>(), a.stride(0), a.stride(1)},
                             {b.data_ptr<float>(), b.stride(0), b.stride(1)}, {c.data_ptr<float>(), c.stride(0), c.stride(1)},
                             accumulate, ws.data() + 1, ws.size() - 1, threads);
  REQUIRE(ok);
  check_close(c, expected, 1e-4, 1e-4);
}

std::vector<cpu::GemmIsa> supported_isas() {
  std::vector<cpu::GemmIsa> isas;
  for (cpu::GemmIsa isa : {cpu::GemmIsa::Portable, cpu::GemmIsa::Avx2, cpu::GemmIsa::Avx512}) {
    if (cpu::sgemm_isa_supported(isa)) isas.push_back(isa);
  }
  return isas;
}

}  // namespace

TEST_CASE("sgemm: tile sweep against the reference kernel for each micro-kernel") {
  for (cpu::GemmIsa isa : supported_isas()) {
    REQUIRE(cpu::sgemm_set_isa(isa));
    CAPTURE(std::string(cpu::sgemm_kernel_name()));
    // Sizes equal to, below, above and multiples of the 8x8, 6x16 and 12x32 tiles.
    for (int64_t m : {1, 5, 6, 7, 8, 11, 12, 13, 24, 25, 37}) {
      for (int64_t n : {1, 7, 8, 9, 16, 17, 31, 32, 33, 65}) {
        for (int64_t k : {1, 7, 33}) check_sgemm(m, n, k, static_cast<int>((m + n + k) % 4), 1, false);
      }
    }
    for (int t = 0; t < 4; ++t) {
      check_sgemm(13, 17, 300, t, 1, false);   // two K blocks
      check_sgemm(150, 40, 20, t, 1, true);    // several M blocks, accumulating
      check_sgemm(37, 33, 19, t, 1, true);
    }
    check_sgemm(200, 300, 270, 0, 4, false);  // threads over M x N blocks
    check_sgemm(5, 700, 64, 3, 4, true);      // threads over N chunks only
    check_sgemm(300, 20, 50, 0, 3, false);    // threads over M only
    check_sgemm(20, 500, 300, 1, 2, true);    // threads over N, two K blocks, accumulating
    check_sgemm(50, 9000, 20, 2, 2, false);   // several NC blocks per thread
    // Shallow (k <= 64) with large C blocks: B blocks capped to L2, row panels outer; several
    // blocks, partial tiles.
    for (int t = 0; t < 4; ++t) check_sgemm(70, 5000, 64, t, 1, t % 2 == 1);
    check_sgemm(97, 3001, 27, 0, 2, false);
    {
      ThreadLimitGuard one(1);                // a 4-thread workspace run as one chunk
      check_sgemm(200, 300, 270, 0, 4, false);
    }
  }
  REQUIRE(cpu::sgemm_set_isa(cpu::GemmIsa::Auto));
}

TEST_CASE("sgemm: K = 0 and empty products") {
  Tensor c = full({3, 4}, 7.0);
  std::vector<float> a(1), b(1);
  REQUIRE(cpu::sgemm(3, 4, 0, {a.data(), 0, 1}, {b.data(), 4, 1}, {c.data_ptr<float>(), 4, 1}, true, nullptr, 0, 1));
  check_equal(c, full({3, 4}, 7.0));  // accumulate: unchanged
  REQUIRE(cpu::sgemm(3, 4, 0, {a.data(), 0, 1}, {b.data(), 4, 1}, {c.data_ptr<float>(), 4, 1}, false, nullptr, 0, 1));
  check_equal(c, zeros({3, 4}));
  REQUIRE(cpu::sgemm(0, 4, 5, {a.data(), 5, 1}, {b.data(), 4, 1}, {c.data_ptr<float>(), 4, 1}, false, nullptr, 0, 1));
  REQUIRE(cpu::sgemm(3, 0, 5, {a.data(), 5, 1}, {b.data(), 0, 1}, {c.data_ptr<float>(), 4, 1}, false, nullptr, 0, 1));
  CHECK(cpu::sgemm_workspace(0, 4, 5, 1) == 0);
  // Too small a workspace is refused, not overrun.
  std::vector<char> ws(16);
  CHECK_FALSE(cpu::sgemm(3, 4, 5, {a.data(), 0, 0}, {b.data(), 0, 0}, {c.data_ptr<float>(), 4, 1}, false, ws.data(),
                         ws.size(), 1));
  // Through the front-end: [2, 0] @ [0, 3] is zeros, [0, 3] @ [3, 2] is empty.
  check_equal(mm(zeros({2, 0}), zeros({0, 3})), zeros({2, 3}));
  check_equal(mm(zeros({0, 3}), ones({3, 2})), zeros({0, 2}));
}

TEST_CASE("matmul: float32 CPU kernel matches the float64 reference on large and batched products") {
  const Tensor a = randn({3, 130, 70}), b = randn({70, 150});
  check_close(matmul(a, b), matmul(a.to(DType::Float64), b.to(DType::Float64)).to(DType::Float32), 1e-4, 1e-4);
  // Many small products: one GEMM per thread over the batches.
  const Tensor x = randn({64, 5, 9}), y = randn({64, 9, 3}).transpose(1, 2).contiguous().transpose(1, 2);
  check_close(bmm(x, y), bmm(x.to(DType::Float64), y.to(DType::Float64)).to(DType::Float32), 1e-5, 1e-5);
  const int saved = get_num_threads();
  set_num_threads(1);
  check_close(bmm(x, y), bmm(x.to(DType::Float64), y.to(DType::Float64)).to(DType::Float32), 1e-5, 1e-5);
  set_num_threads(saved);
}
