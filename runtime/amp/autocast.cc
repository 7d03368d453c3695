// Autocast state (per thread, per device type) and the casts of
// runtime/amp/autocast_ops.def's policies: PyTorch 1.13's cached_cast,
// promote_type and prioritize (aten/src/ATen/autocast_mode.h), and its cache of
// weight casts.
#include "runtime/amp/autocast.h"

#include <array>
#include <unordered_map>
#include <utility>

#include "runtime/autograd/grad_mode.h"
#include "runtime/core/error.h"

namespace ember::amp {

namespace detail {
thread_local uint32_t active_mask = 0;
}  // namespace detail

namespace {

struct DeviceState {
  bool enabled = false;
  std::optional<DType> dtype;  // unset: the device's default
  int excluded = 0;            // Casts alive for this device type
};

struct ThreadState {
  std::array<DeviceState, kNumDeviceTypes> devices;
  int suspended = 0;  // SuspendAutocast guards alive
  int nesting = 0;    // Autocast guards alive
  bool cache_enabled = true;
  // Source tensor (kept alive, so its address is not reused) and its cast.
  std::unordered_map<const void*, std::pair<Tensor, Tensor>> cache;
};

thread_local ThreadState state;

DeviceState& device_state(DeviceType device) { return state.devices.at(static_cast<size_t>(device)); }

void refresh_mask() {
  uint32_t mask = 0;
  if (state.suspended == 0) {
    for (size_t d = 0; d < state.devices.size(); ++d) {
      if (state.devices[d].enabled && state.devices[d].excluded == 0) mask |= 1u << d;
    }
  }
  detail::active_mask = mask;
}

DType default_dtype(DeviceType device) { return device == DeviceType::CPU ? DType::BFloat16 : DType::Float16; }

// is_eligible: a defined floating tensor of the op's device type, not float64.
bool eligible(const Tensor& t, DeviceType device) {
  return t.defined() && t.device().type() == device && t.is_floating_point() && t.dtype() != DType::Float64;
}

// PyTorch's prioritize over the eligible arguments, starting from the autocast
// dtype: float32 wins. A 16-bit float other than the autocast dtype gives
// float32 too (PyTorch 1.13's CPU cat of bfloat16 and float16 under bfloat16
// autocast returns float32, its native promotion).
DType widest(Span<const Tensor> args, DeviceType device, DType lower) {
  DType current = lower;
  for (const Tensor& t : args) {
    if (eligible(t, device) && t.dtype() != lower) current = DType::Float32;
  }
  return current;
}

// cached_cast: a float32 leaf that requires grad, cast to the autocast dtype,
// comes from the cache when cast before in this region.
Tensor cast_one(const Tensor& t, DType to, DeviceType device) {
  if (!eligible(t, device) || t.dtype() == to) return t;
  const bool can_cache = to == get_autocast_dtype(device) && t.dtype() == DType::Float32 && t.requires_grad() &&
                         t.is_leaf() && state.cache_enabled && GradMode::is_enabled();
  if (!can_cache) return t.to(to);
  auto it = state.cache.find(t.impl());
  if (it == state.cache.end()) it = state.cache.emplace(t.impl(), std::make_pair(t, t.to(to))).first;
  return it->second.second;
}

Cast cast_args(Op op, Span<const Tensor> args) {
  const Tensor* first = nullptr;
  for (const Tensor& t : args) {
    if (t.defined()) {
      first = &t;
      break;
    }
  }
  if (first == nullptr) return Cast();
  const DeviceType device = first->device().type();
  if ((detail::active_mask & (1u << static_cast<uint32_t>(device))) == 0) return Cast();
  const CastPolicy policy = cast_policy(device, op);
  if (policy == CastPolicy::None) return Cast();
  const DType lower = get_autocast_dtype(device);
  DType to = policy == CastPolicy::Float32 ? DType::Float32 : lower;
  if (policy == CastPolicy::Promote) to = widest(args, device, lower);
  std::vector<Tensor> cast;
  cast.reserve(args.size());
  for (const Tensor& t : args) cast.push_back(cast_one(t, to, device));
  return Cast(device, std::move(cast));
}

}  // namespace

CastPolicy cast_policy(DeviceType device, Op op) {
  const bool cpu = device == DeviceType::CPU;
  switch (op) {
#define RT_AUTOCAST(Name, torch_name, cpu_policy, other_policy) \
  case Op::Name:                                                \
    return cpu ? CastPolicy::cpu_policy : CastPolicy::other_policy;
#include "runtime/amp/autocast_ops.def"
#undef RT_AUTOCAST
  }
  return CastPolicy::None;
}

const char* op_name(Op op) {
  switch (op) {
#define RT_AUTOCAST(Name, torch_name, cpu, other) \
  case Op::Name:                                  \
    return torch_name;
#include "runtime/amp/autocast_ops.def"
#undef RT_AUTOCAST
  }
  return "?";
}

std::optional<Op> unary_autocast_op(OpKind op) {
#define RT_AUTOCAST(Name, torch_name, cpu, other)
#define RT_AUTOCAST_UNARY(Name, torch_name, cpu, other) \
  if (op == OpKind::Name) return Op::Name;
#include "runtime/amp/autocast_ops.def"
#undef RT_AUTOCAST
  return std::nullopt;
}

bool is_autocast_enabled(DeviceType device) { return device_state(device).enabled; }

DType get_autocast_dtype(DeviceType device) {
  const DeviceState& s = device_state(device);
  return s.dtype ? *s.dtype : default_dtype(device);
}

void set_autocast_enabled(DeviceType device, bool enabled) {
  device_state(device).enabled = enabled;
  refresh_mask();
}

void set_autocast_dtype(DeviceType device, DType dtype) {
  EMBER_ENFORCE(dtype == DType::BFloat16 || dtype == DType::Float16, Status::InvalidArgument,
              "autocast dtype must be torch.float16 or torch.bfloat16, got ", dtype_name(dtype));
  device_state(device).dtype = dtype;
}

Autocast::Autocast(DeviceType device, std::optional<DType> dtype, bool enabled, bool cache_enabled)
    : device_(device),
      previous_enabled_(is_autocast_enabled(device)),
      previous_dtype_(get_autocast_dtype(device)),
      previous_cache_enabled_(state.cache_enabled) {
  const DType target = dtype ? *dtype : default_dtype(device);
  // torch.autocast("cpu", dtype=torch.float16) warns, disables itself, then raises this.
  EMBER_ENFORCE(device != DeviceType::CPU || target == DType::BFloat16, Status::NotSupported,
              "Currently, AutocastCPU only support Bfloat16 as the autocast_cpu_dtype");
  set_autocast_dtype(device, target);
  set_autocast_enabled(device, enabled);
  state.cache_enabled = cache_enabled;
  ++state.nesting;
}

Autocast::~Autocast() {
  if (--state.nesting == 0) clear_autocast_cache();
  device_state(device_).dtype = previous_dtype_;
  set_autocast_enabled(device_, previous_enabled_);
  state.cache_enabled = previous_cache_enabled_;
}

bool is_autocast_cache_enabled() { return state.cache_enabled; }
void set_autocast_cache_enabled(bool enabled) { state.cache_enabled = enabled; }
void clear_autocast_cache() { state.cache.clear(); }
size_t autocast_cache_size() { return state.cache.size(); }

Cast::Cast(DeviceType device, std::vector<Tensor> args) : args_(std::move(args)), device_(device), active_(true) {
  ++device_state(device_).excluded;
  refresh_mask();
}

Cast::~Cast() {
  if (!active_) return;
  --device_state(device_).excluded;
  refresh_mask();
}

SuspendAutocast::SuspendAutocast() {
  ++state.suspended;
  refresh_mask();
}

SuspendAutocast::~SuspendAutocast() {
  --state.suspended;
  refresh_mask();
}

namespace detail {

Cast autocast_slow(Op op, std::initializer_list<Tensor> args) {
  return cast_args(op, Span<const Tensor>(args.begin(), args.size()));
}

Cast autocast_list_slow(Op op, Span<const Tensor> tensors) { return cast_args(op, tensors); }

}  // namespace detail
}  // namespace ember::amp
