// embedding(weight, indices).
#include "runtime/ops/dispatch.h"
#include "tests/harness/testing.h"

using namespace ember;
using ember::testing::check_equal;
using ember::testing::check_error;
using ember::testing::golden;

TEST_CASE("embedding gathers rows as PyTorch does") {
  const Tensor w = golden("embedding.w"), idx = golden("embedding.idx");
  check_equal(embedding(w, idx), golden("embedding.out"));
  check_equal(embedding(w, idx.to(DType::Int32)), golden("embedding.out"));
  check_equal(embedding(w, idx.t().contiguous().t()), golden("embedding.out"));  // non-contiguous indices
  check_equal(embedding(w.t().contiguous().t(), idx), golden("embedding.out"));  // non-contiguous weight
  check_equal(embedding(w, scalar_tensor(3, DType::Int64)), golden("embedding.out_scalar"));
  check_equal(embedding(golden("embedding.wh"), tensor({4, 0, 4}, DType::Int32)), golden("embedding.out_h"));
  // Other weight dtypes, expanded indices, empty shapes.
  check_equal(embedding(tensor({{1, 2}, {3, 4}}), tensor({1, 1, 0}).expand({2, 3})),
              tensor({{{3, 4}, {3, 4}, {1, 2}}, {{3, 4}, {3, 4}, {1, 2}}}));
  check_equal(embedding(tensor({{true}, {false}}), tensor({1, 0})), tensor({{false}, {true}}));
  // More rows than the kernel fetches ahead (8): the rows index_select (GatherElements) takes.
  const Tensor table = randn({30, 5}), rows = tensor({29, 0, 7, 7, 13, 2, 28, 1, 9, 11, 3, 17, 0, 25, 5, 6, 21, 8});
  check_equal(embedding(table, rows), index_select(table, 0, rows));
  check_equal(embedding(table, rows.to(DType::Int32).reshape({3, 6})), index_select(table, 0, rows).reshape({3, 6, 5}));
  CHECK(embedding(w, zeros({0, 3}, DType::Int64)).sizes() == Shape{0, 3, 4});
  CHECK(embedding(zeros({3, 0}), tensor({0, 2})).sizes() == Shape{2, 0});
}

TEST_CASE("embedding errors carry PyTorch's messages") {
  const Tensor w = zeros({5, 3});
  check_error([&] { embedding(w, tensor({1, 5})); }, "index out of range in self");
  check_error([&] { embedding(w, tensor({1, -1})); }, "index out of range in self");
  check_error([&] { embedding(w, tensor({1.0, 2.0})); },
              "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but "
              "got torch.FloatTensor instead (while checking arguments for embedding)");
  check_error([&] { embedding(w, tensor({1, 2}, DType::Int16)); },
              "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but "
              "got torch.ShortTensor instead (while checking arguments for embedding)");
  check_error([&] { embedding(zeros({5}), tensor({1})); }, "'weight' must be 2-D");
  check_error([&] { embedding(zeros({5, 2, 2}), tensor({1})); }, "'weight' must be 2-D");
  check_error([&] { embedding(zeros({0, 3}), tensor({0})); },
              "index_select(): self indexing axis dim should be positive");
}

TEST_CASE("the Embedding kernel itself returns OutOfRange for a bad index") {
  const Tensor w = arange(6.0).reshape({3, 2});
  Tensor out = full({2, 2}, -1.0);
  check_error([&] { unwrap(run_kernel(OpKind::Embedding, {w, tensor({0, 3})}, {out})); },
              "kernel \"embedding\" on cpu failed: OutOfRange");
  check_equal(out, full({2, 2}, -1.0));  // nothing written
  unwrap(run_kernel(OpKind::Embedding, {w, tensor({2, 0}, DType::Int32)}, {out}));
  check_equal(out, tensor({{4.0, 5.0}, {0.0, 1.0}}));
}
