// Storage-only element types: the float8 formats, float4 e2m1, the 8-bit
// power of two e8m0 and the 4- and 2-bit integers. Tensors hold one element
// per byte (ONNX packs the sub-byte types in pairs or quads; the converter
// unpacks them). They convert to and from float (Copy) and are stored and
// loaded; no arithmetic kernel takes them. Conversions from float round to
// nearest even and follow ml_dtypes (what onnx's reference casts with):
// overflow gives inf (e5m2) or NaN (the fn/fnuz formats), float4 saturates.
#pragma once

#include <cmath>
#include <cstdint>

#include "runtime/tensor/half.h"

namespace ember {

namespace detail {

// What a format does with values it cannot hold.
enum class MiniKind : uint8_t {
  Ieee,    // inf and NaN as IEEE (all-ones exponent): e5m2
  Fn,      // no inf; NaN is the all-ones exponent and mantissa: e4m3fn
  Fnuz,    // no inf, no -0; NaN is the sign bit alone (0x80): e4m3fnuz, e5m2fnuz
  Finite,  // no inf, no NaN: out of range saturates (NaN becomes -0, as ml_dtypes): float4 e2m1
};

// A float with kExp exponent bits, kMan mantissa bits and bias kBias, in a byte.
template <int kExp, int kMan, int kBias, MiniKind kKind>
struct MiniFloat {
  static constexpr int kSignShift = kExp + kMan;
  static constexpr uint32_t kExpMax = (1u << kExp) - 1;
  static constexpr uint32_t kManMask = (1u << kMan) - 1;

  static uint8_t nan_bits(bool negative) {
    switch (kKind) {
      case MiniKind::Ieee: return static_cast<uint8_t>((negative << kSignShift) | (kExpMax << kMan) | (1u << (kMan - 1)));
      case MiniKind::Fn: return static_cast<uint8_t>((negative << kSignShift) | (kExpMax << kMan) | kManMask);
      case MiniKind::Fnuz: return 0x80;
      case MiniKind::Finite: return static_cast<uint8_t>(1u << kSignShift);
    }
    return 0;
  }
  // The largest finite value's bits (positive).
  static constexpr uint32_t max_bits() {
    if (kKind == MiniKind::Ieee) return ((kExpMax - 1) << kMan) | kManMask;
    if (kKind == MiniKind::Fn) return (kExpMax << kMan) | (kManMask - 1);
    return (kExpMax << kMan) | kManMask;
  }

  static float to_float(uint8_t bits) {
    const bool negative = (bits >> kSignShift) & 1u;
    const uint32_t exp = (bits >> kMan) & kExpMax, man = bits & kManMask;
    if (kKind == MiniKind::Fnuz && bits == 0x80) return NAN;
    if (kKind == MiniKind::Ieee && exp == kExpMax) return man ? NAN : (negative ? -INFINITY : INFINITY);
    if (kKind == MiniKind::Fn && exp == kExpMax && man == kManMask) return NAN;
    const float v = exp == 0 ? std::ldexp(static_cast<float>(man), 1 - kBias - kMan)
                             : std::ldexp(static_cast<float>(man | (1u << kMan)), static_cast<int>(exp) - kBias - kMan);
    return negative ? -v : v;
  }

  static uint8_t from_float(float f) {
    const bool negative = std::signbit(f);
    const uint32_t sign = static_cast<uint32_t>(negative) << kSignShift;
    if (std::isnan(f)) return nan_bits(negative);
    const float a = std::fabs(f);
    const uint8_t overflow = kKind == MiniKind::Ieee    ? static_cast<uint8_t>(sign | (kExpMax << kMan))
                             : kKind == MiniKind::Finite ? static_cast<uint8_t>(sign | max_bits())
                                                         : nan_bits(negative);
    if (std::isinf(a)) return overflow;
    if (a == 0) return kKind == MiniKind::Fnuz ? 0 : static_cast<uint8_t>(sign);
    int e = 0;
    std::frexp(a, &e);  // a = m 2^e, m in [0.5, 1)
    int biased = e - 1 + kBias;
    // The step between neighbours at a's exponent (the subnormal step below the normals).
    const int step_exp = (biased < 1 ? 1 - kBias : e - 1) - kMan;
    uint32_t q = static_cast<uint32_t>(std::nearbyint(std::ldexp(static_cast<double>(a), -step_exp)));
    uint32_t bits;
    if (biased < 1) {
      bits = q;  // a subnormal, or 2^kMan: the smallest normal
    } else {
      if (q == (2u << kMan)) {
        q >>= 1;
        ++biased;
      }
      if (biased > static_cast<int>(kExpMax)) return overflow;
      bits = (static_cast<uint32_t>(biased) << kMan) | (q & kManMask);
    }
    if (bits > max_bits()) return overflow;
    if (bits == 0 && kKind == MiniKind::Fnuz) return 0;  // no -0
    return static_cast<uint8_t>(sign | bits);
  }
};

// An integer of kBits bits (signed or not) held in a byte, sign-extended.
template <int kBits, bool kSigned>
struct SmallInt {
  static constexpr int kMin = kSigned ? -(1 << (kBits - 1)) : 0;
  static constexpr int kMax = kSigned ? (1 << (kBits - 1)) - 1 : (1 << kBits) - 1;
  // From an integer: the low bits (wraps, as a C cast to a narrower type).
  static int8_t wrap(int64_t v) {
    const uint32_t low = static_cast<uint32_t>(static_cast<uint64_t>(v) & ((1u << kBits) - 1));
    if (kSigned && (low >> (kBits - 1))) return static_cast<int8_t>(static_cast<int32_t>(low) - (1 << kBits));
    return static_cast<int8_t>(low);
  }
  // From a float: truncated toward zero; NaN and values out of range give 0 (ml_dtypes).
  static int8_t from_float(double f) {
    const double t = std::trunc(f);
    return t >= kMin && t <= kMax ? static_cast<int8_t>(t) : 0;
  }
};

}  // namespace detail

#define EMBER_MINI_FLOAT(Name, kExp, kMan, kBias, kKind)                                       \
  struct Name {                                                                                \
    using Format = detail::MiniFloat<kExp, kMan, kBias, detail::MiniKind::kKind>;             \
    uint8_t bits = 0;                                                                          \
    Name() = default;                                                                          \
    Name(float f) : bits(Format::from_float(f)) {} /* NOLINT: implicit like c10's */           \
    operator float() const { return Format::to_float(bits); } /* NOLINT */                     \
  };
EMBER_MINI_FLOAT(Float8E4M3FN, 4, 3, 7, Fn)
EMBER_MINI_FLOAT(Float8E4M3FNUZ, 4, 3, 8, Fnuz)
EMBER_MINI_FLOAT(Float8E5M2, 5, 2, 15, Ieee)
EMBER_MINI_FLOAT(Float8E5M2FNUZ, 5, 2, 16, Fnuz)
EMBER_MINI_FLOAT(Float4E2M1FN, 2, 1, 1, Finite)
#undef EMBER_MINI_FLOAT

// 2^(bits - 127); 0xff is NaN. From float as ONNX's Cast by default
// (round_mode "up", saturate): the exponent of |f|, plus one when a fraction
// remains (not past 2^127); NaN and inf give NaN.
struct Float8E8M0FNU {
  uint8_t bits = 0;
  Float8E8M0FNU() = default;
  Float8E8M0FNU(float f) : bits(from_float(f)) {}  // NOLINT
  operator float() const { return bits == 0xff ? NAN : std::ldexp(1.0f, static_cast<int>(bits) - 127); }  // NOLINT
  static uint8_t from_float(float f) {
    const uint32_t x = detail::float_bits(f);
    const uint32_t exp = (x >> 23) & 0xffu;
    if (exp == 0xffu) return 0xff;
    return static_cast<uint8_t>(exp + ((x & 0x7fffffu) != 0 && exp != 0xfeu ? 1 : 0));
  }
};

#define EMBER_SMALL_INT(Name, kBits, kSigned)                                                   \
  struct Name {                                                                                 \
    using Format = detail::SmallInt<kBits, kSigned>;                                            \
    int8_t value = 0;                                                                           \
    Name() = default;                                                                           \
    Name(float f) : value(Format::from_float(f)) {} /* NOLINT */                                \
    static Name of_int(int64_t v) {                                                             \
      Name n;                                                                                   \
      n.value = Format::wrap(v);                                                                \
      return n;                                                                                 \
    }                                                                                           \
    static Name of_float(double f) {                                                            \
      Name n;                                                                                   \
      n.value = Format::from_float(f);                                                          \
      return n;                                                                                 \
    }                                                                                           \
    operator float() const { return static_cast<float>(value); } /* NOLINT */                   \
  };
EMBER_SMALL_INT(Int4, 4, true)
EMBER_SMALL_INT(UInt4, 4, false)
EMBER_SMALL_INT(Int2, 2, true)
EMBER_SMALL_INT(UInt2, 2, false)
#undef EMBER_SMALL_INT

}  // namespace ember
