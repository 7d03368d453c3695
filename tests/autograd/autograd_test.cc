// The autograd API: leaves, grad_fn, accumulation, retain_grad, guards,
// detach, dynamic graphs, in-place ops, and PyTorch's error messages.
#include "tests/harness/testing.h"

using namespace ember;
using ember::testing::check_close;
using ember::testing::check_equal;
using ember::testing::check_error;

TEST_CASE("leaves, grad_fn names and is_leaf") {
  Tensor x = tensor({1.0, 2.0, 3.0}).requires_grad_();
  CHECK(x.requires_grad());
  CHECK(x.is_leaf());
  CHECK(x.grad_fn() == nullptr);
  Tensor y = x * 2;
  CHECK(y.requires_grad());
  CHECK(!y.is_leaf());
  CHECK(y.grad_fn()->name() == "MulBackward0");
  CHECK((x + 1).grad_fn()->name() == "AddBackward0");
  CHECK(x.exp().grad_fn()->name() == "ExpBackward0");
  CHECK(x.view({3, 1}).grad_fn()->name() == "ViewBackward0");
  CHECK(x.sum({0}).grad_fn()->name() == "SumBackward1");
  CHECK(x.mean({0}, true).grad_fn()->name() == "MeanBackward1");
  Tensor plain = tensor({1.0});
  CHECK(!(plain * 2).requires_grad());
  CHECK((plain * 2).grad_fn() == nullptr);
}

TEST_CASE("backward accumulates into leaves; zero_ resets") {
  Tensor x = tensor({1.0, 2.0, 3.0}).requires_grad_();
  Tensor w = tensor({0.5, -1.0, 2.0}).requires_grad_();
  (x * w).sum().backward();
  check_equal(x.grad(), tensor({0.5, -1.0, 2.0}));
  check_equal(w.grad(), tensor({1.0, 2.0, 3.0}));
  (x * x).sum().backward();  // accumulates: 2x added
  check_equal(x.grad(), tensor({2.5, 3.0, 8.0}));
  Tensor g = x.grad();
  g.zero_();
  check_equal(x.grad(), zeros({3}));
}

TEST_CASE("a tensor used twice gets both gradients; broadcasting sums back") {
  Tensor x = tensor({{1.0, 2.0}, {3.0, 4.0}}).requires_grad_();
  Tensor b = tensor({10.0, 20.0}).requires_grad_();
  Tensor y = x * x + x * b;  // b broadcast over rows
  y.sum().backward();
  check_equal(x.grad(), tensor({{12.0, 24.0}, {16.0, 28.0}}));
  check_equal(b.grad(), tensor({4.0, 6.0}));
}

TEST_CASE("explicit gradient for non-scalar outputs") {
  Tensor x = tensor({1.0, 2.0}).requires_grad_();
  Tensor y = x * 3;
  y.backward(tensor({1.0, 0.5}));
  check_equal(x.grad(), tensor({3.0, 1.5}));
  check_error([&] { (x * 3).backward(); }, "grad can be implicitly created only for scalar outputs");
  check_error([&] { (x * 3).backward(tensor({1.0, 2.0, 3.0})); },
              "Mismatch in shape: grad_output[0] has a shape of torch.Size([3]) and output[0] has a shape of "
              "torch.Size([2]).");
}

TEST_CASE("retain_grad keeps a non-leaf's gradient") {
  Tensor x = tensor({1.0, 2.0}).requires_grad_();
  Tensor h = x * 2;
  h.retain_grad();
  CHECK(h.retains_grad());
  (h * h).sum().backward();
  check_equal(h.grad(), tensor({4.0, 8.0}));
  check_equal(x.grad(), tensor({8.0, 16.0}));
  Tensor k = x * 2;
  CHECK(!k.grad().defined());  // not retained
}

TEST_CASE("NoGradGuard and EnableGradGuard") {
  Tensor x = tensor({1.0}).requires_grad_();
  {
    NoGradGuard no_grad;
    CHECK(!GradMode::is_enabled());
    Tensor y = x * 2;
    CHECK(!y.requires_grad());
    {
      EnableGradGuard enable;
      CHECK((x * 2).requires_grad());
    }
    CHECK(!(x * 2).requires_grad());
  }
  CHECK(GradMode::is_enabled());
  CHECK((x * 2).requires_grad());
}

TEST_CASE("detach and detach_ cut the graph") {
  Tensor x = tensor({1.0, 2.0}).requires_grad_();
  Tensor y = x * 2;
  Tensor d = y.detach();
  CHECK(!d.requires_grad());
  CHECK(d.storage() == y.storage());
  Tensor z = x * 3;
  z.detach_();
  CHECK(!z.requires_grad());
  CHECK(z.is_leaf());
  (y.detach() * x).sum().backward();
  check_equal(x.grad(), tensor({2.0, 4.0}));
}

TEST_CASE("dynamic graphs: branches and loops in user code") {
  Tensor x = tensor({1.5}).requires_grad_();
  Tensor y = x;
  for (int i = 0; i < 3; ++i) y = (y.item<double>() > 2.0) ? y * 0.5 : y * y;  // x^2 -> x^4/...
  // x=1.5: 2.25 -> 1.125 -> 1.265625 ; y = (x^2 * 0.5)^2
  y.sum().backward();
  // d/dx (0.25 x^4) = x^3
  check_close(x.grad(), tensor({1.5 * 1.5 * 1.5}), 1e-12, 0);
}

TEST_CASE("views: gradients flow through view, transpose, slice, select, expand, unfold") {
  Tensor x = arange(12.0).view({3, 4}).detach().requires_grad_();
  Tensor y = x.t().slice(0, 1, 4, 2).select(1, 2);  // x[2, 1], x[2, 3]
  (y * tensor({10.0, 20.0})).sum().backward();
  Tensor expected = zeros({3, 4});
  expected[2][1].fill_(10.0);
  expected[2][3].fill_(20.0);
  check_equal(x.grad(), expected);

  Tensor s = arange(5.0).detach().requires_grad_();
  s.unfold(0, 3, 1).sum().backward();  // element i appears in min(i+1, 3, 5-i) windows
  check_equal(s.grad(), tensor({1.0, 2.0, 3.0, 2.0, 1.0}));
  Tensor e = tensor({1.0, 2.0}).requires_grad_();
  e.unsqueeze(0).expand({3, 2}).sum().backward();
  check_equal(e.grad(), tensor({3.0, 3.0}));
}

TEST_CASE("in-place ops on non-leaves record history; leaves refuse them") {
  Tensor x = tensor({1.0, -2.0, 3.0}).requires_grad_();
  Tensor y = x * 2;
  y.add_(1);
  y.mul_(3);  // y = 3 (2x + 1)
  y.relu_();
  CHECK(y.grad_fn() != nullptr);
  y.sum().backward();
  check_equal(x.grad(), tensor({6.0, 0.0, 6.0}));
  check_error([&] { x.add_(1); }, "a leaf Variable that requires grad is being used in an in-place operation.");
  check_error([&] { x.zero_(); }, "a leaf Variable that requires grad is being used in an in-place operation.");
  {
    NoGradGuard no_grad;
    x.mul_(2);  // allowed without grad mode, as torch.no_grad()
  }
  check_equal(x.detach(), tensor({2.0, -4.0, 6.0}));
  // copy_ into a fresh tensor carries the source's gradient.
  Tensor z = zeros({3});
  z.copy_(x * x);
  z.sum().backward();
  CHECK(x.grad().defined());
}

TEST_CASE("modifying a saved tensor in place is caught at backward time") {
  Tensor x = tensor({1.0, 2.0, 3.0}).requires_grad_();
  Tensor y = x.exp();
  y.add_(1);
  check_error([&] { y.sum().backward(); },
              "one of the variables needed for gradient computation has been modified by an inplace operation: "
              "[torch.FloatTensor [3]], which is output 0 of ExpBackward0, is at version 1; expected version 0 "
              "instead. Hint: enable anomaly detection to find the operation that failed to compute its "
              "gradient, with torch.autograd.set_detect_anomaly(True).");
  Tensor a = tensor({1.0, 2.0}).requires_grad_();
  Tensor b = tensor({3.0, 4.0});
  Tensor c = a * b;
  b.mul_(2);
  check_error([&] { c.sum().backward(); },
              "one of the variables needed for gradient computation has been modified by an inplace operation: "
              "[torch.FloatTensor [2]] is at version 1; expected version 0 instead. Hint: enable anomaly "
              "detection to find the operation that failed to compute its gradient, with "
              "torch.autograd.set_detect_anomaly(True).");
}

TEST_CASE("a second backward through a freed graph needs retain_graph") {
  Tensor x = tensor({1.0, 2.0}).requires_grad_();
  Tensor y = (relu(x) * x).sum();
  y.backward(Tensor(), /*retain_graph=*/true);
  y.backward();  // the graph was kept once
  check_equal(x.grad(), tensor({4.0, 8.0}));
  check_error([&] { y.backward(); },
              "Trying to backward through the graph a second time (or directly access saved tensors after they "
              "have already been freed). Saved intermediate values of the graph are freed when you call "
              ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
              "graph a second time or if you need to access saved tensors after calling backward.");
}

TEST_CASE("errors: backward without grad, requires_grad on ints and non-leaves") {
  check_error([] { tensor({1.0}).sum().backward(); },
              "element 0 of tensors does not require grad and does not have a grad_fn");
  check_error([] { tensor({1, 2}).requires_grad_(); },
              "only Tensors of floating point and complex dtype can require gradients");
  Tensor x = tensor({1.0}).requires_grad_();
  Tensor y = x * 2;
  check_error([&] { y.requires_grad_(false); },
              "you can only change requires_grad flags of leaf variables. If you want to use a computed variable "
              "in a subgraph that doesn't require differentiation use var_no_grad = var.detach().");
  check_error([] { tensor({1.0}).retain_grad(); }, "can't retain_grad on Tensor that has requires_grad=False");
}

TEST_CASE("gradients keep the leaf's dtype through mixed-precision ops") {
  Tensor x = tensor({1.0, 2.0}, DType::Float32).requires_grad_();
  Tensor w = tensor({0.5, 0.25}, DType::Float64);
  (x * w).sum().backward();  // computed in float64
  CHECK(x.grad().dtype() == DType::Float32);
  check_equal(x.grad(), tensor({0.5, 0.25}));
  Tensor h = tensor({1.0, 2.0}).requires_grad_();
  h.to(DType::Float16).sum().backward();
  CHECK(h.grad().dtype() == DType::Float32);
  check_equal(h.grad(), ones({2}));
}

TEST_CASE("printing shows requires_grad and grad_fn as PyTorch does") {
  Tensor x = tensor({1.0, 2.0}).requires_grad_();
  CHECK(to_string(x) == "tensor([1., 2.], requires_grad=True)");
  CHECK(to_string(x * 2) == "tensor([2., 4.], grad_fn=<MulBackward0>)");
  CHECK(to_string(x.sum({0})) == "tensor(3., grad_fn=<SumBackward1>)");
  CHECK(to_string(x.detach()) == "tensor([1., 2.])");
}
