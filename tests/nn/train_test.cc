// Training conformance with PyTorch: a small MLP and a small CNN (with
// BatchNorm2d) start from PyTorch's initial weights and see PyTorch's batches;
// 25 steps of SGD (momentum, weight decay) and of AdamW with clip_grad_norm_
// must give PyTorch's per-step losses, gradient norms and final weights
// (tests/golden/golden_train.py) within 1e-5 relative in float32.
#include <cmath>
#include <string>

#include "runtime/nn/loss.h"
#include "runtime/nn/module.h"
#include "runtime/optim/clip_grad.h"
#include "runtime/optim/optimizer.h"
#include "tests/harness/testing.h"

using namespace ember;
using ember::testing::check_close;
using ember::testing::check_equal;
using ember::testing::golden;

namespace {

constexpr int kSteps = 25;

std::shared_ptr<nn::Sequential> mlp() {
  return std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(16, 32), std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(32, 10)});
}

std::shared_ptr<nn::Sequential> cnn() {
  return std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Conv2d>(1, 4, 3, 1, 1, 1, 1, /*bias=*/false), std::make_shared<nn::BatchNorm2d>(4),
      std::make_shared<nn::ReLU>(), std::make_shared<nn::MaxPool2d>(2), std::make_shared<nn::Conv2d>(4, 8, 3),
      std::make_shared<nn::ReLU>(), std::make_shared<nn::Flatten>(), std::make_shared<nn::Linear>(32, 10)});
}

// PyTorch's initial weights, loaded through load_state_dict.
void load_init(nn::Module& model, const std::string& name) {
  nn::StateDict init;
  for (const auto& [key, value] : model.state_dict()) init.emplace_back(key, golden("train." + name + ".init." + key));
  model.load_state_dict(init);
}

void check_run(const std::string& name, std::shared_ptr<nn::Sequential> (*build)(), const std::string& opt_name) {
  CAPTURE(name);
  CAPTURE(opt_name);
  auto model = build();
  load_init(*model, name);
  std::unique_ptr<optim::Optimizer> opt;
  const bool adamw = opt_name == "adamw";
  if (adamw) {
    optim::AdamWOptions o;
    o.lr = 1e-2;
    o.weight_decay = 1e-2;
    opt = std::make_unique<optim::AdamW>(model->parameters(), o);
  } else {
    optim::SGDOptions o;
    o.lr = 0.05;
    o.momentum = 0.9;
    o.weight_decay = 1e-4;
    opt = std::make_unique<optim::SGD>(model->parameters(), o);
  }
  const std::string prefix = "train." + name;
  const Tensor expected_loss = golden(prefix + "." + opt_name + ".loss");
  const Tensor expected_norm = adamw ? golden(prefix + "." + opt_name + ".norm") : Tensor();
  model->train();
  for (int step = 0; step < kSteps; ++step) {
    CAPTURE(step);
    opt->zero_grad();
    const Tensor loss = nn::cross_entropy((*model)(golden(prefix + ".x." + std::to_string(step))),
                                          golden(prefix + ".y." + std::to_string(step)));
    loss.backward();
    if (adamw) {
      const double norm = optim::clip_grad_norm_(model->parameters(), 1.0);
      const double want = expected_norm[step].item<double>();
      CHECK(std::fabs(norm - want) <= 1e-5 * std::fabs(want));
    }
    opt->step();
    const double want = expected_loss[step].item<double>();
    CHECK_MESSAGE(std::fabs(loss.item<double>() - want) <= 1e-5 * std::fabs(want),
                  "loss " << loss.item<double>() << " vs PyTorch " << want);
  }
  for (const auto& [key, value] : model->state_dict()) {
    CAPTURE(key);
    const Tensor want = golden(prefix + "." + opt_name + ".final." + key);
    if (value.is_floating_point()) {
      check_close(value, want, 1e-5, 1e-6);
    } else {
      check_equal(value, want);  // num_batches_tracked
    }
  }
}

}  // namespace

TEST_CASE("an MLP trains like PyTorch step for step (SGD with momentum)") { check_run("mlp", mlp, "sgd"); }
TEST_CASE("an MLP trains like PyTorch step for step (AdamW + clip_grad_norm_)") { check_run("mlp", mlp, "adamw"); }
TEST_CASE("a CNN with BatchNorm2d trains like PyTorch step for step (SGD with momentum)") {
  check_run("cnn", cnn, "sgd");
}
TEST_CASE("a CNN with BatchNorm2d trains like PyTorch step for step (AdamW + clip_grad_norm_)") {
  check_run("cnn", cnn, "adamw");
}
