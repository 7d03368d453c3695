// The AVX-512 and AVX2 softmax rows (softmax_avx512.cc, softmax_avx2.cc), used
// by reduce.cc's Softmax and LogSoftmax kernels ahead of their ISA clones, and
// those kernels' rows for the attention kernel (attention.cc).
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

// The same on 8-lane vectors, for a CPU with AVX2 and FMA (the caller checks;
// reduce.cc runs it where avx2_fma_variant()): each row's values the same
// alone or in a block; within rounding of reduce.cc's RT_AVX2_FMA row, not
// bit for bit. Returns the rows left unwritten: no finite maximum (a row
// with a NaN comes out all NaN, as reduce.cc's).
unsigned softmax_rows_avx2(const float* x, float* y, int64_t n, int rows, bool log);

// `rows` contiguous rows of softmax of n > 0 values each, x and y distinct, on
// the calling thread: the float32 Softmax kernel's rows (reduce.cc), which
// the attention kernel shares.
void softmax_rows_f32(const float* x, float* y, int64_t n, int64_t rows);

}  // namespace ember::cpu
