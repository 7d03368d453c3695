// Element conversion between dtypes, as PyTorch's static_cast semantics.
// The 16-bit floats and the storage-only types (low_precision.h) convert
// through float; the 4- and 2-bit integers wrap from integers and take
// floats as ml_dtypes does (truncated; out of range: 0).
#pragma once

#include <type_traits>

#include "runtime/core/host_device.h"
#include "runtime/tensor/dtype.h"

namespace ember {

template <typename T>
constexpr bool is_small_int_v = std::is_same_v<T, Int4> || std::is_same_v<T, UInt4> || std::is_same_v<T, Int2> ||
                                std::is_same_v<T, UInt2>;
// The types that convert through float: Half, BFloat16 and the storage-only floats.
template <typename T>
constexpr bool is_reduced_float_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16> ||
                                    std::is_same_v<T, Float8E4M3FN> || std::is_same_v<T, Float8E4M3FNUZ> ||
                                    std::is_same_v<T, Float8E5M2> || std::is_same_v<T, Float8E5M2FNUZ> ||
                                    std::is_same_v<T, Float8E8M0FNU> || std::is_same_v<T, Float4E2M1FN>;

template <typename To, typename From>
EMBER_HD inline To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (is_reduced_float_v<From>) {
    return convert<To>(static_cast<float>(v));
  } else if constexpr (is_small_int_v<From>) {
    return convert<To>(static_cast<int>(v.value));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (is_small_int_v<To>) {
    if constexpr (std::is_floating_point_v<From>) return To::of_float(static_cast<double>(v));
    else return To::of_int(static_cast<int64_t>(v));
  } else if constexpr (is_reduced_float_v<To>) {
    return To(static_cast<float>(v));
  } else {
    return static_cast<To>(v);
  }
}

}  // namespace ember
