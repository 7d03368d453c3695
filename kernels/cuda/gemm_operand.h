// How a row-major matrix view enters cuBLAS (column-major): shared by MatMul
// (matmul.cc) and Conv2d's GEMMs (conv.cc).
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/cuda/cublas_api.h"

namespace ember::cuda {

// A [rows, cols] row-major view with strides (s_rows, s_cols) is the
// column-major [cols, rows] matrix with op N and ld = s_rows when its rows
// are dense, or, stored column-major already, op T with ld = s_cols. Not ok
// for other layouts (the caller copies the operand dense first).
struct GemmOperand {
  bool ok = false;
  cublasOperation_t op = CUBLAS_OP_N;
  int64_t ld = 0;
};

inline GemmOperand gemm_operand(int64_t rows, int64_t cols, int64_t s_rows, int64_t s_cols) {
  if (cols == 1 || s_cols == 1) {
    const int64_t ld = rows == 1 ? std::max<int64_t>(cols, 1) : s_rows;
    if (ld >= std::max<int64_t>(cols, 1) && ld <= INT32_MAX) return {true, CUBLAS_OP_N, ld};
  }
  if (rows == 1 || s_rows == 1) {
    const int64_t ld = cols == 1 ? std::max<int64_t>(rows, 1) : s_cols;
    if (ld >= std::max<int64_t>(rows, 1) && ld <= INT32_MAX) return {true, CUBLAS_OP_T, ld};
  }
  return {};
}

}  // namespace ember::cuda
