// Optimizer and LR-scheduler state_dict / load_state_dict: torch 1.13's
// layout and values (Adam, AdamW, SGD after three steps, from torch on the
// same program), resuming from a state dict bit for bit, and the errors.
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "runtime/optim/lr_scheduler.h"
#include "runtime/optim/optimizer.h"
#include "tests/harness/testing.h"

using namespace ember;
using namespace ember::optim;
using ember::testing::check_close;
using ember::testing::check_equal;
using ember::testing::check_error;

namespace {

std::vector<Tensor> make_params() {
  return {tensor({0.5f, -1.0f, 2.0f}).requires_grad_(), tensor({0.25f}).requires_grad_()};
}

// Step k's loss: sum((k + 1) w^2) + sum(b^3) (the torch script's).
void step_once(Optimizer& opt, const std::vector<Tensor>& p, int k) {
  opt.zero_grad();
  (((p[0] * p[0]) * static_cast<double>(k + 1)).sum() + (p[1] * p[1] * p[1]).sum()).backward();
  opt.step();
}

std::set<std::string> keys(const StateDict& d) {
  std::set<std::string> out;
  for (const auto& kv : d) out.insert(kv.first);
  return out;
}

const Tensor& tensor_at(const StateDict& d, const std::string& key) { return std::get<Tensor>(d.at(key)); }

}  // namespace

TEST_CASE("Adam, AdamW and SGD state dicts hold torch 1.13's keys and values") {
  {
    const std::vector<Tensor> p = make_params();
    Adam adam(p, AdamOptions{0.01, 0.9, 0.999, 1e-8, 0.1});
    for (int k = 0; k < 3; ++k) step_once(adam, p, k);
    const OptimizerState s = adam.state_dict();
    REQUIRE(s.state.size() == 2);
    CHECK(keys(s.state.at(0)) == std::set<std::string>{"step", "exp_avg", "exp_avg_sq"});
    const Tensor step = tensor_at(s.state.at(0), "step");
    CHECK(step.dtype() == DType::Float32);
    CHECK(step.dim() == 0);
    CHECK(step.item<double>() == 3.0);
    check_close(tensor_at(s.state.at(0), "exp_avg"), tensor({0.5588441491127014f, -1.1334004402160645f, 2.282503604888916f}),
                1e-6, 1e-7);
    check_close(tensor_at(s.state.at(0), "exp_avg_sq"),
                tensor({0.013716313056647778f, 0.05661945417523384f, 0.23003233969211578f}), 1e-6, 1e-9);
    check_close(tensor_at(s.state.at(1), "exp_avg"), tensor({0.05309854447841644f}), 1e-6, 1e-9);
    check_close(tensor_at(s.state.at(1), "exp_avg_sq"), tensor({0.00011678710143314674f}), 1e-6, 1e-11);
    check_close(p[0].detach(), tensor({0.47066256403923035f, -0.9706900715827942f, 1.9707038402557373f}), 1e-6, 1e-7);
    check_close(p[1].detach(), tensor({0.22010166943073273f}), 1e-6, 1e-7);
    REQUIRE(s.param_groups.size() == 1);
    const StateDict& g = s.param_groups[0];
    CHECK(keys(g) == std::set<std::string>{"amsgrad", "betas", "capturable", "differentiable", "eps", "foreach",
                                           "fused", "lr", "maximize", "params", "weight_decay"});
    CHECK(std::get<double>(g.at("lr")) == 0.01);
    CHECK(std::get<std::vector<double>>(g.at("betas")) == std::vector<double>{0.9, 0.999});
    CHECK(std::get<double>(g.at("weight_decay")) == 0.1);
    CHECK(std::get<std::vector<int64_t>>(g.at("params")) == std::vector<int64_t>{0, 1});
    CHECK(std::holds_alternative<std::monostate>(g.at("foreach")));
  }
  {
    const std::vector<Tensor> p = make_params();
    AdamW adamw(p, AdamWOptions{0.01, 0.9, 0.999, 1e-8, 1e-2, true});
    for (int k = 0; k < 3; ++k) step_once(adamw, p, k);
    const OptimizerState s = adamw.state_dict();
    CHECK(keys(s.state.at(0)) == std::set<std::string>{"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"});
    check_close(tensor_at(s.state.at(0), "exp_avg"), tensor({0.5455185770988464f, -1.1064469814300537f, 2.2282943725585938f}),
                1e-6, 1e-7);
    check_close(tensor_at(s.state.at(0), "max_exp_avg_sq"),
                tensor({0.01313724834471941f, 0.054238926619291306f, 0.22037991881370544f}), 1e-6, 1e-9);
    CHECK(keys(s.param_groups[0]) == std::set<std::string>{"amsgrad", "betas", "capturable", "eps", "foreach", "lr",
                                                           "maximize", "params", "weight_decay"});
  }
  {
    const std::vector<Tensor> p = make_params();
    SGD sgd(p, SGDOptions{0.1, 0.9, 0.1});
    for (int k = 0; k < 3; ++k) step_once(sgd, p, k);
    const OptimizerState s = sgd.state_dict();
    CHECK(keys(s.state.at(0)) == std::set<std::string>{"momentum_buffer"});
    check_close(tensor_at(s.state.at(0), "momentum_buffer"),
                tensor({3.0023999214172363f, -6.004799842834473f, 12.009599685668945f}), 1e-6, 1e-6);
    check_close(tensor_at(s.state.at(1), "momentum_buffer"), tensor({0.3897542655467987f}), 1e-6, 1e-7);
    CHECK(keys(s.param_groups[0]) == std::set<std::string>{"dampening", "differentiable", "foreach", "lr", "maximize",
                                                           "momentum", "nesterov", "params", "weight_decay"});
  }
}

TEST_CASE("10 steps, state_dict, a fresh optimizer and scheduler, load_state_dict, 10 more = 20 steps") {
  using MakeOpt = std::function<std::unique_ptr<Optimizer>(const std::vector<Tensor>&)>;
  using MakeSched = std::function<std::unique_ptr<LRScheduler>(Optimizer&)>;
  const std::vector<std::pair<MakeOpt, MakeSched>> setups = {
      {[](const auto& p) { return std::make_unique<SGD>(p, SGDOptions{0.05, 0.9, 0.0, 0.01, true}); },
       [](Optimizer& o) { return std::make_unique<StepLR>(o, 3, 0.5); }},
      {[](const auto& p) { return std::make_unique<Adam>(p, AdamOptions{0.02, 0.8, 0.99, 1e-6, 0.05, true}); },
       [](Optimizer& o) { return std::make_unique<CosineAnnealingLR>(o, 7, 0.001); }},
      {[](const auto& p) { return std::make_unique<AdamW>(p, AdamWOptions{0.03}); },
       [](Optimizer& o) { return std::make_unique<StepLR>(o, 4, 0.7); }},
  };
  for (size_t i = 0; i < setups.size(); ++i) {
    CAPTURE(i);
    const auto& [make_opt, make_sched] = setups[i];
    const std::vector<Tensor> straight = make_params();
    auto opt = make_opt(straight);
    auto sched = make_sched(*opt);
    for (int k = 0; k < 20; ++k) {
      step_once(*opt, straight, k);
      sched->step();
    }

    const std::vector<Tensor> resumed = make_params();
    OptimizerState saved;
    StateDict saved_sched;
    {
      auto first = make_opt(resumed);
      auto first_sched = make_sched(*first);
      for (int k = 0; k < 10; ++k) {
        step_once(*first, resumed, k);
        first_sched->step();
      }
      saved = first->state_dict();
      saved_sched = first_sched->state_dict();
    }  // the first optimizer is gone: the state dict alone carries on
    auto second = make_opt(resumed);
    second->load_state_dict(saved);
    auto second_sched = make_sched(*second);
    second_sched->load_state_dict(saved_sched);
    for (int k = 10; k < 20; ++k) {
      step_once(*second, resumed, k);
      second_sched->step();
    }
    check_equal(resumed[0].detach(), straight[0].detach());
    check_equal(resumed[1].detach(), straight[1].detach());
    CHECK(second->lr() == opt->lr());
    CHECK(second_sched->last_epoch() == sched->last_epoch());
    CHECK(second_sched->get_last_lr() == sched->get_last_lr());
  }
}

TEST_CASE("a scheduler's state dict: torch 1.13's keys; initial_lr in the optimizer's group") {
  const std::vector<Tensor> p = make_params();
  SGD sgd(p, SGDOptions{0.1});
  StepLR sched(sgd, 2, 0.5);
  sched.step();
  const StateDict d = sched.state_dict();
  CHECK(keys(d) == std::set<std::string>{"_get_lr_called_within_step", "_last_lr", "_step_count", "base_lrs", "gamma",
                                         "last_epoch", "step_size", "verbose"});
  CHECK(std::get<int64_t>(d.at("last_epoch")) == 1);
  CHECK(std::get<int64_t>(d.at("_step_count")) == 2);
  CHECK(std::get<std::vector<double>>(d.at("base_lrs")) == std::vector<double>{0.1});
  CHECK(std::get<double>(sgd.state_dict().param_groups[0].at("initial_lr")) == 0.1);
  CosineAnnealingLR cosine(sgd, 5);
  CHECK(cosine.base_lr() == 0.1);  // the group's initial_lr, as torch's setdefault keeps it
  CHECK(keys(cosine.state_dict()).count("T_max") == 1);
}

TEST_CASE("load_state_dict errors name what is wrong") {
  const std::vector<Tensor> p = make_params();
  Adam adam(p);
  step_once(adam, p, 0);
  const OptimizerState good = adam.state_dict();

  Adam other({p[0]});
  check_error([&] { other.load_state_dict(good); },
              "loaded state dict contains a parameter group that doesn't match the size of optimizer's group");
  OptimizerState two = good;
  two.param_groups.push_back(two.param_groups[0]);
  check_error([&] { adam.load_state_dict(two); }, "loaded state dict has a different number of parameter groups");
  OptimizerState no_eps = good;
  no_eps.param_groups[0].erase("eps");
  check_error([&] { adam.load_state_dict(no_eps); }, "load_state_dict: param_groups[0] has no key 'eps'");
  OptimizerState bad_betas = good;
  bad_betas.param_groups[0]["betas"] = 0.9;
  check_error([&] { adam.load_state_dict(bad_betas); },
              "load_state_dict: param_groups[0]['betas'] must be a list of 2 floats, got a float");
  OptimizerState bad_shape = good;
  bad_shape.state[1]["exp_avg"] = zeros({2});
  check_error([&] { adam.load_state_dict(bad_shape); },
              "load_state_dict: state[1]['exp_avg'] has shape [2] but its parameter has shape [1]");
  OptimizerState bad_index = good;
  bad_index.state[5] = good.state.at(0);
  check_error([&] { adam.load_state_dict(bad_index); },
              "load_state_dict: state for parameter 5, but the optimizer has 2 parameters");
  // A failed load leaves the optimizer as it was.
  const OptimizerState after = adam.state_dict();
  check_equal(tensor_at(after.state.at(0), "exp_avg"), tensor_at(good.state.at(0), "exp_avg"));

  SGD sgd(p, SGDOptions{0.1});
  StepLR sched(sgd, 2);
  StateDict bad = sched.state_dict();
  bad["step_size"] = std::vector<double>{1.0};
  check_error([&] { sched.load_state_dict(bad); },
              "load_state_dict: the scheduler's state dict['step_size'] must be an int, got a list of floats");
}
