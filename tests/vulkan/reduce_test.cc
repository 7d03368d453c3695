// Vulkan reductions (Sum, Mean, Var, Norm, Max/Min, ArgMax/ArgMin) against the
// CPU reference of the same front-end call. The shader accumulates in float32
// where the reference uses double: sums compare within 1e-5 relative (plus a
// small absolute term for results near zero); indices and max/min values exactly.
#include <cmath>
#include <limits>
#include <vector>

#include "tests/vulkan/vulkan_testing.h"

using namespace ember;
using namespace ember::testing;

namespace {

void check_vk(const Tensor& vk, const Tensor& cpu, double rtol = 1e-5, double atol = 1e-5) {
  REQUIRE(vk.device() == kVulkan);
  check_close(to_cpu(vk), cpu, rtol, atol);
}

const std::vector<Shape> kShapes = {{1}, {7}, {257}, {3, 5, 7}, {2, 3, 4, 5}, {4, 1, 33}};

}  // namespace

TEST_CASE("sum and mean over every dim list, odd shapes, keepdim or not") {
  manual_seed(1);
  for (const Shape& s : kShapes) {
    const Tensor x = randn(s);
    const Tensor v = to_vk(x);
    const int64_t r = x.dim();
    std::vector<std::vector<int64_t>> dim_lists = {{}, {0}, {-1}};
    if (r >= 3) dim_lists.push_back({0, 2});
    if (r >= 4) dim_lists.push_back({1, 3});
    if (r >= 4) dim_lists.push_back({0, 1, 3});
    for (const auto& dims : dim_lists) {
      for (bool keep : {false, true}) {
        CAPTURE(shape_str(s));
        CAPTURE(dims.size());
        check_vk(sum(v, dims, keep), sum(x, dims, keep));
        check_vk(mean(v, dims, keep), mean(x, dims, keep));
      }
    }
    check_vk(sum(v), sum(x));
    check_vk(v.mean(), x.mean());
  }
}

TEST_CASE("sum: one long row, and more rows than one grid dimension holds") {
  manual_seed(2);
  const Tensor row = rand({100003});
  check_vk(sum(to_vk(row)), sum(row), 1e-5, 0);
  const Tensor many = randn({70001, 3});
  check_vk(sum(to_vk(many), {1}), sum(many, {1}));
  check_vk(mean(to_vk(many), {0}), mean(many, {0}));
}

TEST_CASE("column reductions (kept dims contiguous: one invocation per output element)") {
  manual_seed(8);
  for (const Shape& s : std::vector<Shape>{{300, 257}, {3, 40, 300}, {2, 1000}}) {
    const Tensor x = randn(s);
    const Tensor v = to_vk(x);
    const std::vector<int64_t> dims = s.size() == 3 ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{0};
    CAPTURE(shape_str(s));
    check_vk(sum(v, dims), sum(x, dims));
    check_vk(mean(v, dims, true), mean(x, dims, true));
    check_vk(var(v, dims), var(x, dims));
    check_vk(norm(v, 2.0, dims), norm(x, 2.0, dims));
    check_vk(norm(v, 3.0, dims), norm(x, 3.0, dims));
    check_vk(norm(v, -double(INFINITY), dims), norm(x, -double(INFINITY), dims));
    const Tensor ties = randint(-2, 3, s, DType::Float32);
    const auto [mv, mi] = max(to_vk(ties), 0);
    const auto [cv, ci] = max(ties, 0);
    check_equal(to_cpu(mv), cv);
    check_equal(to_cpu(mi), ci);
    check_equal(to_cpu(argmin(to_vk(ties), 0, true)), argmin(ties, 0, true));
    const Tensor h = x.to(DType::Float16);
    check_close_for_dtype(to_cpu(sum(to_vk(h), dims)), sum(h, dims));
  }
  Tensor n = randn({5, 300});
  n.select(0, 3).select(0, 7).fill_(NAN);
  n.select(0, 4).select(0, 7).fill_(NAN);
  const auto [mv, mi] = min(to_vk(n), 0);
  const auto [cv, ci] = min(n, 0);
  check_equal(to_cpu(mv), cv);
  check_equal(to_cpu(mi), ci);
  CHECK(to_cpu(mi)[7].item<int64_t>() == 3);
  const Tensor e = zeros({0, 300});
  check_vk(sum(to_vk(e), {0}), sum(e, {0}));
  check_vk(mean(to_vk(e), {0}), mean(e, {0}));
}

TEST_CASE("reductions read non-contiguous inputs (transposed, permuted, stepped)") {
  manual_seed(3);
  const Tensor x = randn({6, 9});
  const Tensor t = vk_transposed_view(x);  // x's values, column-major on the device
  REQUIRE(!t.is_contiguous());
  check_vk(sum(t, {0}), sum(x, {0}));
  check_vk(sum(t, {1}, true), sum(x, {1}, true));
  check_vk(var(t, std::vector<int64_t>{1}), var(x, std::vector<int64_t>{1}));
  check_equal(to_cpu(argmax(t, 0)), argmax(x, 0));
  const Tensor y = randn({4, 5, 6});
  const Tensor p = to_vk(y).permute({2, 0, 1});
  check_vk(sum(p, {0, 2}), sum(y.permute({2, 0, 1}), {0, 2}));
  check_vk(norm(p, 2.0, {1}), norm(y.permute({2, 0, 1}), 2.0, {1}));
  const Tensor stepped = to_vk(y).slice(2, 1, std::nullopt, 2);
  check_vk(mean(stepped, {1, 2}), mean(y.slice(2, 1, std::nullopt, 2), {1, 2}));
  const auto [mv, mi] = max(stepped, 2);
  const auto [cv, ci] = max(y.slice(2, 1, std::nullopt, 2), 2);
  check_equal(to_cpu(mv), cv);
  check_equal(to_cpu(mi), ci);
}

TEST_CASE("var: corrections 0, 1, 2; one element (NaN); fewer elements than the correction (inf)") {
  manual_seed(4);
  for (const Shape& s : kShapes) {
    const Tensor x = randn(s) * 3 + 1;
    for (int64_t c : {0, 1, 2}) {
      CAPTURE(shape_str(s));
      CAPTURE(c);
      check_vk(var(to_vk(x), std::nullopt, c), var(x, std::nullopt, c));
      check_vk(var(to_vk(x), std::vector<int64_t>{-1}, c, true), var(x, std::vector<int64_t>{-1}, c, true));
    }
  }
  const Tensor one = tensor({2.5f});
  const Tensor v1 = to_cpu(var(to_vk(one)));
  CHECK(std::isnan(v1.item<float>()));
  check_vk(var(to_vk(one)), var(one));
  const Tensor two = tensor({1.0f, 3.0f});
  check_vk(var(to_vk(two), std::nullopt, 3), var(two, std::nullopt, 3));  // 2 / 0 = inf
  CHECK(std::isinf(to_cpu(var(to_vk(two), std::nullopt, 3)).item<float>()));
}

TEST_CASE("norm: p = 2, 1, 0, 3, 0.5, inf, -inf, and NaN inputs") {
  manual_seed(5);
  Tensor x = randn({5, 37});
  x.select(0, 2).fill_(0.0);
  for (double p : {2.0, 1.0, 0.0, 3.0, 0.5, double(INFINITY), -double(INFINITY)}) {
    CAPTURE(p);
    check_vk(norm(to_vk(x), p, {1}), norm(x, p, {1}), 1e-5, 1e-6);
    check_vk(norm(to_vk(x), p), norm(x, p), 1e-5, 1e-6);
  }
  // Negative orders: a zero gives |0|^p = inf, and the norm 0 (inf^(1/p)).
  for (double p : {-1.0, -2.5}) {
    CAPTURE(p);
    check_vk(norm(to_vk(x), p, {1}), norm(x, p, {1}), 1e-5, 1e-6);
    CHECK(to_cpu(norm(to_vk(x), p, {1}))[2].item<float>() == 0.0f);
  }
  Tensor n = randn({3, 8});
  n.select(0, 1).select(0, 4).fill_(NAN);
  for (double p : {2.0, double(INFINITY), -double(INFINITY)}) {
    CAPTURE(p);
    const Tensor got = to_cpu(norm(to_vk(n), p, {1}));
    check_close(got, norm(n, p, {1}), 1e-5, 1e-6);
    CHECK(std::isnan(got[1].item<float>()));
  }
}

TEST_CASE("prod over one dim and over all, float32 and float16; empty is 1") {
  manual_seed(9);
  for (const Shape& s : kShapes) {
    const Tensor x = rand(s) + 0.5;  // products of modest size
    CAPTURE(shape_str(s));
    check_vk(prod(to_vk(x), -1), prod(x, -1));
    check_vk(prod(to_vk(x), 0, true), prod(x, 0, true));
    check_vk(prod(to_vk(x)), prod(x));
    const Tensor h = x.to(DType::Float16);
    check_close_for_dtype(to_cpu(prod(to_vk(h), -1)), prod(h, -1));
  }
  const Tensor column = rand({40, 300}) + 0.5;  // kept dim contiguous: serial mode
  check_vk(prod(to_vk(column), 0), prod(column, 0));
  const Tensor e = zeros({0, 3});
  check_vk(prod(to_vk(e), 0), ones({3}));
}

TEST_CASE("max and min with a dim: values and int64 indices, ties to the first, NaN wins") {
  manual_seed(6);
  for (const Shape& s : kShapes) {
    // Few distinct values: many ties, whose index must be the first one.
    const Tensor x = randint(-3, 4, s, DType::Float32);
    for (int64_t d = 0; d < x.dim(); ++d) {
      CAPTURE(shape_str(s));
      CAPTURE(d);
      const auto [vv, vi] = max(to_vk(x), d);
      const auto [cv, ci] = max(x, d);
      check_equal(to_cpu(vv), cv);
      check_equal(to_cpu(vi), ci);
      const auto [wv, wi] = min(to_vk(x), d, true);
      const auto [dv, di] = min(x, d, true);
      check_equal(to_cpu(wv), dv);
      check_equal(to_cpu(wi), di);
      check_equal(to_cpu(argmax(to_vk(x), d)), argmax(x, d));
      check_equal(to_cpu(argmin(to_vk(x), d, true)), argmin(x, d, true));
    }
    check_equal(to_cpu(argmax(to_vk(x))), argmax(x));
    check_equal(to_cpu(argmin(to_vk(x))), argmin(x));
    check_equal(to_cpu(max(to_vk(x))), max(x));
    check_equal(to_cpu(min(to_vk(x))), min(x));
  }
  Tensor n = randn({4, 300});
  n.select(0, 1).select(0, 250).fill_(NAN);
  n.select(0, 1).select(0, 260).fill_(NAN);
  n.select(0, 3).select(0, 0).fill_(INFINITY);
  const auto [vv, vi] = max(to_vk(n), 1);
  const auto [cv, ci] = max(n, 1);
  check_equal(to_cpu(vv), cv);
  check_equal(to_cpu(vi), ci);
  CHECK(to_cpu(vi)[1].item<int64_t>() == 250);
  check_equal(to_cpu(argmin(to_vk(n), 1)), argmin(n, 1));
  CHECK(to_cpu(argmax(to_vk(n))).item<int64_t>() == 550);
}

TEST_CASE("empty reductions: sum 0, mean NaN; empty kept dims give empty outputs") {
  const Tensor e = zeros({0, 3});
  check_vk(sum(to_vk(e), {0}), zeros({3}));
  check_vk(sum(to_vk(e), {0}), sum(e, {0}));
  check_vk(mean(to_vk(e), {0}), mean(e, {0}));
  CHECK(std::isnan(to_cpu(mean(to_vk(e), {0}))[0].item<float>()));
  check_vk(norm(to_vk(e), 2.0, {0}), norm(e, 2.0, {0}));
  check_vk(sum(to_vk(e), {1}), sum(e, {1}));
  CHECK(sum(to_vk(e), {1}).sizes() == Shape{0});
  const auto [v, i] = max(to_vk(e), 1);
  CHECK(v.sizes() == Shape{0});
  CHECK(i.sizes() == Shape{0});
}

TEST_CASE("float16: sums, means, variances and norms in float32, rounded once; max/argmax exact") {
  manual_seed(7);
  for (const Shape& s : kShapes) {
    const Tensor x = randn(s).to(DType::Float16);
    const Tensor v = to_vk(x);
    CAPTURE(shape_str(s));
    const std::vector<int64_t> last = {-1};
    check_close_for_dtype(to_cpu(sum(v, last)), sum(x, last));
    check_close_for_dtype(to_cpu(mean(v)), mean(x));
    check_close_for_dtype(to_cpu(var(v, last, 0)), var(x, last, 0));
    check_close_for_dtype(to_cpu(norm(v, 2.0, last)), norm(x, 2.0, last));
    check_close_for_dtype(to_cpu(norm(v, double(INFINITY))), norm(x, double(INFINITY)));
    const auto [mv, mi] = max(v, 0);
    const auto [cv, ci] = max(x, 0);
    CHECK(mv.dtype() == DType::Float16);
    check_equal(to_cpu(mv), cv);
    check_equal(to_cpu(mi), ci);
    check_equal(to_cpu(argmin(v)), argmin(x));
  }
  const Tensor e = zeros({0, 2}, DType::Float16);
  check_equal(to_cpu(sum(to_vk(e), {0})), sum(e, {0}));
  check_equal(to_cpu(mean(to_vk(e), {0})), mean(e, {0}));
}

TEST_CASE("errors: dtypes without a Vulkan reduction, strides the shader cannot address, empty max") {
  const Tensor l = to_vk(arange(6, DType::Int64));
  CHECK_THROWS_WITH_AS(sum(l), "\"sum\" not implemented for 'Long' on vulkan", ember::Error);
  CHECK_THROWS_WITH_AS(argmax(to_vk(arange(6, DType::Int32))), "\"argmax\" not implemented for 'Int' on vulkan",
                       ember::Error);
  // Eight dims of size 2 in reverse memory order: no two reduced dims merge.
  const Tensor x = to_vk(arange(256, DType::Float32).reshape({2, 2, 2, 2, 2, 2, 2, 2}))
                       .permute({7, 6, 5, 4, 3, 2, 1, 0});
  CHECK_THROWS_WITH_AS(sum(x, {0, 1, 2, 3, 4}),
                       doctest::Contains("kernel \"sum\" on vulkan failed: NotSupported"), ember::Error);
  CHECK_THROWS_WITH_AS(sum(x, {0, 1, 2, 3, 4}),
                       doctest::Contains("the input's strides leave more than 4 kept or 4 reduced dims"),
                       ember::Error);
  // Four reduced and four kept dims, none merged: supported.
  const Tensor cpu = arange(256, DType::Float32).reshape({2, 2, 2, 2, 2, 2, 2, 2}).permute({7, 6, 5, 4, 3, 2, 1, 0});
  check_vk(sum(x, {0, 2, 4, 6}), sum(cpu, {0, 2, 4, 6}));
  CHECK_THROWS_WITH_AS(max(to_vk(zeros({2, 0})), 1), "max(): Expected reduction dim 1 to have non-zero size.",
                       ember::Error);
}

EMBER_VULKAN_NO_VALIDATION_ERRORS()
