#include "kernels/vulkan/dispatch.h"

#include <algorithm>

namespace ember::vk {

Dispatch::Dispatch(const ShaderCode& shader) : shader_(shader) {
  Result<Context*> c = Context::get();
  if (c.ok()) {
    context_ = c.get();
  } else {
    status_ = c.status();
  }
}

uint32_t Dispatch::bind(const TensorView& v) {
  if (status_ != Status::Ok) return 0;
  if (v.data == nullptr) {
    Context::set_why(std::string("shader ") + shader_.name + ": binding " + std::to_string(bindings_.size()) +
                     " has no tensor");
    status_ = Status::InvalidArgument;
    return 0;
  }
  const size_t item = element_size(v.dtype);
  for (int d = 0; d < v.rank; ++d) {
    if (v.strides[d] < 0 && v.sizes[d] > 1) {
      Context::set_why(std::string("shader ") + shader_.name + ": negative strides are not supported");
      status_ = Status::NotSupported;
      return 0;
    }
  }
  // An empty view still binds one element (the shader reads none).
  const int64_t span = std::max<int64_t>(extent(v), 1);
  Result<BoundTensor> b = context_->resolve(address_of(v), static_cast<size_t>(span) * item, item);
  if (!b.ok()) {
    status_ = b.status();
    return 0;
  }
  bindings_.push_back(b.get());
  return b->first;
}

uint32_t Dispatch::bind_or(const TensorView& v, const TensorView& fallback) {
  return bind(v.data != nullptr ? v : fallback);
}

Status Dispatch::run_raw(const void* push, uint32_t push_bytes, uint32_t gx, uint32_t gy, uint32_t gz,
                         std::initializer_list<uint32_t> spec) {
  if (status_ != Status::Ok) return status_;
  const uint32_t g[3] = {gx, gy, gz};
  return context_->dispatch(shader_, Span<const BoundTensor>(bindings_.data(), bindings_.size()), push, push_bytes, g,
                            Span<const uint32_t>(spec.begin(), spec.size()));
}

int64_t extent(const TensorView& v) {
  int64_t e = 1;
  for (int d = 0; d < v.rank; ++d) {
    if (v.sizes[d] == 0) return 0;
    e += (v.sizes[d] - 1) * v.strides[d];
  }
  return e;
}

bool float16_supported(const char* op) {
  Result<Context*> c = Context::get();
  if (!c.ok() || c.get()->caps().float16) return true;
  Context::set_why(std::string(op) + " on vulkan: float16 needs shaderFloat16 and 16-bit storage, which the device lacks");
  return false;
}

uint32_t reduction_group_size(int64_t n) {
  uint32_t l = 32;
  while (l < 256 && l < n) l *= 2;
  Result<Context*> c = Context::get();
  if (c.ok()) {
    while (l > c.get()->caps().max_workgroup_invocations) l /= 2;
  }
  return l;
}

}  // namespace ember::vk
