// Learning-rate schedulers (torch.optim.lr_scheduler) with PyTorch's
// recursive ("chainable") formulas: each step derives the new rate from the
// optimizer's current one, so the values match torch's step for step.
#pragma once

#include <cstdint>

#include "runtime/optim/optimizer.h"

namespace ember::optim {

class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;

  // Advances one epoch and sets the optimizer's learning rate.
  void step();
  // The rate the last step() (or the constructor) set.
  double get_last_lr() const { return last_lr_; }
  int64_t last_epoch() const { return last_epoch_; }
  double base_lr() const { return base_lr_; }

  // torch's layout: base_lrs, last_epoch, _step_count, _last_lr, verbose,
  // _get_lr_called_within_step and the scheduler's own settings
  // (state_dict.cc). Loading restores them all; it raises, naming the key, on
  // a missing key or a value of the wrong kind.
  virtual StateDict state_dict() const;
  virtual void load_state_dict(const StateDict& state);

 protected:
  // Derived constructors call initial_step() once their fields are set (as
  // torch's constructor does: last_epoch becomes 0).
  explicit LRScheduler(Optimizer& optimizer);
  void initial_step();
  // torch's get_lr(): the rate for last_epoch_, from the optimizer's current rate.
  virtual double compute_lr() const = 0;

  Optimizer& optimizer_;
  double base_lr_;
  int64_t last_epoch_ = -1;
  int64_t step_count_ = 0;
  double last_lr_;
};

// Multiplies the rate by gamma every step_size epochs.
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);
  StateDict state_dict() const override;
  void load_state_dict(const StateDict& state) override;

 private:
  double compute_lr() const override;
  int64_t step_size_;
  double gamma_;
};

// Cosine annealing from the base rate to eta_min over T_max epochs (and back
// up over the next T_max, as torch's recursive form continues).
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0.0);  // NOLINT: torch's name
  StateDict state_dict() const override;
  void load_state_dict(const StateDict& state) override;

 private:
  double compute_lr() const override;
  int64_t t_max_;
  double eta_min_;
};

}  // namespace ember::optim
