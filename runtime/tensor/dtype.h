// DType: element types, their properties and PyTorch's type promotion.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string_view>

#include "runtime/tensor/half.h"

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
                                    dtype_bit(DType::Int64);
constexpr DTypeSet kNumericTypes = kFloatingTypes | kIntegralTypes;
constexpr DTypeSet kAllTypes = kNumericTypes | dtype_bit(DType::Bool);

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
constexpr bool is_valid(DType t) { return static_cast<int>(t) < kNumDTypes; }

// torch.promote_types.
DType promote_types(DType a, DType b);

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

// RT_DISPATCH_ALL(dtype, [&](auto tag) { using T = typename decltype(tag)::type; ... }):
// calls the lambda with a tag carrying the C++ type of `dtype`.
namespace ember {
template <typename T>
struct TypeTag {
  using type = T;
};
template <typename F>
decltype(auto) dispatch_dtype(DType t, F&& f) {
  switch (t) {
#define RT_DTYPE(name, ctype, text) \
  case DType::name:                 \
    return f(TypeTag<ctype>{});
#include "runtime/tensor/dtype.def"
#undef RT_DTYPE
  }
  return f(TypeTag<float>{});
}
}  // namespace ember
