// Fill: every element of a (strided) tensor set to one value: float32,
// float16, int32, int64, uint8, int8, bool. The value is converted on the host
// as the reference kernel converts it (Scalar::to<T>); the shader stores it.
#include <cstring>

#include "kernels/vulkan/elementwise.h"
#include "kernels/vulkan/vk_kernels.h"

namespace ember::vk {

Status fill(const KernelContext&, Span<const TensorView>, Span<TensorView> out, const OpParams& params) {
  const auto* p = std::get_if<ScalarParams>(&params);
  if (p == nullptr) return Status::InvalidArgument;
  struct {
    ElemLayout<1> layout;
    uint32_t lo = 0, hi = 0;  // float32 bits (floating dtypes) or the integer's bits
  } push;
  const Scalar& v = p->value;
  float f = 0.0f;
  int64_t i = 0;
  switch (out[0].dtype) {
    case DType::Float32: f = v.to<float>(); break;
    case DType::Float16: f = static_cast<float>(v.to<Half>()); break;  // float16 holds it exactly
    case DType::Int32: i = v.to<int32_t>(); break;
    case DType::Int64: i = v.to<int64_t>(); break;
    case DType::UInt8: i = v.to<uint8_t>(); break;
    case DType::Int8: i = v.to<int8_t>(); break;
    case DType::Bool: i = v.to<bool>() ? 1 : 0; break;
    default: break;  // run_elementwise reports the dtype
  }
  if (is_floating(out[0].dtype)) {
    std::memcpy(&push.lo, &f, 4);
  } else {
    const uint64_t bits = static_cast<uint64_t>(i);
    push.lo = static_cast<uint32_t>(bits);
    push.hi = static_cast<uint32_t>(bits >> 32);
  }
  return run_elementwise<1>("fill", &shaders::fill, shaders::fill_ext, 0, {&out[0]}, push);
}

}  // namespace ember::vk
