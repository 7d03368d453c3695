// int8 GEMM (see qgemm.h). Loop structure: tasks over (column block of up to
// NP panels) x (row chunk); inside a task, the micro-kernel runs MR rows x NP
// panels over the whole depth into an int32 tile, and the epilogue converts the
// tile straight into the output (dequantize, bias, activation).
#include "kernels/cpu/qgemm.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "kernels/cpu/transpose16.h"
#include "runtime/core/thread_pool.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
#define EMBER_QGEMM_X86 1
#else
#define EMBER_QGEMM_X86 0
#endif
#if defined(__aarch64__)
#include <arm_neon.h>
#define EMBER_QGEMM_NEON 1
#else
#define EMBER_QGEMM_NEON 0
#endif

namespace ember::cpu {
namespace {

constexpr int kTileCols = 64;  // int32 tile row stride: up to 4 panels of 16
constexpr int kMaxRows = 16;   // the largest MR (AMX)

// k4: the padded depth; a: mr rows at a stride of lda bytes (uint8, or int16
// for a kernel with a16); w: np panels at stride pstride; tile: mr x (np * 16)
// int32 at row stride kTileCols.
using Ukernel = void (*)(int64_t k4, const uint8_t* a, int64_t lda, const int8_t* w, int64_t pstride,
                         int32_t* tile, int mr, int np);

struct QInfo {
  int mr, np;
  Ukernel fn;
  const char* name;
  QGemmIsa isa;
  bool a16;  // reads A widened to int16 (and int16 weight pairs)
};

inline int32_t load_u32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// --- portable --------------------------------------------------------------
void uk_portable(int64_t k4, const uint8_t* a, int64_t lda, const int8_t* w, int64_t pstride,
                 int32_t* tile, int mr, int np) {
  const int64_t kg = k4 / 4;
  for (int i = 0; i < mr; ++i) {
    const uint8_t* ai = a + i * lda;
    for (int pp = 0; pp < np; ++pp) {
      const int8_t* wp = w + pp * pstride;
      int32_t acc[16] = {};
      for (int64_t g = 0; g < kg; ++g) {
        const uint8_t* ag = ai + 4 * g;
        const int8_t* wg = wp + 64 * g;
        for (int c = 0; c < 16; ++c) {
          for (int t = 0; t < 4; ++t) acc[c] += int32_t(ag[t]) * int32_t(wg[c * 4 + t]);
        }
      }
      std::memcpy(tile + i * kTileCols + pp * 16, acc, sizeof(acc));
    }
  }
}

#if EMBER_QGEMM_X86
// --- AVX512-VNNI: vpdpbusd (u8 x s8, 4 products summed into each int32 lane) --
template <int MR, int NP>
__attribute__((target("avx512f,avx512vnni"))) void uk_vnni_t(int64_t k4, const uint8_t* a, int64_t lda,
                                                             const int8_t* w, int64_t pstride,
                                                             int32_t* tile) {
  const int64_t kg = k4 / 4;
  __m512i acc[MR][NP];
#pragma GCC unroll 6
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 4
    for (int j = 0; j < NP; ++j) acc[i][j] = _mm512_setzero_si512();
  }
  for (int64_t g = 0; g < kg; ++g) {
    __m512i wv[NP];
#pragma GCC unroll 4
    for (int j = 0; j < NP; ++j) wv[j] = _mm512_loadu_si512(w + j * pstride + 64 * g);
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) {
      const __m512i av = _mm512_set1_epi32(load_u32(a + i * lda + 4 * g));
#pragma GCC unroll 4
      for (int j = 0; j < NP; ++j) acc[i][j] = _mm512_dpbusd_epi32(acc[i][j], av, wv[j]);
    }
  }
#pragma GCC unroll 6
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 4
    for (int j = 0; j < NP; ++j) _mm512_storeu_si512(tile + i * kTileCols + 16 * j, acc[i][j]);
  }
}

using UkFixed = void (*)(int64_t, const uint8_t*, int64_t, const int8_t*, int64_t, int32_t*);
#define EMBER_VNNI_ROW(mr) {&uk_vnni_t<mr, 1>, &uk_vnni_t<mr, 2>, &uk_vnni_t<mr, 3>, &uk_vnni_t<mr, 4>}
const UkFixed kVnni[6][4] = {EMBER_VNNI_ROW(1), EMBER_VNNI_ROW(2), EMBER_VNNI_ROW(3),
                             EMBER_VNNI_ROW(4), EMBER_VNNI_ROW(5), EMBER_VNNI_ROW(6)};
#undef EMBER_VNNI_ROW

void uk_vnni(int64_t k4, const uint8_t* a, int64_t lda, const int8_t* w, int64_t pstride, int32_t* tile,
             int mr, int np) {
  kVnni[mr - 1][np - 1](k4, a, lda, w, pstride, tile);
}

// --- AMX-INT8: tdpbusd on 16 x 64 tiles ---------------------------------------
// A VNNI panel of 16 columns is, 64 depth values at a time, exactly a B tile
// (16 rows of 4 depth values x 16 columns), so the AMX family reads the same
// panels, their depth padded to a multiple of 64 (pack_int8_weights), and A
// rows in place (each holds w.k4 readable bytes: qgemm_u8s8's contract).
// Tiles 0-3: C, one per panel (16 x 16 int32); 4: A (16 rows x 64 bytes);
// 5-7: B. Fewer than 16 rows of A are first copied into 16 rows (the extra
// rows' sums are not stored). The sums are exact: the same int32 values as
// the VNNI kernel's.
__attribute__((target("amx-tile,amx-int8"))) void uk_amx(int64_t k4, const uint8_t* a, int64_t lda,
                                                         const int8_t* w, int64_t pstride, int32_t* tile, int mr,
                                                         int np) {
  static const AmxTileConfig cfg = [] {
    AmxTileConfig c{};
    c.palette = 1;
    for (int t = 0; t < 8; ++t) {
      c.colsb[t] = 64;
      c.rows[t] = 16;
    }
    return c;
  }();
  if (mr < 16) {
    thread_local std::vector<uint8_t> rows;
    if (rows.size() < static_cast<size_t>(16 * k4)) rows.resize(static_cast<size_t>(16 * k4));
    for (int i = 0; i < mr; ++i) std::memcpy(rows.data() + i * k4, a + i * lda, static_cast<size_t>(k4));
    a = rows.data();
    lda = k4;
  }
  amx_configure(cfg);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (int64_t kk = 0; kk < k4; kk += 64) {
    const int8_t* wk = w + kk * 16;  // 64 depth values of a panel: 16 groups of 4 x 16 columns
    _tile_loadd(4, a + kk, lda);
    _tile_loadd(5, wk, 64);
    _tile_dpbusd(0, 4, 5);
    if (np > 1) {
      _tile_loadd(6, wk + pstride, 64);
      _tile_dpbusd(1, 4, 6);
    }
    if (np > 2) {
      _tile_loadd(7, wk + 2 * pstride, 64);
      _tile_dpbusd(2, 4, 7);
    }
    if (np > 3) {
      _tile_loadd(5, wk + 3 * pstride, 64);
      _tile_dpbusd(3, 4, 5);
    }
  }
  constexpr int64_t stride = kTileCols * sizeof(int32_t);
  _tile_stored(0, tile, stride);
  if (np > 1) _tile_stored(1, tile + 16, stride);
  if (np > 2) _tile_stored(2, tile + 32, stride);
  if (np > 3) _tile_stored(3, tile + 48, stride);
}

// --- AVX2: vpmaddwd on int16 pairs (exact; vpmaddubsw would saturate) -------
// The weights are packed in pairs (int8, widened to int16 here: two vpmovsxbw
// per step for all six rows; int16 in memory would double the bytes, which
// cost M = 1 half its speed), the activations widened to int16 once per
// product (qgemm_u8s8), so a step is one vpbroadcastd of (a[2g], a[2g+1]) per
// row: lane c of vpmaddwd is a[2g] W[c][2g] + a[2g+1] W[c][2g+1] (at most
// 2 x 255 x 128: no saturation). Six rows x 16 columns: 12 int32 accumulators
// in named registers (as gemm.cc's tiles).
#define EMBER_QGEMM_ROWS6(X) X(0) X(1) X(2) X(3) X(4) X(5)
// Row i's two accumulators and activation pointer; the tile's store.
#define EMBER_QGEMM_INIT(i)                 \
  __m256i c##i##_0 = zero, c##i##_1 = zero; \
  const uint8_t* a##i = a + (i < MR ? i : 0) * lda;
#define EMBER_QGEMM_STORE(i)                                                            \
  if (i < MR) {                                                                         \
    _mm256_store_si256(reinterpret_cast<__m256i*>(tile + i * kTileCols), c##i##_0);     \
    _mm256_store_si256(reinterpret_cast<__m256i*>(tile + i * kTileCols + 8), c##i##_1); \
  }
template <int MR>
__attribute__((target("avx2"))) void uk_avx2_t(int64_t k4, const uint8_t* a, int64_t lda, const int8_t* w,
                                               int32_t* tile) {
  const __m256i zero = _mm256_setzero_si256();
  EMBER_QGEMM_ROWS6(EMBER_QGEMM_INIT)
  const int64_t pairs = k4 / 2;
#pragma GCC unroll 2
  for (int64_t g = 0; g < pairs; ++g) {
    const __m256i b0 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + 32 * g)));
    const __m256i b1 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + 32 * g + 16)));
#define EMBER_QGEMM_STEP(i)                                                \
  if (i < MR) {                                                            \
    const __m256i ai = _mm256_set1_epi32(load_u32(a##i + 4 * g));          \
    c##i##_0 = _mm256_add_epi32(c##i##_0, _mm256_madd_epi16(ai, b0));      \
    c##i##_1 = _mm256_add_epi32(c##i##_1, _mm256_madd_epi16(ai, b1));      \
  }
    EMBER_QGEMM_ROWS6(EMBER_QGEMM_STEP)
#undef EMBER_QGEMM_STEP
  }
  EMBER_QGEMM_ROWS6(EMBER_QGEMM_STORE)
}
// --- AVX2 on weights within [-64, 64]: vpmaddubsw is exact there -----------
// (a pair of uint8 x int8 products is at most 2 x 255 x 64 = 32640 < 2^15), so
// the int8 groups of 4 (the VNNI layout) run as vpmaddubsw + vpmaddwd by ones:
// vpdpbusd in two steps, on the uint8 activations as they are. Same 6 x 16
// tile; a quarter fewer vector operations than the pairs (no widening). pack_int8_weights picks it only for such weights (as ONNX
// Runtime's and ember's --reduce-range quantization writes).
template <int MR>
__attribute__((target("avx2"))) void uk_avx2_w7_t(int64_t k4, const uint8_t* a, int64_t lda, const int8_t* w,
                                                  int32_t* tile) {
  const __m256i zero = _mm256_setzero_si256();
  const __m256i ones = _mm256_set1_epi16(1);
  EMBER_QGEMM_ROWS6(EMBER_QGEMM_INIT)
  const int64_t groups = k4 / 4;
#pragma GCC unroll 2
  for (int64_t g = 0; g < groups; ++g) {
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 64 * g));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 64 * g + 32));
#define EMBER_QGEMM_STEP(i)                                                                          \
  if (i < MR) {                                                                                      \
    const __m256i ai = _mm256_set1_epi32(load_u32(a##i + 4 * g));                                    \
    c##i##_0 = _mm256_add_epi32(c##i##_0, _mm256_madd_epi16(_mm256_maddubs_epi16(ai, b0), ones));    \
    c##i##_1 = _mm256_add_epi32(c##i##_1, _mm256_madd_epi16(_mm256_maddubs_epi16(ai, b1), ones));    \
  }
    EMBER_QGEMM_ROWS6(EMBER_QGEMM_STEP)
#undef EMBER_QGEMM_STEP
  }
  EMBER_QGEMM_ROWS6(EMBER_QGEMM_STORE)
}
#undef EMBER_QGEMM_STORE
#undef EMBER_QGEMM_INIT
#undef EMBER_QGEMM_ROWS6

using UkAvx2 = void (*)(int64_t, const uint8_t*, int64_t, const int8_t*, int32_t*);
const UkAvx2 kAvx2Rows[6] = {&uk_avx2_t<1>, &uk_avx2_t<2>, &uk_avx2_t<3>,
                             &uk_avx2_t<4>, &uk_avx2_t<5>, &uk_avx2_t<6>};

const UkAvx2 kAvx2W7Rows[6] = {&uk_avx2_w7_t<1>, &uk_avx2_w7_t<2>, &uk_avx2_w7_t<3>,
                               &uk_avx2_w7_t<4>, &uk_avx2_w7_t<5>, &uk_avx2_w7_t<6>};

void uk_avx2(int64_t k4, const uint8_t* a, int64_t lda, const int8_t* w, int64_t /*pstride*/, int32_t* tile,
             int mr, int /*np: 1*/) {
  kAvx2Rows[mr - 1](k4, a, lda, w, tile);
}

void uk_avx2_w7(int64_t k4, const uint8_t* a, int64_t lda, const int8_t* w, int64_t /*pstride*/, int32_t* tile,
                int mr, int /*np: 1*/) {
  kAvx2W7Rows[mr - 1](k4, a, lda, w, tile);
}

// Widens rows of uint8 to int16 (the AVX2 kernel's A).
__attribute__((target("avx2"))) void widen_u8_avx2(const uint8_t* a, int64_t n, int16_t* out) {
  int64_t p = 0;
  for (; p + 16 <= n; p += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + p));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + p), _mm256_cvtepu8_epi16(v));
  }
  for (; p < n; ++p) out[p] = a[p];
}

// The epilogue of one row of 16 columns (store_tile's formula, operation for
// operation: the int32 correction, one float multiply by as x ws, one add).
__attribute__((target("avx2"))) void epilogue16_avx2(const int32_t* t, int32_t az, float as, const int32_t* rs,
                                                     const float* ws, float ws0, const float* b,
                                                     const Activation& act, float* y) {
  const __m256 vas = _mm256_set1_ps(as);
  const __m256i vaz = _mm256_set1_epi32(az);
  for (int h = 0; h < 16; h += 8) {
    const __m256i acc = _mm256_load_si256(reinterpret_cast<const __m256i*>(t + h));
    const __m256i r = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rs + h));
    const __m256i v = _mm256_sub_epi32(acc, _mm256_mullo_epi32(vaz, r));
    const __m256 scale = _mm256_mul_ps(vas, ws ? _mm256_loadu_ps(ws + h) : _mm256_set1_ps(ws0));
    __m256 o = _mm256_mul_ps(_mm256_cvtepi32_ps(v), scale);
    if (b) o = _mm256_add_ps(o, _mm256_loadu_ps(b + h));
    if (act.kind == ActivationKind::Relu) {
      o = _mm256_max_ps(_mm256_setzero_ps(), o);  // 0 > o ? 0 : o
    } else if (act.kind == ActivationKind::Clamp) {
      o = _mm256_max_ps(_mm256_set1_ps(static_cast<float>(act.min)), o);  // o < lo ? lo : o
      o = _mm256_min_ps(_mm256_set1_ps(static_cast<float>(act.max)), o);  // o > hi ? hi : o
    } else if (act.kind == ActivationKind::HardSwish) {  // as hardswish_value
      const __m256 six = _mm256_set1_ps(6.0f);
      const __m256 t = _mm256_min_ps(six, _mm256_max_ps(_mm256_setzero_ps(), _mm256_add_ps(o, _mm256_set1_ps(3.0f))));
      o = _mm256_div_ps(_mm256_mul_ps(o, t), six);
    }
    _mm256_storeu_ps(y + h, o);
  }
}

// The epilogue of a tile's mr rows over `cols` columns on AVX-512 (the VNNI
// and AMX kernels' CPUs), store_tile's formula operation for operation:
// sixteen columns a step, their row sums, weight scales and biases loaded
// once for all rows, and with a per-tensor A the correction az * rs and the
// scale as * ws computed once too. (epilogue16_avx2 per row was 8.5 % of an
// int8 BERT run at batch 1, one thread, on AMX.)
__attribute__((target("avx512f"))) void store_rows_avx512(const int32_t* tile, int mr, int64_t i0, int64_t cols,
                                                           const int32_t* rs, const QGemmEpilogue& ep, const float* ws,
                                                           const float* b, float* y0, int64_t ldc) {
  const ActivationKind kind = ep.activation.kind;
  const __m512 lo = _mm512_set1_ps(kind == ActivationKind::Relu ? 0.0f : static_cast<float>(ep.activation.min));
  const __m512 hi = _mm512_set1_ps(static_cast<float>(ep.activation.max));
  const __m512 zero = _mm512_setzero_ps(), three = _mm512_set1_ps(3.0f), six = _mm512_set1_ps(6.0f);
  for (int64_t c = 0; c < cols; c += 16) {
    const __mmask16 m =
        cols - c >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << (cols - c)) - 1);
    const __m512i vrs = _mm512_maskz_loadu_epi32(m, rs + c);
    const __m512 vws = ws != nullptr ? _mm512_maskz_loadu_ps(m, ws + c) : _mm512_set1_ps(ep.w_scale[0]);
    const __m512 vb = b != nullptr ? _mm512_maskz_loadu_ps(m, b + c) : zero;
    __m512i corr = _mm512_mullo_epi32(_mm512_set1_epi32(ep.a_zero_point[0]), vrs);
    __m512 scale = _mm512_mul_ps(_mm512_set1_ps(ep.a_scale[0]), vws);
    for (int r = 0; r < mr; ++r) {
      const int64_t i = i0 + r;
      if (ep.a_per_row) {
        corr = _mm512_mullo_epi32(_mm512_set1_epi32(ep.a_zero_point[i]), vrs);
        scale = _mm512_mul_ps(_mm512_set1_ps(ep.a_scale[i]), vws);
      }
      const __m512i v = _mm512_sub_epi32(_mm512_maskz_loadu_epi32(m, tile + r * kTileCols + c), corr);
      __m512 o = _mm512_mul_ps(_mm512_maskz_cvtepi32_ps(m, v), scale);  // (maskz: GCC 12 warns on the plain form)
      if (b != nullptr) o = _mm512_add_ps(o, vb);
      if (kind == ActivationKind::Relu || kind == ActivationKind::Clamp) {  // o < lo ? lo : (o > hi ? hi : o)
        const __mmask16 below = _mm512_cmp_ps_mask(o, lo, _CMP_LT_OQ);
        if (kind == ActivationKind::Clamp) o = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(o, hi, _CMP_GT_OQ), o, hi);
        o = _mm512_mask_blend_ps(below, o, lo);
      } else if (kind == ActivationKind::HardSwish) {  // as hardswish_value
        __m512 t = _mm512_add_ps(o, three);
        t = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(t, zero, _CMP_LT_OQ), t, zero);
        t = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(t, six, _CMP_GT_OQ), t, six);
        o = _mm512_div_ps(_mm512_mul_ps(o, t), six);
      }
      _mm512_mask_storeu_ps(y0 + r * ldc + c, m, o);
    }
  }
}
#endif  // EMBER_QGEMM_X86

#if EMBER_QGEMM_NEON
// --- NEON: widen both operands to int16, vmlal_s16 into one int32x4 per column
// (each lane one of the 4 depth values of a group), summed across at the end.
void uk_neon(int64_t k4, const uint8_t* a, int64_t /*lda*/, const int8_t* w, int64_t /*pstride*/,
             int32_t* tile, int /*mr: 1*/, int /*np: 1*/) {
  const int64_t kg = k4 / 4;
  int32x4_t acc[16];
  for (int c = 0; c < 16; ++c) acc[c] = vdupq_n_s32(0);
  for (int64_t g = 0; g < kg; ++g) {
    const uint32x2_t a4 = vdup_n_u32(static_cast<uint32_t>(load_u32(a + 4 * g)));
    const int16x4_t av = vget_low_s16(vreinterpretq_s16_u16(vmovl_u8(vreinterpret_u8_u32(a4))));
    for (int q = 0; q < 4; ++q) {
      const int8x16_t wq = vld1q_s8(w + 64 * g + 16 * q);  // columns 4q .. 4q+3
      const int16x8_t lo = vmovl_s8(vget_low_s8(wq));
      const int16x8_t hi = vmovl_s8(vget_high_s8(wq));
      acc[4 * q + 0] = vmlal_s16(acc[4 * q + 0], vget_low_s16(lo), av);
      acc[4 * q + 1] = vmlal_s16(acc[4 * q + 1], vget_high_s16(lo), av);
      acc[4 * q + 2] = vmlal_s16(acc[4 * q + 2], vget_low_s16(hi), av);
      acc[4 * q + 3] = vmlal_s16(acc[4 * q + 3], vget_high_s16(hi), av);
    }
  }
  for (int c = 0; c < 16; ++c) tile[c] = vaddvq_s32(acc[c]);
}
#endif  // EMBER_QGEMM_NEON

constexpr QInfo kPortable{4, 4, &uk_portable, "portable 4x64", QGemmIsa::Portable, false};
#if EMBER_QGEMM_X86
constexpr QInfo kAvx2{6, 1, &uk_avx2, "avx2 6x16", QGemmIsa::Avx2, true};
constexpr QInfo kAvx2W7{6, 1, &uk_avx2_w7, "avx2 6x16 (weights within +-64: vpmaddubsw)", QGemmIsa::Avx2, false};
constexpr QInfo kVnniInfo{6, 4, &uk_vnni, "avx512-vnni 6x64", QGemmIsa::Avx512Vnni, false};
constexpr QInfo kAmxInfo{16, 4, &uk_amx, "amx-int8 16x64", QGemmIsa::Amx, false};
#endif
#if EMBER_QGEMM_NEON
constexpr QInfo kNeon{1, 1, &uk_neon, "neon 1x16", QGemmIsa::Neon, false};
#endif

bool isa_supported(QGemmIsa isa) {
  switch (isa) {
    case QGemmIsa::Auto:
    case QGemmIsa::Portable:
      return true;
#if EMBER_QGEMM_X86
    case QGemmIsa::Avx2:
      return __builtin_cpu_supports("avx2");
    case QGemmIsa::Avx512Vnni:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vnni");
    case QGemmIsa::Amx:
      return __builtin_cpu_supports("avx2") && amx_usable(25);  // avx2: the epilogue
#endif
#if EMBER_QGEMM_NEON
    case QGemmIsa::Neon:
      return true;
#endif
    default:
      return false;
  }
}

const QInfo* info_for(QGemmIsa isa) {
  switch (isa) {
#if EMBER_QGEMM_X86
    case QGemmIsa::Amx: return &kAmxInfo;
    case QGemmIsa::Avx512Vnni: return &kVnniInfo;
    case QGemmIsa::Avx2: return &kAvx2;
#endif
#if EMBER_QGEMM_NEON
    case QGemmIsa::Neon: return &kNeon;
#endif
    case QGemmIsa::Portable: return &kPortable;
    default: break;
  }
#if EMBER_QGEMM_X86
  if (isa_supported(QGemmIsa::Amx)) return &kAmxInfo;
  if (isa_supported(QGemmIsa::Avx512Vnni)) return &kVnniInfo;
  if (isa_supported(QGemmIsa::Avx2)) return &kAvx2;
#endif
#if EMBER_QGEMM_NEON
  return &kNeon;
#endif
  return &kPortable;
}

std::atomic<const QInfo*> g_kernel{nullptr};

const QInfo& kernel() {
  const QInfo* k = g_kernel.load(std::memory_order_acquire);
  if (k == nullptr) {
    k = info_for(QGemmIsa::Auto);
    g_kernel.store(k, std::memory_order_release);
  }
  return *k;
}


// Writes the float results of rows [i0, i0 + mr) x columns [j0, j0 + cols)
// from the tile, row i0 at y0, rows ldc apart; `avx2`: the CPU has AVX2 (full
// 16-column blocks take epilogue16_avx2, which rounds exactly as the loop
// below); `avx512`: AVX-512 too (all of it takes store_rows_avx512, as exactly).
void store_rows(const int32_t* tile, int mr, int64_t i0, int64_t j0, int64_t cols, const PackedInt8Weights& w,
                const QGemmEpilogue& ep, float* y0, int64_t ldc, bool avx2, bool avx512) {
#if EMBER_QGEMM_X86
  if (avx512) {
    return store_rows_avx512(tile, mr, i0, cols, w.row_sums.data() + j0, ep,
                             ep.w_per_channel ? ep.w_scale + j0 : nullptr, ep.bias ? ep.bias + j0 : nullptr, y0,
                             ldc);
  }
#else
  (void)avx512;
#endif
  for (int r = 0; r < mr; ++r) {
    const int64_t i = i0 + r;
    const int32_t* t = tile + r * kTileCols;
    const float as = ep.a_scale[ep.a_per_row ? i : 0];
    const int32_t az = ep.a_zero_point[ep.a_per_row ? i : 0];
    float* yi = y0 + r * ldc;
    const int32_t* rs = w.row_sums.data() + j0;
    const float* ws = ep.w_per_channel ? ep.w_scale + j0 : nullptr;
    const float ws0 = ep.w_scale[0];
    const float* b = ep.bias ? ep.bias + j0 : nullptr;
    int64_t c = 0;
#if EMBER_QGEMM_X86
    for (; avx2 && c + 16 <= cols; c += 16) {
      epilogue16_avx2(t + c, az, as, rs + c, ws ? ws + c : nullptr, ws0, b ? b + c : nullptr, ep.activation, yi + c);
    }
#else
    (void)avx2;
#endif
    for (; c < cols; ++c) {
      const int32_t v = t[c] - az * rs[c];
      const float scale = as * (ws ? ws[c] : ws0);
      float o = static_cast<float>(v) * scale;
      if (b) o += b[c];
      yi[c] = activate(o, ep.activation);
    }
  }
}

// Rows [i0, i0 + mr) x columns [j0, j0 + cols) of the result from the tile:
// the int32 sums (no epilogue), or store_rows's floats; a transposed y
// (QGemmEpilogue::y_transposed) gets them through a local tile, transposed
// (16 x 16 in registers on AVX-512).
void store_tile(const int32_t* tile, int mr, int64_t i0, int64_t j0, int64_t cols, const PackedInt8Weights& w,
                const QGemmEpilogue* ep, int32_t* c32, float* y, int64_t ldc, bool avx2, bool avx512) {
  if (ep == nullptr) {
    for (int r = 0; r < mr; ++r) {
      std::memcpy(c32 + (i0 + r) * ldc + j0, tile + r * kTileCols, sizeof(int32_t) * static_cast<size_t>(cols));
    }
    return;
  }
  if (!ep->y_transposed) return store_rows(tile, mr, i0, j0, cols, w, *ep, y + i0 * ldc + j0, ldc, avx2, avx512);
  alignas(64) float rows[kMaxRows * kTileCols];
  store_rows(tile, mr, i0, j0, cols, w, *ep, rows, kTileCols, avx2, avx512);
  float* dst = y + j0 * ldc + i0;
#if EMBER_QGEMM_X86
  if (avx512) return transpose_block16(rows, mr, cols, kTileCols, dst, ldc);
#endif
  transpose_scalar(rows, mr, cols, kTileCols, dst, ldc);
}

constexpr int64_t kRowChunk = 48;  // rows per task (a multiple of every MR)
// The least work (multiply-adds) worth another thread; see qgemm_u8s8.
std::atomic<int64_t> g_min_macs_per_thread{kDefaultMinMacsPerThread};

}  // namespace

void pack_int8_weights(const int8_t* w, int64_t n, int64_t k, int64_t ldw, PackedInt8Weights* out) {
  out->n = n;
  out->k = k;
  out->isa = kernel().isa;
  const int64_t depth_step = out->isa == QGemmIsa::Amx ? 64 : 4;  // AMX: whole B tiles
  out->k4 = (k + depth_step - 1) / depth_step * depth_step;
  out->n16 = (n + 15) / 16 * 16;
  out->w7 = true;
  for (int64_t j = 0; j < n && out->w7; ++j) {
    for (int64_t p = 0; p < k; ++p) out->w7 = out->w7 && w[j * ldw + p] >= -64 && w[j * ldw + p] <= 64;
  }
  // pairs (AVX2 on full-range weights), else groups of 4
  const bool pairs = out->isa == QGemmIsa::Avx2 && !out->w7;
  const int64_t pstride = out->panel_bytes();
  out->data = WeightBuffer(static_cast<size_t>(out->n16 / 16 * pstride));
  out->row_sums.assign(static_cast<size_t>(out->n16), 0);
  for (int64_t j = 0; j < n; ++j) {
    int8_t* panel = out->data.as<int8_t>() + (j / 16) * pstride;
    const int64_t c = j % 16;
    int32_t sum = 0;
    for (int64_t p = 0; p < k; ++p) {
      const int8_t v = w[j * ldw + p];
      if (pairs) {
        panel[(p / 2) * 32 + c * 2 + (p % 2)] = v;
      } else {
        panel[(p / 4) * 64 + c * 4 + (p % 4)] = v;
      }
      sum += v;
    }
    out->row_sums[static_cast<size_t>(j)] = sum;
  }
}

void qgemm_u8s8(int64_t m, const uint8_t* a, int64_t lda, const PackedInt8Weights& w,
                const QGemmEpilogue* epilogue, int32_t* c32, float* y, int64_t ldc, int threads) {
  if (m <= 0 || w.n <= 0) return;
  // The family the weights were packed for (and its variant for them).
#if EMBER_QGEMM_X86
  const QInfo& u = w.isa == QGemmIsa::Avx2 && w.w7 ? kAvx2W7 : *info_for(w.isa);
#else
  const QInfo& u = *info_for(w.isa);
#endif
  const bool avx2 = u.isa == QGemmIsa::Avx2 || u.isa == QGemmIsa::Avx512Vnni || u.isa == QGemmIsa::Amx;
  const bool avx512 = u.isa == QGemmIsa::Avx512Vnni || u.isa == QGemmIsa::Amx;
  const int64_t pstride = w.panel_bytes();
  const int64_t panels = w.n16 / 16;
  const int64_t rchunks = (m + kRowChunk - 1) / kRowChunk;
#if EMBER_QGEMM_X86
  if (u.a16) {  // A widened to int16 once (m x k4: small next to the product)
    thread_local std::vector<int16_t> a16;
    if (a16.size() < static_cast<size_t>(m * w.k4)) a16.resize(static_cast<size_t>(m * w.k4));
    for (int64_t i = 0; i < m; ++i) widen_u8_avx2(a + i * lda, w.k4, a16.data() + i * w.k4);
    a = reinterpret_cast<const uint8_t*>(a16.data());
    lda = w.k4 * 2;
  }
#endif
  // Threads: at most one per g_min_macs_per_thread multiply-adds (padded sizes),
  // so that small products (M = 1 at BERT sizes: 2.4 M, ~30 us) stay on the
  // calling thread: waking a pool worker costs more than the whole product.
  const int64_t macs = m * w.n16 * w.k4;
  const int64_t want =
      std::min<int64_t>(threads, std::max<int64_t>(1, macs / g_min_macs_per_thread.load(std::memory_order_relaxed)));
  // Panels per task: the kernel's widest; when threaded, narrower while that
  // leaves fewer than 8 tasks per thread (the threads split whole tasks).
  int npt = u.np;
  while (want > 1 && npt > 1 && (panels + npt - 1) / npt * rchunks < 8 * want) npt /= 2;
  const int64_t cblocks = (panels + npt - 1) / npt;
  auto task = [&](int64_t t0, int64_t t1) {
    alignas(64) int32_t tile[kMaxRows * kTileCols];
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t cb = t % cblocks, rc = t / cblocks;
      const int64_t p0 = cb * npt;
      const int np = static_cast<int>(std::min<int64_t>(npt, panels - p0));
      const int64_t j0 = p0 * 16;
      const int64_t cols = std::min<int64_t>(np * 16, w.n - j0);
      const int64_t r_end = std::min(m, (rc + 1) * kRowChunk);
      for (int64_t i0 = rc * kRowChunk; i0 < r_end; i0 += u.mr) {
        const int mr = static_cast<int>(std::min<int64_t>(u.mr, r_end - i0));
        u.fn(w.k4, a + i0 * lda, lda, w.data.as<int8_t>() + p0 * pstride, pstride, tile, mr, np);
        store_tile(tile, mr, i0, j0, cols, w, epilogue, c32, y, ldc, avx2, avx512);
      }
    }
  };
  const int64_t tasks = cblocks * rchunks;
  const int nt = parallel_threads(tasks, static_cast<int>(std::min<int64_t>(want, tasks)));
  if (nt <= 1) {
    task(0, tasks);
    return;
  }
  // Thread p runs the p-th contiguous range of tasks (row chunk after row
  // chunk): the rows it quantized and the rows the next op reads on that
  // thread stay in its cache. Claiming tasks one at a time from a shared
  // counter interleaved the threads over the row chunks: int8 BERT at batch
  // 8, 2 threads, its Linears took 21.5-22.9 ms in all, split so 15.1-15.9.
  // The ranges are of equal work (tiles x panels), not of equal task counts:
  // a last row chunk of fewer rows (BERT at batch 1: 128 = 48 + 48 + 32)
  // left one of 2 threads 28 % more of every product.
  auto cost = [&](int64_t t) {
    const int64_t rc = t / cblocks, cb = t % cblocks;
    const int64_t tiles = (std::min(m, (rc + 1) * kRowChunk) - rc * kRowChunk + u.mr - 1) / u.mr;
    return tiles * std::min<int64_t>(npt, panels - cb * npt);
  };
  // A thread done with its range takes tasks from the end of another's.
  parallel_tasks(ranges_by_cost(tasks, nt, cost), [&](int64_t t, int) { task(t, t + 1); });
}

bool qgemm_set_isa(QGemmIsa isa) {
  if (!isa_supported(isa)) return false;
  g_kernel.store(info_for(isa), std::memory_order_release);
  return true;
}

bool qgemm_isa_supported(QGemmIsa isa) { return isa_supported(isa); }

const char* qgemm_kernel_name() { return kernel().name; }

#if EMBER_QGEMM_X86
__attribute__((target("amx-tile"))) void amx_configure(const AmxTileConfig& cfg) {
  thread_local const AmxTileConfig* loaded = nullptr;
  if (loaded == &cfg) return;
  _tile_loadconfig(&cfg);
  loaded = &cfg;
}
#else
void amx_configure(const AmxTileConfig&) {}
#endif

bool amx_usable(int edx_bit) {
#if EMBER_QGEMM_X86
  static const bool tiles = [] {  // the tile unit, and Linux's leave to use its state
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) || ((edx >> 24) & 1) == 0) return false;
#if defined(__linux__)
    constexpr long kReqXcompPerm = 0x1023, kXtileData = 18;
    return syscall(SYS_arch_prctl, kReqXcompPerm, kXtileData) == 0;
#else
    return false;
#endif
  }();
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return tiles && __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) && ((edx >> edx_bit) & 1) != 0;
#else
  (void)edx_bit;
  return false;
#endif
}

int64_t qgemm_set_min_macs_per_thread(int64_t macs) {
  return g_min_macs_per_thread.exchange(std::max<int64_t>(1, macs));
}

}  // namespace ember::cpu
