// The portable (8x8) and AVX2 (6x16) float32 GEMM micro-kernels (gemm_tile.h),
// beside the AVX-512 family of gemm_avx512.cc.
#include <algorithm>

#include "kernels/cpu/gemm_tile.h"
#include "kernels/cpu/gemv.h"  // v4f

namespace ember::cpu::detail {

// --- portable 8x8 (GCC/Clang vector extensions: SSE on x86, NEON on ARM) ----

void ukernel_8x8_portable(int64_t kc, const float* __restrict a, const float* __restrict b, float* c,
                          int64_t rs, int64_t cs, bool accumulate, int64_t mv, int64_t nv,
                          const TileEpilogue* e) {
  EMBER_GEMM_ROWS8(EMBER_GEMM_ZERO, v4f, (v4f{0, 0, 0, 0}))
  for (int64_t p = 0; p < kc; ++p) {
    const v4f b0 = load4(b), b1 = load4(b + 4);
#define EMBER_GEMM_STEP(i, V, unused)         \
  {                                           \
    const v4f ai = v4f{a[i], a[i], a[i], a[i]}; \
    c##i##_0 += ai * b0;                      \
    c##i##_1 += ai * b1;                      \
  }
    EMBER_GEMM_ROWS8(EMBER_GEMM_STEP, , )
#undef EMBER_GEMM_STEP
    a += 8;
    b += 8;
  }
  v4f acc[8][2] = {EMBER_GEMM_ROWS8(EMBER_GEMM_PAIR, , )};
  if (mv == 8 && nv == 8 && cs == 1 && e == nullptr) {
    for (int i = 0; i < 8; ++i) {
      float* ci = c + i * rs;
      if (accumulate) {
        acc[i][0] += load4(ci);
        acc[i][1] += load4(ci + 4);
      }
      store4(ci, acc[i][0]);
      store4(ci + 4, acc[i][1]);
    }
    return;
  }
  alignas(kGemmAlign) float t[8 * 8];
  for (int i = 0; i < 8; ++i) {
    store4(t + i * 8, acc[i][0]);
    store4(t + i * 8 + 4, acc[i][1]);
  }
  store_tile(t, 8, c, rs, cs, accumulate, mv, nv, e);
}

#if RT_GEMM_X86
// --- AVX2 + FMA 6x16: 12 accumulators, 2 B vectors, 1 broadcast --------------
// As gemm_avx512.cc's rows_12x32_avx512: MV < 6 computes only the first MV
// rows (a bottom edge: MobileNetV2's 16 output channels are 6 + 6 + 4); ldb is
// the distance between B's rows (16 in a packed panel, B's row stride read in
// place); kARows reads A's rows in place, lda apart; pf_lines cache lines from
// pf are brought into L2, spread over the steps. Each output is the same chain
// of multiply-adds and the same epilogue whichever way its operands are read.
template <int MV, bool kARows, bool kHalf = false>
__attribute__((target("avx2,fma"))) void rows_6x16_avx2(int64_t kc, const float* __restrict a,
                                                        const float* __restrict b, int64_t ldb, float* c, int64_t rs,
                                                        int64_t cs, bool accumulate, int64_t mv, int64_t nv,
                                                        const TileEpilogue* e, int64_t lda, const char* pf,
                                                        int64_t pf_lines) {
  EMBER_GEMM_ROWS6(EMBER_GEMM_ZERO, __m256, _mm256_setzero_ps())
  SpreadPrefetch spread(pf, pf_lines, kc);
#pragma GCC unroll 4
  for (int64_t p = 0; p < kc; ++p) {
    const __m256 b0 = _mm256_loadu_ps(b), b1 = kHalf ? b0 : _mm256_loadu_ps(b + 8);
    spread.step(p);
#define EMBER_GEMM_STEP(i, V, unused)                                          \
  if constexpr (i < MV) {                                                      \
    const __m256 ai = _mm256_broadcast_ss(kARows ? a + i * lda : a + i);       \
    c##i##_0 = _mm256_fmadd_ps(ai, b0, c##i##_0);                              \
    if constexpr (!kHalf) c##i##_1 = _mm256_fmadd_ps(ai, b1, c##i##_1);        \
  }
    EMBER_GEMM_ROWS6(EMBER_GEMM_STEP, , )
#undef EMBER_GEMM_STEP
    a += kARows ? 1 : 6;
    b += ldb;
  }
  spread.rest();  // more lines than steps
  if (nv == 16 && cs == 1) {
    // Row by row from the named accumulators (a loop over an array of them
    // kept them on the stack: 24 more loads and stores a tile).
#define EMBER_GEMM_STORE(i, V, unused)                         \
  if constexpr (i < MV) {                                      \
    if (i < mv) {                                              \
      __m256 row[2] = {c##i##_0, c##i##_1};                    \
      float* ci = c + i * rs;                                  \
      if (accumulate) {                                        \
        row[0] = _mm256_add_ps(row[0], _mm256_loadu_ps(ci));   \
        row[1] = _mm256_add_ps(row[1], _mm256_loadu_ps(ci + 8)); \
      }                                                        \
      if (e != nullptr) epilogue_avx2(row, *e, i);             \
      _mm256_storeu_ps(ci, row[0]);                            \
      _mm256_storeu_ps(ci + 8, row[1]);                        \
    }                                                          \
  }
    EMBER_GEMM_ROWS6(EMBER_GEMM_STORE, , )
#undef EMBER_GEMM_STORE
    return;
  }
  __m256 acc[6][2] = {EMBER_GEMM_ROWS6(EMBER_GEMM_PAIR, , )};
  if (cs == 1) {
    // A right edge (nv < 16): the same epilogue on vectors, stored under lane
    // masks (the tile through t and store_tile, value by value, was a third of
    // a channels_last 1x1 convolution to 24 channels: half its tiles are 8 wide).
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i m0 = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(nv)), lanes);
    const __m256i m1 = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(nv) - 8), lanes);
    TileEpilogue edge;
    alignas(kGemmAlign) float col_bias[16] = {};  // the tile's column biases, zero past nv (read as two vectors)
    if (e != nullptr && e->col_bias != nullptr) {
      for (int64_t j = 0; j < nv; ++j) col_bias[j] = e->col_bias[j];
      edge = *e;
      edge.col_bias = col_bias;
      e = &edge;
    }
    for (int i = 0; i < MV && i < mv; ++i) {
      float* ci = c + i * rs;
      if (accumulate) {
        acc[i][0] = _mm256_add_ps(acc[i][0], nv >= 8 ? _mm256_loadu_ps(ci) : _mm256_maskload_ps(ci, m0));
        acc[i][1] = _mm256_add_ps(acc[i][1], _mm256_maskload_ps(ci + 8, m1));
      }
      if (e != nullptr) epilogue_avx2(acc[i], *e, i);
      if (nv >= 8) {
        _mm256_storeu_ps(ci, acc[i][0]);
      } else {
        _mm256_maskstore_ps(ci, m0, acc[i][0]);
      }
      if (nv > 8) _mm256_maskstore_ps(ci + 8, m1, acc[i][1]);
    }
    return;
  }
  alignas(kGemmAlign) float t[6 * 16];
  for (int i = 0; i < 6; ++i) {
    _mm256_store_ps(t + i * 16, acc[i][0]);
    _mm256_store_ps(t + i * 16 + 8, acc[i][1]);
  }
  store_tile(t, 16, c, rs, cs, accumulate, std::min<int64_t>(mv, MV), nv, e);
}

void ukernel_6x16_avx2(int64_t kc, const float* a, const float* b, float* c, int64_t rs, int64_t cs,
                       bool accumulate, int64_t mv, int64_t nv, const TileEpilogue* e) {
  rows_6x16_avx2<6, false>(kc, a, b, 16, c, rs, cs, accumulate, mv, nv, e, 0, nullptr, 0);
}

namespace {
template <int MV, bool kHalf>
void rows_packed_avx2(int64_t kc, const float* a, const float* b, float* c, int64_t rs, int64_t cs,
                      bool accumulate, int64_t mv, int64_t nv, const TileEpilogue* e) {
  rows_6x16_avx2<MV, false, kHalf>(kc, a, b, 16, c, rs, cs, accumulate, mv, nv, e, 0, nullptr, 0);
}
}  // namespace

// Tiles of fewer rows compute only those; tiles of at most 8 valid columns
// (a channels_last product's last panel: 24 = 16 + 8 output channels) only
// the first of the panel's two vectors.
void edge_6x16_avx2(int64_t kc, const float* a, const float* b, float* c, int64_t rs, int64_t cs,
                    bool accumulate, int64_t mv, int64_t nv, const TileEpilogue* e) {
#define EMBER_GEMM_MV(H)                                                                                    \
  {&rows_packed_avx2<6, H>, &rows_packed_avx2<1, H>, &rows_packed_avx2<2, H>, &rows_packed_avx2<3, H>,      \
   &rows_packed_avx2<4, H>, &rows_packed_avx2<5, H>, &rows_packed_avx2<6, H>}
  static constexpr Ukernel kRows[2][7] = {EMBER_GEMM_MV(false), EMBER_GEMM_MV(true)};
#undef EMBER_GEMM_MV
  kRows[nv <= 8][std::clamp<int64_t>(mv, 0, 6)](kc, a, b, c, rs, cs, accumulate, mv, nv, e);
}

void in_place_6x16_avx2(int64_t kc, const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t rs,
                        int64_t cs, bool accumulate, int64_t mv, int64_t nv, const TileEpilogue* e, const char* pf,
                        int64_t pf_lines) {
  using Rows = void (*)(int64_t, const float*, const float*, int64_t, float*, int64_t, int64_t, bool, int64_t, int64_t,
                        const TileEpilogue*, int64_t, const char*, int64_t);
#define EMBER_GEMM_MV(A, H)                                                                                    \
  {&rows_6x16_avx2<6, A, H>, &rows_6x16_avx2<1, A, H>, &rows_6x16_avx2<2, A, H>, &rows_6x16_avx2<3, A, H>,      \
   &rows_6x16_avx2<4, A, H>, &rows_6x16_avx2<5, A, H>, &rows_6x16_avx2<6, A, H>}
  static constexpr Rows kRows[2][2][7] = {{EMBER_GEMM_MV(false, false), EMBER_GEMM_MV(false, true)},
                                          {EMBER_GEMM_MV(true, false), EMBER_GEMM_MV(true, true)}};
#undef EMBER_GEMM_MV
  kRows[lda != 0][nv <= 8][std::clamp<int64_t>(mv, 0, 6)](kc, a, b, ldb, c, rs, cs, accumulate, mv, nv, e, lda, pf,
                                                          pf_lines);
}

namespace {
// UkernelInfo::sweep's rows: the micro-kernel inlined (flatten) for each panel.
template <bool kARows>
__attribute__((target("avx2,fma"), flatten)) void sweep_rows_avx2(int64_t kc, const float* a, int64_t lda,
                                                                  const float* b, int64_t n, float* c, int64_t rs,
                                                                  bool accumulate, const TileEpilogue* e) {
  TileEpilogue t = e != nullptr ? *e : TileEpilogue{};
  const TileEpilogue* te = e != nullptr ? &t : nullptr;
  for (int64_t p = 0; p < n / 16; ++p, b += 16 * kc, c += 16) {
    rows_6x16_avx2<6, kARows>(kc, a, b, 16, c, rs, 1, accumulate, 6, 16, te, lda, nullptr, 0);
    if (t.col_bias != nullptr) t.col_bias += 16;
  }
  if (n % 16 == 0) return;
  if (n % 16 <= 8) {
    rows_6x16_avx2<6, kARows, true>(kc, a, b, 16, c, rs, 1, accumulate, 6, n % 16, te, lda, nullptr, 0);
  } else {
    rows_6x16_avx2<6, kARows>(kc, a, b, 16, c, rs, 1, accumulate, 6, n % 16, te, lda, nullptr, 0);
  }
}
}  // namespace

void sweep_6x16_avx2(int64_t kc, const float* a, int64_t lda, const float* b, int64_t n, float* c, int64_t rs,
                     bool accumulate, const TileEpilogue* e) {
  (lda != 0 ? &sweep_rows_avx2<true> : &sweep_rows_avx2<false>)(kc, a, lda, b, n, c, rs, accumulate, e);
}

namespace {
// UkernelInfo::narrow for NV columns: 8 / NV tiles side by side, G * NV
// chains of multiply-adds in flight (a lone tile's NV chains, 6 rows in a
// vector, waited on the latency); each chain is the 6x16 tile's, in its order.
// A panel's row of 6 is read as a vector of 8 (the last one masked).
#define EMBER_GEMM_CHAINS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
template <int NV>
__attribute__((target("avx2,fma"))) void narrow_cols_avx2(int64_t kc, const float* a, int64_t mc, const float* b,
                                                           float* c, int64_t rs, int64_t cs, bool accumulate,
                                                           const TileEpilogue* e) {
  constexpr int G = NV == 1 ? 8 : NV == 2 ? 4 : 2;
  const __m256i six = _mm256_setr_epi32(-1, -1, -1, -1, -1, -1, 0, 0);
  const int64_t tiles = (mc + 5) / 6;
  for (int64_t t0 = 0; t0 < tiles; t0 += G) {
    const float* at[G];  // a group's tiles (past the last: the last again, not stored)
    for (int g = 0; g < G; ++g) at[g] = a + std::min<int64_t>(t0 + g, tiles - 1) * 6 * kc;
#define EMBER_GEMM_ZERO1(q) __m256 c##q = _mm256_setzero_ps();
    EMBER_GEMM_CHAINS(EMBER_GEMM_ZERO1)
#undef EMBER_GEMM_ZERO1
#define EMBER_GEMM_MAC(q)                                                                                   \
  if constexpr (q < G * NV) {                                                                               \
    c##q = _mm256_fmadd_ps(EMBER_GEMM_LOAD(at[q / NV] + 6 * p), _mm256_broadcast_ss(b + 16 * p + q % NV), c##q); \
  }
    int64_t p = 0;
#define EMBER_GEMM_LOAD(x) _mm256_loadu_ps(x)
    for (; p + 1 < kc; ++p) {
      EMBER_GEMM_CHAINS(EMBER_GEMM_MAC)
    }
#undef EMBER_GEMM_LOAD
#define EMBER_GEMM_LOAD(x) _mm256_maskload_ps(x, six)
    EMBER_GEMM_CHAINS(EMBER_GEMM_MAC)
#undef EMBER_GEMM_LOAD
#undef EMBER_GEMM_MAC
#define EMBER_GEMM_LIST(q) c##q,
    const __m256 acc[8] = {EMBER_GEMM_CHAINS(EMBER_GEMM_LIST)};
#undef EMBER_GEMM_LIST
    for (int g = 0; g < G && t0 + g < tiles; ++g) {
      alignas(kGemmAlign) float t[6 * 16], col[8];
      for (int j = 0; j < NV; ++j) {
        _mm256_storeu_ps(col, acc[g * NV + j]);
        for (int i = 0; i < 6; ++i) t[i * 16 + j] = col[i];
      }
      const int64_t r0 = (t0 + g) * 6;
      TileEpilogue te = e != nullptr ? *e : TileEpilogue{};
      if (te.row_bias != nullptr) te.row_bias += r0;
      store_tile(t, 16, c + r0 * rs, rs, cs, accumulate, std::min<int64_t>(6, mc - r0), NV,
                 e != nullptr ? &te : nullptr);
    }
  }
}
#undef EMBER_GEMM_CHAINS
}  // namespace

void narrow_6x16_avx2(int64_t kc, const float* a, int64_t mc, const float* b, int64_t nv, float* c, int64_t rs,
                      int64_t cs, bool accumulate, const TileEpilogue* e) {
  static constexpr void (*kCols[4])(int64_t, const float*, int64_t, const float*, float*, int64_t, int64_t, bool,
                                    const TileEpilogue*) = {&narrow_cols_avx2<1>, &narrow_cols_avx2<2>,
                                                           &narrow_cols_avx2<3>, &narrow_cols_avx2<4>};
  kCols[std::clamp<int64_t>(nv, 1, 4) - 1](kc, a, mc, b, c, rs, cs, accumulate, e);
}

#endif  // RT_GEMM_X86

}  // namespace ember::cpu::detail
