// Indexing, selection, scans and reordering against PyTorch (golden_index.py):
// gather, scatter, scatter_add, index_select, masked_fill, take_along_dim,
// topk, sort, argsort, nonzero, cumsum, cumprod, flip, roll, repeat, tile,
// tril, triu; PyTorch's error messages.
#include "tests/harness/testing.h"

using namespace ember;
using ember::testing::check_close_for_dtype;
using ember::testing::check_equal;
using ember::testing::check_error;
using ember::testing::golden;

namespace {
Tensor x() { return golden("index.x"); }
Tensor xi() { return golden("index.xi"); }
Tensor i64(std::vector<int64_t> v, std::vector<int64_t> shape) { return tensor(v, shape); }
}  // namespace

TEST_CASE("gather, scatter, scatter_add match PyTorch") {
  check_equal(gather(x(), 0, golden("index.gather.index")), golden("index.gather.dim0"));
  check_equal(gather(x(), 1, golden("index.gather.index1")), golden("index.gather.dim1"));
  check_equal(gather(x().t(), 0, golden("index.gather.index1").t()), golden("index.gather.dim0_t"));
  const Tensor si = golden("index.scatter.index"), src = golden("index.scatter.src");
  check_equal(scatter(x(), 0, i64({1, 0, 2, 1}, {1, 4}), src.narrow(0, 0, 1)), golden("index.scatter.src0"));
  check_equal(scatter(x(), 1, i64({0, 3, 1}, {3, 1}), 2.5), golden("index.scatter.value"));
  check_close_for_dtype(scatter(x(), 0, si, src, "add"), golden("index.scatter.add"));
  check_close_for_dtype(scatter(x(), 0, si, src, "multiply"), golden("index.scatter.multiply"));
  check_close_for_dtype(scatter_add(x(), 0, si, src), golden("index.scatter_add"));
  check_equal(scatter_add(xi(), 0, si, ones({2, 4}, DType::Int64)), golden("index.scatter_add_int"));
}

TEST_CASE("index_select, masked_fill, take_along_dim match PyTorch") {
  check_equal(index_select(x(), 0, i64({2, 0, 2}, {3})), golden("index.index_select.dim0"));
  check_equal(index_select(x(), -1, tensor(std::vector<int32_t>{3, 1}, {2})), golden("index.index_select.dim1"));
  const Tensor mask = golden("index.mask");
  check_equal(masked_fill(x(), mask, -1.25), golden("index.masked_fill"));
  check_equal(masked_fill(xi(), mask, 2.7), golden("index.masked_fill_int"));
  check_equal(masked_fill(x(), tensor({true, false, true}).reshape({3, 1}), scalar_tensor(7.0)),
              golden("index.masked_fill_tensor"));
  check_equal(take_along_dim(x(), golden("index.take.index"), 1), golden("index.take.dim1"));
  check_equal(take_along_dim(x(), i64({2, 0, 1}, {3, 1}), 1), golden("index.take.bcast"));
  check_equal(take_along_dim(x(), i64({11, 0, 5}, {3})), golden("index.take.flat"));
}

TEST_CASE("indexing errors carry PyTorch's messages") {
  check_error([] { gather(x(), 0, i64({3}, {1, 1})); }, "index 3 is out of bounds for dimension 0 with size 3");
  check_error([] { gather(x(), 0, i64({-1}, {1, 1})); }, "index -1 is out of bounds for dimension 0 with size 3");
  check_error([] { gather(x(), 0, tensor(std::vector<int32_t>{1}, {1, 1})); }, "gather(): Expected dtype int64 for index");
  check_error([] { gather(x(), 0, i64({1}, {1})); },
              "Index tensor must have the same number of dimensions as input tensor");
  check_error([] { gather(x(), 0, zeros({2, 5}, DType::Int64)); },
              "Size does not match at dimension 1 expected index [2, 5] to be smaller than self [3, 4] apart from "
              "dimension 0");
  check_error([] { gather(x(), 2, zeros({2, 2}, DType::Int64)); },
              "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  check_error([] { scatter(x(), 0, i64({3}, {1, 1}), ones({1, 1})); },
              "index 3 is out of bounds for dimension 0 with size 3");
  check_error([] { scatter(x(), 0, i64({1}, {1, 1}), ones({1, 1}, DType::Float64)); },
              "scatter(): Expected self.dtype to be equal to src.dtype");
  check_error([] { scatter(x(), 0, zeros({2, 2}, DType::Int64), ones({1, 1})); },
              "Expected index [2, 2] to be smaller than self [3, 4] apart from dimension 0 and to be smaller size "
              "than src [1, 1]");
  check_error([] { scatter(x(), 0, zeros({2, 2}, DType::Int64), ones({2, 2}), "max"); },
              "reduce argument must be either add or multiply.");
  check_error([] { index_select(x(), 0, i64({3}, {1})); }, "index out of range in self");
  check_error([] { index_select(x(), 0, i64({1}, {1, 1})); }, "index_select(): Index is supposed to be a vector");
  check_error([] { index_select(x(), 0, ones({1})); }, "index_select(): Expected dtype int32 or int64 for index");
  check_error([] { masked_fill(x(), ones({3, 4}, DType::Bool), ones({2})); },
              "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with 1 dimension(s).");
  check_error([] { take_along_dim(x(), i64({0}, {1}), 0); },
              "torch.take_along_dim(): input and indices should have the same number of dimensions, but got 2 "
              "dimensions for input, and 1 dimensions for indices");
  check_error([] { take_along_dim(x(), ones({1, 1}), 0); },
              "torch.take_along_dim(): dtype of indices should be Long but got Float");
}

TEST_CASE("topk, sort, argsort, nonzero match PyTorch (stable; NaN sorts last)") {
  const Tensor q = golden("sort.q");
  // PyTorch's topk leaves the order of ties unspecified (ember: the lower
  // index first): the values must match and the indices point at them.
  auto [v, i] = topk(q, 3);
  check_equal(v, golden("sort.topk.values"));
  check_equal(gather(q, 1, i), golden("sort.topk.values"));
  CHECK(i.to_vector<int64_t>() == std::vector<int64_t>{0, 2, 3, 2, 1, 4});
  std::tie(v, i) = topk(q, 2, 0, /*largest=*/false);
  check_equal(v, golden("sort.topk_small.values"));
  check_equal(i, golden("sort.topk_small.indices"));
  std::tie(v, i) = sort(q);
  check_equal(v, golden("sort.sort.values"));
  check_equal(i, golden("sort.sort.indices"));
  std::tie(v, i) = sort(q, 1, /*descending=*/true);
  check_equal(v, golden("sort.sort_desc.values"));
  check_equal(i, golden("sort.sort_desc.indices"));
  check_equal(argsort(xi(), 0), golden("sort.xi_sorted_dim0"));
  check_equal(nonzero(golden("sort.nz")), golden("sort.nonzero"));
  check_equal(nonzero(tensor({false, true, true})), golden("sort.nonzero_bool"));
  CHECK(nonzero(scalar_tensor(3.0)).sizes() == Shape{1, 0});
  check_error([&] { topk(q, 6); }, "selected index k out of range");
  check_error([&] { topk(q, -1); }, "selected index k out of range");
}

TEST_CASE("cumsum and cumprod match PyTorch (integers and bool accumulate into int64)") {
  check_close_for_dtype(cumsum(x(), 1), golden("scan.cumsum.dim1"));
  check_close_for_dtype(cumsum(x(), 0), golden("scan.cumsum.dim0"));
  const Tensor c32 = cumsum(golden("scan.xi32"), -1);
  CHECK(c32.dtype() == DType::Int64);
  check_equal(c32, golden("scan.cumsum.int32"));
  check_equal(cumsum(golden("index.mask"), 0), golden("scan.cumsum.bool"));
  check_close_for_dtype(cumsum(x(), 1, DType::Float64), golden("scan.cumsum.f64"));
  check_close_for_dtype(cumprod(x(), 1), golden("scan.cumprod.dim1"));
  check_equal(cumprod(golden("scan.xi32"), 0), golden("scan.cumprod.int32"));
  check_error([] { cumsum(x(), 2); }, "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
}

TEST_CASE("flip, roll, repeat, tile, tril, triu match PyTorch") {
  const Tensor y = golden("reorder.y");
  check_equal(flip(y, {0, 2}), golden("reorder.flip_0_2"));
  check_equal(flip(y, {-1}), golden("reorder.flip_neg1"));
  check_equal(roll(y, {5}), golden("reorder.roll_flat"));
  check_equal(roll(y, {1, -5}, {1, 2}), golden("reorder.roll_dims"));
  check_equal(repeat(y.select(0, 0), {2, 1, 3}), golden("reorder.repeat"));
  check_equal(tile(y, {2}), golden("reorder.tile"));
  check_equal(tile(y.select(0, 0), {2, 1, 2}), golden("reorder.tile_more"));
  check_equal(tril(y), golden("reorder.tril"));
  check_equal(tril(y, -1), golden("reorder.tril_m1"));
  check_equal(triu(y, 1), golden("reorder.triu_1"));
  check_equal(triu(xi(), -1), golden("reorder.triu_int"));
  check_error([&] { flip(y, {0, 0}); }, "dim 0 appears multiple times in the list of dims");
  check_error([&] { roll(y, {1, 2}, {0}); }, "shifts and dimensions must align. shifts: 2, dims:1");
  check_error([&] { repeat(y, {2}); },
              "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor");
  check_error([] { tril(ones({3})); }, "tril: input tensor must have at least 2 dimensions");
}
