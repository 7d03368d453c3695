// Internal to kernels/cpu's GEMM (gemm.cc, gemm_avx512.cc, gemm_bf16.cc): the
// micro-tile's epilogue and stores, which every micro-kernel family shares,
// the AVX-512 float32 family and the bfloat16 family (gemm_bf16.cc: AVX-512
// BF16, 12x32, float32 accumulators).
// A bf16 packed panel holds pairs along K: the 32-bit slot of row (column) i
// at pair q is bf16(X[i, 2q]) in its low half and bf16(X[i, 2q + 1]) in its
// high half (0 past K), so a K block of kc takes (kc + 1) / 2 slots per row
// where float32 takes kc, in the same panel order.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/gemm.h"
#include "runtime/graph/op_params.h"  // hardswish_value

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define RT_GEMM_X86 1
#else
#define RT_GEMM_X86 0
#endif

namespace ember::cpu::detail {

constexpr size_t kGemmAlign = 64;

// The micro-kernels keep their accumulators in named variables c<row>_<0|1>:
// GCC keeps an accumulator array indexed in the k loop in memory and stores it
// back on every step (three times slower on AVX2), even with the loop unrolled.
#define EMBER_GEMM_ROWS6(X, V, init) X(0, V, init) X(1, V, init) X(2, V, init) X(3, V, init) X(4, V, init) X(5, V, init)
#define EMBER_GEMM_ROWS8(X, V, init) EMBER_GEMM_ROWS6(X, V, init) X(6, V, init) X(7, V, init)
#define EMBER_GEMM_ROWS12(X, V, init) \
  EMBER_GEMM_ROWS8(X, V, init) X(8, V, init) X(9, V, init) X(10, V, init) X(11, V, init)
#define EMBER_GEMM_ZERO(i, V, init) V c##i##_0 = init, c##i##_1 = init;
#define EMBER_GEMM_PAIR(i, V, init) {c##i##_0, c##i##_1},

// The epilogue of one micro-tile: GemmEpilogue's biases offset to the tile,
// each applied only at the K block it belongs to (none: null, clamp false).
struct TileEpilogue {
  const float* row_bias;
  const float* col_bias;
  bool clamp;
  float lo, hi;
  bool hardswish;
};

using Ukernel = void (*)(int64_t kc, const float* a, const float* b, float* c, int64_t rs, int64_t cs,
                         bool accumulate, int64_t mv, int64_t nv, const TileEpilogue* e);
// A full-width tile (nv = nr; with UkernelInfo::in_place_edges any nv, the
// columns past it zero in a packed B) with mv <= mr valid rows that reads B's
// rows ldb floats apart (B read in place, its columns contiguous; a packed
// panel: ldb = nr) and A's rows lda floats apart (A read in place, contiguous
// along k; lda = 0: a packed panel), and brings pf_lines cache lines from pf on
// into L2 along the way (none: 0).
using InPlaceUkernel = void (*)(int64_t kc, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                                int64_t rs, int64_t cs, bool accumulate, int64_t mv, int64_t nv, const TileEpilogue* e,
                                const char* pf, int64_t pf_lines);

// A row of tiles: one full mr-row tile of A (a packed panel: lda = 0; else
// read in place, its rows lda floats apart) against n columns of a packed B
// (its panels side by side, nr x kc each, the last zero-padded), C's columns
// 0 to n; e is the first tile's epilogue (its column bias moves along). A
// shallow product's tiles are short (kc <= 64 steps): a call each cost about
// as much as their multiply-adds. An A read in place serves every panel of a
// row of tiles from L1.
using SweepUkernel = void (*)(int64_t kc, const float* a, int64_t lda, const float* b, int64_t n, float* c,
                              int64_t rs, bool accumulate, const TileEpilogue* e);

// A right edge of nv <= 4 valid columns (the first of a packed B panel,
// nr wide) for every tile of a packed A block of mc rows, C's rows rs apart
// from c; e is the first tile's epilogue (its row bias moves along). Each
// value is the full tile's chain of multiply-adds, bit for bit: a tile of
// its own spent a step's latency on a column or two (ResNet-18's 7 x 7
// convolutions: 49 = 3 x 16 + 1 columns).
using NarrowUkernel = void (*)(int64_t kc, const float* a, int64_t mc, const float* b, int64_t nv, float* c,
                               int64_t rs, int64_t cs, bool accumulate, const TileEpilogue* e);

// A micro-kernel family (gemm.cc picks one by CPU features) and how it is used.
struct UkernelInfo {
  int64_t mr, nr, mc;  // tile rows and columns; rows of a packed A block (a multiple of mr)
  Ukernel fn;
  const char* name;
  GemmIsa isa;
  bool bf16 = false;  // bf16 panels (gemm_tile.h: K pairs per 32-bit slot)
  Ukernel edge = nullptr;  // for tiles of fewer than nr valid columns or mr valid rows (null: fn)
  InPlaceUkernel in_place = nullptr;  // full-width tiles of a B with contiguous rows, unpacked (null: none)
  // The same family prefetching A ahead, for a pre-packed A (gemm_avx512.cc; null: this one).
  const UkernelInfo* streamed = nullptr;
  bool a_rows = false;  // bf16 A panels of rows (detail::pack_a_bf16_rows: the AMX family)
  SweepUkernel sweep = nullptr;  // rows of tiles of a shallow product (null: a call per tile)
  bool in_place_edges = false;  // in_place takes right edges (nv < nr) of a packed B too
  NarrowUkernel narrow = nullptr;  // right edges of nv <= 4 columns, a packed A block a call (null: none)
};

// Packs rows [0, mc) x depth [0, kc) of A into u.mr-tall panels (gemm_pack.cc):
// panel r holds, for each p, the mr values A[r * mr + i, p] (zero past mc).
void pack_a(const UkernelInfo& u, int64_t mc, int64_t kc, MatrixRef<const float> a, float* dst);
// Packs u.nr-wide column panel `panel` (columns [panel * nr, +nr) of the
// block, nc columns in all) of the kc x nc block of B: for each p, nr values
// B[p, j] (zero past nc), at dst + panel * nr * kc.
void pack_b_panel(const UkernelInfo& u, int64_t panel, int64_t nc, int64_t kc, MatrixRef<const float> b, float* dst);

#if RT_GEMM_X86
// Brings `lines` cache lines from pf on into L2, one at every kc / lines-th
// step of a micro-kernel's loop (step(p)), the rest at its end (rest()):
// issued in one burst before a tile they stalled the core once the line fill
// buffers filled (the instruction after the prefetches held 9 % of a BERT
// fp32 run at batch 1, one thread, Xeon).
struct SpreadPrefetch {
  const char* pf;
  int64_t lines, every, due = 0;
  SpreadPrefetch(const char* from, int64_t n, int64_t kc)
      : pf(from), lines(n), every(n > 0 ? (kc / n > 1 ? kc / n : 1) : kc + 1) {}
  __attribute__((always_inline)) void step(int64_t p) {
    if (p == due && lines > 0) {
      _mm_prefetch(pf, _MM_HINT_T1);
      pf += 64;
      --lines;
      due += every;
    }
  }
  __attribute__((always_inline)) void rest() {
    for (; lines > 0; --lines, pf += 64) _mm_prefetch(pf, _MM_HINT_T1);
  }
};
#endif

// v = clamp(v + row bias + column bias), then HardSwish: the scalar form of
// the vector epilogues below, operation for operation (so every tile rounds
// alike).
inline float epilogue(float v, const TileEpilogue& e, int64_t i, int64_t j) {
  if (e.row_bias != nullptr) v += e.row_bias[i];
  if (e.col_bias != nullptr) v += e.col_bias[j];
  if (e.clamp) {
    v = e.lo > v ? e.lo : v;  // _mm*_max_ps(lo, v)
    v = e.hi < v ? e.hi : v;  // _mm*_min_ps(hi, v)
  }
  if (e.hardswish) v = hardswish_value(v);
  return v;
}

// Writes the valid mv x nv part of a row-major mr x nr tile to C.
inline void store_tile(const float* t, int64_t nr, float* c, int64_t rs, int64_t cs, bool accumulate,
                       int64_t mv, int64_t nv, const TileEpilogue* e) {
  if (e != nullptr) {
    for (int64_t i = 0; i < mv; ++i) {
      for (int64_t j = 0; j < nv; ++j) {
        float& cij = c[i * rs + j * cs];
        cij = epilogue(accumulate ? t[i * nr + j] + cij : t[i * nr + j], *e, i, j);
      }
    }
    return;
  }
  for (int64_t i = 0; i < mv; ++i) {
    float* ci = c + i * rs;
    const float* ti = t + i * nr;
    if (accumulate) {
      for (int64_t j = 0; j < nv; ++j) ci[j * cs] += ti[j];
    } else {
      for (int64_t j = 0; j < nv; ++j) ci[j * cs] = ti[j];
    }
  }
}

#if RT_GEMM_X86
// The epilogue on row i of a full tile (two vectors), as epilogue() does it.
__attribute__((target("avx2,fma"), always_inline)) inline void epilogue_avx2(__m256* row, const TileEpilogue& e,
                                                                              int i) {
  if (e.row_bias != nullptr) {
    const __m256 r = _mm256_set1_ps(e.row_bias[i]);
    row[0] = _mm256_add_ps(row[0], r);
    row[1] = _mm256_add_ps(row[1], r);
  }
  if (e.col_bias != nullptr) {
    row[0] = _mm256_add_ps(row[0], _mm256_loadu_ps(e.col_bias));
    row[1] = _mm256_add_ps(row[1], _mm256_loadu_ps(e.col_bias + 8));
  }
  if (e.clamp) {
    const __m256 lo = _mm256_set1_ps(e.lo), hi = _mm256_set1_ps(e.hi);
    row[0] = _mm256_min_ps(hi, _mm256_max_ps(lo, row[0]));
    row[1] = _mm256_min_ps(hi, _mm256_max_ps(lo, row[1]));
  }
  if (e.hardswish) {  // as hardswish_value: min(6, max(0, t)); a NaN t stays NaN (max/min return their second operand)
    const __m256 zero = _mm256_setzero_ps(), three = _mm256_set1_ps(3.0f), six = _mm256_set1_ps(6.0f);
    for (int v = 0; v < 2; ++v) {
      const __m256 t = _mm256_add_ps(row[v], three);
      row[v] = _mm256_div_ps(_mm256_mul_ps(row[v], _mm256_min_ps(six, _mm256_max_ps(zero, t))), six);
    }
  }
}

// max(lo, v) then min(hi, v), which return v where it is NaN (the masked
// forms with a zero pass-through: GCC 12's _mm512_max_ps trips
// -Wmaybe-uninitialized on its undefined one).
__attribute__((target("avx512f"), always_inline)) inline __m512 clamp512(__m512 v, __m512 lo, __m512 hi) {
  v = _mm512_mask_max_ps(_mm512_setzero_ps(), 0xFFFF, lo, v);
  return _mm512_mask_min_ps(_mm512_setzero_ps(), 0xFFFF, hi, v);
}

// As hardswish_value: v * min(6, max(0, v + 3)) / 6 (a NaN stays NaN).
__attribute__((target("avx512f"), always_inline)) inline __m512 hardswish512(__m512 v) {
  const __m512 six = _mm512_set1_ps(6.0f);
  const __m512 t = clamp512(_mm512_add_ps(v, _mm512_set1_ps(3.0f)), _mm512_setzero_ps(), six);
  return _mm512_div_ps(_mm512_mul_ps(v, t), six);
}

// The epilogue on 16 values of row i from column j, as epilogue() does it
// (m: the valid columns, whose column biases are read).
__attribute__((target("avx512f"), always_inline)) inline __m512 epilogue16_avx512(__m512 v, const TileEpilogue& e,
                                                                                   int i, int j,
                                                                                   __mmask16 m = 0xFFFF) {
  if (e.row_bias != nullptr) v = _mm512_add_ps(v, _mm512_set1_ps(e.row_bias[i]));
  if (e.col_bias != nullptr) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, e.col_bias + j));
  if (e.clamp) v = clamp512(v, _mm512_set1_ps(e.lo), _mm512_set1_ps(e.hi));
  return e.hardswish ? hardswish512(v) : v;
}

// A tile's epilogue read once, its vectors in registers (store_12x32_avx512).
struct Epilogue512 {
  const float* row_bias = nullptr;
  bool col_bias = false, clamp = false, hardswish = false;
  __m512 cb[2], lo, hi;
};

__attribute__((target("avx512f"), always_inline)) inline Epilogue512 epilogue512(const TileEpilogue* e,
                                                                                  const __mmask16* m) {
  Epilogue512 r;
  if (e == nullptr) return r;
  r.row_bias = e->row_bias;
  r.col_bias = e->col_bias != nullptr;
  for (int v = 0; v < 2; ++v) {
    r.cb[v] = r.col_bias && m[v] != 0 ? _mm512_maskz_loadu_ps(m[v], e->col_bias + 16 * v) : _mm512_setzero_ps();
  }
  r.clamp = e->clamp;
  r.lo = _mm512_set1_ps(e->lo);
  r.hi = _mm512_set1_ps(e->hi);
  r.hardswish = e->hardswish;
  return r;
}

// epilogue16_avx512 with the tile's epilogue in registers (vector `half` of row i).
__attribute__((target("avx512f"), always_inline)) inline __m512 apply512(__m512 v, const Epilogue512& e, int i,
                                                                          int half) {
  if (e.row_bias != nullptr) v = _mm512_add_ps(v, _mm512_set1_ps(e.row_bias[i]));
  if (e.col_bias) v = _mm512_add_ps(v, e.cb[half]);
  if (e.clamp) v = clamp512(v, e.lo, e.hi);
  return e.hardswish ? hardswish512(v) : v;
}

// Stores a 12x32 tile of accumulators (the AVX-512 kernels' tail): C (+)= acc
// with the epilogue, the valid mv x nv part. Every row by name (constant
// indices) and the epilogue read once: a loop over the rows kept all 24
// accumulators on the stack and re-read the epilogue per row, 0.14 us of a
// 12x32 tile of a 16-deep product (MobileNets' 1x1 convolutions from 16
// channels: 25 % of their time).
__attribute__((target("avx512f"), always_inline)) inline void store_12x32_avx512(
    __m512 (*acc)[2], float* c, int64_t rs, int64_t cs, bool accumulate, int64_t mv, int64_t nv,
    const TileEpilogue* e) {
  if (cs == 1) {  // a right edge: masked vectors (a channels_last product to 16 or 24 channels)
    const __mmask16 m[2] = {static_cast<__mmask16>(nv >= 16 ? 0xFFFFu : (1u << nv) - 1),
                            static_cast<__mmask16>(nv >= 32 ? 0xFFFFu : nv <= 16 ? 0u : (1u << (nv - 16)) - 1)};
    const Epilogue512 ep = epilogue512(e, m);
    const bool full = nv >= 32;
    // Vector v (0 or 1) of row i.
#define EMBER_GEMM_STORE_VEC(i, v)                                                                \
  if (m[v] != 0) {                                                                                \
    float* cv = c + i * rs + 16 * v;                                                              \
    __m512 x = accumulate ? _mm512_add_ps(acc[i][v], _mm512_maskz_loadu_ps(m[v], cv)) : acc[i][v]; \
    if (e != nullptr) x = apply512(x, ep, i, v);                                                  \
    if (full) {                                                                                   \
      _mm512_storeu_ps(cv, x);                                                                    \
    } else {                                                                                      \
      _mm512_mask_storeu_ps(cv, m[v], x);                                                         \
    }                                                                                             \
  }
#define EMBER_GEMM_STORE_ROW(i, V, unused) \
  if (i < mv) {                           \
    EMBER_GEMM_STORE_VEC(i, 0)             \
    EMBER_GEMM_STORE_VEC(i, 1)             \
  }
    EMBER_GEMM_ROWS12(EMBER_GEMM_STORE_ROW, , )
#undef EMBER_GEMM_STORE_ROW
#undef EMBER_GEMM_STORE_VEC
    return;
  }
  alignas(kGemmAlign) float t[12 * 32];
#define EMBER_GEMM_SPILL_ROW(i, V, unused)     \
  _mm512_store_ps(t + i * 32, acc[i][0]);      \
  _mm512_store_ps(t + i * 32 + 16, acc[i][1]);
  EMBER_GEMM_ROWS12(EMBER_GEMM_SPILL_ROW, , )
#undef EMBER_GEMM_SPILL_ROW
  store_tile(t, 32, c, rs, cs, accumulate, mv, nv, e);
}
#endif  // RT_GEMM_X86

// The portable float32 micro-kernel, 8x8 (gemm_small.cc: GCC/Clang vector extensions, SSE or NEON).
void ukernel_8x8_portable(int64_t kc, const float* a, const float* b, float* c, int64_t rs, int64_t cs,
                          bool accumulate, int64_t mv, int64_t nv, const TileEpilogue* e);

#if RT_GEMM_X86
// The AVX2 + FMA float32 family (gemm_small.cc): the 6x16 micro-kernel, its
// UkernelInfo::edge (mv < 6: only those rows) and UkernelInfo::in_place.
void ukernel_6x16_avx2(int64_t kc, const float* a, const float* b, float* c, int64_t rs, int64_t cs,
                       bool accumulate, int64_t mv, int64_t nv, const TileEpilogue* e);
void edge_6x16_avx2(int64_t kc, const float* a, const float* b, float* c, int64_t rs, int64_t cs,
                    bool accumulate, int64_t mv, int64_t nv, const TileEpilogue* e);
void in_place_6x16_avx2(int64_t kc, const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t rs,
                        int64_t cs, bool accumulate, int64_t mv, int64_t nv, const TileEpilogue* e, const char* pf,
                        int64_t pf_lines);
void sweep_6x16_avx2(int64_t kc, const float* a, int64_t lda, const float* b, int64_t n, float* c, int64_t rs,
                     bool accumulate, const TileEpilogue* e);
void narrow_6x16_avx2(int64_t kc, const float* a, int64_t mc, const float* b, int64_t nv, float* c, int64_t rs,
                      int64_t cs, bool accumulate, const TileEpilogue* e);

// The AVX-512 float32 family (gemm_avx512.cc): the 12x32 micro-kernel and its
// UkernelInfo::edge, for tiles of fewer than 32 valid columns or 12 valid rows
// (kernels that compute only those: bitwise the full tile's values).
// kStreamA: A is prefetched ahead as it is read (a pre-packed A streamed from
// memory: UkernelInfo::streamed); the same values either way.
template <bool kStreamA>
void ukernel_12x32_avx512(int64_t kc, const float* a, const float* b, float* c, int64_t rs, int64_t cs,
                          bool accumulate, int64_t mv, int64_t nv, const TileEpilogue* e);
template <bool kStreamA>
void edge_12x32_avx512(int64_t kc, const float* a, const float* b, float* c, int64_t rs, int64_t cs,
                       bool accumulate, int64_t mv, int64_t nv, const TileEpilogue* e);
// UkernelInfo::in_place: the 12x32 tile (any mv) with B, A or both read in place.
template <bool kStreamA>
void in_place_12x32_avx512(int64_t kc, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                           int64_t rs, int64_t cs, bool accumulate, int64_t mv, int64_t nv, const TileEpilogue* e,
                           const char* pf, int64_t pf_lines);
// UkernelInfo::sweep: a 12-row tile against every panel (a last panel of at
// most 16 columns with one B vector).
void sweep_12x32_avx512(int64_t kc, const float* a, int64_t lda, const float* b, int64_t n, float* c, int64_t rs,
                        bool accumulate, const TileEpilogue* e);
#endif

// Whether the CPU runs the bfloat16 family (AVX-512 F, BW and BF16).
bool bf16_supported();
// The bfloat16 micro-kernel, 12 x 32 (as Ukernel: kc is the depth in values,
// a and b are bf16 panels). Only where bf16_supported().
void ukernel_12x32_bf16(int64_t kc, const float* a, const float* b, float* c, int64_t rs, int64_t cs,
                        bool accumulate, int64_t mv, int64_t nv, const TileEpilogue* e);
// Whether the CPU runs the AMX-BF16 family too (and Linux lets it use the tiles).
bool amx_bf16_supported();
// Its micro-kernel, 16 x 32 (as ukernel_12x32_bf16; a: pack_a_bf16_rows's panels).
void ukernel_16x32_amx_bf16(int64_t kc, const float* a, const float* b, float* c, int64_t rs, int64_t cs,
                            bool accumulate, int64_t mv, int64_t nv, const TileEpilogue* e);
// pack_a / pack_b_panel of gemm.cc into bf16 panels (nr = 32): pack_a_bf16's
// A panels (mr = 12) hold, pair after pair, that pair of every row;
// pack_a_bf16_rows's (the AMX family's, mr = 16) hold each row's pairs
// contiguously.
void pack_a_bf16(int64_t mr, int64_t mc, int64_t kc, MatrixRef<const float> a, float* dst);
void pack_a_bf16_rows(int64_t mr, int64_t mc, int64_t kc, MatrixRef<const float> a, float* dst);
void pack_b_panel_bf16(int64_t nr, int64_t panel, int64_t nc, int64_t kc, MatrixRef<const float> b, float* dst);

}  // namespace ember::cpu::detail
