// Half (IEEE binary16) and BFloat16 storage types. Arithmetic happens in float;
// conversions from float round to nearest even, as PyTorch does.
#pragma once

#include <cstdint>
#include <cstring>

#include "runtime/core/host_device.h"

namespace ember {

namespace detail {
EMBER_HD inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
EMBER_HD inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
}  // namespace detail

struct Half {
  uint16_t bits = 0;

  Half() = default;
  EMBER_HD Half(float f) : bits(from_float(f)) {}  // NOLINT: implicit like c10::Half
  EMBER_HD operator float() const { return to_float(bits); }  // NOLINT

  EMBER_HD static uint16_t from_float(float f) {
    uint32_t x = detail::float_bits(f);
    const uint32_t sign = (x >> 16) & 0x8000u;
    x &= 0x7fffffffu;
    if (x >= 0x7f800000u) {  // inf or nan
      return static_cast<uint16_t>(sign | (x > 0x7f800000u ? 0x7e00u : 0x7c00u));
    }
    if (x >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
    if (x < 0x38800000u) {  // result is subnormal or zero
      // Add 0.5 (as float) to shift the mantissa into place with RNE rounding.
      const float shifted = detail::bits_float(x) + 0.5f;
      return static_cast<uint16_t>(sign | (detail::float_bits(shifted) - 0x3f000000u));
    }
    const uint32_t odd = (x >> 13) & 1u;
    x += 0xc8000fffu + odd;  // rebias exponent (-112 << 23) and round to nearest even
    return static_cast<uint16_t>(sign | (x >> 13));
  }
  EMBER_HD static float to_float(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0x1fu) return detail::bits_float(sign | 0x7f800000u | (mant << 13));
    if (exp == 0) {
      if (mant == 0) return detail::bits_float(sign);
      // Subnormal: value = mant * 2^-24.
      const float v = static_cast<float>(mant) * 5.9604644775390625e-08f;
      return sign ? -v : v;
    }
    return detail::bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
  }
};

struct BFloat16 {
  uint16_t bits = 0;

  BFloat16() = default;
  EMBER_HD BFloat16(float f) : bits(from_float(f)) {}  // NOLINT
  EMBER_HD operator float() const { return detail::bits_float(static_cast<uint32_t>(bits) << 16); }  // NOLINT

  EMBER_HD static uint16_t from_float(float f) {
    const uint32_t x = detail::float_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return 0x7fc0u;  // canonical NaN, as PyTorch
    const uint32_t rounding_bias = 0x7fffu + ((x >> 16) & 1u);
    return static_cast<uint16_t>((x + rounding_bias) >> 16);
  }
};

}  // namespace ember
