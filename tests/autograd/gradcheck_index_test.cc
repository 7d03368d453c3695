// Backward rules of the indexing, selection, scan and reordering ops:
// finite-difference gradchecks (float64, non-contiguous inputs) and PyTorch's
// gradients of sum(out * w), w = linspace(-1, 2) (golden_index.py).
#include "tests/harness/gradcheck.h"
#include "tests/harness/testing.h"

using namespace ember;
using ember::testing::check_close;
using ember::testing::golden;
using ember::testing::gradcheck;
using ember::testing::leaf;
using V = std::vector<Tensor>;

namespace {

Tensor rnd(IntArrayRef shape, uint64_t seed) {
  manual_seed(seed);
  return randn(shape, DType::Float64);
}

Tensor i64(std::vector<int64_t> v, std::vector<int64_t> shape) { return tensor(v, shape); }

// PyTorch's gradients of sum(f(inputs) * w) for each input.
void check_torch_grads(const std::string& name, const std::function<Tensor(const V&)>& f, const V& inputs) {
  V leaves;
  for (const Tensor& t : inputs) leaves.push_back(leaf(t.to(DType::Float64)));
  const Tensor out = f(leaves);
  const Tensor w = linspace(-1.0, 2.0, out.numel(), DType::Float64).reshape(out.sizes());
  (out * w).sum().backward();
  for (size_t k = 0; k < leaves.size(); ++k) {
    INFO(name << " input " << k);
    check_close(leaves[k].grad(), golden("grad." + name + "." + std::to_string(k)), 1e-12, 1e-12);
  }
}

}  // namespace

TEST_CASE("gather, scatter, scatter_add, index_select, masked_fill: gradcheck and PyTorch's gradients") {
  const Tensor x = golden("index.x"), src = golden("index.scatter.src"), si = golden("index.scatter.index");
  check_torch_grads("gather", [&](const V& v) { return gather(v[0], 0, golden("index.gather.index")); }, {x});
  check_torch_grads("scatter", [&](const V& v) { return scatter(v[0], 0, si, v[1]); }, {x, src});
  check_torch_grads("scatter_add", [&](const V& v) { return scatter_add(v[0], 0, si, v[1]); }, {x, src});
  check_torch_grads("index_select", [](const V& v) { return index_select(v[0], 1, i64({3, 1, 3}, {3})); }, {x});
  check_torch_grads("masked_fill", [](const V& v) { return masked_fill(v[0], golden("index.mask"), 3.0); }, {x});
  const Tensor a = leaf(rnd({4, 3}, 1).t()), b = leaf(rnd({2, 5}, 2));
  const Tensor idx = i64({0, 3, 1, 2, 2, 0, 1, 3, 0, 1}, {2, 5}).narrow(1, 0, 3);
  gradcheck([&](const V& v) { return gather(v[0], 1, idx.narrow(0, 0, 2)); }, {a});
  gradcheck([&](const V& v) { return scatter(v[0], 0, i64({3, 0, 2, 1, 1, 0}, {2, 3}), v[1]); }, {leaf(rnd({4, 3}, 3)), b});
  gradcheck([&](const V& v) { return scatter_add(v[0], 1, idx, v[1]); }, {a, b});
  gradcheck([&](const V& v) { return scatter(v[0], 1, idx, 1.5); }, {a});
  gradcheck([](const V& v) { return index_select(v[0], 0, i64({2, 2, 0}, {3})); }, {a});
  gradcheck([](const V& v) { return masked_fill(v[0], tensor({true, false, true, false}), scalar_tensor(2.0)); }, {a});
  gradcheck([](const V& v) { return masked_fill(v[0], tensor({true, false, true, false}), v[1]); },
            {a, leaf(scalar_tensor(0.5, DType::Float64))});
  gradcheck([](const V& v) { return take_along_dim(v[0], i64({1, 0, 2}, {3, 1}), 0); }, {a});
  Tensor y = scatter(a, 0, i64({1}, {1, 1}), ones({1, 1}, DType::Float64), "add");
  CHECK(y.grad_fn()->name() == "ScatterBackward0");
  ember::testing::check_error([&] { y.sum().backward(); }, "derivative for aten::scatter is not implemented");
}

TEST_CASE("topk, sort, cumsum, cumprod: gradcheck and PyTorch's gradients") {
  const Tensor x = golden("index.x");
  check_torch_grads("cumsum", [](const V& v) { return cumsum(v[0], 1); }, {x});
  check_torch_grads("cumprod", [](const V& v) { return cumprod(v[0], 0); }, {x});
  check_torch_grads("topk", [](const V& v) { return topk(v[0], 2, 1).first; }, {x});
  const Tensor a = leaf(rnd({5, 3}, 4).t());
  gradcheck([](const V& v) { return topk(v[0], 3, 1, false).first; }, {a});
  gradcheck([](const V& v) { return sort(v[0], 0, true).first; }, {a});
  gradcheck([](const V& v) { return cumsum(v[0], 0); }, {a});
  gradcheck([](const V& v) { return cumsum(v[0], -1); }, {a});
  gradcheck([](const V& v) { return cumprod(v[0], 1); }, {a});
  CHECK(topk(a, 1).first.grad_fn()->name() == "TopkBackward0");
  CHECK(sort(a).first.grad_fn()->name() == "SortBackward0");
  CHECK(cumsum(a, 0).grad_fn()->name() == "CumsumBackward0");
}

TEST_CASE("flip, roll, repeat, tile, tril, triu: gradcheck and PyTorch's gradients") {
  const Tensor x = golden("index.x");
  check_torch_grads("flip", [](const V& v) { return flip(v[0], {1}); }, {x});
  check_torch_grads("roll", [](const V& v) { return roll(v[0], {2}, {1}); }, {x});
  check_torch_grads("repeat", [](const V& v) { return repeat(v[0], {2, 1, 2}); }, {x});
  check_torch_grads("tril", [](const V& v) { return tril(v[0], 1); }, {x});
  check_torch_grads("triu", [](const V& v) { return triu(v[0]); }, {x});
  const Tensor a = leaf(rnd({4, 3}, 5).t());
  gradcheck([](const V& v) { return flip(v[0], {0, 1}); }, {a});
  gradcheck([](const V& v) { return roll(v[0], {-4}); }, {a});
  gradcheck([](const V& v) { return roll(v[0], {1, 5}, {0, 1}); }, {a});
  gradcheck([](const V& v) { return repeat(v[0], {2, 2, 1}); }, {a});
  gradcheck([](const V& v) { return tile(v[0], {3}); }, {a});
  gradcheck([](const V& v) { return tril(v[0], -1); }, {a});
  gradcheck([](const V& v) { return triu(v[0], 1); }, {a});
  CHECK(flip(a, {0}).grad_fn()->name() == "FlipBackward0");
  CHECK(repeat(a, {1, 1}).grad_fn()->name() == "RepeatBackward0");
  CHECK(tril(a).grad_fn()->name() == "TrilBackward0");
}
