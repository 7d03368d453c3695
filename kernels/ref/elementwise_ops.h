// The scalar math of each elementwise op, on the compute type (float for the
// 16-bit floats). Shared by the reference loops and the CPU vector loops, so
// every backend on the host computes the same values.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "runtime/core/host_device.h"

namespace ember::ref {

template <typename T>
EMBER_HD inline bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::isnan(x);
  } else {
    return false;
  }
}

// Wrapping integer arithmetic (PyTorch wraps; signed overflow would be UB).
template <typename T>
EMBER_HD inline T wrap_add(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}
template <typename T>
EMBER_HD inline T wrap_sub(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
  } else {
    return a - b;
  }
}
template <typename T>
EMBER_HD inline T wrap_mul(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    using U = std::make_unsigned_t<std::common_type_t<T, unsigned>>;
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return a * b;
  }
}

// --- unary ---------------------------------------------------------------------
// The helpers the formulas of ops.def's RT_UNARY lines may call, for the
// reference kernels (the C++ standard library's functions).
namespace math {
using std::acos;
using std::acosh;
using std::asin;
using std::asinh;
using std::atan;
using std::atanh;
using std::cos;
using std::cosh;
using std::erf;
using std::exp;
using std::expm1;
using std::log;
using std::log1p;
using std::sin;
using std::sinh;
using std::sqrt;
using std::tan;
using std::tanh;
using ref::is_nan;
using ref::wrap_sub;
template <typename T>
EMBER_HD inline T abs_value(T x) {
  if constexpr (std::is_unsigned_v<T>) return x;
  else if constexpr (std::is_integral_v<T>) return x < 0 ? wrap_sub(T(0), x) : x;
  else return std::abs(x);
}
// Rounding: integers are returned as they are (as PyTorch's floor/ceil/round).
template <typename T>
EMBER_HD inline T floor_value(T x) {
  if constexpr (std::is_floating_point_v<T>) return std::floor(x);
  else return x;
}
template <typename T>
EMBER_HD inline T ceil_value(T x) {
  if constexpr (std::is_floating_point_v<T>) return std::ceil(x);
  else return x;
}
// Half to even (std::nearbyint in the default rounding mode, as PyTorch).
template <typename T>
EMBER_HD inline T round_even(T x) {
  if constexpr (std::is_floating_point_v<T>) return std::nearbyint(x);
  else return x;
}
// -1, 0 or 1 in x's type; NaN and -0 give +0 (as torch.sign); bool: x.
template <typename T>
EMBER_HD inline T sign_value(T x) {
  if constexpr (std::is_same_v<T, bool>) return x;
  else return static_cast<T>((T(0) < x) - (x < T(0)));
}
}  // namespace math

// One functor per RT_UNARY line: NameOp{}(x) = its formula on the compute type.
#define RT_OP(Name, name, n_in, n_out, Params)
#define RT_UNARY(Name, name, dtypes, inputs, formula, ...)               \
  struct Name##Op {                                                      \
    template <typename T> EMBER_HD T operator()(T x) const {                      \
      using namespace math;                                              \
      return static_cast<T>(formula);                                    \
    }                                                                    \
  };
// An RT_UNARY_P line's functor carries its UnaryParams: NameOp{a, b}(x).
#define RT_UNARY_P(Name, name, dtypes, formula, ...)                    \
  struct Name##Op {                                                      \
    double pa = 0, pb = 0;                                               \
    template <typename T> EMBER_HD T operator()(T x) const {                      \
      using namespace math;                                              \
      [[maybe_unused]] const T a = static_cast<T>(pa), b = static_cast<T>(pb); \
      return static_cast<T>(formula);                                    \
    }                                                                    \
  };
#include "runtime/graph/ops.def"
#undef RT_UNARY_P
#undef RT_UNARY
#undef RT_OP

struct GeluOp {
  template <typename T> EMBER_HD T operator()(T x) const {
    return T(0.5) * x * (T(1) + std::erf(x * T(M_SQRT1_2)));
  }
};
struct GeluTanhOp {
  template <typename T> EMBER_HD T operator()(T x) const {
    const T inner = T(M_2_SQRTPI * M_SQRT1_2) * (x + T(0.044715) * x * x * x);
    return T(0.5) * x * (T(1) + std::tanh(inner));
  }
};
struct ClampOp {
  // Bounds in the compute type; NaN inputs propagate, as in PyTorch.
  template <typename T> EMBER_HD T operator()(T x, bool has_min, T lo, bool has_max, T hi) const {
    if (is_nan(x)) return x;
    if (has_min && x < lo) x = lo;
    if (has_max && x > hi) x = hi;
    return x;
  }
};

// --- binary ------------------------------------------------------------------
struct AddOp {
  template <typename T> EMBER_HD T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>) return a || b;
    else return wrap_add(a, b);
  }
};
struct SubOp {
  template <typename T> EMBER_HD T operator()(T a, T b) const { return wrap_sub(a, b); }
};
struct MulOp {
  template <typename T> EMBER_HD T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>) return a && b;
    else return wrap_mul(a, b);
  }
};
struct DivOp {
  template <typename T> EMBER_HD T operator()(T a, T b) const { return a / b; }
};
struct PowOp {
  template <typename T> EMBER_HD T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      if (b == T(2)) return a * a;  // a square as PyTorch's pow computes it (a call of std::pow costs 8x)
      return std::pow(a, b);
    } else if constexpr (std::is_same_v<T, bool>) {
      return a || !b;
    } else {
      if (b < 0) {  // integer base to a negative power, as PyTorch computes it
        if (a == 1) return 1;
        if constexpr (std::is_signed_v<T>) {
          if (a == -1) return (b % 2) ? T(-1) : T(1);
        }
        return 0;
      }
      T result = 1;
      while (b) {
        if (b & 1) result = wrap_mul(result, a);
        a = wrap_mul(a, a);
        b = static_cast<T>(b >> 1);
      }
      return result;
    }
  }
};
struct MaximumOp {
  template <typename T> EMBER_HD T operator()(T a, T b) const {
    if (is_nan(a)) return a;
    if (is_nan(b)) return b;
    return a > b ? a : b;
  }
};
struct MinimumOp {
  template <typename T> EMBER_HD T operator()(T a, T b) const {
    if (is_nan(a)) return a;
    if (is_nan(b)) return b;
    return a < b ? a : b;
  }
};
struct EqOp {
  static constexpr bool kCompare = true;
  template <typename T> EMBER_HD bool operator()(T a, T b) const { return a == b; }
};
struct NeOp {
  static constexpr bool kCompare = true;
  template <typename T> EMBER_HD bool operator()(T a, T b) const { return a != b; }
};
struct LtOp {
  static constexpr bool kCompare = true;
  template <typename T> EMBER_HD bool operator()(T a, T b) const { return a < b; }
};
struct LeOp {
  static constexpr bool kCompare = true;
  template <typename T> EMBER_HD bool operator()(T a, T b) const { return a <= b; }
};
struct GtOp {
  static constexpr bool kCompare = true;
  template <typename T> EMBER_HD bool operator()(T a, T b) const { return a > b; }
};
struct GeOp {
  static constexpr bool kCompare = true;
  template <typename T> EMBER_HD bool operator()(T a, T b) const { return a >= b; }
};

// --- the RT_BINARY lines of ops.def ----------------------------------------------
// The helpers their formulas call. Integer division by zero gives 0 (PyTorch
// raises; a kernel must not trap), and INT_MIN / -1 wraps.
namespace math {
template <typename T>
EMBER_HD inline T python_mod(T a, T b) {  // the sign of the divisor (Python's %, torch.remainder)
  if constexpr (std::is_floating_point_v<T>) {
    T r = std::fmod(a, b);
    if (r != 0) return (r < 0) != (b < 0) ? r + b : r;
    return std::copysign(T(0), b);
  } else if constexpr (std::is_signed_v<T>) {
    if (b == 0 || b == -1) return 0;
    const T r = static_cast<T>(a % b);
    return r != 0 && (r < 0) != (b < 0) ? static_cast<T>(r + b) : r;
  } else {
    return b == 0 ? T(0) : static_cast<T>(a % b);
  }
}
template <typename T>
EMBER_HD inline T c_fmod(T a, T b) {  // the sign of the dividend (C's fmod and %, torch.fmod)
  if constexpr (std::is_floating_point_v<T>) {
    return std::fmod(a, b);
  } else if constexpr (std::is_signed_v<T>) {
    return b == 0 || b == -1 ? T(0) : static_cast<T>(a % b);
  } else {
    return b == 0 ? T(0) : static_cast<T>(a % b);
  }
}
template <typename T>
EMBER_HD inline T trunc_div(T a, T b) {  // rounded toward zero (torch.div(rounding_mode="trunc"))
  if constexpr (std::is_floating_point_v<T>) {
    return std::trunc(a / b);
  } else {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<T>) {
      if (b == -1) return wrap_sub(T(0), a);
    }
    return static_cast<T>(a / b);
  }
}
template <typename T>
EMBER_HD inline T floor_div(T a, T b) {  // rounded toward -inf (torch.floor_divide), as PyTorch computes it
  if constexpr (std::is_floating_point_v<T>) {
    if (b == 0) return a / b;
    const T mod = std::fmod(a, b);
    T div = (a - mod) / b;
    if (mod != 0 && (b < 0) != (mod < 0)) div -= T(1);
    if (div == 0) return std::copysign(T(0), a / b);
    T floored = std::floor(div);
    if (div - floored > T(0.5)) floored += T(1);
    return floored;
  } else {
    const T q = trunc_div(a, b);
    if constexpr (std::is_signed_v<T>) {
      if (b != 0 && b != -1 && a % b != 0 && (a < 0) != (b < 0)) return static_cast<T>(q - 1);
    }
    return q;
  }
}
// Shifts as PyTorch's: a shift past the width (or negative) gives 0, or the
// sign for a right shift of a signed value.
template <typename T>
EMBER_HD inline T shift_left(T a, T b) {
  constexpr T kBits = static_cast<T>(sizeof(T) * 8);
  if constexpr (std::is_signed_v<T>) {
    if (b < 0) return 0;
  }
  if (b >= kBits) return 0;
  return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) << b);
}
template <typename T>
EMBER_HD inline T shift_right(T a, T b) {
  constexpr T kBits = static_cast<T>(sizeof(T) * 8);
  if constexpr (std::is_signed_v<T>) {
    if (b < 0 || b >= kBits) return a < 0 ? T(-1) : T(0);
  } else {
    if (b >= kBits) return 0;
  }
  return static_cast<T>(a >> b);
}
}  // namespace math

// One functor per RT_BINARY line: NameOp{}(a, b) = its formula on the compute type.
#define RT_OP(Name, name, n_in, n_out, Params)
#define RT_BINARY(Name, name, dtypes, formula, ...)                      \
  struct Name##Op {                                                      \
    template <typename T> EMBER_HD T operator()(T a, T b) const {                 \
      using namespace math;                                              \
      return static_cast<T>(formula);                                    \
    }                                                                    \
  };
#include "runtime/graph/ops.def"
#undef RT_BINARY
#undef RT_OP

template <typename Op, typename = void>
struct is_compare : std::false_type {};
template <typename Op>
struct is_compare<Op, std::void_t<decltype(Op::kCompare)>> : std::true_type {};

}  // namespace ember::ref
