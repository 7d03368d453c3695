// The AVX-512 float32 GEMM family (gemm_tile.h): the 12x32 micro-kernel of
// gemm.cc's blocked product and its edges (UkernelInfo::edge), the tiles with
// fewer than 32 valid columns or 12 valid rows.
#include <algorithm>

#include "kernels/cpu/gemm_tile.h"

#if RT_GEMM_X86
namespace ember::cpu::detail {
namespace {

// A pre-packed A (a convolution's weight, Winograd's U) comes from DRAM on
// every run once a model's weights outgrow the caches, at the rate the kernel
// consumes it (48 bytes a step), and the hardware prefetchers lag that
// stream. With kStreamA each step prefetches the A values 32 steps ahead:
// ResNet-18, one thread, Xeon: 0.86x the time (its 3x3 convolutions' weights
// are 9.4 MB each). An A packed per call sits in L2, where the extra
// instruction cost 2-3 % (the transformer), hence the two families
// (UkernelInfo::streamed). A prefetch past the buffer's end does not fault.
constexpr int64_t kPrefetchA = 32 * 12;

template <bool kStreamA>
__attribute__((always_inline)) inline void prefetch_a(const float* a) {
  if constexpr (kStreamA) _mm_prefetch(reinterpret_cast<const char*>(a + kPrefetchA), _MM_HINT_T0);
}

// A last panel's columns in a narrower vector: 8 or fewer take a 256-bit
// vector, not a 512-bit one (a panel of 24 columns: one of each). Zen 4 runs
// a 512-bit multiply-add as two 256-bit halves, so those cost half as much
// (MobileNetV2's and V3's projections to 24 and 40 channels). Wide<N>: the
// vector type of N > 0 columns, 16 at most.
template <bool kNarrow>
struct WideOf {
  using type = __m512;
};
template <>
struct WideOf<true> {
  using type = __m256;
};
template <int N>
using Wide = typename WideOf<(N <= 8)>::type;

__attribute__((target("avx512f,fma"), always_inline)) inline void load_b(const float* b, __m512* v) {
  *v = _mm512_loadu_ps(b);
}
__attribute__((target("avx512f,fma"), always_inline)) inline void load_b(const float* b, __m256* v) {
  *v = _mm256_loadu_ps(b);
}
__attribute__((target("avx512f,fma"), always_inline)) inline __m512 fma_b(float a, __m512 b, __m512 c) {
  return _mm512_fmadd_ps(_mm512_set1_ps(a), b, c);
}
__attribute__((target("avx512f,fma"), always_inline)) inline __m256 fma_b(float a, __m256 b, __m256 c) {
  return _mm256_fmadd_ps(_mm256_set1_ps(a), b, c);
}
__attribute__((target("avx512f,fma"), always_inline)) inline __m512 wide(__m512 v) { return v; }
__attribute__((target("avx512f,fma"), always_inline)) inline __m512 wide(__m256 v) {
  return _mm512_castpd_ps(_mm512_maskz_insertf64x4(0xFF, _mm512_setzero_pd(), _mm256_castps_pd(v), 0));
}

// --- AVX-512 12x32: 24 accumulators, 2 B vectors, embedded broadcasts --------
// MV < 12: the first MV rows only (a tile at the bottom edge: C_out = 64 is
// 5 x 12 + 4, and 4 rows cost 8 multiply-adds a step, not 24), each the same
// chain as in the full tile.
// ldb: the distance between B's rows (32 in a packed panel; B's row stride
// when it is read in place). kARows: A is read in place too, row i at
// a + i * lda (contiguous along k), rather than from a packed panel (12
// values a step); only its first MV rows are read. pf: pf_lines cache lines
// to bring into L2 (gemm.cc: a share of the next pre-packed B panel),
// spread over the steps (gemm_tile.h: SpreadPrefetch). kCols: the columns
// computed, 32, or a last panel's 8, 16 or 24 (Wide: in 256-bit halves).
template <int MV, bool kStreamA, bool kARows = false, int kCols = 32>
__attribute__((target("avx512f,fma"))) void rows_12x32_avx512(int64_t kc, const float* __restrict a,
                                                                  const float* __restrict b, int64_t ldb, float* c,
                                                                  int64_t rs, int64_t cs, bool accumulate,
                                                                  int64_t mv, int64_t nv, const TileEpilogue* e,
                                                                  int64_t lda = 0, const char* pf = nullptr,
                                                                  int64_t pf_lines = 0) {
  using V0 = Wide<std::min(kCols, 16)>;                 // columns 0-15
  using V1 = Wide<kCols <= 16 ? 16 : kCols - 16>;      // columns 16-31 (none: kCols <= 16)
#define EMBER_GEMM_ZERO2(i, V, unused) V0 c##i##_0 = V0{}; V1 c##i##_1 = V1{};
  EMBER_GEMM_ROWS12(EMBER_GEMM_ZERO2, , )
#undef EMBER_GEMM_ZERO2
  SpreadPrefetch spread(pf, pf_lines, kc);
#pragma GCC unroll 2
  for (int64_t p = 0; p < kc; ++p) {
    V0 b0;
    V1 b1;
    load_b(b, &b0);
    if constexpr (kCols > 16) load_b(b + 16, &b1);
    prefetch_a<kStreamA>(a);
    spread.step(p);
#define EMBER_GEMM_STEP(i, V, unused)                                       \
  if constexpr (i < MV) {                                                   \
    const float ai = kARows ? a[i * lda] : a[i];                            \
    c##i##_0 = fma_b(ai, b0, c##i##_0);                                     \
    if constexpr (kCols > 16) c##i##_1 = fma_b(ai, b1, c##i##_1);           \
  }
    EMBER_GEMM_ROWS12(EMBER_GEMM_STEP, , )
#undef EMBER_GEMM_STEP
    a += kARows ? 1 : 12;
    b += ldb;
  }
  spread.rest();  // more lines than steps
#define EMBER_GEMM_WIDE(i, V, unused) {wide(c##i##_0), wide(c##i##_1)},
  __m512 acc[12][2] = {EMBER_GEMM_ROWS12(EMBER_GEMM_WIDE, , )};
#undef EMBER_GEMM_WIDE
  store_12x32_avx512(acc, c, rs, cs, accumulate, mv, nv, e);
}

// --- AVX-512 right edges of the 12x32 tiles ---------------------------------
// A tile with nv < 32 valid columns (the packed B panel is still 32 wide, zero
// past nv) need not pay 24 multiply-adds a step: 16 columns take one B vector
// (12 a step, V16), and up to kEdgeColumns more (R) take the 12 A values of a
// step as one vector, each B value broadcast (one a column), in the same loop
// so that their chains of dependent multiply-adds overlap. A 7x7 output's 49
// columns are then 32 + (16 + 1): 37 a step where a second full tile took 48;
// 14x14's 196 end with a 4-column tile. Each output is the same chain of
// fused multiply-adds over k, stored through the same epilogue: bitwise the
// results of the full kernel.
constexpr int64_t kEdgeColumns = 8;

template <bool V16, int R, bool kStreamA>
__attribute__((target("avx512f,fma"))) void edge_avx512(int64_t kc, const float* __restrict a, const float* __restrict b,
                                                     float* c, int64_t rs, int64_t cs, bool accumulate, int64_t mv,
                                                     int64_t nv, const TileEpilogue* e) {
  constexpr int64_t j0 = V16 ? 16 : 0;  // the first column of the R columns
#define EMBER_GEMM_ZERO1(i, V, init) V c##i = init;
  EMBER_GEMM_ROWS12(EMBER_GEMM_ZERO1, __m512, _mm512_setzero_ps())
#undef EMBER_GEMM_ZERO1
#define EMBER_GEMM_COLS8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define EMBER_GEMM_ZERO1(j) __m512 d##j = _mm512_setzero_ps();
  EMBER_GEMM_COLS8(EMBER_GEMM_ZERO1)
#undef EMBER_GEMM_ZERO1
  for (int64_t p = 0; p < kc; ++p) {
    prefetch_a<kStreamA>(a);
    if constexpr (V16) {
      const __m512 b0 = _mm512_loadu_ps(b);
#define EMBER_GEMM_STEP(i, V, unused) c##i = _mm512_fmadd_ps(_mm512_set1_ps(a[i]), b0, c##i);
      EMBER_GEMM_ROWS12(EMBER_GEMM_STEP, , )
#undef EMBER_GEMM_STEP
    }
    if constexpr (R > 0) {
      const __m512 av = _mm512_maskz_loadu_ps(0x0fff, a);  // lanes 12-15 unused
#define EMBER_GEMM_STEP(j) \
  if constexpr (R > j) d##j = _mm512_fmadd_ps(av, _mm512_set1_ps(b[j0 + j]), d##j);
      EMBER_GEMM_COLS8(EMBER_GEMM_STEP)
#undef EMBER_GEMM_STEP
    }
    a += 12;
    b += 32;  // the panel's width
  }
  if constexpr (V16) {
#define EMBER_GEMM_ONE(i, V, unused) c##i,
    __m512 acc[12] = {EMBER_GEMM_ROWS12(EMBER_GEMM_ONE, , )};
#undef EMBER_GEMM_ONE
    if (nv >= 16 && cs == 1) {
      for (int i = 0; i < mv; ++i) {
        float* ci = c + i * rs;
        __m512 v = accumulate ? _mm512_add_ps(acc[i], _mm512_loadu_ps(ci)) : acc[i];
        _mm512_storeu_ps(ci, e != nullptr ? epilogue16_avx512(v, *e, i, 0) : v);
      }
    } else {
      alignas(kGemmAlign) float t[12 * 16];
      for (int i = 0; i < 12; ++i) _mm512_store_ps(t + i * 16, acc[i]);
      store_tile(t, 16, c, rs, cs, accumulate, mv, std::min<int64_t>(nv, 16), e);
    }
  }
  if constexpr (R > 0) {
    alignas(kGemmAlign) float t[kEdgeColumns][16];  // t[j][i]: row i of column j0 + j
#define EMBER_GEMM_PUT(j) _mm512_store_ps(t[j], d##j);
    EMBER_GEMM_COLS8(EMBER_GEMM_PUT)
#undef EMBER_GEMM_PUT
    for (int64_t i = 0; i < mv; ++i) {
      for (int64_t j = 0; j < R; ++j) {
        float& cij = c[i * rs + (j0 + j) * cs];
        const float v = accumulate ? t[j][i] + cij : t[j][i];
        cij = e != nullptr ? epilogue(v, *e, i, j0 + j) : v;
      }
    }
  }
#undef EMBER_GEMM_COLS8
}

}  // namespace

template <bool kStreamA>
__attribute__((target("avx512f,fma"))) void ukernel_12x32_avx512(int64_t kc, const float* __restrict a,
                                                              const float* __restrict b, float* c,
                                                              int64_t rs, int64_t cs, bool accumulate,
                                                              int64_t mv, int64_t nv, const TileEpilogue* e) {
  rows_12x32_avx512<12, kStreamA>(kc, a, b, 32, c, rs, cs, accumulate, mv, nv, e);
}

namespace {

template <int MV, bool kStreamA>
__attribute__((target("avx512f,fma"))) void rows_packed(int64_t kc, const float* __restrict a, const float* __restrict b,
                                                     float* c, int64_t rs, int64_t cs, bool accumulate, int64_t mv,
                                                     int64_t nv, const TileEpilogue* e) {
  rows_12x32_avx512<MV, kStreamA>(kc, a, b, 32, c, rs, cs, accumulate, mv, nv, e);
}

}  // namespace

template <bool S>
__attribute__((target("avx512f,fma"))) void in_place_12x32_avx512(int64_t kc, const float* __restrict a, int64_t lda,
                                                               const float* __restrict b, int64_t ldb, float* c,
                                                               int64_t rs, int64_t cs, bool accumulate, int64_t mv,
                                                               int64_t nv, const TileEpilogue* e, const char* pf,
                                                               int64_t pf_lines) {
  using Rows = void (*)(int64_t, const float*, const float*, int64_t, float*, int64_t, int64_t, bool, int64_t, int64_t,
                        const TileEpilogue*, int64_t, const char*, int64_t);
#define EMBER_GEMM_MV(A)                                                                                         \
  {nullptr,                                                                                                      \
   &rows_12x32_avx512<1, S, A>, &rows_12x32_avx512<2, S, A>,  &rows_12x32_avx512<3, S, A>,                       \
   &rows_12x32_avx512<4, S, A>, &rows_12x32_avx512<5, S, A>,  &rows_12x32_avx512<6, S, A>,                       \
   &rows_12x32_avx512<7, S, A>, &rows_12x32_avx512<8, S, A>,  &rows_12x32_avx512<9, S, A>,                       \
   &rows_12x32_avx512<10, S, A>, &rows_12x32_avx512<11, S, A>, &rows_12x32_avx512<12, S, A>}
  static constexpr Rows kRows[2][13] = {EMBER_GEMM_MV(false), EMBER_GEMM_MV(true)};
#undef EMBER_GEMM_MV
  kRows[lda != 0][std::clamp<int64_t>(mv, 1, 12)](kc, a, b, ldb, c, rs, cs, accumulate, mv, nv, e, lda, pf, pf_lines);
}

namespace {
// UkernelInfo::sweep's rows: the micro-kernel inlined (flatten) for each panel.
template <bool kARows>
__attribute__((target("avx512f,fma"), flatten)) void sweep_rows_avx512(int64_t kc, const float* a, int64_t lda,
                                                                   const float* b, int64_t n, float* c, int64_t rs,
                                                                   bool accumulate, const TileEpilogue* e) {
  TileEpilogue t = e != nullptr ? *e : TileEpilogue{};
  const TileEpilogue* te = e != nullptr ? &t : nullptr;
  for (int64_t p = 0; p < n / 32; ++p, b += 32 * kc, c += 32) {
    rows_12x32_avx512<12, false, kARows>(kc, a, b, 32, c, rs, 1, accumulate, 12, 32, te, lda);
    if (t.col_bias != nullptr) t.col_bias += 32;
  }
  const int64_t last = n % 32;  // a last panel's columns: the vectors or halves that hold them
  if (last == 0) return;
  // (Direct calls, which flatten inlines with cs and mv known.)
  if (last <= 8) {
    rows_12x32_avx512<12, false, kARows, 8>(kc, a, b, 32, c, rs, 1, accumulate, 12, last, te, lda);
  } else if (last <= 16) {
    rows_12x32_avx512<12, false, kARows, 16>(kc, a, b, 32, c, rs, 1, accumulate, 12, last, te, lda);
  } else if (last <= 24) {
    rows_12x32_avx512<12, false, kARows, 24>(kc, a, b, 32, c, rs, 1, accumulate, 12, last, te, lda);
  } else {
    rows_12x32_avx512<12, false, kARows>(kc, a, b, 32, c, rs, 1, accumulate, 12, last, te, lda);
  }
}
}  // namespace

void sweep_12x32_avx512(int64_t kc, const float* a, int64_t lda, const float* b, int64_t n, float* c, int64_t rs,
                        bool accumulate, const TileEpilogue* e) {
  (lda != 0 ? &sweep_rows_avx512<true> : &sweep_rows_avx512<false>)(kc, a, lda, b, n, c, rs, accumulate, e);
}

// UkernelInfo::edge of the 12x32 kernel: nv < 32 (the right edge), or a full
// width and mv < 12 (the bottom edge).
template <bool S>
__attribute__((target("avx512f,fma"))) void edge_12x32_avx512(int64_t kc, const float* __restrict a,
                                                           const float* __restrict b, float* c, int64_t rs,
                                                           int64_t cs, bool accumulate, int64_t mv, int64_t nv,
                                                           const TileEpilogue* e) {
  // By nv: 1-8 columns alone, 9-16 one vector, 17-24 one vector and 1-8 columns.
  static constexpr Ukernel kEdges[25] = {
      nullptr,
      &edge_avx512<false, 1, S>, &edge_avx512<false, 2, S>, &edge_avx512<false, 3, S>, &edge_avx512<false, 4, S>,
      &edge_avx512<false, 5, S>, &edge_avx512<false, 6, S>, &edge_avx512<false, 7, S>, &edge_avx512<false, 8, S>,
      &edge_avx512<true, 0, S>,  &edge_avx512<true, 0, S>,  &edge_avx512<true, 0, S>,  &edge_avx512<true, 0, S>,
      &edge_avx512<true, 0, S>,  &edge_avx512<true, 0, S>,  &edge_avx512<true, 0, S>,  &edge_avx512<true, 0, S>,
      &edge_avx512<true, 1, S>,  &edge_avx512<true, 2, S>,  &edge_avx512<true, 3, S>,  &edge_avx512<true, 4, S>,
      &edge_avx512<true, 5, S>,  &edge_avx512<true, 6, S>,  &edge_avx512<true, 7, S>,  &edge_avx512<true, 8, S>};
  static constexpr Ukernel kRows[12] = {
      nullptr,
      &rows_packed<1, S>, &rows_packed<2, S>, &rows_packed<3, S>, &rows_packed<4, S>,  &rows_packed<5, S>,
      &rows_packed<6, S>, &rows_packed<7, S>, &rows_packed<8, S>, &rows_packed<9, S>, &rows_packed<10, S>,
      &rows_packed<11, S>};
  if (nv >= 32 && mv >= 1 && mv < 12) return kRows[mv](kc, a, b, c, rs, cs, accumulate, mv, nv, e);
  if (nv < 1 || nv > 16 + kEdgeColumns) return ukernel_12x32_avx512<S>(kc, a, b, c, rs, cs, accumulate, mv, nv, e);
  kEdges[nv](kc, a, b, c, rs, cs, accumulate, mv, nv, e);
}

#define EMBER_GEMM_INSTANTIATE(S)                                                                                  \
  template void ukernel_12x32_avx512<S>(int64_t, const float*, const float*, float*, int64_t, int64_t, bool,      \
                                        int64_t, int64_t, const TileEpilogue*);                                    \
  template void edge_12x32_avx512<S>(int64_t, const float*, const float*, float*, int64_t, int64_t, bool, int64_t, \
                                     int64_t, const TileEpilogue*);                                                \
  template void in_place_12x32_avx512<S>(int64_t, const float*, int64_t, const float*, int64_t, float*, int64_t,  \
                                         int64_t, bool, int64_t, int64_t, const TileEpilogue*, const char*, int64_t);
EMBER_GEMM_INSTANTIATE(false)
EMBER_GEMM_INSTANTIATE(true)
#undef EMBER_GEMM_INSTANTIATE

}  // namespace ember::cpu::detail
#endif  // RT_GEMM_X86
