// Reference integer GEMM for int8 quantized products: the ground truth the
// vectorized kernels (kernels/cpu/qgemm.h) are checked against bit for bit.
#pragma once

#include <cstdint>

namespace ember::ref {

// C[i][j] = sum_p A[i][p] * W[j][p] in int32 (exact: |A| <= 255, |W| <= 128, so
// k < 65793 keeps every sum in range). A: m x k uint8 rows of stride lda;
// W: n x k int8 rows (output channels) of stride ldw; C: m x n of stride ldc.
void qgemm_u8s8s32(int64_t m, int64_t n, int64_t k, const uint8_t* a, int64_t lda, const int8_t* w,
                   int64_t ldw, int32_t* c, int64_t ldc);

}  // namespace ember::ref
