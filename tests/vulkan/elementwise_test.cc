// The Vulkan copy, fill, unary, binary and where kernels against the CPU
// result of the same front-end call: every dtype they take, odd sizes,
// non-contiguous and broadcast operands, strided outputs, empty tensors.
#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "tests/vulkan/vulkan_testing.h"

using namespace ember;
using namespace ember::testing;

namespace {

const DType kTypes[] = {DType::Float32, DType::Float16, DType::Int32, DType::Int64,
                        DType::UInt8,   DType::Int8,    DType::Bool};

// Small values with repeats, zeros and negatives: (7i mod 23) - 11 (or, for
// `other`, (5i mod 17) - 8), times 0.75 for the floating dtypes (exact in
// float16), converted to `t` on the CPU.
Tensor values(IntArrayRef shape, DType t, bool other = false) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<int32_t> k(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    k[static_cast<size_t>(i)] = other ? static_cast<int32_t>((i * 5) % 17) - 8 : static_cast<int32_t>((i * 7) % 23) - 11;
  }
  const Tensor ints = tensor(k, shape);
  if (is_floating(t)) return (ints.to(DType::Float32) * 0.75).to(t);
  return ints.to(t);
}

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

// Shapes every op is run on: one element, odd 1-D sizes, a 0-dim tensor.
const std::vector<Shape> kShapes = {{1}, {7}, {257}, {}};

}  // namespace

// ---- copy ---------------------------------------------------------------------

TEST_CASE("copy converts between every pair of dtypes, contiguous and transposed") {
  for (DType from : kTypes) {
    for (DType to : kTypes) {
      CAPTURE(from);
      CAPTURE(to);
      for (const Shape& shape : kShapes) {
        Tensor src = values(shape, from);
        // float -> uint8 is undefined in C++ for negative values: keep them positive.
        if (is_floating(from) && to == DType::UInt8) src = src.abs();
        check_equal(to_cpu(to_vk(src).to(to)), src.to(to));
      }
      Tensor src = values({33, 17}, from);
      if (is_floating(from) && to == DType::UInt8) src = src.abs();
      const Tensor t = vk_transposed_view(src);
      REQUIRE(!t.is_contiguous());
      check_equal(to_cpu(t.to(to)), src.to(to));
      check_equal(to_cpu(t.contiguous()), src);
    }
  }
}

TEST_CASE("copy keeps int64 values beyond 32 bits, and rounds them to float32 as the CPU does") {
  const Tensor big = tensor<int64_t>({5000000000LL, -5000000001LL, (int64_t{1} << 53) + 1, -7,
                                      std::numeric_limits<int64_t>::min(), 0});
  for (DType to : {DType::Int64, DType::Float32, DType::Int32, DType::Bool}) {
    CAPTURE(to);
    check_equal(to_cpu(to_vk(big).to(to)), big.to(to));
  }
  const Tensor f = tensor<float>({3e9f, -3e9f, 1e15f, 0.5f, -0.5f});
  check_equal(to_cpu(to_vk(f).to(DType::Int64)), f.to(DType::Int64));
  // float -> bool is `!= 0`: NaN and 0.25 are true.
  const Tensor special = tensor<float>({kNaN, 0.25f, -0.0f, 0.0f, kInf});
  check_equal(to_cpu(to_vk(special).to(DType::Bool)), tensor<bool>({true, true, false, false, true}));
  check_equal(to_cpu(to_vk(special).to(DType::Float16)), special.to(DType::Float16));
}

TEST_CASE("copy into strided and broadcast destinations") {
  const Tensor src = values({4, 3}, DType::Int32);
  Tensor cpu = zeros({4, 6});
  cpu.narrow(1, 1, 3).copy_(src);
  Tensor vk = to_vk(zeros({4, 6}));
  vk.narrow(1, 1, 3).copy_(to_vk(src));  // int32 -> float32 into a strided view
  check_equal(to_cpu(vk), cpu);
  CHECK(cpu.narrow(1, 1, 3).sum().item<float>() != 0.0f);

  // A [3] source broadcast (stride 0) over a [4, 3] destination.
  const Tensor row = tensor<float>({1.5f, -2.0f, 3.25f});
  Tensor b = to_vk(zeros({4, 3}));
  b.copy_(to_vk(row));
  check_equal(to_cpu(b), row.expand({4, 3}).contiguous());
}

TEST_CASE("copy merges contiguous dims: 4 dims left is fine, 5 is NotSupported with the reason") {
  const Tensor x = values({3, 4, 5, 6}, DType::Float32);
  check_equal(to_cpu(to_vk(x).permute({0, 2, 1, 3}).contiguous()), x.permute({0, 2, 1, 3}).contiguous());
  check_equal(to_cpu(to_vk(x).permute({3, 1, 2, 0}).contiguous()), x.permute({3, 1, 2, 0}).contiguous());
  // 6 dims that merge to 2 (only the last two are swapped).
  const Tensor y = values({2, 3, 2, 2, 3, 5}, DType::Float32);
  check_equal(to_cpu(to_vk(y).transpose(4, 5).contiguous()), y.transpose(4, 5).contiguous());
  // Reversed dims: nothing merges.
  const Tensor z = to_vk(values({2, 3, 2, 3, 2}, DType::Float32)).permute({4, 3, 2, 1, 0});
  CHECK_THROWS_WITH_AS(z.contiguous(),
                       doctest::Contains("kernel \"copy\" on vulkan failed: NotSupported"), ember::Error);
  CHECK_THROWS_WITH_AS(z.contiguous(),
                       doctest::Contains("vulkan copy indexes at most 4 dimensions after merging contiguous ones; "
                                         "these strides leave 5"),
                       ember::Error);
}

TEST_CASE("copy of empty tensors, and to dtypes the shaders lack") {
  const Tensor e = to_vk(zeros({0, 3}));
  const Tensor ei = to_cpu(e.to(DType::Int32));
  CHECK(ei.sizes() == Shape{0, 3});
  CHECK(ei.dtype() == DType::Int32);
  CHECK_THROWS_WITH_AS(to_vk(arange(4, DType::Float32)).to(DType::Float64),
                       doctest::Contains("vulkan copy does not support float64"), ember::Error);
  CHECK_THROWS_WITH_AS(to_vk(arange(4, DType::Float64)).to(DType::Float32),
                       "\"copy\" not implemented for 'Double' on vulkan", ember::Error);
}

// ---- fill ---------------------------------------------------------------------

TEST_CASE("fill every dtype, contiguous and into a strided view") {
  const std::vector<std::pair<DType, Scalar>> cases = {
      {DType::Float32, -2.5},         {DType::Float16, 1.0 / 3.0}, {DType::Int32, -7},
      {DType::Int64, (int64_t{1} << 40) + 5}, {DType::UInt8, 300},  {DType::Int8, -100},
      {DType::Bool, true},            {DType::Bool, 2}};
  for (const auto& [dtype, value] : cases) {
    CAPTURE(dtype);
    for (int64_t n : {1, 7, 257}) {
      check_equal(to_cpu(full({n}, value, TensorOptions(dtype).device(kVulkan))), full({n}, value, dtype));
    }
    Tensor cpu = zeros({4, 6}, dtype);
    cpu.narrow(1, 2, 3).fill_(value);
    Tensor vk = zeros({4, 6}, TensorOptions(dtype).device(kVulkan));
    vk.narrow(1, 2, 3).fill_(value);
    check_equal(to_cpu(vk), cpu);
  }
  CHECK(to_cpu(full({1}, 300, TensorOptions(DType::UInt8).device(kVulkan))).item<uint8_t>() == 44);
}

// ---- unary --------------------------------------------------------------------

namespace {

struct UnaryCase {
  const char* name;
  std::function<Tensor(const Tensor&)> fn;
  bool positive;  // the op's domain: log, sqrt, rsqrt
  double rtol;    // float32 tolerance (see the test below)
};

std::vector<UnaryCase> float_unary_cases() {
  return {
      {"neg", [](const Tensor& x) { return neg(x); }, false, 0},
      {"abs", [](const Tensor& x) { return abs(x); }, false, 0},
      {"relu", [](const Tensor& x) { return relu(x); }, false, 0},
      {"clamp", [](const Tensor& x) { return clamp(x, -0.5, 0.7); }, false, 0},
      {"clamp_min", [](const Tensor& x) { return clamp(x, -0.2, std::nullopt); }, false, 0},
      {"clamp_max", [](const Tensor& x) { return clamp(x, std::nullopt, 0.3); }, false, 0},
      {"exp", [](const Tensor& x) { return exp(x); }, false, 1e-5},
      {"log", [](const Tensor& x) { return log(x); }, true, 1e-5},
      {"sqrt", [](const Tensor& x) { return sqrt(x); }, true, 1e-5},
      {"rsqrt", [](const Tensor& x) { return rsqrt(x); }, true, 1e-5},
      {"sin", [](const Tensor& x) { return sin(x); }, false, 1e-5},
      {"cos", [](const Tensor& x) { return cos(x); }, false, 1e-5},
      {"tanh", [](const Tensor& x) { return tanh(x); }, false, 1e-5},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }, false, 1e-5},
      {"gelu", [](const Tensor& x) { return gelu(x); }, false, 1e-5},
      {"gelu_tanh", [](const Tensor& x) { return gelu(x, "tanh"); }, false, 1e-5},
      {"silu", [](const Tensor& x) { return silu(x); }, false, 1e-5},
      {"erf", [](const Tensor& x) { return erf(x); }, false, 1e-5},
  };
}

// rtol 0: exact. Else |a - e| <= rtol * |e| + 1e-6 (absolute near zeros of
// sin, cos, erf, ...).
void check_unary(const Tensor& actual, const Tensor& expected, double rtol) {
  if (expected.dtype() == DType::Float16) {
    check_close_for_dtype(actual, expected);
  } else if (rtol == 0) {
    check_equal(actual, expected);
  } else {
    check_close(actual, expected, rtol, 1e-6);
  }
}

}  // namespace

TEST_CASE("unary float ops, float32 and float16, contiguous and transposed") {
  for (const UnaryCase& c : float_unary_cases()) {
    CAPTURE(c.name);
    for (DType dtype : {DType::Float32, DType::Float16}) {
      CAPTURE(dtype);
      for (const Shape& shape : std::vector<Shape>{{1}, {7}, {257}, {}, {33, 17}}) {
        Tensor x = randn(shape) * 3.0;
        if (c.positive) x = x.abs() + 0.01;
        x = x.to(dtype);
        const Tensor expected = c.fn(x);
        check_unary(to_cpu(c.fn(to_vk(x))), expected, c.rtol);
        if (shape.size() == 2) {
          const Tensor t = vk_transposed_view(x);
          REQUIRE(!t.is_contiguous());
          check_unary(to_cpu(c.fn(t)), expected, c.rtol);
        }
      }
    }
  }
}

TEST_CASE("unary float ops on NaN, infinities, signed zeros and large values") {
  const Tensor x = tensor<float>({kNaN, kInf, -kInf, 0.0f, -0.0f, 30.0f, -30.0f, 100.0f, -100.0f, 1e-4f, -1e-4f});
  for (const UnaryCase& c : float_unary_cases()) {
    CAPTURE(c.name);
    check_unary(to_cpu(c.fn(to_vk(x))), c.fn(x), c.rtol);
  }
}

TEST_CASE("unary integer ops (neg, abs, relu, clamp) wrap as the CPU does") {
  const std::vector<std::pair<const char*, std::function<Tensor(const Tensor&)>>> ops = {
      {"neg", [](const Tensor& x) { return neg(x); }},
      {"abs", [](const Tensor& x) { return abs(x); }},
      {"relu", [](const Tensor& x) { return relu(x); }},
      {"clamp", [](const Tensor& x) { return clamp(x, -3, 5); }},
      {"clamp_min", [](const Tensor& x) { return clamp(x, 2, std::nullopt); }},
      {"clamp_max", [](const Tensor& x) { return clamp(x, std::nullopt, -4); }},
  };
  for (const auto& [name, fn] : ops) {
    CAPTURE(name);
    for (DType dtype : {DType::Int32, DType::Int64, DType::UInt8, DType::Int8}) {
      CAPTURE(dtype);
      for (const Shape& shape : kShapes) {
        const Tensor x = values(shape, dtype);
        check_equal(to_cpu(fn(to_vk(x))), fn(x));
      }
      const Tensor x = values({33, 17}, dtype);
      check_equal(to_cpu(fn(vk_transposed_view(x))), fn(x));
    }
  }
  const Tensor extremes = tensor<int64_t>({std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(),
                                           -(int64_t{1} << 40), 0});
  check_equal(to_cpu(neg(to_vk(extremes))), neg(extremes));
  check_equal(to_cpu(abs(to_vk(extremes))), abs(extremes));
  check_equal(to_cpu(clamp(to_vk(extremes), -(int64_t{1} << 41), int64_t{1} << 35)),
              clamp(extremes, -(int64_t{1} << 41), int64_t{1} << 35));
  const Tensor i32 = tensor<int32_t>({std::numeric_limits<int32_t>::min(), -5, 5}, DType::Int32);
  check_equal(to_cpu(abs(to_vk(i32))), abs(i32));
  const Tensor i8 = tensor<int8_t>({-128, -1, 127}, DType::Int8);
  check_equal(to_cpu(neg(to_vk(i8))), neg(i8));
  check_equal(to_cpu(abs(to_vk(i8))), abs(i8));
}

// ---- binary -------------------------------------------------------------------

namespace {

using BinaryFn = std::function<Tensor(const Tensor&, const Tensor&)>;

struct BinaryCase {
  const char* name;
  BinaryFn fn;
  DTypeSet types;
};

std::vector<BinaryCase> binary_cases() {
  const DTypeSet all = kAllTypes;
  const DTypeSet no_bool = kAllTypes & ~dtype_bit(DType::Bool);
  return {
      {"add", [](const Tensor& a, const Tensor& b) { return a + b; }, all},
      {"sub", [](const Tensor& a, const Tensor& b) { return a - b; }, no_bool},
      {"mul", [](const Tensor& a, const Tensor& b) { return a * b; }, all},
      {"div", [](const Tensor& a, const Tensor& b) { return a / b; }, all},  // integers: float32 first
      {"maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); }, all},
      {"minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); }, all},
      {"eq", [](const Tensor& a, const Tensor& b) { return a == b; }, all},
      {"ne", [](const Tensor& a, const Tensor& b) { return a != b; }, all},
      {"lt", [](const Tensor& a, const Tensor& b) { return a < b; }, all},
      {"le", [](const Tensor& a, const Tensor& b) { return a <= b; }, all},
      {"gt", [](const Tensor& a, const Tensor& b) { return a > b; }, all},
      {"ge", [](const Tensor& a, const Tensor& b) { return a >= b; }, all},
  };
}

}  // namespace

TEST_CASE("binary ops on every dtype, broadcast, transposed and 0-dim operands") {
  for (const BinaryCase& c : binary_cases()) {
    CAPTURE(c.name);
    for (DType dtype : kTypes) {
      if ((c.types & dtype_bit(dtype)) == 0) continue;
      CAPTURE(dtype);
      const bool exact = std::string(c.name) != "div";
      auto check = [&](const Tensor& a, const Tensor& b, const Tensor& va, const Tensor& vb) {
        const Tensor expected = c.fn(a, b);
        const Tensor actual = to_cpu(c.fn(va, vb));
        if (exact) {
          check_equal(actual, expected);
        } else {
          check_close_for_dtype(actual, expected);
        }
      };
      for (const Shape& shape : kShapes) {
        const Tensor a = values(shape, dtype), b = values(shape, dtype, true);
        check(a, b, to_vk(a), to_vk(b));
      }
      // [4, 1, 5] with [3, 1] -> [4, 3, 5]: both broadcast (stride 0).
      const Tensor a = values({4, 1, 5}, dtype);
      const Tensor b = values({3, 1}, dtype, true);
      check(a, b, to_vk(a), to_vk(b));
      check(b, a, to_vk(b), to_vk(a));
      // Transposed with contiguous; a 0-dim tensor with a matrix.
      const Tensor m = values({9, 13}, dtype), n = values({13, 9}, dtype, true).t().contiguous();
      check(m, n, vk_transposed_view(m), to_vk(n));
      const Tensor s = values({}, dtype);
      check(s, m, to_vk(s), to_vk(m));
    }
  }
}

TEST_CASE("binary float32 ops on NaN and infinities") {
  const Tensor a = tensor<float>({kNaN, 1.0f, kInf, -kInf, 2.0f, kNaN, 0.0f, -0.0f});
  const Tensor b = tensor<float>({1.0f, kNaN, kInf, 3.0f, -kInf, kNaN, -0.0f, 0.0f});
  for (const BinaryCase& c : binary_cases()) {
    CAPTURE(c.name);
    check_equal(to_cpu(c.fn(to_vk(a), to_vk(b))), c.fn(a, b));
  }
}

TEST_CASE("binary ops with a scalar, and in place on a strided view") {
  const Tensor x = values({5, 7}, DType::Float32);
  check_equal(to_cpu(to_vk(x) + 2), x + 2);
  check_equal(to_cpu(2.5 - to_vk(x)), 2.5 - x);
  check_equal(to_cpu(to_vk(x) * 0.5), x * 0.5);
  check_close(to_cpu(1.0 / (to_vk(x) + 20.0)), 1.0 / (x + 20.0), 1e-6, 0);
  const Tensor xi = values({5, 7}, DType::Int32);
  check_equal(to_cpu(to_vk(xi) * 3), xi * 3);
  check_equal(to_cpu(to_vk(xi) > 0), xi > 0);
  check_equal(to_cpu(to_vk(xi) + 0.5), xi + 0.5);  // promotes to float32 (copy, then add)

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
}

TEST_CASE("integer arithmetic wraps as the CPU does") {
  const Tensor a = tensor<int64_t>({std::numeric_limits<int64_t>::max(), int64_t{1} << 40, -(int64_t{1} << 62), 3});
  const Tensor b = tensor<int64_t>({1, int64_t{1} << 30, 4, -5});
  for (const BinaryCase& c : binary_cases()) {
    if (std::string(c.name) == "div") continue;
    CAPTURE(c.name);
    check_equal(to_cpu(c.fn(to_vk(a), to_vk(b))), c.fn(a, b));
  }
  const Tensor u = tensor<uint8_t>({250, 3, 200, 0}, DType::UInt8);
  const Tensor v = tensor<uint8_t>({10, 5, 2, 1}, DType::UInt8);
  REQUIRE(u.dtype() == DType::UInt8);
  check_equal(to_cpu(to_vk(u) + to_vk(v)), u + v);
  check_equal(to_cpu(to_vk(u) * to_vk(v)), u * v);
  check_equal(to_cpu(to_vk(v) - to_vk(u)), v - u);
  const Tensor i = tensor<int32_t>({std::numeric_limits<int32_t>::max(), -7, 65536}, DType::Int32);
  check_equal(to_cpu(to_vk(i) * to_vk(i)), i * i);
  check_equal(to_cpu(to_vk(i) + to_vk(i)), i + i);
}

TEST_CASE("pow: float special cases, integer powers that wrap, negative integer exponents") {
  const Tensor base = tensor<float>({2.0f, -2.0f, -2.0f, -2.0f, 0.0f, 0.0f, -0.0f, 1.0f, kNaN, 0.5f, -1.0f, 3.0f,
                                     kInf, -kInf, -kInf, 1.7f});
  const Tensor expo = tensor<float>({10.0f, 3.0f, 2.0f, 0.5f, 2.0f, -1.0f, -3.0f, kNaN, 0.0f, kInf, -kInf, -2.5f,
                                     -1.0f, 3.0f, 2.0f, 4.3f});
  check_close(to_cpu(pow(to_vk(base), to_vk(expo))), pow(base, expo), 1e-6, 0);
  const Tensor x = randn({257}).abs() + 0.1;
  const Tensor y = randn({257}) * 2.0;
  check_close(to_cpu(pow(to_vk(x), to_vk(y))), pow(x, y), 1e-5, 1e-6);
  check_close(to_cpu(pow(to_vk(x), 2.0)), pow(x, 2.0), 1e-6, 0);
  check_close(to_cpu(pow(to_vk(x).to(DType::Float16), 3)), pow(x.to(DType::Float16), 3), 2e-3, 2e-3);

  for (DType dtype : {DType::Int32, DType::Int64, DType::UInt8, DType::Int8, DType::Bool}) {
    CAPTURE(dtype);
    const Tensor ib = tensor<int32_t>({3, -3, 2, 7, -1, -1, 1, 0, 5, 2, 0, -2}, DType::Int32).to(dtype);
    const Tensor ie = tensor<int32_t>({4, 3, 30, 25, -3, -4, -7, 0, -1, 41, 3, 63}, DType::Int32).to(dtype);
    check_equal(to_cpu(pow(to_vk(ib), to_vk(ie))), pow(ib, ie));
  }
}

// ---- where --------------------------------------------------------------------

TEST_CASE("where on every dtype, broadcast and transposed, with scalars") {
  const Tensor cond = values({4, 1}, DType::Int32) > 0;
  const Tensor cond2 = values({9, 13}, DType::Int32) > -3;
  for (DType dtype : kTypes) {
    CAPTURE(dtype);
    const Tensor a = values({1, 5}, dtype), b = values({4, 5}, dtype, true);
    check_equal(to_cpu(where(to_vk(cond), to_vk(a), to_vk(b))), where(cond, a, b));
    const Tensor m = values({9, 13}, dtype), n = values({9, 13}, dtype, true);
    check_equal(to_cpu(where(vk_transposed_view(cond2), vk_transposed_view(m), to_vk(n))), where(cond2, m, n));
    for (const Shape& shape : kShapes) {
      const Tensor c = values(shape, DType::Int32) < 2;
      const Tensor x = values(shape, dtype), y = zeros(shape, dtype);
      check_equal(to_cpu(where(to_vk(c), to_vk(x), to_vk(y))), where(c, x, y));
    }
  }
  const Tensor f = values({3, 4}, DType::Float32);
  const Tensor c = f > 0;
  check_equal(to_cpu(where(to_vk(c), to_vk(f), 0.5)), where(c, f, 0.5));
  check_equal(to_cpu(where(to_vk(c), -1, to_vk(f))), where(c, -1, f));
}

// ---- sizes --------------------------------------------------------------------

TEST_CASE("elementwise ops beyond one row of workgroups, and on empty tensors") {
  const int64_t n = int64_t{65535} * 256 + 300;  // a 2-D grid of workgroups
  const Tensor a = arange(n, DType::Int32);
  const Tensor d = to_vk(a) - to_vk(ones({1}, DType::Int32));
  REQUIRE(d.dtype() == DType::Int32);
  const Tensor got = to_cpu(d);
  REQUIRE(got.numel() == n);
  CHECK(got.data_ptr<int32_t>()[0] == -1);
  CHECK(got.data_ptr<int32_t>()[n - 1] == n - 2);
  CHECK(got.data_ptr<int32_t>()[65535 * 256 + 7] == 65535 * 256 + 6);

  const Tensor e = to_vk(zeros({0, 4}));
  CHECK(to_cpu(e + e).sizes() == Shape{0, 4});
  CHECK(to_cpu(exp(e)).sizes() == Shape{0, 4});
  CHECK(to_cpu(e > 0).dtype() == DType::Bool);
  CHECK(to_cpu(where(e > 0, e, e)).sizes() == Shape{0, 4});
}

TEST_CASE("an op on a dtype the Vulkan kernels lack says so") {
  const Tensor d = to_vk(arange(4, DType::Float64));
  CHECK_THROWS_WITH_AS(d + d, "\"add\" not implemented for 'Double' on vulkan", ember::Error);
  CHECK_THROWS_WITH_AS(exp(d), "\"exp\" not implemented for 'Double' on vulkan", ember::Error);
}

EMBER_VULKAN_NO_VALIDATION_ERRORS()
