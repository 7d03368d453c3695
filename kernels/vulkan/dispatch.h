// Dispatch: how a Vulkan kernel turns its TensorViews into one recorded
// compute dispatch. Bind the tensors in the shader's binding order, fill the
// shader's push-constant struct (with the element offsets bind() returns), run.
//
//   Dispatch d(shaders::add);
//   AddPush p;
//   p.a_first = d.bind(in[0]);
//   p.b_first = d.bind(in[1]);
//   p.out_first = d.bind(out[0]);
//   const Grid g = grid(n, 256);
//   return d.run(p, g.x, g.y, 1, {256});  // spec constant 0: the workgroup size
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "kernels/vulkan/context.h"
#include "kernels/vulkan/shaders.h"
#include "runtime/tensor/tensor_view.h"

namespace ember::vk {

class Dispatch {
 public:
  explicit Dispatch(const ShaderCode& shader);

  // Binds `v` (any strides >= 0) as the next storage buffer and returns the
  // index of its first element inside that binding. Errors are kept and
  // returned by run().
  uint32_t bind(const TensorView& v);
  // Binds `v`, or `fallback` when `v` is undefined (an optional input; the
  // shader is told by a push-constant flag and never reads it).
  uint32_t bind_or(const TensorView& v, const TensorView& fallback);

  template <typename Push>
  Status run(const Push& push, uint32_t gx, uint32_t gy = 1, uint32_t gz = 1,
             std::initializer_list<uint32_t> spec = {}) {
    static_assert(sizeof(Push) <= 128, "push constants are limited to 128 bytes");
    return run_raw(&push, sizeof(Push), gx, gy, gz, spec);
  }
  Status run_raw(const void* push, uint32_t push_bytes, uint32_t gx, uint32_t gy, uint32_t gz,
                 std::initializer_list<uint32_t> spec);

 private:
  const ShaderCode& shader_;
  Context* context_ = nullptr;
  Status status_ = Status::Ok;
  std::vector<BoundTensor> bindings_;
};

// Workgroups needed to cover `n` items with `per_group` items each.
inline uint32_t groups(int64_t n, int64_t per_group) {
  return static_cast<uint32_t>((n + per_group - 1) / per_group);
}

// A 2-D grid of workgroups covering `n` items, `per_group` each, within the
// 65535 groups per dimension every device allows; shaders index it with
// flat_index() (shaders/common.glsl) and skip indices >= n.
struct Grid {
  uint32_t x = 1, y = 1;
};
inline Grid grid(int64_t n, int64_t per_group) {
  const int64_t total = (n + per_group - 1) / per_group;
  Grid g;
  if (total <= 65535) {
    g.x = static_cast<uint32_t>(total);
  } else {
    g.x = 65535;
    g.y = static_cast<uint32_t>((total + 65534) / 65535);
  }
  return g;
}

// False, with Context::why() "<op> on vulkan: float16 needs shaderFloat16 and
// 16-bit storage, which the device lacks", when the device cannot run the
// float16 shaders; true otherwise (without a device, Dispatch reports that).
bool float16_supported(const char* op);

// A workgroup size for reducing `n` items: a power of two in [32, 256] within
// the device's maxComputeWorkGroupInvocations.
uint32_t reduction_group_size(int64_t n);

// Elements from a view's first element to the last one it reaches (strides
// >= 0): what a binding must span. 0 for an empty view.
int64_t extent(const TensorView& v);

// The device address of a view's first element.
inline uint64_t address_of(const TensorView& v) { return reinterpret_cast<uint64_t>(v.data); }

}  // namespace ember::vk
