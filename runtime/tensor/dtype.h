// DType: element types, their properties and PyTorch's type promotion.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string_view>

#include "runtime/core/result.h"
#include "runtime/tensor/half.h"
#include "runtime/tensor/low_precision.h"

namespace ember {

enum class DType : uint8_t {
#define RT_DTYPE(name, ctype, text) name,
#include "runtime/tensor/dtype.def"
#undef RT_DTYPE
};

constexpr int kNumDTypes = 0
#define RT_DTYPE(name, ctype, text) +1
#include "runtime/tensor/dtype.def"
#undef RT_DTYPE
    ;

// A set of dtypes, as a bit mask (kernel tables use it).
using DTypeSet = uint32_t;
constexpr DTypeSet dtype_bit(DType t) { return 1u << static_cast<unsigned>(t); }
constexpr DTypeSet kFloatingTypes = dtype_bit(DType::Float32) | dtype_bit(DType::Float64) |
                                    dtype_bit(DType::Float16) | dtype_bit(DType::BFloat16);
constexpr DTypeSet kIntegralTypes = dtype_bit(DType::Int8) | dtype_bit(DType::UInt8) |
                                    dtype_bit(DType::Int16) | dtype_bit(DType::Int32) |
                                    dtype_bit(DType::Int64) | dtype_bit(DType::UInt16) |
                                    dtype_bit(DType::UInt32) | dtype_bit(DType::UInt64);
constexpr DTypeSet kNumericTypes = kFloatingTypes | kIntegralTypes;
constexpr DTypeSet kAllTypes = kNumericTypes | dtype_bit(DType::Bool);
// The storage-only types (low_precision.h): Copy converts them; no arithmetic.
constexpr DTypeSet kFloat8Types = dtype_bit(DType::Float8E4M3FN) | dtype_bit(DType::Float8E4M3FNUZ) |
                                  dtype_bit(DType::Float8E5M2) | dtype_bit(DType::Float8E5M2FNUZ) |
                                  dtype_bit(DType::Float8E8M0FNU);
constexpr DTypeSet kStorageTypes = kFloat8Types | dtype_bit(DType::Float4E2M1FN) | dtype_bit(DType::Int4) |
                                   dtype_bit(DType::UInt4) | dtype_bit(DType::Int2) | dtype_bit(DType::UInt2);
// PyTorch 2's "barebones" unsigned types: no promotion with other types but floats.
constexpr DTypeSet kBarebonesUnsignedTypes =
    dtype_bit(DType::UInt16) | dtype_bit(DType::UInt32) | dtype_bit(DType::UInt64);

constexpr size_t element_size(DType t) {
  switch (t) {
#define RT_DTYPE(name, ctype, text) \
  case DType::name:                 \
    return sizeof(ctype);
#include "runtime/tensor/dtype.def"
#undef RT_DTYPE
  }
  return 0;
}

// "float32", "int64", ... (PyTorch's spelling without "torch.").
constexpr std::string_view dtype_name(DType t) {
  switch (t) {
#define RT_DTYPE(name, ctype, text) \
  case DType::name:                 \
    return text;
#include "runtime/tensor/dtype.def"
#undef RT_DTYPE
  }
  return "unknown";
}

// The name PyTorch uses in messages ("Float", "Long", "Half", ...).
std::string_view dtype_legacy_name(DType t);

constexpr bool is_floating(DType t) { return (kFloatingTypes & dtype_bit(t)) != 0; }
constexpr bool is_integral(DType t, bool include_bool = false) {
  return (kIntegralTypes & dtype_bit(t)) != 0 || (include_bool && t == DType::Bool);
}
constexpr bool is_storage_only(DType t) { return (kStorageTypes & dtype_bit(t)) != 0; }
constexpr bool is_valid(DType t) { return static_cast<int>(t) < kNumDTypes; }

// torch.promote_types (PyTorch 2: uint16/32/64 promote only to floats, the
// storage-only types to nothing: raises ember::Error).
DType promote_types(DType a, DType b);
namespace core {
Result<DType> promote_types(DType a, DType b);  // its Status form
}  // namespace core

// The dtype PyTorch gives a Python float (torch.get_default_dtype()).
constexpr DType kDefaultFloat = DType::Float32;

std::ostream& operator<<(std::ostream& os, DType t);  // prints "torch.float32"

template <typename T>
struct dtype_of;
#define RT_DTYPE(name, ctype, text)                      \
  template <>                                            \
  struct dtype_of<ctype> {                               \
    static constexpr DType value = DType::name;          \
  };
#include "runtime/tensor/dtype.def"
#undef RT_DTYPE

// The type arithmetic on T happens in: float for the 16-bit floats, T otherwise.
template <typename T>
struct compute_type {
  using type = T;
};
template <>
struct compute_type<Half> {
  using type = float;
};
template <>
struct compute_type<BFloat16> {
  using type = float;
};
template <typename T>
using compute_t = typename compute_type<T>::type;

}  // namespace ember

// dispatch_dtype(dtype, [&](auto tag) { using T = typename decltype(tag)::type; ... }):
// calls the lambda with a tag carrying the C++ type of `dtype`, for the
// compute dtypes (kAllTypes). The storage-only types (kStorageTypes) are not
// instantiated: a kernel keyed by a DTypeSet without them never sees them,
// and they come through as uint8_t. dispatch_all_dtypes instantiates every
// dtype (Copy's conversions).
namespace ember {
template <typename T>
struct TypeTag {
  using type = T;
};
template <typename F>
decltype(auto) dispatch_all_dtypes(DType t, F&& f) {
  switch (t) {
#define RT_DTYPE(name, ctype, text) \
  case DType::name:                 \
    return f(TypeTag<ctype>{});
#include "runtime/tensor/dtype.def"
#undef RT_DTYPE
  }
  return f(TypeTag<float>{});
}
template <typename F>
decltype(auto) dispatch_dtype(DType t, F&& f) {
  switch (t) {
#define RT_DTYPE(name, ctype, text)                                                    \
  case DType::name:                                                                    \
    if constexpr ((kStorageTypes & dtype_bit(DType::name)) != 0) {                     \
      return f(TypeTag<uint8_t>{});                                                    \
    } else {                                                                           \
      return f(TypeTag<ctype>{});                                                      \
    }
#include "runtime/tensor/dtype.def"
#undef RT_DTYPE
  }
  return f(TypeTag<float>{});
}
}  // namespace ember
