// What the generic kernel suite (tests/kernels/kernel_suite_test.cc, which
// compares every Vulkan kernel entry with the reference kernels) does not
// check: the messages of refused calls on Vulkan tensors (a dtype without a
// Vulkan kernel, strides a shader cannot address, the front-ends' argument
// errors), and the front-end paths that compose kernels (scalar operands,
// promotion, in-place ops on views, output layouts). Kept from the hand-written
// elementwise, reduce, norm and pad suites the kernel suite replaced.
#include <cmath>
#include <vector>

#include "tests/vulkan/vulkan_testing.h"

using namespace ember;
using namespace ember::testing;

namespace {

// Small values with repeats, zeros and negatives, as the elementwise suite had them.
Tensor values(IntArrayRef shape, DType t) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<int32_t> k(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) k[static_cast<size_t>(i)] = static_cast<int32_t>((i * 7) % 23) - 11;
  const Tensor ints = tensor(k, shape);
  if (is_floating(t)) return (ints.to(DType::Float32) * 0.75).to(t);
  return ints.to(t);
}

}  // namespace

TEST_CASE("a dtype without a Vulkan kernel: the op, the dtype and the device are named") {
  const Tensor d = to_vk(arange(4, DType::Float64));
  CHECK_THROWS_WITH_AS(d + d, "\"add\" not implemented for 'Double' on vulkan", ember::Error);
  CHECK_THROWS_WITH_AS(exp(d), "\"exp\" not implemented for 'Double' on vulkan", ember::Error);
  CHECK_THROWS_WITH_AS(softmax(d, 0), "\"softmax\" not implemented for 'Double' on vulkan", ember::Error);
  CHECK_THROWS_WITH_AS(layer_norm(d, {4}), "\"layer_norm\" not implemented for 'Double' on vulkan", ember::Error);
  CHECK_THROWS_WITH_AS(to_vk(arange(4, DType::Float64)).to(DType::Float32),
                       "\"copy\" not implemented for 'Double' on vulkan", ember::Error);
  CHECK_THROWS_WITH_AS(to_vk(arange(4, DType::Float32)).to(DType::Float64),
                       doctest::Contains("vulkan copy does not support float64"), ember::Error);
  const Tensor l = to_vk(arange(6, DType::Int64));
  CHECK_THROWS_WITH_AS(sum(l), "\"sum\" not implemented for 'Long' on vulkan", ember::Error);
  CHECK_THROWS_WITH_AS(argmax(to_vk(arange(6, DType::Int32))), "\"argmax\" not implemented for 'Int' on vulkan",
                       ember::Error);
}

TEST_CASE("strides a shader cannot address: NotSupported, with the reason") {
  // Reversed dims: nothing merges and 5 are left; the copy shader indexes 4,
  // so the kernel dispatches once per index of the leading dim.
  const Tensor zc = values({2, 3, 2, 3, 2}, DType::Float32).permute({4, 3, 2, 1, 0});
  const Tensor z = to_vk(values({2, 3, 2, 3, 2}, DType::Float32)).permute({4, 3, 2, 1, 0});
  check_equal(to_cpu(z.contiguous()), zc.contiguous());
  CHECK(z.contiguous().is_contiguous());
  // Eight dims of size 2 in reverse memory order: no two reduced dims merge.
  const Tensor x = to_vk(arange(256, DType::Float32).reshape({2, 2, 2, 2, 2, 2, 2, 2})).permute({7, 6, 5, 4, 3, 2, 1, 0});
  CHECK_THROWS_WITH_AS(sum(x, {0, 1, 2, 3, 4}), doctest::Contains("kernel \"sum\" on vulkan failed: NotSupported"),
                       ember::Error);
  CHECK_THROWS_WITH_AS(sum(x, {0, 1, 2, 3, 4}),
                       doctest::Contains("the input's strides leave more than 4 kept or 4 reduced dims"), ember::Error);
  // A non-contiguous layer_norm weight.
  const Tensor in = to_vk(randn({3, 2, 4}));
  const Tensor w = vk_transposed_view(randn({2, 4}));
  CHECK_THROWS_WITH_AS(layer_norm(in, {2, 4}, w),
                       doctest::Contains("weight, bias and running statistics must be contiguous"), ember::Error);
}

TEST_CASE("the front-ends' argument errors on vulkan tensors") {
  CHECK_THROWS_WITH_AS(max(to_vk(zeros({2, 0})), 1), "max(): Expected reduction dim 1 to have non-zero size.",
                       ember::Error);
  const Tensor x = to_vk(randn({1, 2, 3}));
  CHECK_THROWS_WITH_AS(pad(x, {3, 0}, "reflect"),
                       doctest::Contains("Padding size should be less than the corresponding input dimension"),
                       ember::Error);
  CHECK_THROWS_WITH_AS(pad(x, {1, 1}, "reflect", 2.0), "Padding mode \"reflect\" doesn't take in value argument",
                       ember::Error);
  CHECK_THROWS_WITH_AS(pad(to_vk(randn({1, 1, 2})), {3, 0}, "circular"),
                       "Padding value causes wrapping around more than once.", ember::Error);
  const Tensor i = to_vk(arange(6, DType::Int32).reshape({1, 2, 3}));
  CHECK_THROWS_WITH_AS(pad(i, {1, 1}, "reflect"), "\"reflection_pad1d\" not implemented for 'Int'", ember::Error);
  CHECK_THROWS_WITH_AS(pad(i, {1, 1}, "circular"), "\"pad\" not implemented for 'Int' on vulkan", ember::Error);
  // Half reflect/replicate padding: refused on the CPU (PyTorch 1.13), allowed on vulkan.
  CHECK_THROWS_WITH_AS(pad(randn({1, 2, 3}).to(DType::Float16), {1, 1}, "replicate"),
                       "\"replication_pad1d_cpu\" not implemented for 'Half'", ember::Error);
  const Tensor e = zeros({0, 2, 3});
  const Tensor ve = pad(to_vk(e), {1, 1}, "replicate");
  CHECK(ve.sizes() == Shape{0, 2, 5});
  check_equal(to_cpu(ve), pad(e, {1, 1}, "replicate"));
}

TEST_CASE("scalar operands, promotion, and in-place ops on strided views") {
  const Tensor x = values({5, 7}, DType::Float32);
  check_equal(to_cpu(to_vk(x) + 2), x + 2);
  check_equal(to_cpu(2.5 - to_vk(x)), 2.5 - x);
  check_equal(to_cpu(to_vk(x) * 0.5), x * 0.5);
  check_close(to_cpu(1.0 / (to_vk(x) + 20.0)), 1.0 / (x + 20.0), 1e-6, 0);
  const Tensor xi = values({5, 7}, DType::Int32);
  check_equal(to_cpu(to_vk(xi) * 3), xi * 3);
  check_equal(to_cpu(to_vk(xi) > 0), xi > 0);
  check_equal(to_cpu(to_vk(xi) + 0.5), xi + 0.5);  // promotes to float32 (copy, then add)
  check_equal(to_cpu(to_vk(xi) / 2), xi / 2);      // integers divide in float32

  Tensor cpu = values({4, 6}, DType::Float32);
  Tensor vk = to_vk(cpu);
  const Tensor other = values({4, 3}, DType::Float32) + 1.0;
  cpu.narrow(1, 1, 3).add_(other);
  vk.narrow(1, 1, 3).add_(to_vk(other));
  cpu.narrow(1, 2, 3).mul_(-3);
  vk.narrow(1, 2, 3).mul_(-3);
  cpu.t().sub_(tensor<float>({1.0f, 2.0f, 3.0f, 4.0f}));  // a transposed, strided output
  vk.t().sub_(to_vk(tensor<float>({1.0f, 2.0f, 3.0f, 4.0f})));
  check_equal(to_cpu(vk), cpu);

  Tensor ci = values({3, 5}, DType::Int64);
  Tensor vi = to_vk(ci);
  ci.narrow(0, 1, 2).add_(int64_t{1} << 40);
  vi.narrow(0, 1, 2).add_(int64_t{1} << 40);
  check_equal(to_cpu(vi), ci);
  const Tensor f = values({3, 4}, DType::Float32);
  const Tensor c = f > 0;
  check_equal(to_cpu(where(to_vk(c), to_vk(f), 0.5)), where(c, f, 0.5));
  check_equal(to_cpu(where(to_vk(c), -1, to_vk(f))), where(c, -1, f));
}

TEST_CASE("outputs keep the layout of their input (transposed softmax, channels-last batch_norm)") {
  manual_seed(13);
  const Tensor t = vk_transposed_view(randn({9, 6}));
  REQUIRE(!t.is_contiguous());
  CHECK(softmax(t, 0).strides() == t.strides());
  CHECK(log_softmax(t, 1).strides() == t.strides());
  const Tensor vx = to_vk(randn({2, 4, 5, 3})).permute({0, 3, 1, 2});  // [2, 3, 4, 5], channels last
  const Tensor m = to_vk(randn({3})), v = to_vk(rand({3}) + 0.5);
  CHECK(batch_norm(vx, m, v, Tensor(), Tensor()).strides() == vx.strides());
}

EMBER_VULKAN_NO_VALIDATION_ERRORS()
