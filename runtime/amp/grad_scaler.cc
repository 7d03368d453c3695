// GradScaler: torch/cuda/amp/grad_scaler.py (PyTorch 1.13) and its two
// kernels, _amp_foreach_non_finite_check_and_unscale_ and _amp_update_scale_,
// written with ember's ops (the update reads three one-element tensors).
#include "runtime/amp/grad_scaler.h"

#include <cmath>
#include <string>
#include <vector>

#include "runtime/autograd/grad_mode.h"
#include "runtime/core/error.h"
#include "runtime/ops/ops.h"

namespace ember::amp {
namespace {

constexpr const char* kNoScaleFix =
    "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration.";

const optim::StateValue& key(const optim::StateDict& state, const char* name) {
  const auto it = state.find(name);
  EMBER_ENFORCE(it != state.end(), Status::InvalidArgument, "GradScaler.load_state_dict: missing key '", name, "'");
  return it->second;
}

double number(const optim::StateDict& state, const char* name) {
  const optim::StateValue& v = key(state, name);
  if (const auto* d = std::get_if<double>(&v)) return *d;
  if (const auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  raise_error(Status::InvalidArgument, str_cat("GradScaler.load_state_dict: '", name, "' must be a number"));
}

int64_t integer(const optim::StateDict& state, const char* name) {
  const optim::StateValue& v = key(state, name);
  const auto* i = std::get_if<int64_t>(&v);
  EMBER_ENFORCE(i != nullptr, Status::InvalidArgument, "GradScaler.load_state_dict: '", name, "' must be an int");
  return *i;
}

}  // namespace

GradScaler::GradScaler(GradScalerOptions options)
    : enabled_(options.enabled),
      init_scale_(options.init_scale),
      growth_factor_(options.growth_factor),
      backoff_factor_(options.backoff_factor),
      growth_interval_(options.growth_interval) {
  if (enabled_) {
    EMBER_ENFORCE(growth_factor_ > 1.0, Status::InvalidArgument, "The growth factor must be > 1.0.");
    EMBER_ENFORCE(backoff_factor_ < 1.0, Status::InvalidArgument, "The backoff factor must be < 1.0.");
  }
}

void GradScaler::check_initialized(const char* funcname) const {
  EMBER_ENFORCE(scale_.defined(), Status::InvalidState, "Attempted ", funcname, " but _scale is None.  ", kNoScaleFix);
  EMBER_ENFORCE(growth_tracker_.defined(), Status::InvalidState, "Attempted ", funcname,
              " but _growth_tracker is None.  ", kNoScaleFix);
}

Tensor GradScaler::scale(const Tensor& outputs) {
  if (!enabled_) return outputs;
  if (!scale_.defined()) {  // _lazy_init_scale_growth_tracker
    scale_ = full({1}, init_scale_, TensorOptions(DType::Float32).device(outputs.device()));
    growth_tracker_ = full({1}, init_growth_tracker_, TensorOptions(DType::Int32).device(outputs.device()));
  }
  return outputs * scale_.to(outputs.device());
}

void GradScaler::unscale_(optim::Optimizer& optimizer) {
  if (!enabled_) return;
  check_initialized("unscale_");
  OptimizerState& state = per_optimizer_[&optimizer];
  EMBER_ENFORCE(state.stage != Stage::Unscaled, Status::InvalidState,
              "unscale_() has already been called on this optimizer since the last update().");
  EMBER_ENFORCE(state.stage != Stage::Stepped, Status::InvalidState, "unscale_() is being called after step().");
  NoGradGuard no_grad;
  // inv_scale = self._scale.double().reciprocal().float()
  const double inv_scale = static_cast<float>(1.0 / static_cast<double>(scale_.item<float>()));
  std::vector<Tensor> grads;
  for (const Tensor& p : optimizer.params()) {
    const Tensor g = p.grad();
    if (!g.defined()) continue;
    EMBER_ENFORCE(g.dtype() != DType::Float16, Status::InvalidArgument, "Attempting to unscale FP16 gradients.");
    grads.push_back(g);
  }
  Tensor found_inf = zeros({1}, TensorOptions(DType::Float32).device(scale_.device()));
  for (Tensor& g : grads) {
    // _amp_foreach_non_finite_check_and_unscale_: found_inf = 1 if any
    // element is inf or NaN; every gradient is multiplied by inv_scale.
    const Tensor finite = isfinite(g).sum();
    const Tensor bad = lt(finite, Scalar(g.numel())).to(DType::Float32).reshape({1}).to(scale_.device());
    found_inf = maximum(found_inf, bad);
    // In float32 (the kernel's opmath) for the 16-bit floats, rounded once.
    if (inv_scale == 1.0) continue;
    if (g.dtype() == DType::Float32 || g.dtype() == DType::Float64) {
      g.mul_(Scalar(inv_scale));
    } else {
      g.copy_(g.to(DType::Float32).mul_(Scalar(inv_scale)));
    }
  }
  state.found_inf = found_inf;
  state.stage = Stage::Unscaled;
}

bool GradScaler::step(optim::Optimizer& optimizer) {
  if (!enabled_) {
    optimizer.step();
    return true;
  }
  check_initialized("step");
  OptimizerState& state = per_optimizer_[&optimizer];
  EMBER_ENFORCE(state.stage != Stage::Stepped, Status::InvalidState,
              "step() has already been called since the last update().");
  if (state.stage == Stage::Ready) unscale_(optimizer);  // std::map: `state` stays valid
  EMBER_ENFORCE(state.found_inf.defined(), Status::InvalidState, "No inf checks were recorded for this optimizer.");
  const bool finite = state.found_inf.item<float>() == 0.0f;
  if (finite) optimizer.step();
  state.stage = Stage::Stepped;
  return finite;
}

void GradScaler::update(std::optional<double> new_scale) {
  if (!enabled_) return;
  check_initialized("update");
  if (new_scale) {
    scale_.fill_(*new_scale);
  } else {
    bool any = false;
    bool found = false;
    for (const auto& entry : per_optimizer_) {
      if (!entry.second.found_inf.defined()) continue;
      any = true;
      found = found || entry.second.found_inf.item<float>() != 0.0f;
    }
    EMBER_ENFORCE(any, Status::InvalidState, "No inf checks were recorded prior to update.");
    // _amp_update_scale_ (float scale, int32 tracker, double factors).
    const float current = scale_.item<float>();
    const int64_t tracker = growth_tracker_.item<int64_t>();
    if (found) {
      scale_.fill_(static_cast<double>(static_cast<float>(current * backoff_factor_)));
      growth_tracker_.fill_(0);
    } else if (tracker + 1 == growth_interval_) {
      const float grown = static_cast<float>(current * growth_factor_);
      if (std::isfinite(grown)) scale_.fill_(static_cast<double>(grown));  // not past fp32's range to inf
      growth_tracker_.fill_(0);
    } else {
      growth_tracker_.fill_(tracker + 1);
    }
  }
  per_optimizer_.clear();
}

void GradScaler::update(const Tensor& new_scale) {
  if (!enabled_) return;
  check_initialized("update");
  EMBER_ENFORCE(new_scale.dtype() == DType::Float32 && new_scale.numel() == 1 && !new_scale.requires_grad(),
              Status::InvalidArgument,
              "new_scale should be a float or a 1-element torch.cuda.FloatTensor with requires_grad=False.");
  {
    NoGradGuard no_grad;
    scale_.copy_(new_scale.reshape({1}).to(scale_.device()));
  }
  per_optimizer_.clear();
}

double GradScaler::get_scale() const {
  if (!enabled_) return 1.0;
  return scale_.defined() ? static_cast<double>(scale_.item<float>()) : init_scale_;
}

int64_t GradScaler::growth_tracker() const {
  if (!enabled_) return 0;
  return growth_tracker_.defined() ? growth_tracker_.item<int64_t>() : init_growth_tracker_;
}

std::optional<double> GradScaler::found_inf(const optim::Optimizer& optimizer) const {
  const auto it = per_optimizer_.find(&optimizer);
  if (it == per_optimizer_.end() || !it->second.found_inf.defined()) return std::nullopt;
  return static_cast<double>(it->second.found_inf.item<float>());
}

optim::StateDict GradScaler::state_dict() const {
  if (!enabled_) return {};
  return {{"scale", get_scale()},
          {"growth_factor", growth_factor_},
          {"backoff_factor", backoff_factor_},
          {"growth_interval", growth_interval_},
          {"_growth_tracker", growth_tracker()}};
}

void GradScaler::load_state_dict(const optim::StateDict& state) {
  if (!enabled_) return;
  EMBER_ENFORCE(!state.empty(), Status::InvalidArgument,
              "The source state dict is empty, possibly because it was saved from a disabled instance of "
              "GradScaler.");
  const double scale = number(state, "scale");
  const double growth_factor = number(state, "growth_factor");
  const double backoff_factor = number(state, "backoff_factor");
  const int64_t growth_interval = integer(state, "growth_interval");
  const int64_t tracker = integer(state, "_growth_tracker");
  init_scale_ = scale;
  if (scale_.defined()) scale_.fill_(scale);
  growth_factor_ = growth_factor;
  backoff_factor_ = backoff_factor;
  growth_interval_ = growth_interval;
  init_growth_tracker_ = tracker;
  if (growth_tracker_.defined()) growth_tracker_.fill_(tracker);
}

}  // namespace ember::amp
