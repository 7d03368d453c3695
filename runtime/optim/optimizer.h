// Optimizers (torch.optim, one parameter group): SGD, Adam and AdamW with
// PyTorch 1.13's single-tensor update formulas. Updates run under NoGradGuard,
// in place on the parameter tensors, so modules sharing them see new values.
// State (momentum buffers, moments) is created on a parameter's first step;
// parameters without a gradient are skipped.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/tensor/tensor.h"

namespace ember::optim {

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

 protected:
  std::vector<Tensor> params_;
  double lr_;
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
  const AdamWOptions& options() const { return options_; }
  const AdamState& state(size_t i) const { return state_.at(i); }

 private:
  AdamWOptions options_;
  std::vector<AdamState> state_;
};

}  // namespace ember::optim
