// MatMul on Vulkan (kernels/vulkan/matmul.cc, the tiled shader): every result
// is compared with the CPU result of the same front-end call. fp32 within
// 1e-4 relative (plus 1e-4 absolute for sums that cancel): the shader adds
// the K products in a different order than the CPU gemm.
#include "runtime/backend/backend.h"
#include "runtime/ops/dispatch.h"
#include "tests/vulkan/vulkan_testing.h"

using namespace ember;
using namespace ember::testing;

namespace {

void check_gemm_close(const Tensor& vk_result, const Tensor& cpu_result) {
  CHECK(vk_result.device() == kVulkan);
  check_close(to_cpu(vk_result), cpu_result, 1e-4, 1e-4);
}


}  // namespace

TEST_CASE("mm on vulkan matches the CPU for every M, N, K in {1, 3, 17, 64, 65, 257}") {
  manual_seed(1);
  const int64_t sizes[] = {1, 3, 17, 64, 65, 257};
  for (int64_t m : sizes) {
    for (int64_t n : sizes) {
      for (int64_t k : sizes) {
        CAPTURE(m);
        CAPTURE(n);
        CAPTURE(k);
        const Tensor a = randn({m, k}), b = randn({k, n});
        check_gemm_close(mm(to_vk(a), to_vk(b)), mm(a, b));
      }
    }
  }
}

TEST_CASE("mm on vulkan reads transposed operands in place") {
  manual_seed(2);
  for (int64_t m : {1, 17, 65}) {
    for (int64_t n : {3, 64, 257}) {
      const int64_t k = 65;
      const Tensor a = randn({m, k}), b = randn({k, n});
      const Tensor at = vk_transposed_view(a), bt = vk_transposed_view(b);
      REQUIRE(at.stride(0) == 1);
      REQUIRE(at.stride(1) == m);
      REQUIRE(bt.stride(0) == 1);
      REQUIRE(bt.stride(1) == k);
      check_gemm_close(mm(at, to_vk(b)), mm(a, b));
      check_gemm_close(mm(to_vk(a), bt), mm(a, b));
      check_gemm_close(mm(at, bt), mm(a, b));
    }
  }
  // A row of a matrix with stride 2 (narrowed columns): neither stride is 1.
  const Tensor big = randn({40, 34});
  const Tensor a = big.narrow(1, 0, 34).slice(1, 0, 34, 2);  // [40, 17], strides (34, 2)
  const Tensor va = to_vk(big).slice(1, 0, 34, 2);
  REQUIRE(va.stride(1) == 2);
  const Tensor b = randn({17, 9});
  check_gemm_close(mm(va, to_vk(b)), mm(a, b));
}

TEST_CASE("bmm on vulkan: batches, broadcast batches (stride 0), strided outputs") {
  manual_seed(3);
  const Tensor a = randn({5, 17, 33}), b = randn({5, 33, 65});
  check_gemm_close(bmm(to_vk(a), to_vk(b)), bmm(a, b));
  // Broadcast: one matrix for every batch, as the kernel sees it (stride 0).
  const Tensor a1 = randn({1, 17, 33});
  const Tensor va = to_vk(a1).expand({5, 17, 33});
  REQUIRE(va.stride(0) == 0);
  check_gemm_close(bmm(va, to_vk(b)), bmm(a1.expand({5, 17, 33}), b));
  const Tensor b1 = randn({1, 33, 65});
  check_gemm_close(bmm(to_vk(a), to_vk(b1).expand({5, 33, 65})), bmm(a, b1.expand({5, 33, 65})));
  // matmul broadcasting [2, 1, 7, 9] x [3, 9, 4] -> [2, 3, 7, 4]: the front-end's
  // reshape of the expanded operands copies (the Copy kernel).
  const Tensor x = randn({2, 1, 7, 9}), y = randn({3, 9, 4});
  check_gemm_close(matmul(to_vk(x), to_vk(y)), matmul(x, y));
  // [3, 7, 9] x [9, 4] broadcast as bmm: the batch of y has stride 0, no copy.
  const Tensor x3 = randn({3, 7, 9}), y2 = randn({1, 9, 4});
  check_gemm_close(bmm(to_vk(x3), to_vk(y2).expand({3, 9, 4})), bmm(x3, y2.expand({3, 9, 4})));
  // Straight to the kernel: a transposed (strided) output view.
  const Tensor out_t = empty({5, 65, 17}, TensorOptions(kVulkan));
  unwrap(run_kernel(OpKind::MatMul, {to_vk(a), to_vk(b)}, {out_t.transpose(1, 2)}));
  check_gemm_close(out_t, bmm(a, b).transpose(1, 2).contiguous());
}

TEST_CASE("matmul on vulkan: dot, mv, vector x matrix and folded batches") {
  manual_seed(4);
  const Tensor v = randn({257}), w = randn({257});
  check_gemm_close(matmul(to_vk(v), to_vk(w)), matmul(v, w));
  const Tensor m = randn({65, 257});
  check_gemm_close(matmul(to_vk(m), to_vk(v)), matmul(m, v));
  const Tensor mt = randn({257, 3});
  check_gemm_close(matmul(to_vk(v), to_vk(mt)), matmul(v, mt));
  const Tensor x = randn({3, 7, 257});
  check_gemm_close(matmul(to_vk(x), to_vk(mt)), matmul(x, mt));
}

TEST_CASE("linear on vulkan reads the weight as a transposed view, without a copy") {
  manual_seed(5);
  for (int64_t batch : {1, 3, 65}) {
    const Tensor x = randn({batch, 768 / 4}), weight = randn({257, 768 / 4});
    check_gemm_close(linear(to_vk(x), to_vk(weight)), linear(x, weight));
  }
  const Tensor x3 = randn({2, 5, 64}), weight = randn({17, 64});
  check_gemm_close(linear(to_vk(x3), to_vk(weight)), linear(x3, weight));
  // The weight's transposed view reaches the kernel as it is: counted in dispatches.
  vk::Context* c = vk::Context::get().get();
  const Tensor vx = to_vk(x3), vw = to_vk(weight);
  const uint64_t before = c->dispatch_count();
  const Tensor y = linear(vx, vw);
  CHECK(c->dispatch_count() - before == 1);
  check_gemm_close(y, linear(x3, weight));
}

TEST_CASE("linear on vulkan with a bias (the bias is added by the front-end's add_)") {
  manual_seed(6);
  const Tensor x = randn({17, 64}), weight = randn({65, 64}), bias = randn({65});
  const Tensor x3 = randn({2, 3, 64});
  check_gemm_close(linear(to_vk(x), to_vk(weight), to_vk(bias)), linear(x, weight, bias));
  check_gemm_close(linear(to_vk(x3), to_vk(weight), to_vk(bias)), linear(x3, weight, bias));
}

TEST_CASE("matmul on vulkan: empty operands") {
  // K == 0: zeros, as on the CPU.
  const Tensor a = empty({3, 0}), b = empty({0, 5});
  const Tensor z = mm(to_vk(a), to_vk(b));
  check_equal(to_cpu(z), zeros({3, 5}));
  // M == 0 or N == 0: an empty result, nothing dispatched.
  CHECK(mm(to_vk(empty({0, 4})), to_vk(randn({4, 5}))).sizes() == Shape{0, 5});
  CHECK(mm(to_vk(randn({3, 4})), to_vk(empty({4, 0}))).sizes() == Shape{3, 0});
  CHECK(bmm(to_vk(empty({0, 2, 3})), to_vk(empty({0, 3, 4}))).sizes() == Shape{0, 2, 4});
}

TEST_CASE("matmul on vulkan, float16 storage with float32 accumulation (straight to the kernel)") {
  REQUIRE(vk::Context::get().get()->caps().float16);
  manual_seed(7);
  for (int64_t m : {1, 17, 65}) {
    for (int64_t n : {3, 64, 257}) {
      const int64_t k = 65;
      const Tensor a = randn({1, m, k}).to(DType::Float16), b = randn({1, k, n}).to(DType::Float16);
      const Tensor out = empty({1, m, n}, TensorOptions(DType::Float16).device(kVulkan));
      unwrap(run_kernel(OpKind::MatMul, {to_vk(a), vk_transposed_view(b)}, {out}));
      // The float32 product of the same half values, rounded once to half.
      const Tensor expected = bmm(a.to(DType::Float32), b.to(DType::Float32)).to(DType::Float16);
      check_close(to_cpu(out), expected, 2e-3, 2e-3);
    }
  }
  // The front-end refuses Half on the CPU, as PyTorch's CPU gemm does, and runs it on Vulkan.
  const Tensor hc = ones({2, 3}, DType::Float16);
  CHECK_THROWS_WITH_AS(mm(hc, hc.t()), "\"addmm_impl_cpu_\" not implemented for 'Half'", ember::Error);
  const Tensor a = randn({5, 33}).to(DType::Float16), b = randn({33, 7}).to(DType::Float16);
  check_close(to_cpu(mm(to_vk(a), to_vk(b))), mm(a.to(DType::Float32), b.to(DType::Float32)).to(DType::Float16), 2e-3,
              2e-3);
  const Tensor bias = randn({7}).to(DType::Float16);
  check_close(to_cpu(linear(to_vk(a), to_vk(b.t()), to_vk(bias))),
              linear(a.to(DType::Float32), b.t().to(DType::Float32), bias.to(DType::Float32)).to(DType::Float16), 4e-3,
              4e-3);
}

TEST_CASE("matmul on vulkan: mixed dtypes and shapes are refused as on the CPU") {
  const Tensor a = to_vk(ones({2, 3})), b = to_vk(ones({4, 5}));
  CHECK_THROWS_WITH_AS(mm(a, b), "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)", ember::Error);
  const Tensor out = empty({1, 2, 5}, TensorOptions(kVulkan));
  CHECK_THROWS_WITH_AS(unwrap(run_kernel(OpKind::MatMul, {a.unsqueeze(0), b.unsqueeze(0)}, {out})),
                       doctest::Contains("kernel \"matmul\" on vulkan failed"), ember::Error);
}

EMBER_VULKAN_NO_VALIDATION_ERRORS()
