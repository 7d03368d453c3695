// Backward rules of the neural-network and joining ops: finite-difference
// gradchecks (float64; odd shapes, non-contiguous and channels_last inputs,
// every option) and PyTorch's gradients (golden_nn_grad.py).
#include <cmath>
#include <limits>

#include "tests/harness/gradcheck.h"
#include "tests/harness/testing.h"

using namespace ember;
using ember::testing::check_close;
using ember::testing::check_equal;
using ember::testing::golden;
using ember::testing::gradcheck;
using ember::testing::has_golden;
using ember::testing::leaf;
using V = std::vector<Tensor>;

namespace {

Tensor rnd(IntArrayRef shape, uint64_t seed) {
  manual_seed(seed);
  return randn(shape, DType::Float64);
}

// Distinct values (no ties): a random permutation-like spread, so max pooling's
// choice is stable under the finite-difference step.
Tensor distinct(IntArrayRef shape, uint64_t seed) {
  manual_seed(seed);
  Tensor r = rand(shape, DType::Float64);
  const Tensor i = arange(r.numel(), DType::Float64).reshape(shape);
  return sin(i * 0.37) * 3 + r * 0.01;
}

Tensor channels_last(const Tensor& t) { return leaf(t.contiguous(MemoryFormat::ChannelsLast)); }

// Backward of sum(out * gout) from PyTorch's records: out and every input's
// gradient must match.
void check_golden_grads(const std::string& name, const std::function<Tensor(const V&)>& f,
                        const std::vector<std::string>& inputs, double rtol = 1e-9, double atol = 1e-10) {
  CAPTURE(name);
  V leaves;
  for (const std::string& in : inputs) leaves.push_back(leaf(golden("nngrad." + name + "." + in)));
  const Tensor out = f(leaves);
  check_close(out, golden("nngrad." + name + ".out"), rtol, atol);
  (out * golden("nngrad." + name + ".gout")).sum().backward();
  for (size_t i = 0; i < inputs.size(); ++i) {
    CAPTURE(inputs[i]);
    check_close(leaves[i].grad(), golden("nngrad." + name + ".grad_" + inputs[i]), rtol, atol);
  }
}

}  // namespace

TEST_CASE("softmax and log_softmax") {
  const Tensor x = leaf(rnd({3, 4, 5}, 1));
  for (int64_t d : {0, 1, 2, -1}) {
    CAPTURE(d);
    gradcheck([d](const V& v) { return softmax(v[0], d); }, {x});
    gradcheck([d](const V& v) { return log_softmax(v[0], d); }, {x});
  }
  const Tensor t = leaf(rnd({5, 3}, 2).t());
  gradcheck([](const V& v) { return softmax(v[0], 1); }, {t});
  gradcheck([](const V& v) { return log_softmax(v[0], 0); }, {t});
  const Tensor s = leaf(rnd({}, 3));
  gradcheck([](const V& v) { return softmax(v[0], 0) + v[0]; }, {s});
  gradcheck([](const V& v) { return log_softmax(v[0], 0) + v[0]; }, {s});
  // dtype: computed in float64 from a float32 input; the gradient comes back as float32.
  const Tensor f = rnd({2, 3}, 4).to(DType::Float32).requires_grad_();
  const Tensor y = softmax(f, 1, DType::Float64);
  CHECK(y.dtype() == DType::Float64);
  CHECK(y.grad_fn()->name() == "SoftmaxBackward0");
  CHECK(y.grad_fn()->next[0].fn->name() == "ToCopyBackward0");
  const Tensor gout = rnd({2, 3}, 5);
  (y * gout).sum().backward();
  CHECK(f.grad().dtype() == DType::Float32);
  const Tensor y64 = softmax(f.detach().to(DType::Float64), 1);
  const Tensor expected = y64 * (gout - (gout * y64).sum({1}, true));
  check_close(f.grad(), expected.to(DType::Float32), 1e-5, 1e-6);
  CHECK(log_softmax(f, 0).grad_fn()->name() == "LogSoftmaxBackward0");
  gradcheck([](const V& v) { return log_softmax(v[0].to(DType::Float32), 1, DType::Float64); }, {leaf(rnd({2, 3}, 6))},
            1e-3, 1e-3, 1e-2);
}

TEST_CASE("layer_norm") {
  const Tensor x = leaf(rnd({3, 4, 5}, 10)), w = leaf(rnd({4, 5}, 11)), b = leaf(rnd({4, 5}, 12));
  gradcheck([](const V& v) { return layer_norm(v[0], {4, 5}, v[1], v[2]); }, {x, w, b});
  gradcheck([](const V& v) { return layer_norm(v[0], {5}, v[1], v[2], 1e-3); },
            {x, leaf(rnd({5}, 13)), leaf(rnd({5}, 14))});
  gradcheck([](const V& v) { return layer_norm(v[0], {3, 4, 5}); }, {x});  // no leading dims
  gradcheck([](const V& v) { return layer_norm(v[0], {3}, v[1]); }, {leaf(rnd({3, 5}, 15).t()), leaf(rnd({3}, 16))});
  CHECK(layer_norm(x, {5}).grad_fn()->name() == "NativeLayerNormBackward0");
  check_golden_grads("layer_norm", [](const V& v) { return layer_norm(v[0], {4, 5}, v[1], v[2], 1e-5); },
                     {"x", "w", "b"});
}

TEST_CASE("batch_norm with running statistics") {
  const Tensor x = leaf(rnd({4, 3, 2, 5}, 20)), w = leaf(rnd({3}, 21)), b = leaf(rnd({3}, 22));
  const Tensor rm = rnd({3}, 23), rv = rnd({3}, 24).abs() + 0.5;
  gradcheck([&](const V& v) { return batch_norm(v[0], rm, rv, v[1], v[2], 1e-3); }, {x, w, b});
  gradcheck([&](const V& v) { return batch_norm(v[0], rm, rv); }, {leaf(rnd({3, 5}, 25).t())});
  gradcheck([&](const V& v) { return batch_norm(v[0], rm, rv, v[1]); }, {channels_last(rnd({2, 3, 3, 4}, 26)), w});
  const Tensor y = batch_norm(x, rm, rv, w, b);
  CHECK(y.grad_fn()->name() == "NativeBatchNormBackward0");
  // Running statistics that require grad get none (PyTorch: not differentiable in eval mode).
  const Tensor rm_leaf = leaf(rm);
  batch_norm(x.detach(), rm_leaf, rv).sum().backward();
  CHECK(!rm_leaf.grad().defined());
}

TEST_CASE("batch_norm_train") {
  const Tensor w = leaf(rnd({3}, 30)), b = leaf(rnd({3}, 31));
  for (const Tensor& x : {leaf(rnd({4, 3, 5}, 32)), leaf(rnd({5, 3}, 33)), channels_last(rnd({2, 3, 3, 2}, 34))}) {
    gradcheck([](const V& v) { return batch_norm_train(v[0], Tensor(), Tensor(), v[1], v[2], 0.1, 1e-5); },
              {x, w, b});
    gradcheck([](const V& v) { return batch_norm_train(v[0], Tensor(), Tensor()); }, {x});
  }
  for (const char* name : {"3d", "4d"}) {
    CAPTURE(name);
    const std::string p = std::string("nngrad.bn_train.") + name + ".";
    Tensor rm = golden(p + "running_mean").clone(), rv = golden(p + "running_var").clone();
    check_golden_grads(std::string("bn_train.") + name,
                       [&](const V& v) { return batch_norm_train(v[0], rm, rv, v[1], v[2], 0.3, 1e-5); },
                       {"x", "w", "b"});
    check_close(rm, golden(p + "running_mean_after"), 1e-12, 1e-12);
    check_close(rv, golden(p + "running_var_after"), 1e-12, 1e-12);
  }
  // float32 running stats follow a float32 input, without gradient.
  Tensor rm = zeros({2}), rv = ones({2});
  const Tensor xf = tensor({{1.f, 2.f}, {3.f, 6.f}});
  const Tensor y = batch_norm_train(xf, rm, rv, Tensor(), Tensor(), 0.5, 0.0);
  check_close(y, tensor({{-1.f, -1.f}, {1.f, 1.f}}), 1e-6, 1e-6);
  check_close(rm, tensor({1.f, 2.f}), 1e-6, 1e-6);    // 0.5 * 0 + 0.5 * mean
  check_close(rv, tensor({1.5f, 4.5f}), 1e-6, 1e-6);  // 0.5 * 1 + 0.5 * unbiased var (2, 8)
  ember::testing::check_error([&] { batch_norm_train(tensor({{1.f, 2.f, 3.f}}), Tensor(), Tensor()); },
                              "Expected more than 1 value per channel when training, got input size torch.Size([1, 3])");
}

TEST_CASE("conv2d") {
  struct Case {
    Shape x, w;
    bool bias;
    std::vector<int64_t> stride, padding, dilation;
    int64_t groups;
  };
  const Case cases[] = {
      {{2, 3, 5, 6}, {4, 3, 3, 3}, true, {1}, {0}, {1}, 1},
      {{1, 3, 8, 7}, {2, 3, 3, 2}, true, {2}, {1}, {1}, 1},           // stride 2, remainder rows/cols
      {{1, 2, 7, 8}, {3, 2, 3, 3}, false, {1}, {2}, {2}, 1},          // dilation 2, padding, no bias
      {{2, 4, 6, 5}, {6, 2, 3, 2}, true, {2, 1}, {1, 0}, {1, 2}, 2},  // groups 2, mixed options
      {{1, 3, 6, 6}, {3, 1, 3, 3}, true, {1}, {1}, {1}, 3},           // depthwise
      {{1, 2, 5, 5}, {4, 1, 3, 3}, false, {2}, {1}, {1}, 2},          // depthwise multiplier, stride 2
      {{1, 2, 4, 3}, {2, 2, 1, 1}, true, {1}, {1}, {1}, 1},           // padding larger than the kernel reach
      {{1, 2, 7, 7}, {2, 2, 2, 3}, true, {3}, {1}, {2}, 1},           // stride 3 with dilation
  };
  uint64_t seed = 40;
  for (const Case& c : cases) {
    CAPTURE(shape_str(c.x));
    CAPTURE(shape_str(c.w));
    const Tensor x = leaf(rnd(c.x, seed++)), w = leaf(rnd(c.w, seed++));
    const Tensor b = c.bias ? leaf(rnd({c.w[0]}, seed++)) : Tensor();
    auto f = [&](const V& v) {
      return conv2d(v[0], v[1], c.bias ? v[2] : Tensor(), c.stride, c.padding, c.dilation, c.groups);
    };
    gradcheck(f, c.bias ? V{x, w, b} : V{x, w});
    // channels_last input
    const Tensor xc = channels_last(rnd(c.x, seed++));
    gradcheck(f, c.bias ? V{xc, w, b} : V{xc, w});
  }
  // Unbatched input and a non-contiguous weight.
  gradcheck([](const V& v) { return conv2d(v[0], v[1], v[2], {1}, {1}); },
            {leaf(rnd({2, 5, 4}, 60)), leaf(rnd({2, 3, 2, 2}, 61).transpose(0, 1)), leaf(rnd({3}, 62))});
  // Only the weight requires grad, and only the input.
  const Tensor x_const = rnd({1, 2, 4, 4}, 63);
  gradcheck([&](const V& v) { return conv2d(x_const, v[0], Tensor(), {2}, {1}); }, {leaf(rnd({2, 2, 3, 3}, 64))});
  const Tensor xin = leaf(rnd({1, 2, 4, 4}, 65));
  gradcheck([](const V& v) { return conv2d(v[0], rnd({2, 2, 3, 3}, 66)); }, {xin});
  CHECK(conv2d(xin, rnd({2, 2, 3, 3}, 66)).grad_fn()->name() == "ConvolutionBackward0");
  for (const char* name : {"basic", "stride2_rem", "dilation2", "groups2", "depthwise", "bigpad"}) {
    const std::string n = std::string("conv.") + name;
    const bool bias = has_golden("nngrad." + n + ".b");
    struct Opt {
      std::vector<int64_t> s, p, d;
      int64_t g;
    };
    const std::string k = name;
    const Opt o = k == "basic"         ? Opt{{1}, {0}, {1}, 1}
                  : k == "stride2_rem" ? Opt{{2}, {1}, {1}, 1}
                  : k == "dilation2"   ? Opt{{1}, {2}, {2}, 1}
                  : k == "groups2"     ? Opt{{2, 1}, {1, 0}, {1, 2}, 2}
                  : k == "depthwise"   ? Opt{{1}, {1}, {1}, 3}
                                       : Opt{{1}, {1}, {1}, 1};
    check_golden_grads(
        n, [&](const V& v) { return conv2d(v[0], v[1], bias ? v[2] : Tensor(), o.s, o.p, o.d, o.g); },
        bias ? std::vector<std::string>{"x", "w", "b"} : std::vector<std::string>{"x", "w"});
  }
}

TEST_CASE("max_pool2d") {
  const Tensor x = leaf(distinct({2, 3, 7, 6}, 70));
  gradcheck([](const V& v) { return max_pool2d(v[0], {2}); }, {x});
  gradcheck([](const V& v) { return max_pool2d(v[0], {3, 2}, {2, 1}, {1, 1}, {1, 2}, true); }, {x});
  gradcheck([](const V& v) { return max_pool2d(v[0], {3}, {2}, {1}, {2}, false); }, {channels_last(distinct({1, 3, 8, 7}, 71))});
  gradcheck([](const V& v) { return max_pool2d(v[0], {2}, {1}); }, {leaf(distinct({3, 6, 5}, 72))});  // unbatched
  gradcheck([](const V& v) { return max_pool2d(v[0].transpose(2, 3), {2}); }, {x});
  CHECK(max_pool2d(x, {2}).grad_fn()->name() == "MaxPool2DWithIndicesBackward0");
  // Ties go to the first maximum, NaN to the last NaN; padding never wins.
  const Tensor t = leaf(tensor({2., 2., 1., 2.}).reshape({1, 1, 1, 4}));
  max_pool2d(t, {1, 3}, {1, 1}).sum().backward();
  check_equal(t.grad(), tensor({1., 1., 0., 0.}, DType::Float64).reshape({1, 1, 1, 4}));
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const Tensor u = leaf(tensor({1., nan, 3., nan}).reshape({1, 1, 1, 4}));
  max_pool2d(u, {1, 4}).sum().backward();
  check_equal(u.grad(), tensor({0., 0., 0., 1.}, DType::Float64).reshape({1, 1, 1, 4}));
  const Tensor m = leaf(tensor({-inf, -inf, -inf}).reshape({1, 1, 1, 3}));
  max_pool2d(m, {1, 3}, {1, 1}, {0, 1}).sum().backward();
  check_equal(m.grad(), tensor({2., 1., 0.}, DType::Float64).reshape({1, 1, 1, 3}));
  for (const char* name : {"maxpool.basic", "maxpool.overlap_pad", "maxpool.dilation_ceil"}) {
    const std::string k = name;
    check_golden_grads(k, [&](const V& v) {
      if (k == "maxpool.basic") return max_pool2d(v[0], {2});
      if (k == "maxpool.overlap_pad") return max_pool2d(v[0], {3}, {2}, {1});
      return max_pool2d(v[0], {3, 2}, {2, 1}, {1, 1}, {2, 1}, true);
    }, {"x"}, 0, 0);
  }
}

TEST_CASE("avg_pool2d and adaptive_avg_pool2d") {
  const Tensor x = leaf(rnd({2, 3, 7, 6}, 80));
  for (bool ceil : {false, true}) {
    for (bool include : {false, true}) {
      CAPTURE(ceil);
      CAPTURE(include);
      gradcheck([=](const V& v) { return avg_pool2d(v[0], {3, 2}, {2, 2}, {1, 1}, ceil, include); }, {x});
    }
  }
  gradcheck([](const V& v) { return avg_pool2d(v[0], {2}, {1}, {1}, false, true, 3); }, {x});
  gradcheck([](const V& v) { return avg_pool2d(v[0], {3}, {2}, {1}); }, {channels_last(rnd({1, 2, 6, 5}, 81))});
  gradcheck([](const V& v) { return avg_pool2d(v[0], {2}); }, {leaf(rnd({2, 5, 4}, 82))});
  CHECK(avg_pool2d(x, {2}).grad_fn()->name() == "AvgPool2DBackward0");
  for (const std::vector<int64_t>& size : {std::vector<int64_t>{3, 4}, {1, 1}, {7, 6}, {5, 4}, {9, 11}}) {
    gradcheck([&](const V& v) { return adaptive_avg_pool2d(v[0], size); }, {x});
  }
  gradcheck([](const V& v) { return adaptive_avg_pool2d(v[0], {2, 3}); }, {channels_last(rnd({1, 3, 5, 7}, 83))});
  gradcheck([](const V& v) { return adaptive_avg_pool2d(v[0], {2, 2}); }, {leaf(rnd({3, 5, 4}, 84))});
  CHECK(adaptive_avg_pool2d(x, {2, 2}).grad_fn()->name() == "AdaptiveAvgPool2DBackward0");
  check_golden_grads("avgpool.pad_ceil", [](const V& v) { return avg_pool2d(v[0], {3}, {2}, {1}, true, false); },
                     {"x"});
  check_golden_grads("adaptive.5x4", [](const V& v) { return adaptive_avg_pool2d(v[0], {5, 4}); }, {"x"});
}

TEST_CASE("embedding") {
  const Tensor idx = tensor({{1, 4, 1}, {0, 4, 4}});
  gradcheck([&](const V& v) { return embedding(v[0], idx); }, {leaf(rnd({5, 3}, 90))});
  gradcheck([&](const V& v) { return embedding(v[0], idx.to(DType::Int32).t()); }, {leaf(rnd({3, 5}, 91).t())});
  gradcheck([](const V& v) { return embedding(v[0], tensor({2, 2, 2})) * 2; }, {leaf(rnd({3, 2}, 92))});
  const Tensor w = leaf(rnd({5, 3}, 93));
  const Tensor e = embedding(w, idx);
  CHECK(e.grad_fn()->name() == "EmbeddingBackward0");
  e.sum().backward();
  check_equal(w.grad(), tensor({{1., 1., 1.}, {2., 2., 2.}, {0., 0., 0.}, {0., 0., 0.}, {3., 3., 3.}}, DType::Float64));
  const Tensor rows = tensor({{1, 4, 1, 0}, {4, 4, 2, 1}});
  check_golden_grads("embedding", [&](const V& v) { return embedding(v[0], rows); }, {"w"});
  // float32 weights: the gradient accumulates repeated rows.
  const Tensor wf = rnd({4, 2}, 94).to(DType::Float32).requires_grad_();
  embedding(wf, tensor({3, 3, 3})).sum().backward();
  check_equal(wf.grad(), tensor({{0.f, 0.f}, {0.f, 0.f}, {0.f, 0.f}, {3.f, 3.f}}));
}

TEST_CASE("cat, stack, split, chunk") {
  const Tensor a = leaf(rnd({2, 3}, 100)), b = leaf(rnd({4, 3}, 101)), c = leaf(rnd({3, 2}, 102).t());
  gradcheck([](const V& v) { return cat(v, 0); }, {a, b});
  gradcheck([](const V& v) { return cat(V{v[0], v[1], v[0]}, 0) * 2; }, {a, b});
  gradcheck([](const V& v) { return cat(v, 1); }, {a, c});
  gradcheck([](const V& v) { return cat(V{v[0], v[1], v[0]}, -1); }, {a, c});
  // A legacy empty [0] tensor is skipped; an input that needs no grad gets none.
  const Tensor e = leaf(zeros({0}, DType::Float64));
  gradcheck([](const V& v) { return cat(V{v[0], v[1], rnd({1, 3}, 103)}, 0); }, {a, e});
  // Mixed dtypes: the gradient comes back in each input's dtype.
  const Tensor f = rnd({1, 3}, 104).to(DType::Float32).requires_grad_();
  const Tensor y = cat(V{a, f}, 0);
  CHECK(y.dtype() == DType::Float64);
  CHECK(y.grad_fn()->name() == "CatBackward0");
  (y * arange(9, DType::Float64).reshape({3, 3})).sum().backward();
  check_equal(f.grad(), tensor({{6.f, 7.f, 8.f}}));
  gradcheck([](const V& v) { return stack(v, 0); }, {a, c});
  gradcheck([](const V& v) { return stack(V{v[0], v[1], v[0]}, 2); }, {a, c});
  gradcheck([](const V& v) { return stack(v, -1); }, {a});
  CHECK(stack(V{a, a}, 1).grad_fn()->name() == "StackBackward0");
  const Tensor x = leaf(rnd({7, 4}, 105));
  gradcheck([](const V& v) { return cat(split(v[0], 3, 0), 0).exp(); }, {x});
  gradcheck([](const V& v) { return split(v[0], 2, 0)[1] * split(v[0], 2, 0)[3]; }, {x});
  gradcheck([](const V& v) { return cat(split(v[0], std::vector<int64_t>{1, 0, 3}, 1), 1).exp(); }, {x});
  gradcheck([](const V& v) { return chunk(v[0], 3, 0)[2] + chunk(v[0], 3, 0)[0].narrow(0, 0, 1); }, {x});
  gradcheck([](const V& v) { return stack(chunk(v[0], 2, 1), 0); }, {leaf(rnd({4, 7}, 106).t())});
}

TEST_CASE("pad") {
  const Tensor x = leaf(rnd({2, 3, 4, 5}, 110));
  gradcheck([](const V& v) { return pad(v[0], {1, 2}); }, {x});
  gradcheck([](const V& v) { return pad(v[0], {1, 2, 0, 3, 1, 1}, "constant", 2.5); }, {x});
  gradcheck([](const V& v) { return pad(v[0], {-1, 2, 1, -2}); }, {x});  // crop and grow
  gradcheck([](const V& v) { return pad(v[0], {-1, -2, 0, -1}); }, {x});  // crop only
  gradcheck([](const V& v) { return pad(v[0], {2, 1}); }, {leaf(rnd({5, 3}, 111).t())});
  CHECK(pad(x, {1, 1}).grad_fn()->name() == "ConstantPadNdBackward0");
  for (const char* mode : {"reflect", "replicate"}) {
    CAPTURE(mode);
    const std::string m = mode;
    gradcheck([&](const V& v) { return pad(v[0], {2, 3}, m); }, {leaf(rnd({2, 3, 5}, 112))});
    gradcheck([&](const V& v) { return pad(v[0], {3, 1}, m); }, {leaf(rnd({3, 4}, 113))});
    gradcheck([&](const V& v) { return pad(v[0], {1, 2, 3, 1}, m); }, {x});
    gradcheck([&](const V& v) { return pad(v[0], {1, 0, 2, 1, 1, 1}, m); }, {leaf(rnd({1, 2, 3, 4, 3}, 114))});
    gradcheck([&](const V& v) { return pad(v[0], {1, 2, 1, 1}, m); }, {channels_last(rnd({1, 2, 3, 4}, 115))});
  }
  CHECK(pad(leaf(rnd({2, 3, 5}, 118)), {1, 1}, "reflect").grad_fn()->name() == "ReflectionPad1DBackward0");
  CHECK(pad(x, {1, 1, 1, 1}, "reflect").grad_fn()->name() == "ReflectionPad2DBackward0");
  CHECK(pad(x, {1, 1, 1, 1}, "replicate").grad_fn()->name() == "ReplicationPad2DBackward0");
  gradcheck([](const V& v) { return pad(v[0], {2, 3}, "circular"); }, {leaf(rnd({2, 3, 5}, 116))});
  gradcheck([](const V& v) { return pad(v[0], {1, 2, 3, 1}, "circular"); }, {x});
  gradcheck([](const V& v) { return pad(v[0], {-1, 2, 1, -1}, "circular"); }, {x});
  gradcheck([](const V& v) { return pad(v[0], {1, 0, 0, 1, 1, 1}, "circular"); }, {leaf(rnd({1, 2, 2, 3, 3}, 117))});
  // Replicate: every padded position adds to the edge it copies.
  const Tensor r = leaf(tensor({1., 2., 3.}).reshape({1, 3}));
  pad(r, {2, 1}, "replicate").sum().backward();
  check_equal(r.grad(), tensor({3., 1., 2.}, DType::Float64).reshape({1, 3}));
}

TEST_CASE("as_strided with overlapping windows") {
  const Tensor x = leaf(rnd({5}, 120));
  gradcheck([](const V& v) { return v[0].as_strided({3, 3}, {1, 1}); }, {x});
  gradcheck([](const V& v) { return v[0].as_strided({2, 2}, {0, 2}, 1) * 3; }, {x});
  const Tensor y = leaf(rnd({5}, 121));
  y.as_strided({3, 3}, {1, 1}).sum().backward();
  check_equal(y.grad(), tensor({1., 2., 3., 2., 1.}, DType::Float64));
  const Tensor m = leaf(rnd({3, 4}, 122));
  gradcheck([](const V& v) { return v[0].as_strided({2, 3, 2}, {4, 1, 2}); }, {m});
}

TEST_CASE("16-bit and float32 gradients, empty batches") {
  // bfloat16 pooling and layer_norm gradients follow the float64 ones.
  const Tensor x64 = distinct({1, 2, 5, 4}, 130);
  for (DType dt : {DType::BFloat16, DType::Float32}) {
    CAPTURE(dt);
    const double tol = dt == DType::BFloat16 ? 2e-2 : 1e-5;
    const Tensor xl = x64.to(dt).requires_grad_(), xr = x64.to(dt).to(DType::Float64).requires_grad_();
    const Tensor gout = rnd({1, 2, 2, 2}, 131);
    (max_pool2d(xl, {2}).to(DType::Float64) * gout).sum().backward();
    (max_pool2d(xr, {2}) * gout).sum().backward();
    CHECK(xl.grad().dtype() == dt);
    check_close(xl.grad().to(DType::Float64), xr.grad(), tol, tol);
    const Tensor ll = x64.to(dt).requires_grad_(), lr = x64.to(dt).to(DType::Float64).requires_grad_();
    const Tensor gl = rnd({1, 2, 5, 4}, 132);
    (layer_norm(ll, {4}).to(DType::Float64) * gl).sum().backward();
    (layer_norm(lr, {4}) * gl).sum().backward();
    CHECK(ll.grad().dtype() == dt);
    check_close(ll.grad().to(DType::Float64), lr.grad(), tol * 5, tol * 5);
  }
  // Empty batch: zero-size gradients for the input, zeros for the weight.
  const Tensor xe = leaf(zeros({0, 2, 4, 4}, DType::Float64)), we = leaf(rnd({3, 2, 3, 3}, 133));
  const Tensor be = leaf(rnd({3}, 134));
  conv2d(xe, we, be).sum().backward();
  CHECK(xe.grad().sizes() == Shape{0, 2, 4, 4});
  check_equal(we.grad(), zeros({3, 2, 3, 3}, DType::Float64));
  check_equal(be.grad(), zeros({3}, DType::Float64));
}

TEST_CASE("recurrence (LSTM, GRU, RNN): the composed form autograd runs equals the kernel and its gradients check") {
  struct Form {
    const char* what;
    int64_t cell, dirs;
    bool reverse, lbr, relu, lens, peep;
    double clip;
  };
  const Form forms[] = {
      {"LSTM bidirectional, peepholes, lengths", 0, 2, false, false, false, true, true, 0.0},
      {"LSTM reverse, clip", 0, 1, true, false, false, false, false, 0.6},
      {"GRU", 1, 1, false, false, false, false, false, 0.0},
      {"GRU linear_before_reset, bidirectional, lengths", 1, 2, false, true, false, true, false, 0.0},
      {"RNN tanh reverse, lengths", 2, 1, true, false, false, true, false, 0.0},
      {"RNN relu bidirectional", 2, 2, false, false, true, false, false, 0.0},
  };
  const int64_t T = 4, B = 3, I = 2, H = 3;
  uint64_t seed = 140;
  for (const Form& f : forms) {
    CAPTURE(f.what);
    RecurrenceParams p;
    p.cell = f.cell, p.directions = f.dirs, p.reverse = f.reverse, p.hidden = H, p.clip = f.clip;
    p.linear_before_reset = f.lbr, p.relu = f.relu;
    const int64_t GH = p.gates() * H;
    auto small = [&](IntArrayRef s) { return leaf(rnd(s, seed++) * 0.5); };
    const Tensor x = small({T, B, I}), w = small({f.dirs, GH, I}), r = small({f.dirs, GH, H});
    const Tensor b = small({f.dirs, 2 * GH}), h0 = small({f.dirs, B, H});
    const Tensor c0 = f.cell == 0 ? small({f.dirs, B, H}) : Tensor();
    const Tensor peep = f.peep ? small({f.dirs, 3 * H}) : Tensor();
    const Tensor lens = f.lens ? tensor(std::vector<int64_t>{4, 2, 0}, {B}).to(DType::Int32) : Tensor();
    auto run = [&](const V& v) {
      const std::vector<Tensor> y =
          recurrence(v[0], v[1], v[2], v[3], lens, v[4], f.cell == 0 ? v[5] : Tensor(), f.peep ? v[6] : Tensor(), p);
      V flat = {y[0].reshape({-1}), y[1].reshape({-1})};
      if (f.cell == 0) flat.push_back(y[2].reshape({-1}));
      return cat(flat, 0);
    };
    V inputs = {x, w, r, b, h0};
    if (f.cell == 0) inputs.push_back(c0);
    if (f.peep) inputs.push_back(peep);
    Tensor kernel;
    {
      NoGradGuard no_grad;
      kernel = run(inputs);
    }
    check_close(run(inputs), kernel, 1e-12, 1e-12);  // composed (inputs require grad) vs the kernel
    if (f.clip == 0.0) gradcheck(run, inputs);  // clip's clamp has kinks the differences may straddle
  }
}
