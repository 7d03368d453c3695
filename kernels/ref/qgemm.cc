#include "kernels/ref/qgemm.h"

namespace ember::ref {
namespace {

template <typename TA>
void qgemm_impl(int64_t m, int64_t n, int64_t k, const TA* a, int64_t lda, const int8_t* w, int64_t ldw,
                int32_t* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      int32_t acc = 0;
      for (int64_t p = 0; p < k; ++p) {
        acc += static_cast<int32_t>(a[i * lda + p]) * static_cast<int32_t>(w[j * ldw + p]);
      }
      c[i * ldc + j] = acc;
    }
  }
}

}  // namespace

void qgemm_u8s8s32(int64_t m, int64_t n, int64_t k, const uint8_t* a, int64_t lda, const int8_t* w,
                   int64_t ldw, int32_t* c, int64_t ldc) {
  qgemm_impl(m, n, k, a, lda, w, ldw, c, ldc);
}

}  // namespace ember::ref
