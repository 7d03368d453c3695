#include "runtime/optim/lr_scheduler.h"

#include <cmath>

namespace ember::optim {
namespace {
constexpr double kPi = 3.14159265358979323846;  // Python's math.pi
}  // namespace

// As torch: the group's initial_lr is set once (setdefault) and is the base rate.
LRScheduler::LRScheduler(Optimizer& optimizer) : optimizer_(optimizer), last_lr_(optimizer.lr()) {
  if (!optimizer.initial_lr()) optimizer.set_initial_lr(optimizer.lr());
  base_lr_ = *optimizer.initial_lr();
}

void LRScheduler::initial_step() {
  step_count_ = 0;
  step();
}

void LRScheduler::step() {
  step_count_ += 1;
  last_epoch_ += 1;
  const double lr = compute_lr();
  optimizer_.set_lr(lr);
  last_lr_ = lr;
}

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
  EMBER_ENFORCE(step_size > 0, Status::InvalidArgument, "StepLR: step_size must be positive, got ", step_size);
  initial_step();
}

double StepLR::compute_lr() const {
  const double lr = optimizer_.lr();
  if (last_epoch_ == 0 || last_epoch_ % step_size_ != 0) return lr;
  return lr * gamma_;
}

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min)
    : LRScheduler(optimizer), t_max_(T_max), eta_min_(eta_min) {
  EMBER_ENFORCE(T_max > 0, Status::InvalidArgument, "CosineAnnealingLR: T_max must be positive, got ", T_max);
  initial_step();
}

double CosineAnnealingLR::compute_lr() const {
  const double lr = optimizer_.lr();
  const double t_max = static_cast<double>(t_max_);
  const double epoch = static_cast<double>(last_epoch_);
  if (last_epoch_ == 0) return lr;
  if (step_count_ == 1 && last_epoch_ > 0) {
    return eta_min_ + (base_lr_ - eta_min_) * (1 + std::cos(epoch * kPi / t_max)) / 2;
  }
  if ((last_epoch_ - 1 - t_max_) % (2 * t_max_) == 0) {
    return lr + (base_lr_ - eta_min_) * (1 - std::cos(kPi / t_max)) / 2;
  }
  return (1 + std::cos(kPi * epoch / t_max)) / (1 + std::cos(kPi * (epoch - 1) / t_max)) * (lr - eta_min_) +
         eta_min_;
}

}  // namespace ember::optim
