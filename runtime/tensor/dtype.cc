#include "runtime/tensor/dtype.h"

#include "runtime/core/error.h"

namespace ember {

std::string_view dtype_legacy_name(DType t) {
  switch (t) {
    case DType::Float32: return "Float";
    case DType::Float64: return "Double";
    case DType::Float16: return "Half";
    case DType::BFloat16: return "BFloat16";
    case DType::Int8: return "Char";
    case DType::UInt8: return "Byte";
    case DType::Int16: return "Short";
    case DType::Int32: return "Int";
    case DType::Int64: return "Long";
    case DType::Bool: return "Bool";
    case DType::UInt16: return "UInt16";
    case DType::UInt32: return "UInt32";
    case DType::UInt64: return "UInt64";
    case DType::Float8E4M3FN: return "Float8_e4m3fn";
    case DType::Float8E4M3FNUZ: return "Float8_e4m3fnuz";
    case DType::Float8E5M2: return "Float8_e5m2";
    case DType::Float8E5M2FNUZ: return "Float8_e5m2fnuz";
    case DType::Float8E8M0FNU: return "Float8_e8m0fnu";
    case DType::Float4E2M1FN: return "Float4_e2m1fn";
    case DType::Int4: return "Int4";
    case DType::UInt4: return "UInt4";
    case DType::Int2: return "Int2";
    case DType::UInt2: return "UInt2";
  }
  return "Unknown";
}

DType promote_types(DType a, DType b) { return unwrap(core::promote_types(a, b)); }

Result<DType> core::promote_types(DType a, DType b) {
  if (a == b) return a;
  if (is_storage_only(a) || is_storage_only(b)) {
    const bool f8 = ((dtype_bit(a) | dtype_bit(b)) & kFloat8Types) != 0;
    return fail(Status::DTypeMismatch, "Promotion for ", f8 ? "Float8 Types" : "storage-only types",
                " is not supported, attempted to promote ", dtype_legacy_name(a), " and ", dtype_legacy_name(b));
  }
  if ((dtype_bit(a) | dtype_bit(b)) & kBarebonesUnsignedTypes) {
    if (is_floating(a)) return a;
    if (is_floating(b)) return b;
    return fail(Status::DTypeMismatch,
                "Promotion for uint16, uint32, uint64 types is not supported, attempted to promote ",
                dtype_legacy_name(a), " and ", dtype_legacy_name(b));
  }
  if (a == DType::Bool) return b;
  if (b == DType::Bool) return a;
  const bool fa = is_floating(a), fb = is_floating(b);
  if (fa != fb) return fa ? a : b;  // integral with floating: the floating type
  if (fa) {
    // Two different floating types.
    if (a == DType::Float64 || b == DType::Float64) return DType::Float64;
    return DType::Float32;  // float32 with a 16-bit float, or float16 with bfloat16
  }
  // Two different integral types.
  if (a == DType::UInt8 || b == DType::UInt8) {
    const DType other = a == DType::UInt8 ? b : a;
    return other == DType::Int8 ? DType::Int16 : other;
  }
  return element_size(a) >= element_size(b) ? a : b;
}

std::ostream& operator<<(std::ostream& os, DType t) { return os << "torch." << dtype_name(t); }

}  // namespace ember
