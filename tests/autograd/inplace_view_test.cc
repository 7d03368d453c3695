// In-place ops on views and on the bases of views (CopySlices, regenerated
// AsStridedBackward0), the leaf checks, and in-place ops on undefined
// tensors. Expected values and names: PyTorch 1.13 on the same programs
// (torch prints CopySlices as torch::autograd::CopySlices).
#include "tests/harness/testing.h"

using namespace ember;
using ember::testing::check_close;
using ember::testing::check_equal;
using ember::testing::check_error;

namespace {
const char* kLeaf = "a leaf Variable that requires grad is being used in an in-place operation.";
const char* kViewOfLeaf = "a view of a leaf Variable that requires grad is being used in an in-place operation.";
}  // namespace

TEST_CASE("an in-place op on a view reaches the base's gradient") {
  Tensor x = ones({3}).requires_grad_();
  Tensor y = x * 1;
  Tensor v = y.narrow(0, 0, 1);
  v.mul_(5);
  CHECK(y.grad_fn()->name() == "CopySlices");
  CHECK(v.grad_fn()->name() == "AsStridedBackward0");
  y.sum().backward();
  check_equal(x.grad(), tensor({5.0, 1.0, 1.0}));
}

TEST_CASE("a view of a view, modified with an operand that requires grad") {
  Tensor x = arange(6.0).view({2, 3}).detach().requires_grad_();
  Tensor w = tensor({2.0, 3.0}).requires_grad_();
  Tensor y = x * 1;
  Tensor v = y.t()[1];  // y[:, 1]
  v.mul_(w);
  CHECK(y.grad_fn()->name() == "CopySlices");
  CHECK(v.grad_fn()->name() == "AsStridedBackward0");
  (y * arange(6.0).view({2, 3})).sum().backward();
  check_equal(x.grad(), tensor({{0.0, 2.0, 2.0}, {3.0, 12.0, 5.0}}));
  check_equal(w.grad(), tensor({1.0, 16.0}));
}

TEST_CASE("a view taken before an in-place op on its base regenerates its grad_fn") {
  Tensor x = tensor({1.0, 2.0, 3.0}).requires_grad_();
  Tensor y = x * 1;
  Tensor v = y.slice(0, 1);
  CHECK(v.grad_fn()->name() == "SliceBackward0");
  y.mul_(2);
  CHECK(v.grad_fn()->name() == "AsStridedBackward0");
  (v * tensor({10.0, 100.0})).sum().backward();
  check_equal(x.grad(), tensor({0.0, 20.0, 200.0}));

  // A sibling view made before an in-place op on another view of the same base.
  Tensor a = tensor({1.0, 2.0, 3.0, 4.0}).requires_grad_();
  Tensor s = sin(a);
  Tensor u = s.slice(0, 0, 2);
  s.slice(0, 2).zero_();
  CHECK(u.grad_fn()->name() == "AsStridedBackward0");
  CHECK(s.grad_fn()->name() == "CopySlices");
  (u.sum() + s.sum() * 2).backward();
  check_close(a.grad(), tensor({1.62090707, -1.24844050, 0.0, 0.0}));
}

TEST_CASE("chained in-place ops on a view and on a view of that view") {
  Tensor x = tensor({1.0, 2.0, 3.0, 4.0}).requires_grad_();
  Tensor w = tensor({2.0, 3.0}).requires_grad_();
  Tensor y = sin(x);
  Tensor a = y.slice(0, 1, 3);
  Tensor b = a.slice(0, 0, 1);
  a.mul_(w);
  b.add_(1);
  a.mul_(2);
  CHECK(y.grad_fn()->name() == "CopySlices");
  CHECK(a.grad_fn()->name() == "AsStridedBackward0");
  CHECK(b.grad_fn()->name() == "AsStridedBackward0");
  (y * tensor({1.0, 10.0, 100.0, 1000.0})).sum().backward();
  check_close(x.grad(), tensor({0.540302336, -16.6458740, -593.995483, -653.643616}));
  check_close(w.grad(), tensor({18.18594742, 28.22400093}));
}

TEST_CASE("copy_ into a view of a tensor that needs no gradient") {
  Tensor a = tensor({1.0, 2.0}).requires_grad_();
  Tensor z = zeros({4});
  z.slice(0, 1, 3).copy_(a * 3);
  CHECK(z.requires_grad());
  CHECK(z.grad_fn()->name() == "CopySlices");
  (z * arange(4.0)).sum().backward();
  check_equal(a.grad(), tensor({3.0, 6.0}));

  // A view taken before: it now needs gradients too, through its base.
  Tensor b = tensor({1.0, 2.0}).requires_grad_();
  Tensor base = zeros({4});
  Tensor before = base.slice(0, 0, 3);
  base.slice(0, 2).copy_(b * 5);
  Tensor used = before * 2;  // recorded: `before` is asked first thing by the op
  CHECK(used.grad_fn() != nullptr);
  CHECK(before.requires_grad());
  used.sum().backward();
  check_equal(b.grad(), tensor({10.0, 0.0}));
}

TEST_CASE("fill_ and clamp_ on views; an in-place op keeps the old value of self it needs") {
  Tensor x = arange(6.0).view({2, 3}).detach().requires_grad_();
  Tensor y = sin(x);
  y.select(1, 2).fill_(7);
  (y * y).sum().backward();
  check_close(x.grad(), tensor({{0.0, 0.90929747, 0.0}, {-0.27941549, 0.98935825, 0.0}}));

  Tensor c = tensor({-1.0, 2.0, -3.0, 4.0}).requires_grad_();
  Tensor d = c * 2;
  d.slice(0, 0, 2).clamp_(-1, 3);
  Tensor w = tensor({1.0, 2.0, 3.0, 4.0}).requires_grad_();
  d.mul_(w);  // w's gradient is d's old value, which mul_ overwrites
  d.sum().backward();
  check_equal(c.grad(), tensor({0.0, 0.0, 6.0, 8.0}));
  check_equal(w.grad(), tensor({-1.0, 3.0, -6.0, 8.0}));

  Tensor p = tensor({1.0, 2.0, 3.0}).requires_grad_();
  Tensor q = tensor({4.0, 5.0, 6.0}).requires_grad_();
  Tensor r = p * 1;
  r.mul_(q);
  r.sum().backward();
  check_equal(p.grad(), tensor({4.0, 5.0, 6.0}));
  check_equal(q.grad(), tensor({1.0, 2.0, 3.0}));
}

TEST_CASE("a non-contiguous base: the view's part lands where the base keeps it") {
  Tensor x = arange(6.0).view({2, 3}).detach().requires_grad_();
  Tensor y = x.t() * 1;  // [3, 2], transposed strides
  Tensor v = y[1];
  v.add_(10);
  (y * y).sum().backward();
  check_equal(x.grad(), tensor({{0.0, 22.0, 4.0}, {6.0, 28.0, 10.0}}));
}

TEST_CASE("in-place ops on leaves that require grad and on their views are refused") {
  Tensor l = ones({3}).requires_grad_();
  check_error([&] { l.mul_(2); }, kLeaf);
  check_error([&] { l.slice(0, 0, 1).mul_(2); }, kViewOfLeaf);
  check_error([&] { l.view({3, 1}).zero_(); }, kViewOfLeaf);
  check_error([&] { l.select(0, 1).copy_(scalar_tensor(2.0)); }, kViewOfLeaf);
  check_error([&] { l.unsqueeze(0).relu_(); }, kViewOfLeaf);
  {
    NoGradGuard no_grad;
    l.slice(0, 0, 1).mul_(2);
  }
  check_equal(l.detach(), tensor({2.0, 1.0, 1.0}));
  CHECK(l.is_leaf());
  // A view made under no_grad and a plain tensor's views are free to change.
  Tensor plain = zeros({3});
  plain.slice(0, 1).fill_(1);
  CHECK(!plain.requires_grad());
  check_equal(plain, tensor({0.0, 1.0, 1.0}));
}

TEST_CASE("in-place ops on an undefined tensor raise, naming the op") {
  const auto undefined = [](const std::string& op, const std::string& arg) {
    return op + "(): " + arg +
           " is an undefined tensor (as grad() is before the first backward, or after "
           "zero_grad(set_to_none=true))";
  };
  Tensor x = ones({2}).requires_grad_();
  check_error([&] { x.grad().zero_(); }, undefined("zero_", "self"));
  check_error([&] { x.grad().add_(ones({2})); }, undefined("add_", "self"));
  check_error([&] { x.grad().mul_(2); }, undefined("mul_", "self"));
  check_error([&] { x.grad().copy_(ones({2})); }, undefined("copy_", "self"));
  check_error([&] { Tensor y = zeros({2}); y.copy_(x.grad()); }, undefined("copy_", "src"));
  check_error([&] { x.grad().fill_(1); }, undefined("fill_", "self"));
  check_error([&] { x.grad().clamp_(0, 1); }, undefined("clamp_", "self"));
  check_error([&] { (void)x.grad().sum(); }, "use of an undefined tensor");
}
