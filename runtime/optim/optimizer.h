// Optimizers (torch.optim, one parameter group): SGD, Adam and AdamW with
// PyTorch 1.13's single-tensor update formulas. Updates run under NoGradGuard,
// in place on the parameter tensors, so modules sharing them see new values.
// State (momentum buffers, moments) is created on a parameter's first step;
// parameters without a gradient are skipped.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "runtime/tensor/tensor.h"

namespace ember::optim {

// A value of an optimizer's or scheduler's state dict, as torch keeps it in
// Python: None, a bool, an int, a float, a tuple or list of floats (betas,
// base_lrs), a list of ints (a group's params) or a tensor.
using StateValue = std::variant<std::monostate, bool, int64_t, double, std::vector<double>, std::vector<int64_t>, Tensor>;
using StateDict = std::map<std::string, StateValue>;

// torch.optim.Optimizer.state_dict()'s layout: per-parameter state keyed by
// the parameter's index (step, exp_avg, exp_avg_sq, momentum_buffer, ...) and
// the parameter groups (hyperparameters and "params", the indices).
struct OptimizerState {
  std::map<int64_t, StateDict> state;
  std::vector<StateDict> param_groups;
};

class Optimizer {
 public:
  // Raises "optimizer got an empty parameter list" / "can't optimize a non-leaf Tensor".
  Optimizer(std::vector<Tensor> params, double lr);
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  virtual void step() = 0;
  // Zeroes every gradient in place, or drops it (set_to_none); PyTorch 1.13's
  // default is set_to_none=False.
  void zero_grad(bool set_to_none = false);
  double lr() const { return lr_; }
  void set_lr(double lr) { lr_ = lr; }
  const std::vector<Tensor>& params() const { return params_; }
  // The group's "initial_lr", which the first LR scheduler sets (as torch's setdefault).
  std::optional<double> initial_lr() const { return initial_lr_; }
  void set_initial_lr(double lr) { initial_lr_ = lr; }

  // torch's layout (state_dict.cc). The state tensors are the optimizer's own
  // (as torch returns them); load_state_dict copies them, cast to each
  // parameter's dtype and device, and restores every hyperparameter. It
  // raises, naming the key, on a different group or parameter count, a
  // missing key, a value of the wrong kind or a tensor of the wrong shape.
  virtual OptimizerState state_dict() const = 0;
  virtual void load_state_dict(const OptimizerState& state) = 0;

 protected:
  // The group's common keys (lr, initial_lr, params, maximize, foreach, differentiable).
  StateDict group_dict() const;
  // Checks the group and parameter counts and the common keys; returns the group.
  const StateDict& load_group(const OptimizerState& state);
  // Restores lr and initial_lr (once everything else has loaded).
  void apply_group(const StateDict& group);

  std::vector<Tensor> params_;
  double lr_;
  std::optional<double> initial_lr_;
};

struct SGDOptions {
  double lr;
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
};

class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, SGDOptions options);
  void step() override;
  OptimizerState state_dict() const override;
  void load_state_dict(const OptimizerState& state) override;
  const SGDOptions& options() const { return options_; }
  // The momentum buffer of params()[i] (undefined before its first step).
  const Tensor& momentum_buffer(size_t i) const { return momentum_buffers_.at(i); }

 private:
  SGDOptions options_;
  std::vector<Tensor> momentum_buffers_;
};

struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  bool amsgrad = false;
};

struct AdamWOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 1e-2;
  bool amsgrad = false;
};

// Per-parameter state of Adam and AdamW.
struct AdamState {
  int64_t step = 0;
  Tensor exp_avg;
  Tensor exp_avg_sq;
  Tensor max_exp_avg_sq;  // amsgrad only
};

class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor> params, AdamOptions options = {});
  void step() override;
  OptimizerState state_dict() const override;
  void load_state_dict(const OptimizerState& state) override;
  const AdamOptions& options() const { return options_; }
  // The state of params()[i] (step 0 and undefined tensors before its first step).
  const AdamState& state(size_t i) const { return state_.at(i); }

 private:
  AdamOptions options_;
  std::vector<AdamState> state_;
};

class AdamW : public Optimizer {
 public:
  AdamW(std::vector<Tensor> params, AdamWOptions options = {});
  void step() override;
  OptimizerState state_dict() const override;
  void load_state_dict(const OptimizerState& state) override;
  const AdamWOptions& options() const { return options_; }
  const AdamState& state(size_t i) const { return state_.at(i); }

 private:
  AdamWOptions options_;
  std::vector<AdamState> state_;
};

}  // namespace ember::optim
