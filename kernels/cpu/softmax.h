// The AVX-512 softmax row (softmax_avx512.cc), used by reduce.cc's Softmax and
// LogSoftmax kernels ahead of their ISA clones.
#pragma once

#include <cstdint>

namespace ember::cpu {

// Rows softmax_rows_avx512 takes at once.
constexpr int kSoftmaxRows = 4;

// `rows` <= kSoftmaxRows consecutive rows of softmax (log: log_softmax) of
// n > 0 values each, x and y distinct: the values reduce.cc's avx512f
// softmax_row computes (to rounding in the last n mod 16). Returns the mask
// of the rows it left unwritten: every row where the CPU lacks AVX-512, and
// the rows whose maximum is not finite (a NaN, +inf, or every value -inf):
// the caller's own row then.
unsigned softmax_rows_avx512(const float* x, float* y, int64_t n, int rows, bool log);

}  // namespace ember::cpu
