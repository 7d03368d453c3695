// Scalar: a number passed to an op (PyTorch's "wrapped number"): a bool, an
// integer or a floating value. Its kind takes part in type promotion.
#pragma once

#include <cstdint>
#include <type_traits>

#include "runtime/tensor/dtype.h"

namespace ember {

class Scalar {
 public:
  enum class Kind : uint8_t { Bool, Int, Float };

  Scalar() : kind_(Kind::Int), i_(0) {}
  template <typename T, typename = std::enable_if_t<std::is_arithmetic_v<T>>>
  Scalar(T v) {  // NOLINT: implicit, like c10::Scalar
    if constexpr (std::is_same_v<T, bool>) {
      kind_ = Kind::Bool;
      i_ = v;
    } else if constexpr (std::is_integral_v<T>) {
      kind_ = Kind::Int;
      i_ = static_cast<int64_t>(v);
    } else {
      kind_ = Kind::Float;
      d_ = static_cast<double>(v);
    }
  }
  Scalar(Half v) : kind_(Kind::Float), d_(static_cast<float>(v)) {}  // NOLINT
  Scalar(BFloat16 v) : kind_(Kind::Float), d_(static_cast<float>(v)) {}  // NOLINT

  Kind kind() const { return kind_; }
  bool is_floating() const { return kind_ == Kind::Float; }
  bool is_integral() const { return kind_ == Kind::Int; }
  bool is_bool() const { return kind_ == Kind::Bool; }

  double to_double() const { return kind_ == Kind::Float ? d_ : static_cast<double>(i_); }
  int64_t to_int() const { return kind_ == Kind::Float ? static_cast<int64_t>(d_) : i_; }

  // The value converted to T (16-bit floats through float).
  template <typename T>
  T to() const {
    if constexpr (std::is_same_v<T, bool>) {
      return kind_ == Kind::Float ? d_ != 0.0 : i_ != 0;
    } else if constexpr (std::is_integral_v<T>) {
      return kind_ == Kind::Float ? static_cast<T>(static_cast<int64_t>(d_)) : static_cast<T>(i_);
    } else if constexpr (std::is_floating_point_v<T>) {
      return kind_ == Kind::Float ? static_cast<T>(d_) : static_cast<T>(i_);
    } else {
      return T(static_cast<float>(to_double()));
    }
  }

  // The dtype a 0-dim tensor holding this value would have: int64, float32 (default) or bool.
  DType default_dtype() const {
    return kind_ == Kind::Float ? kDefaultFloat : kind_ == Kind::Int ? DType::Int64 : DType::Bool;
  }

 private:
  Kind kind_;
  union {
    int64_t i_;
    double d_;
  };
};

}  // namespace ember
