// The AVX-512 softmax row (softmax_avx512.cc), used by reduce.cc's Softmax and
// LogSoftmax kernels ahead of their ISA clones.
#pragma once

#include <cstdint>

namespace ember::cpu {

// One row of softmax (log: log_softmax) of n > 0 values, x and y distinct:
// the values reduce.cc's avx512f softmax_row computes (to rounding in the
// last n mod 16). False, writing
// nothing, where the CPU lacks AVX-512 or the row's maximum is not finite
// (a NaN, +inf, or every value -inf): the caller's own row then.
bool softmax_row_avx512(const float* x, float* y, int64_t n, bool log);

}  // namespace ember::cpu
