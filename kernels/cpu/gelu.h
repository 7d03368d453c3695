// The AVX-512 GELU (gelu_avx512.cc), used by elementwise.cc's Gelu kernel
// ahead of its ISA clones.
#pragma once

#include <cstdint>

namespace ember::cpu {

// y = GELU(x) (the erf form) for n values, x and y the same or distinct;
// false, writing nothing, where the CPU lacks AVX-512 (the caller's loop then).
bool gelu_avx512(const float* x, float* y, int64_t n);

}  // namespace ember::cpu
