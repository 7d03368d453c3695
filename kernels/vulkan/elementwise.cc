// Unary and binary elementwise kernels, Clamp and Where: strided operands
// (broadcast inputs have stride 0; in-place ops write strided outputs),
// coalesced to at most 4 dims (elementwise.h). float32 and int32 run on any
// device; float16 (computed in float32), int64 and the 1-byte types (bool,
// uint8, int8) need 8/16-bit storage and shaderInt64.
#include <cstring>

#include "kernels/vulkan/elementwise.h"
#include "kernels/vulkan/vk_kernels.h"

namespace ember::vk {

namespace {

// The shaders' OP codes are the OpKind ids (shaders/ops.glsl is generated
// from ops.def); gelu's tanh approximation is the one extra code.
constexpr uint32_t op_code(OpKind op) { return static_cast<uint32_t>(op); }
constexpr uint32_t kGeluTanh = kNumOps;  // shaders/unary.glsl: OP_GELU_TANH

struct UnaryPush {
  ElemLayout<2> layout;
  uint32_t has_min = 0, has_max = 0;
  uint32_t min_lo = 0, min_hi = 0, max_lo = 0, max_hi = 0;  // float32 bits, or the integer's bits
};

Status unary(const char* name, uint32_t op, Span<const TensorView> in, Span<TensorView> out, UnaryPush& push) {
  if (in[0].dtype != out[0].dtype) {
    Context::set_why(std::string("vulkan ") + name + ": input and output dtypes differ");
    return Status::DTypeMismatch;
  }
  return run_elementwise<2>(name, &shaders::unary, shaders::unary_ext, op, {&out[0], &in[0]}, push);
}

Status unary(const char* name, uint32_t op, Span<const TensorView> in, Span<TensorView> out) {
  UnaryPush push;
  return unary(name, op, in, out, push);
}

// A clamp bound in the compute type of `t` (as kernels/ref: Scalar::to<C>).
void bound_bits(DType t, const Scalar& s, uint32_t* lo, uint32_t* hi) {
  int64_t i = 0;
  switch (t) {
    case DType::Float32:
    case DType::Float16: {
      const float f = s.to<float>();
      std::memcpy(lo, &f, 4);
      *hi = 0;
      return;
    }
    case DType::Int64: i = s.to<int64_t>(); break;
    case DType::UInt8: i = s.to<uint8_t>(); break;
    case DType::Int8: i = s.to<int8_t>(); break;
    default: i = s.to<int32_t>(); break;
  }
  *lo = static_cast<uint32_t>(static_cast<uint64_t>(i));
  *hi = static_cast<uint32_t>(static_cast<uint64_t>(i) >> 32);
}

Status binary(const char* name, uint32_t op, Span<const TensorView> in, Span<TensorView> out) {
  const bool compare = op >= op_code(OpKind::Eq) && op <= op_code(OpKind::Ge);
  if (in[0].dtype != in[1].dtype || out[0].dtype != (compare ? DType::Bool : in[0].dtype)) {
    Context::set_why(std::string("vulkan ") + name + ": the inputs' and output's dtypes do not match");
    return Status::DTypeMismatch;
  }
  struct {
    ElemLayout<3> layout;
  } push;
  return run_elementwise<3>(name, &shaders::binary, shaders::binary_ext, op, {&out[0], &in[0], &in[1]}, push);
}

}  // namespace

// One kernel per RT_UNARY line of ops.def (the formula is in shaders/ops.glsl).
#define RT_OP(Name, name, n_in, n_out, Params)
#define RT_UNARY(Name, name, ...)                                                                   \
  Status name(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams&) { \
    return unary(#name, op_code(OpKind::Name), in, out);                                            \
  }
// An RT_UNARY_P line's UnaryParams a, b travel as float32 bits in min_lo, max_lo.
#define RT_UNARY_P(Name, name, ...)                                                                             \
  Status name(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) { \
    const auto* p = std::get_if<UnaryParams>(&params);                                                         \
    if (p == nullptr) return Status::InvalidArgument;                                                          \
    UnaryPush push;                                                                                            \
    const float a = static_cast<float>(p->a), b = static_cast<float>(p->b);                                    \
    std::memcpy(&push.min_lo, &a, 4);                                                                          \
    std::memcpy(&push.max_lo, &b, 4);                                                                          \
    return unary(#name, op_code(OpKind::Name), in, out, push);                                                 \
  }
#include "runtime/graph/ops.def"
#undef RT_UNARY_P
#undef RT_UNARY
#undef RT_OP

Status gelu(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  const auto* p = std::get_if<GeluParams>(&params);
  if (p == nullptr) return Status::InvalidArgument;
  return unary("gelu", p->tanh_approximation ? kGeluTanh : op_code(OpKind::Gelu), in, out);
}

Status clamp(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  const auto* p = std::get_if<ClampParams>(&params);
  if (p == nullptr) return Status::InvalidArgument;
  UnaryPush push;
  push.has_min = p->has_min ? 1 : 0;
  push.has_max = p->has_max ? 1 : 0;
  if (p->has_min) bound_bits(in[0].dtype, p->min, &push.min_lo, &push.min_hi);
  if (p->has_max) bound_bits(in[0].dtype, p->max, &push.max_lo, &push.max_hi);
  return unary("clamp", op_code(OpKind::Clamp), in, out, push);
}

#define EMBER_VK_BINARY(fn, op)                                                                     \
  Status fn(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams&) { \
    return binary(#fn, op, in, out);                                                                \
  }
EMBER_VK_BINARY(add, op_code(OpKind::Add))
EMBER_VK_BINARY(sub, op_code(OpKind::Sub))
EMBER_VK_BINARY(mul, op_code(OpKind::Mul))
EMBER_VK_BINARY(div, op_code(OpKind::Div))
EMBER_VK_BINARY(pow, op_code(OpKind::Pow))
EMBER_VK_BINARY(maximum, op_code(OpKind::Maximum))
EMBER_VK_BINARY(minimum, op_code(OpKind::Minimum))
EMBER_VK_BINARY(eq, op_code(OpKind::Eq))
EMBER_VK_BINARY(ne, op_code(OpKind::Ne))
EMBER_VK_BINARY(lt, op_code(OpKind::Lt))
EMBER_VK_BINARY(le, op_code(OpKind::Le))
EMBER_VK_BINARY(gt, op_code(OpKind::Gt))
EMBER_VK_BINARY(ge, op_code(OpKind::Ge))
#undef EMBER_VK_BINARY

// Where: inputs a, b, condition (bool); out = condition ? a : b.
Status where(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams&) {
  if (in[0].dtype != in[1].dtype || in[0].dtype != out[0].dtype || in[2].dtype != DType::Bool) {
    Context::set_why("vulkan where: a, b and the output must share a dtype and the condition must be bool");
    return Status::DTypeMismatch;
  }
  struct {
    ElemLayout<4> layout;
  } push;
  return run_elementwise<4>("where", nullptr, shaders::where_ext, 0, {&out[0], &in[0], &in[1], &in[2]}, push);
}

}  // namespace ember::vk
