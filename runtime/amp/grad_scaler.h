// GradScaler: dynamic loss scaling with torch.cuda.amp.GradScaler's semantics
// (PyTorch 1.13), for optimizers on any device:
//
//   amp::GradScaler scaler;
//   for (...) {
//     opt.zero_grad();
//     Tensor loss;
//     {
//       amp::Autocast autocast(DeviceType::CPU);
//       loss = nn::mse_loss(model(x), y);
//     }
//     scaler.scale(loss).backward();
//     scaler.step(opt);      // unscales, skips the step if a gradient is inf/NaN
//     scaler.update();       // backoff on inf, growth after growth_interval good steps
//   }
//
// The scale is a float32 tensor of shape [1] on the device of the first
// scaled output; unscaling multiplies each gradient in place by the float32
// 1/scale and records whether any was inf or NaN, with ember's own ops. A
// disabled scaler passes everything through (scale() returns its argument,
// step() just steps).
#pragma once

#include <cstdint>
#include <map>
#include <optional>

#include "runtime/optim/optimizer.h"
#include "runtime/tensor/tensor.h"

namespace ember::amp {

struct GradScalerOptions {
  double init_scale = 65536.0;  // 2^16
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
  bool enabled = true;
};

class GradScaler {
 public:
  // Raises "The growth factor must be > 1.0." / "The backoff factor must be < 1.0.".
  explicit GradScaler(GradScalerOptions options = {});

  // outputs * scale: a [1] tensor (the scale's shape), float32 unless outputs
  // is wider. Creates the scale on outputs' device on the first call.
  Tensor scale(const Tensor& outputs);
  // Multiplies the optimizer's gradients by 1/scale in place and records
  // whether any was inf or NaN. Raises "unscale_() has already been called on
  // this optimizer since the last update()." on a second call, and
  // "unscale_() is being called after step()." after step().
  void unscale_(optim::Optimizer& optimizer);
  // Unscales unless unscale_ ran, then steps unless a gradient was inf or NaN.
  // Returns whether the optimizer stepped.
  bool step(optim::Optimizer& optimizer);
  // Backs the scale off if any optimizer's gradients had an inf/NaN since the
  // last update, else counts a good step and grows the scale after
  // growth_interval of them (torch._amp_update_scale_); or sets new_scale.
  void update(std::optional<double> new_scale = std::nullopt);
  // new_scale: a float32 tensor with one element that does not require grad.
  void update(const Tensor& new_scale);

  // The current scale (init_scale before the first scale(); 1.0 when disabled).
  double get_scale() const;
  double get_growth_factor() const { return growth_factor_; }
  void set_growth_factor(double f) { growth_factor_ = f; }
  double get_backoff_factor() const { return backoff_factor_; }
  void set_backoff_factor(double f) { backoff_factor_ = f; }
  int64_t get_growth_interval() const { return growth_interval_; }
  void set_growth_interval(int64_t n) { growth_interval_ = n; }
  bool is_enabled() const { return enabled_; }
  // Consecutive finite steps counted since the last growth or backoff.
  int64_t growth_tracker() const;
  // 1.0 when unscale_ found an inf/NaN gradient of `optimizer` since the last
  // update(), 0.0 when not; nullopt before unscale_ (PyTorch's
  // _found_inf_per_device, one device).
  std::optional<double> found_inf(const optim::Optimizer& optimizer) const;

  // PyTorch's keys: scale, growth_factor, backoff_factor, growth_interval,
  // _growth_tracker; empty when disabled. load_state_dict raises on an empty
  // dict ("The source state dict is empty, ...") or a missing key, and does
  // nothing when disabled.
  optim::StateDict state_dict() const;
  void load_state_dict(const optim::StateDict& state);

 private:
  enum class Stage { Ready, Unscaled, Stepped };
  struct OptimizerState {
    Stage stage = Stage::Ready;
    Tensor found_inf;  // float32 [1] on the scale's device; undefined before unscale_
  };

  void check_initialized(const char* funcname) const;

  bool enabled_;
  double init_scale_;
  double growth_factor_;
  double backoff_factor_;
  int64_t growth_interval_;
  int64_t init_growth_tracker_ = 0;
  Tensor scale_;           // float32 [1]
  Tensor growth_tracker_;  // int32 [1]
  std::map<const optim::Optimizer*, OptimizerState> per_optimizer_;
};

}  // namespace ember::amp
