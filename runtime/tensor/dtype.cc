#include "runtime/tensor/dtype.h"

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
  }
  return "Unknown";
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
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
