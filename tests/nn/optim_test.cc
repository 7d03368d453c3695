// Optimizers, LR schedulers and gradient clipping vs PyTorch 1.13
// (tests/golden/golden_optim.py): parameters after each of 10 steps with a
// fixed gradient sequence (one step without a gradient for p2), lr sequences
// over 25 steps, clipped gradients, and the error messages.
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/optim/clip_grad.h"
#include "runtime/optim/lr_scheduler.h"
#include "runtime/optim/optimizer.h"
#include "runtime/optim/py_format.h"
#include "tests/harness/testing.h"

using namespace ember;
using namespace ember::optim;
using ember::testing::check_close;
using ember::testing::check_equal;
using ember::testing::check_error;
using ember::testing::golden;

namespace {

constexpr int kSteps = 10;
constexpr int kSkipP2 = 3;

using MakeOptimizer = std::function<std::unique_ptr<Optimizer>(std::vector<Tensor>)>;

// Steps an optimizer over the golden gradients and compares both parameters
// after every step (relative 1e-6, as float32 allows).
void check_optimizer(const std::string& name, const MakeOptimizer& make) {
  INFO(name);
  Tensor p1 = golden("optim.p1").clone().requires_grad_();
  Tensor p2 = golden("optim.p2").clone().requires_grad_();
  const Tensor module_view = p1;  // a module holding the same handle sees the updates
  std::unique_ptr<Optimizer> opt = make({p1, p2});
  for (int k = 0; k < kSteps; ++k) {
    INFO("step " << k);
    p1.set_grad(golden("optim.g1." + std::to_string(k)));
    p2.set_grad(k == kSkipP2 ? Tensor() : golden("optim.g2." + std::to_string(k)));
    opt->step();
    check_close(p1, golden("optim." + name + ".p1." + std::to_string(k)), 1e-6, 1e-7);
    check_close(p2, golden("optim." + name + ".p2." + std::to_string(k)), 1e-6, 1e-7);
    CHECK(p1.requires_grad());
    CHECK(p1.is_leaf());
  }
  CHECK(module_view.is_same(opt->params()[0]));
  check_close(module_view, golden("optim." + name + ".p1." + std::to_string(kSteps - 1)), 1e-6, 1e-7);
}

template <typename Scheduler, typename... Args>
void check_schedule(const std::string& name, Args... args) {
  INFO(name);
  Tensor p = zeros({1}).requires_grad_();
  SGD opt({p}, SGDOptions{0.1});
  Scheduler sched(opt, args...);
  const std::vector<double> expected = golden(name).to_vector<double>();
  REQUIRE(expected.size() == 26);
  CHECK(sched.get_last_lr() == expected[0]);
  for (size_t k = 1; k < expected.size(); ++k) {
    opt.step();
    sched.step();
    INFO("step " << k);
    CHECK(sched.get_last_lr() == doctest::Approx(expected[k]).epsilon(1e-15));
    CHECK(opt.lr() == sched.get_last_lr());
    CHECK(sched.last_epoch() == static_cast<int64_t>(k));
  }
}

}  // namespace

TEST_CASE("SGD: plain, momentum, dampening, nesterov, weight decay vs torch") {
  check_optimizer("sgd", [](auto ps) { return std::make_unique<SGD>(ps, SGDOptions{0.1}); });
  check_optimizer("sgd_mom", [](auto ps) { return std::make_unique<SGD>(ps, SGDOptions{0.1, 0.9}); });
  check_optimizer("sgd_damp", [](auto ps) { return std::make_unique<SGD>(ps, SGDOptions{0.05, 0.8, 0.3}); });
  check_optimizer("sgd_nest",
                  [](auto ps) { return std::make_unique<SGD>(ps, SGDOptions{0.1, 0.9, 0.0, 0.0, true}); });
  check_optimizer("sgd_wd", [](auto ps) { return std::make_unique<SGD>(ps, SGDOptions{0.1, 0.5, 0.0, 0.01}); });
}

TEST_CASE("Adam and AdamW (amsgrad, weight decay) vs torch") {
  check_optimizer("adam", [](auto ps) { return std::make_unique<Adam>(ps, AdamOptions{0.01}); });
  check_optimizer("adam_ams",
                  [](auto ps) { return std::make_unique<Adam>(ps, AdamOptions{0.02, 0.8, 0.95, 1e-8, 0.0, true}); });
  check_optimizer("adam_wd",
                  [](auto ps) { return std::make_unique<Adam>(ps, AdamOptions{0.01, 0.9, 0.999, 1e-6, 0.1}); });
  check_optimizer("adamw", [](auto ps) { return std::make_unique<AdamW>(ps, AdamWOptions{0.01}); });
  check_optimizer("adamw_ams", [](auto ps) {
    return std::make_unique<AdamW>(ps, AdamWOptions{0.03, 0.9, 0.999, 1e-8, 0.05, true});
  });
}

TEST_CASE("state is created lazily; parameters without a gradient are skipped") {
  Tensor a = tensor({1.0f, 2.0f}).requires_grad_();
  Tensor b = tensor({3.0f}).requires_grad_();
  SGD sgd({a, b}, SGDOptions{0.5, 0.9});
  CHECK(!sgd.momentum_buffer(0).defined());
  a.set_grad(tensor({1.0f, -1.0f}));
  sgd.step();
  check_equal(a, tensor({0.5f, 2.5f}));
  check_equal(b, tensor({3.0f}));
  check_equal(sgd.momentum_buffer(0), tensor({1.0f, -1.0f}));  // a clone of the first gradient
  CHECK(!sgd.momentum_buffer(0).is_alias_of(a.grad()));
  CHECK(!sgd.momentum_buffer(1).defined());
  sgd.step();  // buf = 0.9 * buf + grad
  check_close(a, tensor({0.5f - 0.5f * 1.9f, 2.5f + 0.5f * 1.9f}));

  Adam adam({a, b}, AdamOptions{0.1});
  CHECK(adam.state(0).step == 0);
  CHECK(!adam.state(0).exp_avg.defined());
  b.set_grad(tensor({2.0f}));
  a.set_grad(Tensor());
  adam.step();
  CHECK(adam.state(0).step == 0);
  CHECK(adam.state(1).step == 1);
  CHECK(!adam.state(1).max_exp_avg_sq.defined());
  check_close(b, tensor({2.9f}));  // the first Adam step moves by lr (times sign)
  check_close(adam.state(1).exp_avg, tensor({0.2f}));
  // lr can be changed between steps.
  adam.set_lr(0.0);
  CHECK(adam.lr() == 0.0);
  const Tensor before = b.clone();
  adam.step();
  check_equal(b, before);
}

TEST_CASE("zero_grad: set_to_none and zeroing in place") {
  Tensor a = tensor({1.0, 2.0}).requires_grad_();
  Tensor b = tensor({3.0}).requires_grad_();
  SGD opt({a, b}, SGDOptions{0.1});
  (a * a).sum().backward();
  CHECK(a.grad().defined());
  CHECK(!b.grad().defined());
  const Tensor g = a.grad();
  opt.zero_grad();  // torch 1.13's default: zeroed in place
  CHECK(a.grad().is_same(g));
  check_equal(a.grad(), tensor({0.0, 0.0}));
  CHECK(!b.grad().defined());
  opt.zero_grad(/*set_to_none=*/true);
  CHECK(!a.grad().defined());
  // Changing a gradient that set_to_none dropped is a clear error, not a crash.
  check_error([&] { a.grad().add_(ones({2})); },
              "add_(): self is an undefined tensor (as grad() is before the first backward, or after "
              "zero_grad(set_to_none=true))");
  // A gradient with history (create_graph-like) is detached before zeroing.
  Tensor w = tensor({1.0}).requires_grad_();
  Tensor hist = w * 2;
  a.set_grad(hist.expand({2}).contiguous());
  CHECK(a.grad().grad_fn() != nullptr);
  opt.zero_grad(false);
  CHECK(a.grad().grad_fn() == nullptr);
  CHECK(!a.grad().requires_grad());
  check_equal(a.grad(), tensor({0.0, 0.0}));
}

TEST_CASE("optimizer option checks") {
  const auto ps = [] { return std::vector<Tensor>{zeros({2}).requires_grad_()}; };
  check_error([&] { SGD(ps(), SGDOptions{-0.1}); }, "Invalid learning rate: -0.1");
  check_error([&] { SGD(ps(), SGDOptions{0.1, -1e-5}); }, "Invalid momentum value: -1e-05");
  check_error([&] { SGD(ps(), SGDOptions{0.1, 0.0, 0.0, -2.0}); }, "Invalid weight_decay value: -2.0");
  check_error([&] { SGD(ps(), SGDOptions{0.1, 0.0, 0.0, 0.0, true}); },
              "Nesterov momentum requires a momentum and zero dampening");
  check_error([&] { SGD(ps(), SGDOptions{0.1, 0.9, 0.1, 0.0, true}); },
              "Nesterov momentum requires a momentum and zero dampening");
  check_error([&] { SGD({}, SGDOptions{0.1}); }, "optimizer got an empty parameter list");
  check_error([&] { SGD({zeros({2}).requires_grad_() * 2}, SGDOptions{0.1}); }, "can't optimize a non-leaf Tensor");
  check_error([&] { Adam(ps(), AdamOptions{-1.0}); }, "Invalid learning rate: -1.0");
  check_error([&] { Adam(ps(), AdamOptions{1e-3, 1.0}); }, "Invalid beta parameter at index 0: 1.0");
  check_error([&] { Adam(ps(), AdamOptions{1e-3, 0.9, 1.5}); }, "Invalid beta parameter at index 1: 1.5");
  check_error([&] { Adam(ps(), AdamOptions{1e-3, 0.9, 0.999, -1e-20}); }, "Invalid epsilon value: -1e-20");
  check_error([&] { Adam(ps(), AdamOptions{1e-3, 0.9, 0.999, 1e-8, -0.5}); }, "Invalid weight_decay value: -0.5");
  check_error([&] { AdamW(ps(), AdamWOptions{1e-3, -0.1}); }, "Invalid beta parameter at index 0: -0.1");
  check_error([&] { AdamW(ps(), AdamWOptions{1e-3, 0.9, 0.999, 1e-8, -1e16}); },
              "Invalid weight_decay value: -1e+16");
}

TEST_CASE("python_float formats as Python's repr") {
  using ember::optim::detail::python_float;
  CHECK(python_float(0.1) == "0.1");
  CHECK(python_float(-0.1) == "-0.1");
  CHECK(python_float(1e-5) == "1e-05");
  CHECK(python_float(1e16) == "1e+16");
  CHECK(python_float(1e15) == "1000000000000000.0");
  CHECK(python_float(2.0) == "2.0");
  CHECK(python_float(123.456) == "123.456");
  CHECK(python_float(0.0001) == "0.0001");
  CHECK(python_float(1.5e-300) == "1.5e-300");
  CHECK(python_float(INFINITY) == "inf");
  CHECK(python_float(1.0 / 3.0) == "0.3333333333333333");
}

TEST_CASE("StepLR and CosineAnnealingLR follow torch's recursive formulas") {
  check_schedule<StepLR>("optim.steplr", int64_t{3}, 0.5);
  check_schedule<StepLR>("optim.steplr.default", int64_t{4});
  check_schedule<CosineAnnealingLR>("optim.cos", int64_t{10}, 0.001);
  check_schedule<CosineAnnealingLR>("optim.cos.t7", int64_t{7});
  Tensor p = zeros({1}).requires_grad_();
  SGD opt({p}, SGDOptions{0.1});
  check_error([&] { StepLR(opt, 0); }, "StepLR: step_size must be positive, got 0");
  check_error([&] { CosineAnnealingLR(opt, 0); }, "CosineAnnealingLR: T_max must be positive, got 0");
}

TEST_CASE("clip_grad_norm_ and clip_grad_value_ vs torch") {
  const Tensor c1 = golden("optim.c1"), c2 = golden("optim.c2");
  const std::pair<const char*, std::pair<double, double>> cases[] = {
      {"l2", {1.0, 2.0}}, {"inf", {0.5, INFINITY}}, {"l1", {2.0, 1.0}}, {"big", {1000.0, 2.0}}};
  for (const auto& [name, args] : cases) {
    INFO(name);
    Tensor a = zeros({3, 4}).requires_grad_(), b = zeros({5}).requires_grad_(), none = zeros({2}).requires_grad_();
    a.set_grad(c1.clone());
    b.set_grad(c2.clone());
    const double total = clip_grad_norm_({a, none, b}, args.first, args.second);
    const std::string prefix = std::string("optim.clip.") + name;
    CHECK(total == doctest::Approx(golden(prefix + ".total").item<double>()).epsilon(1e-6));
    check_close(a.grad(), golden(prefix + ".g1"), 1e-6, 1e-7);
    check_close(b.grad(), golden(prefix + ".g2"), 1e-6, 1e-7);
    CHECK(!none.grad().defined());
  }
  Tensor a = zeros({5}).requires_grad_();
  a.set_grad(c2.clone());
  CHECK(clip_grad_norm_({a}, 1.0, INFINITY) == doctest::Approx(golden("optim.clip.inf1.total").item<double>()));
  check_close(a.grad(), golden("optim.clip.inf1.g"), 1e-6, 1e-7);
  a.set_grad(c2.clone());
  clip_grad_value_({a}, 0.75);
  check_equal(a.grad(), golden("optim.clipv.g"));
  // No gradients: 0 and nothing changes.
  CHECK(clip_grad_norm_({zeros({2}).requires_grad_()}, 1.0) == 0.0);
  // Non-finite norms raise on request.
  Tensor n = zeros({2}).requires_grad_();
  n.set_grad(tensor({NAN, 1.0f}));
  check_error([&] { clip_grad_norm_({n}, 1.0, 2.0, true); },
              "The total norm of order 2.0 for gradients from `parameters` is non-finite, so it cannot be clipped. "
              "To disable this error and scale the gradients by the non-finite norm anyway, set "
              "`error_if_nonfinite=False`");
  n.set_grad(tensor({INFINITY, 1.0f}));
  check_error([&] { clip_grad_norm_({n}, 1.0, INFINITY, true); },
              "The total norm of order inf for gradients from `parameters` is non-finite, so it cannot be clipped. "
              "To disable this error and scale the gradients by the non-finite norm anyway, set "
              "`error_if_nonfinite=False`");
}

TEST_CASE("a training loop: loss.backward, clip, step, zero_grad reduce a quadratic") {
  Tensor w = tensor({2.0f, -3.0f}).requires_grad_();
  Adam opt({w}, AdamOptions{0.1});
  double first = 0, last = 0;
  for (int i = 0; i < 50; ++i) {
    opt.zero_grad();
    Tensor loss = (w * w).sum();
    if (i == 0) first = loss.item<double>();
    last = loss.item<double>();
    loss.backward();
    clip_grad_norm_({w}, 1.0);
    opt.step();
  }
  CHECK(last < first / 10);
  CHECK(w.is_leaf());
}
