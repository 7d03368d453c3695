// Automatic mixed precision (torch.autocast): a per-thread state per device
// type and the casts the op front-ends apply at their top.
//
//   {
//     amp::Autocast guard(DeviceType::CPU);               // bfloat16 on the CPU
//     Tensor y = model(x);                                // linear/conv in bf16, losses in fp32
//     Tensor loss = nn::cross_entropy(y, target);
//   }
//   loss.backward();                                      // grads of fp32 leaves are fp32
//
// Which ops cast, and how, per device type: runtime/amp/autocast_ops.def
// (PyTorch 1.13's lists; the CPU's, and CUDA's for every other device). The
// device of an op is that of its first defined tensor argument; only floating
// arguments on that device type are cast (float64 never), with Tensor::to, so
// autograd records the casts and gradients reach the leaves in their dtype. It
// casts under NoGradGuard too. While a cast op runs, autocast is off for its
// device type, so the ops it is composed of run as called (PyTorch excludes
// the autocast dispatch key the same way), and the autograd engine turns it
// off while it runs backward rules: backward ops run in the forward's types.
//
// Casts of float32 leaves that require grad (the weights) to the autocast
// dtype are cached while the outermost guard lives, as PyTorch's
// cache_enabled=True does: each weight is cast once per region however often
// it is used (in place updates to it inside the region are not seen). Not
// while grad mode is off: a cast made there has no history to reuse.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <vector>

#include "runtime/graph/op_kind.h"
#include "runtime/tensor/tensor.h"

namespace ember::amp {

enum class CastPolicy : uint8_t { None, Lower, Float32, Promote };

enum class Op : uint8_t {
#define RT_AUTOCAST(Name, torch_name, cpu, other) Name,
#include "runtime/amp/autocast_ops.def"
#undef RT_AUTOCAST
};

// The policy of `op` on `device` (autocast_ops.def).
CastPolicy cast_policy(DeviceType device, Op op);
// PyTorch's name of the op ("mm", "cross_entropy_loss").
const char* op_name(Op op);
// The autocast op of an RT_UNARY op, if it has a line.
std::optional<Op> unary_autocast_op(OpKind op);

// torch.is_autocast_enabled / get_autocast_dtype for a device type (the dtype
// is bfloat16 on the CPU and float16 elsewhere unless a guard set another).
bool is_autocast_enabled(DeviceType device);
DType get_autocast_dtype(DeviceType device);
void set_autocast_enabled(DeviceType device, bool enabled);
// Raises for a dtype other than float16/bfloat16 (PyTorch's CPU autocast
// accepts bfloat16 only; that check is Autocast's, as in torch.autocast).
void set_autocast_dtype(DeviceType device, DType dtype);

// torch.autocast(device_type, dtype, enabled) as an RAII guard: sets the
// state of `device` for its lifetime and restores the previous one (guards
// nest; leaving the outermost one, enabled or not, clears the cast cache).
// dtype defaults to the device's default (not the current one), as in
// PyTorch. On the CPU a dtype other than bfloat16 raises PyTorch 1.13's
// "Currently, AutocastCPU only support Bfloat16 as the autocast_cpu_dtype".
class Autocast {
 public:
  explicit Autocast(DeviceType device, std::optional<DType> dtype = std::nullopt, bool enabled = true,
                    bool cache_enabled = true);
  ~Autocast();
  Autocast(const Autocast&) = delete;
  Autocast& operator=(const Autocast&) = delete;

 private:
  DeviceType device_;
  bool previous_enabled_;
  DType previous_dtype_;
  bool previous_cache_enabled_;
};

// torch.is_autocast_cache_enabled / set_autocast_cache_enabled / clear_autocast_cache.
bool is_autocast_cache_enabled();
void set_autocast_cache_enabled(bool enabled);
void clear_autocast_cache();
// How many casts the cache holds (for tests).
size_t autocast_cache_size();

// The arguments of a cast op: operator[] gives argument i, cast or not
// (undefined and non-tensor-like arguments pass through). While it lives,
// autocast is off for its device type. Falsy when nothing is to be done.
class Cast {
 public:
  Cast() = default;
  Cast(DeviceType device, std::vector<Tensor> args);
  ~Cast();
  Cast(const Cast&) = delete;
  Cast& operator=(const Cast&) = delete;
  explicit operator bool() const { return active_; }
  const Tensor& operator[](size_t i) const { return args_[i]; }
  const std::vector<Tensor>& args() const { return args_; }

 private:
  std::vector<Tensor> args_;
  DeviceType device_ = DeviceType::CPU;
  bool active_ = false;
};

namespace detail {
// Bit d set: autocast is enabled, and not suspended, for DeviceType d.
extern thread_local uint32_t active_mask;
Cast autocast_slow(Op op, std::initializer_list<Tensor> args);
Cast autocast_list_slow(Op op, Span<const Tensor> tensors);
}  // namespace detail

// Called at the top of an op front-end:
//   if (amp::Cast c = amp::autocast(amp::Op::Mm, {a, b})) return mm(c[0], c[1]);
// Falsy (and cheap: one thread-local read) unless autocast is active for the
// device of the first defined argument and the op has a policy there.
inline Cast autocast(Op op, std::initializer_list<Tensor> args) {
  if (detail::active_mask == 0) return Cast();
  return detail::autocast_slow(op, args);
}
// The same for a list argument (cat, stack).
inline Cast autocast_list(Op op, Span<const Tensor> tensors) {
  if (detail::active_mask == 0) return Cast();
  return detail::autocast_list_slow(op, tensors);
}

// Turns autocast off on every device type for its lifetime (the autograd
// engine holds one while it runs backward rules).
class SuspendAutocast {
 public:
  SuspendAutocast();
  ~SuspendAutocast();
  SuspendAutocast(const SuspendAutocast&) = delete;
  SuspendAutocast& operator=(const SuspendAutocast&) = delete;
};

}  // namespace ember::amp
