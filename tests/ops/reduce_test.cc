// Reductions against PyTorch: sum, mean, prod, var, std, norm, max/min,
// argmax/argmin; dim lists, keepdim, dtypes, strides, zero-size, NaN, errors.
#include <cmath>
#include <string>
#include <vector>

#include "runtime/core/thread_pool.h"
#include "tests/harness/testing.h"

using namespace ember;
using ember::testing::check_close;
using ember::testing::check_close_for_dtype;
using ember::testing::check_equal;
using ember::testing::check_error;
using ember::testing::golden;

namespace {

const char* kDtypes[] = {"f32", "f64", "f16", "bf16"};
const char* kIntDtypes[] = {"i8", "u8", "i16", "i32", "i64", "b"};

std::vector<int64_t> dims_of(const std::string& name) {
  if (name == "d0") return {0};
  if (name == "dm1") return {-1};
  if (name == "d02") return {0, 2};
  if (name == "dm1m3") return {-1, -3};
  return {0, 1, 2};
}

}  // namespace

TEST_CASE("sum, mean, var, std and norm over dim lists with and without keepdim") {
  const Tensor x = golden("reduce.x");
  for (const char* name : {"d0", "dm1", "d02", "dm1m3", "all"}) {
    const std::vector<int64_t> dims = dims_of(name);
    for (bool kd : {false, true}) {
      CAPTURE(name);
      CAPTURE(kd);
      const std::string s = std::string(name) + (kd ? ".k" : ".nk");
      check_close(sum(x, dims, kd), golden("reduce.sum." + s));
      check_close(x.sum(dims, kd), golden("reduce.sum." + s));
      check_close(mean(x, dims, kd), golden("reduce.mean." + s));
      check_close(x.mean(dims, kd), golden("reduce.mean." + s));
      check_close(var(x, dims, 1, kd), golden("reduce.var." + s));
      check_close(ember::std(x, dims, 1, kd), golden("reduce.std." + s));
      check_close(norm(x, 2.0, dims, kd), golden("reduce.norm." + s));
    }
  }
  check_close(sum(x), golden("reduce.sum.whole"));
  check_close(x.sum(), golden("reduce.sum.whole"));
  check_close(sum(x, IntArrayRef{}), golden("reduce.sum.whole"));  // empty list: every dim
  check_close(x.mean(), golden("reduce.mean.whole"));
  check_close(var(x), golden("reduce.var.whole"));
  check_close(var(x, std::vector<int64_t>{1}, 0), golden("reduce.var.c0.d1"));
  check_close(var(x, std::vector<int64_t>{0, 2}, 3, true), golden("reduce.var.c3.d02"));
  check_close(ember::std(x, std::vector<int64_t>{}, 0), golden("reduce.std.c0.whole"));
  CHECK(sum(x, {}, true).sizes() == Shape{1, 1, 1});
}

TEST_CASE("hand-computed reductions") {
  const Tensor a = tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  check_equal(sum(a, {0}), tensor({5.0, 7.0, 9.0}));
  check_equal(sum(a, {1}, true), tensor({{6.0}, {15.0}}));
  check_equal(mean(a, {-1}), tensor({2.0, 5.0}));
  check_equal(prod(a, 1), tensor({6.0, 120.0}));
  check_equal(var(a, std::vector<int64_t>{1}), tensor({1.0, 1.0}));
  check_equal(var(a, std::vector<int64_t>{1}, 0), tensor({2.0 / 3, 2.0 / 3}));
  check_equal(norm(a, 1.0, {0}), tensor({5.0, 7.0, 9.0}));
  check_equal(norm(a, INFINITY), scalar_tensor(6.0));
  check_equal(norm(a, -INFINITY), scalar_tensor(1.0));
  check_equal(norm(a, 0.0), scalar_tensor(6.0));
  check_equal(max(a), scalar_tensor(6.0));
  check_equal(a.min(), scalar_tensor(1.0));
  auto [v, i] = max(a, 0);
  check_equal(v, tensor({4.0, 5.0, 6.0}));
  check_equal(i, tensor({1, 1, 1}));
  check_equal(a.argmax(), scalar_tensor(int64_t{5}, DType::Int64));
  check_equal(a.argmin(1), tensor({0, 0}));
  // Ties: the first occurrence.
  const Tensor t = tensor({2, 7, 7, 1, 1});
  check_equal(argmax(t), scalar_tensor(int64_t{1}, DType::Int64));
  check_equal(argmin(t), scalar_tensor(int64_t{3}, DType::Int64));
  check_equal(max(t, 0).second, scalar_tensor(int64_t{1}, DType::Int64));
  // Integer sums wrap around in int64 as PyTorch's do.
  check_equal(sum(tensor({INT64_MAX, int64_t{1}})), scalar_tensor(INT64_MIN, DType::Int64));
  // var with correction >= N: 0/0 and x/0.
  CHECK(std::isnan(var(ones({2}), std::vector<int64_t>{0}, 3).item<double>()));
  CHECK(std::isinf(var(tensor({1.0, 2.0}), std::vector<int64_t>{0}, 2).item<double>()));
  CHECK(std::isnan(var(ones({1})).item<double>()));
}

TEST_CASE("non-contiguous inputs: transpose and stepped slices") {
  const Tensor x = golden("reduce.x");
  const Tensor xt = x.transpose(0, 2);
  check_close(sum(xt, {1}), golden("reduce.t.sum.d1"));
  check_close(mean(xt, {0, 2}, true), golden("reduce.t.mean.d02"));
  check_close(var(xt, std::vector<int64_t>{-1}), golden("reduce.t.var.dm1"));
  check_equal(max(xt, 1).first, golden("reduce.t.max.v"));
  check_equal(max(xt, 1).second, golden("reduce.t.max.i"));
  check_equal(argmin(xt), golden("reduce.t.argmin.all"));
  check_equal(argmax(xt, 2), golden("reduce.t.argmax.d2"));
  check_close(norm(xt, 3.0, {0}), golden("reduce.t.norm3.d0"));
  const Tensor xs = x.slice(1, std::nullopt, std::nullopt, 2).slice(2, 1);
  check_close(sum(xs, {1, 2}), golden("reduce.s.sum.d12"));
  check_close(prod(xs, 1), golden("reduce.s.prod.d1"), 1e-5, 1e-6);
  check_equal(min(xs, -1).first, golden("reduce.s.min.v"));
  check_equal(min(xs, -1).second, golden("reduce.s.min.i"));
  // A broadcast (stride 0) input.
  const Tensor e = tensor({1.0, 2.0, 3.0}).expand({4, 3});
  check_equal(sum(e, {0}), tensor({4.0, 8.0, 12.0}));
  check_equal(e.sum(), scalar_tensor(24.0));
}

TEST_CASE("prod and p-norms") {
  const Tensor p = golden("reduce.p");
  check_close(prod(p), golden("reduce.prod.whole"), 1e-5);
  check_close(prod(p, 0), golden("reduce.prod.d0"), 1e-5);
  check_close(prod(p, -1, true), golden("reduce.prod.dm1.k"), 1e-5);
  const Tensor n = golden("reduce.n");
  const std::pair<const char*, double> ps[] = {{"p1", 1.0}, {"p2", 2.0}, {"pinf", INFINITY}, {"pninf", -INFINITY},
                                               {"p0", 0.0}, {"p3", 3.0}, {"p05", 0.5},       {"pm1", -1.0}};
  for (const auto& [name, pv] : ps) {
    CAPTURE(name);
    check_close(norm(n, pv), golden(std::string("reduce.norm.") + name + ".all"));
    check_close(norm(n, pv, {1}), golden(std::string("reduce.norm.") + name + ".d1"));
    check_close(norm(n, pv, {0}, true), golden(std::string("reduce.norm.") + name + ".d0k"));
  }
}

TEST_CASE("max, min, argmax, argmin: values, first-occurrence indices, keepdim") {
  const Tensor m = golden("reduce.m");
  check_equal(max(m), golden("reduce.max.all"));
  check_equal(min(m), golden("reduce.min.all"));
  for (int64_t d : {0, 1, -1}) {
    for (bool kd : {false, true}) {
      const std::string s = "d" + std::to_string(d) + "." + std::to_string(int(kd));
      auto [mv, mi] = max(m, d, kd);
      check_equal(mv, golden("reduce.max." + s + ".v"));
      check_equal(mi, golden("reduce.max." + s + ".i"));
      auto [nv, ni] = min(m, d, kd);
      check_equal(nv, golden("reduce.min." + s + ".v"));
      check_equal(ni, golden("reduce.min." + s + ".i"));
    }
  }
  check_equal(argmax(m), golden("reduce.argmax.all"));
  check_equal(argmax(m, std::nullopt, true), golden("reduce.argmax.all.k"));
  check_equal(argmax(m, 0), golden("reduce.argmax.d0"));
  check_equal(m.argmax(1, true), golden("reduce.argmax.d1.k"));
  check_equal(argmin(m), golden("reduce.argmin.all"));
  check_equal(m.argmin(std::nullopt, true), golden("reduce.argmin.all.k"));
  check_equal(argmin(m, 0), golden("reduce.argmin.d0"));
  check_equal(argmin(m, 1, true), golden("reduce.argmin.d1.k"));
}

TEST_CASE("NaN propagates through max, min, argmax, argmin and norms") {
  const Tensor q = golden("reduce.q");
  check_equal(max(q), golden("reduce.nan.max.all"));
  check_equal(min(q), golden("reduce.nan.min.all"));
  check_equal(max(q, 1).first, golden("reduce.nan.max.v"));
  check_equal(max(q, 1).second, golden("reduce.nan.max.i"));
  check_equal(min(q, 0).first, golden("reduce.nan.min.v"));
  check_equal(min(q, 0).second, golden("reduce.nan.min.i"));
  check_equal(argmax(q), golden("reduce.nan.argmax.all"));
  check_equal(argmin(q, 1), golden("reduce.nan.argmin.d1"));
  check_equal(sum(q, {1}), golden("reduce.nan.sum.d1"));
  check_equal(norm(q, INFINITY, {1}), golden("reduce.nan.norminf.d1"));
  check_equal(norm(q, -INFINITY, {1}), golden("reduce.nan.normninf.d1"));
  check_equal(norm(q, 0.0, {1}), golden("reduce.nan.norm0.d1"));
}

TEST_CASE("floating dtypes: float32, float64, float16, bfloat16") {
  for (const char* d : kDtypes) {
    CAPTURE(d);
    const std::string p = std::string("reduce.") + d;
    const Tensor x = golden(p + ".x");
    check_close_for_dtype(sum(x, {1}), golden(p + ".sum.d1"));
    check_close_for_dtype(mean(x, {0, 2}), golden(p + ".mean.d02"));
    check_close_for_dtype(var(x, std::vector<int64_t>{-1}), golden(p + ".var.dm1"));
    check_close_for_dtype(ember::std(x), golden(p + ".std.all"));
    check_close_for_dtype(norm(x, 2.0, {1}), golden(p + ".norm.d1"));
    check_equal(max(x, 2).first, golden(p + ".max.v"));
    check_equal(max(x, 2).second, golden(p + ".max.i"));
    check_equal(min(x), golden(p + ".min.all"));
    check_equal(argmax(x, 0), golden(p + ".argmax.d0"));
    check_close_for_dtype(prod(golden(p + ".p"), 1), golden(p + ".prod.d1"));
  }
}

TEST_CASE("integer and bool dtypes: sum and prod give int64, max/min keep the dtype") {
  for (const char* d : kIntDtypes) {
    CAPTURE(d);
    const std::string p = std::string("reduce.") + d;
    const Tensor x = golden(p + ".x");
    check_equal(sum(x), golden(p + ".sum.all"));
    check_equal(sum(x, {1}), golden(p + ".sum.d1"));
    check_equal(prod(x, 0), golden(p + ".prod.d0"));
    check_equal(max(x), golden(p + ".max.all"));
    check_equal(min(x, 1).first, golden(p + ".min.v"));
    check_equal(min(x, 1).second, golden(p + ".min.i"));
    if (x.dtype() != DType::Bool) {
      check_equal(argmax(x, 0), golden(p + ".argmax.d0"));
      check_equal(argmin(x), golden(p + ".argmin.all"));
    }
  }
  const Tensor base = golden("reduce.i64.x");
  check_equal(sum(base, {1}, false, DType::Int32), golden("reduce.i64.sum.dtype_i32"));
  check_equal(sum(base, DType::Float32), golden("reduce.i64.sum.dtype_f32"));
  check_equal(mean(base, DType::Float64), golden("reduce.i64.mean.dtype_f64"));
  check_equal(prod(base, 1, false, DType::Float32), golden("reduce.i64.prod.dtype_f32.d1"));
  const Tensor x = golden("reduce.x");
  check_close(sum(x, {0}, false, DType::Float64), golden("reduce.f32.sum.dtype_f64"), 1e-12, 1e-12);
  check_equal(sum(x, DType::Int64), golden("reduce.f32.sum.dtype_i64"));
  CHECK(prod(tensor({true, true})).dtype() == DType::Int64);
}

TEST_CASE("zero-size and 0-dim inputs") {
  const Tensor e = empty({0, 3});
  check_equal(sum(e, {0}), golden("reduce.empty.sum.d0"));
  check_equal(sum(e, {1}), golden("reduce.empty.sum.d1"));
  check_equal(sum(e), golden("reduce.empty.sum.all"));
  check_equal(mean(e, {0}), golden("reduce.empty.mean.d0"));
  check_equal(prod(e, 0), golden("reduce.empty.prod.d0"));
  check_equal(var(e, std::vector<int64_t>{0}), golden("reduce.empty.var.d0"));
  check_equal(norm(e, 2.0, {0}), golden("reduce.empty.norm.d0"));
  check_equal(norm(e, INFINITY, {0}), zeros({3}));
  check_equal(max(e, 1).first, golden("reduce.empty.max.d1.v"));
  check_equal(max(e, 1).second, golden("reduce.empty.max.d1.i"));
  check_equal(argmax(e, 1), golden("reduce.empty.argmax.d1"));
  CHECK(std::isnan(mean(empty({0})).item<double>()));
  check_equal(sum(empty({2, 0}, DType::Int32), {1}), zeros({2}, DType::Int64));
  const Tensor s = scalar_tensor(2.5);
  check_equal(sum(s, {0}), golden("reduce.scalar.sum.d0"));
  check_equal(sum(s, {-1}, true), scalar_tensor(2.5));
  check_equal(var(s), golden("reduce.scalar.var"));
  check_equal(max(s, 0).second, golden("reduce.scalar.max.d0.i"));
  check_equal(max(s, 0, true).first, scalar_tensor(2.5));
  CHECK(argmax(s, 0, true).dim() == 0);
}

TEST_CASE("large contiguous rows (CPU fast path, threads) match the reference") {
  const Tensor big = golden("reduce.big");
  const int saved_threads = get_num_threads();
  for (int threads : {1, 4}) {
    set_num_threads(threads);
    check_close(sum(big, {1}), golden("reduce.big.sum.d1"), 1e-5, 1e-5);
    check_close(mean(big, {-1}), golden("reduce.big.mean.d1"), 1e-5, 1e-6);
    check_equal(max(big, 1).first, golden("reduce.big.max.d1.v"));
    check_equal(max(big, 1).second, golden("reduce.big.max.d1.i"));
    check_close(sum(big), golden("reduce.big.sum.all"), 1e-5, 1e-4);
    // Same data through a non-contiguous view (reference path) agrees.
    const Tensor bt = big.t().contiguous().t();
    check_close(sum(bt, {1}), sum(big, {1}), 1e-6, 1e-6);
  }
  // NaN and ties inside a fast-path row.
  Tensor row = zeros({2, 300});
  row.select(0, 0).fill_(1.0);
  row.select(0, 0).select(0, 7).fill_(5.0);
  row.select(0, 0).select(0, 250).fill_(5.0);
  row.select(0, 1).select(0, 100).fill_(NAN);
  row.select(0, 1).select(0, 200).fill_(NAN);
  auto [v, i] = max(row, 1);
  CHECK(v.to_vector<float>()[0] == 5.0f);
  CHECK(std::isnan(v.to_vector<float>()[1]));
  check_equal(i, tensor({7, 100}));
  set_num_threads(saved_threads);
}

TEST_CASE("reduction errors use PyTorch's messages") {
  const Tensor x = zeros({2, 3, 4});
  const Tensor xi = zeros({2, 3}, DType::Int64);
  check_error([&] { sum(x, {0, 0}); }, "dim 0 appears multiple times in the list of dims");
  check_error([&] { sum(x, {0, -3}); }, "dim 0 appears multiple times in the list of dims");
  check_error([&] { norm(x, 3.0, {1, -2}); }, "dim 1 appears multiple times in the list of dims");
  check_error([&] { sum(scalar_tensor(1.0), {0, -1}); }, "dim 0 appears multiple times in the list of dims");
  check_error([&] { sum(x, {3}); }, "Dimension out of range (expected to be in range of [-3, 2], but got 3)");
  check_error([&] { prod(x, 5); }, "Dimension out of range (expected to be in range of [-3, 2], but got 5)");
  check_error([&] { max(x, 5); }, "Dimension out of range (expected to be in range of [-3, 2], but got 5)");
  check_error([&] { argmax(x, -4); }, "Dimension out of range (expected to be in range of [-3, 2], but got -4)");
  check_error([&] { sum(scalar_tensor(1.0), {1}); },
              "Dimension out of range (expected to be in range of [-1, 0], but got 1)");
  check_error([&] { mean(xi); },
              "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. "
              "Got: Long");
  check_error([&] { mean(xi.to(DType::Int32), {5}); },
              "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. "
              "Got: Int");
  check_error([&] { mean(zeros({2}, DType::Bool)); },
              "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. "
              "Got: Bool");
  check_error([&] { mean(x, DType::Int64); },
              "mean(): could not infer output dtype. Optional dtype must be either a floating point or complex "
              "dtype. Got: Long");
  check_error([&] { var(xi); }, "std and var only support floating point and complex dtypes");
  check_error([&] { ember::std(xi, std::vector<int64_t>{9}); },
              "std and var only support floating point and complex dtypes");
  check_error([&] { norm(xi); }, "norm(): input dtype should be either floating point or complex. Got Long instead.");
  check_error([&] { max(empty({0})); },
              "max(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim "
              "with the 'dim' argument.");
  check_error([&] { min(empty({0, 3})); },
              "min(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim "
              "with the 'dim' argument.");
  check_error([&] { max(empty({0, 3}), 0); }, "max(): Expected reduction dim 0 to have non-zero size.");
  check_error([&] { min(empty({0, 3}), -2); }, "min(): Expected reduction dim 0 to have non-zero size.");
  check_error([&] { argmax(empty({0})); }, "argmax(): Expected reduction dim to be specified for input.numel() == 0.");
  check_error([&] { argmin(empty({0, 3}, DType::Bool)); },
              "argmin(): Expected reduction dim to be specified for input.numel() == 0.");
  check_error([&] { argmax(empty({0, 3}), 0); }, "argmax(): Expected reduction dim 0 to have non-zero size.");
  check_error([&] { argmax(zeros({2}, DType::Bool)); }, "\"argmax_cpu\" not implemented for 'Bool'");
  check_error([&] { argmin(zeros({2}, DType::Bool), 0); }, "\"argmin_cpu\" not implemented for 'Bool'");
  check_error([&] { argmax(zeros({2}, DType::Bool), 5); },
              "Dimension out of range (expected to be in range of [-1, 0], but got 5)");
}
