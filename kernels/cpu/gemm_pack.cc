// Operand packing of the float32 GEMM (gemm_tile.h: pack_a, pack_b_panel):
// panels of A and B laid out for the micro-kernel family in use, as gemm.cc
// packs them per call and sgemm_pack_a / sgemm_pack_b once at load.
#include <algorithm>
#include <cstring>

#include "kernels/cpu/gemm_tile.h"
#include "kernels/cpu/gemv.h"  // load4, store4, transpose4, zip4

namespace ember::cpu::detail {
namespace {

// A full panel of `mr` rows, each contiguous along p (row-major A, or the
// columns of B = W^T, a Linear's weight): dst[p * mr + i] = src[i * rs + p],
// 4x4 blocks transposed in registers so that each store writes four values of
// a p (a scalar store per value was 9% of a BERT int8 run's attention
// products; a strided gather per value made packing W^T cost more than a
// 64-row product with it). An even mr not a multiple of 4 (AVX2's 6) ends
// with a 2 x 4 block, as pairs: AVX2 packed A value by value (10 % of a
// 512 x 512 product, Zen 3).
void pack_panel_rows(int64_t mr, int64_t kc, const float* src, int64_t rs, float* dst) {
  int64_t p = 0;
  for (; p + 4 <= kc; p += 4) {
    int64_t i0 = 0;
    for (; i0 + 4 <= mr; i0 += 4) {
      v4f r[4];
      for (int q = 0; q < 4; ++q) r[q] = load4(src + (i0 + q) * rs + p);
      transpose4(r);
      for (int q = 0; q < 4; ++q) store4(dst + (p + q) * mr + i0, r[q]);
    }
    if (i0 < mr) {  // rows i0, i0 + 1
      v4f lo, hi;
      detail::zip4(load4(src + i0 * rs + p), load4(src + (i0 + 1) * rs + p), &lo, &hi);
      float pairs[8];  // (row i0, row i0 + 1) at p, p + 1, p + 2, p + 3
      store4(pairs, lo);
      store4(pairs + 4, hi);
      for (int q = 0; q < 4; ++q) std::memcpy(dst + (p + q) * mr + i0, pairs + 2 * q, 2 * sizeof(float));
    }
  }
  for (; p < kc; ++p) {
    for (int64_t i = 0; i < mr; ++i) dst[p * mr + i] = src[i * rs + p];
  }
}

// dst[p * NR, +NR) = src[p * rs, +NR) for p < rows.
template <int64_t NR>
void copy_rows(int64_t rows, const float* src, int64_t rs, float* dst) {
  for (int64_t p = 0; p < rows; ++p) std::memcpy(dst + p * NR, src + p * rs, sizeof(float) * NR);
}

}  // namespace

void pack_a(const UkernelInfo& u, int64_t mc, int64_t kc, MatrixRef<const float> a, float* dst) {
  if (u.bf16) return (u.a_rows ? detail::pack_a_bf16_rows : detail::pack_a_bf16)(u.mr, mc, kc, a, dst);
  const int64_t mr = u.mr;
  for (int64_t r = 0; r < mc; r += mr) {
    const int64_t rows = std::min(mr, mc - r);
    const float* src = a.data + r * a.rs;
    if (a.rs == 1 && rows == mr) {  // column-major A: each p is a contiguous run of MR
      for (int64_t p = 0; p < kc; ++p) std::memcpy(dst + p * mr, src + p * a.cs, sizeof(float) * mr);
    } else if (a.cs == 1 && rows == mr && mr % 2 == 0) {
      pack_panel_rows(mr, kc, src, a.rs, dst);
    } else {
      for (int64_t i = 0; i < rows; ++i) {
        const float* row = src + i * a.rs;
        if (a.cs == 1) {
          for (int64_t p = 0; p < kc; ++p) dst[p * mr + i] = row[p];
        } else {
          for (int64_t p = 0; p < kc; ++p) dst[p * mr + i] = row[p * a.cs];
        }
      }
      for (int64_t i = rows; i < mr; ++i) {
        for (int64_t p = 0; p < kc; ++p) dst[p * mr + i] = 0.0f;
      }
    }
    dst += mr * kc;
  }
}

void pack_b_panel(const UkernelInfo& u, int64_t panel, int64_t nc, int64_t kc, MatrixRef<const float> b,
                  float* dst) {
  if (u.bf16) return detail::pack_b_panel_bf16(u.nr, panel, nc, kc, b, dst);
  const int64_t nr = u.nr;
  const int64_t j0 = panel * nr;
  const int64_t cols = std::min(nr, nc - j0);
  dst += panel * nr * kc;
  const float* src = b.data + j0 * b.cs;
  if (b.cs == 1 && cols == nr) {
    // A copy of constant size per kernel width compiles to vector moves (a
    // variable-size memcpy call per row cost about 10% of MobileNetV2).
    switch (nr) {
      case 8: return copy_rows<8>(kc, src, b.rs, dst);
      case 16: return copy_rows<16>(kc, src, b.rs, dst);
      case 32: return copy_rows<32>(kc, src, b.rs, dst);
      default:
        for (int64_t p = 0; p < kc; ++p) std::memcpy(dst + p * nr, src + p * b.rs, sizeof(float) * nr);
        return;
    }
  }
  if (b.rs == 1 && cols == nr && nr % 4 == 0) {  // B = W^T (a Linear's weight): columns contiguous along p
    pack_panel_rows(nr, kc, src, b.cs, dst);
    return;
  }
  for (int64_t p = 0; p < kc; ++p) {
    const float* row = src + p * b.rs;
    float* d = dst + p * nr;
    int64_t j = 0;
    for (; j < cols; ++j) d[j] = row[j * b.cs];
    for (; j < nr; ++j) d[j] = 0.0f;
  }
}

}  // namespace ember::cpu::detail
