// The bfloat16 GEMM family (gemm_tile.h): bf16 operands, float32 accumulators,
// for products whose constant operand was packed as bf16
// (sgemm_pack_a / sgemm_pack_b with bf16: Precision::BFloat16 on the CPU).
// The micro-kernel is the AVX-512 12x32 one with VDPBF16PS (two products of
// a K pair per float32 lane) in place of the FMA, and the same stores and
// epilogue; where the CPU has AMX-BF16, a 16x32 one on tiles (TDPBF16PS)
// with the same B panels and A panels of rows (pack_a_bf16_rows). Rounding
// to bf16 is to nearest even; zeros and denormals become signed zeros and
// NaNs stay NaN, as VCVTNEPS2BF16 does (the vector packers use it, the
// scalar ones follow it bit for bit).
#include <algorithm>
#include <array>
#include <cstring>

#include "kernels/cpu/gemm_tile.h"
#include "kernels/cpu/qgemm.h"  // amx_usable, AmxTileConfig, amx_configure
#include "kernels/cpu/transpose16.h"

namespace ember::cpu::detail {
namespace {

// float32 -> bfloat16 bits, as VCVTNEPS2BF16 rounds.
uint32_t bf16_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  if ((u & 0x7f800000u) == 0) return (u >> 16) & 0x8000u;                   // zero, denormal: signed zero
  if ((u & 0x7fffffffu) > 0x7f800000u) return ((u >> 16) | 0x40u) & 0xffffu;  // NaN: quiet
  return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
}

// The slot of a K pair (x0 at 2q, x1 at 2q + 1) as a float's bits.
float pair_slot(float x0, float x1) {
  const uint32_t v = bf16_bits(x0) | (bf16_bits(x1) << 16);
  float f;
  std::memcpy(&f, &v, sizeof(f));
  return f;
}

#if RT_GEMM_X86
#define EMBER_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512bf16")))

// 16 slots of consecutive pairs x[0..32) (n values valid, zeros past them).
EMBER_BF16_TARGET inline __m512i row_pairs(const float* x, int64_t n) {
  const __mmask16 m0 = static_cast<__mmask16>(n >= 16 ? 0xffff : (1u << std::max<int64_t>(n, 0)) - 1);
  const __mmask16 m1 = static_cast<__mmask16>(n >= 32 ? 0xffff : n <= 16 ? 0 : (1u << (n - 16)) - 1);
  const __m512 lo = _mm512_maskz_loadu_ps(m0, x), hi = _mm512_maskz_loadu_ps(m1, x + 16);
  return (__m512i)_mm512_cvtne2ps_pbh(hi, lo);  // lo's 16 values in the low half
}

// 16 slots pairing the 16 values of r0 with those of r1 (r1 null: zeros).
EMBER_BF16_TARGET inline __m512i interleave_pairs(const float* r0, const float* r1) {
  const __m512 x0 = _mm512_loadu_ps(r0), x1 = r1 != nullptr ? _mm512_loadu_ps(r1) : _mm512_setzero_ps();
  const __m512i both = (__m512i)_mm512_cvtne2ps_pbh(x1, x0);  // x0 low, x1 high
  // word 2j: x0[j] (word j of both), word 2j + 1: x1[j] (word 16 + j)
  const __m512i idx = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8,  //
                                       23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  return _mm512_permutexvar_epi16(idx, both);
}

// Row i of a packed A panel from a unit-stride row: 32 values at a time.
EMBER_BF16_TARGET void pack_a_row(const float* row, int64_t kc, int64_t mr, int64_t i, float* dst) {
  const int64_t pairs = (kc + 1) / 2;
  alignas(kGemmAlign) float slots[16];
  for (int64_t q0 = 0; q0 < pairs; q0 += 16) {
    _mm512_store_si512(slots, row_pairs(row + 2 * q0, kc - 2 * q0));
    for (int64_t t = 0; t < std::min<int64_t>(16, pairs - q0); ++t) dst[(q0 + t) * mr + i] = slots[t];
  }
}

// The pair slots of `count` <= 16 unit-stride runs along the depth (rs
// apart: rows of A, or columns of a B with unit row stride such as K^T), 16
// slots a run at a time, the count x 16 block transposed in registers so that
// each pair step's `count` slots are one masked store, at dst + q * ldd for
// pair q. (A store per slot, or B's pairs built value by value, held
// attention's products under Precision::BFloat16: packing cost about as
// much as the product.)
EMBER_BF16_TARGET void pack_pair_runs(const float* src, int64_t rs, int64_t kc, int64_t count, float* dst,
                                      int64_t ldd) {
  const int64_t pairs = (kc + 1) / 2;
  const __mmask16 lanes = static_cast<__mmask16>((1u << count) - 1);
  for (int64_t q0 = 0; q0 < pairs; q0 += 16) {
    __m512 r[16];
    for (int64_t i = 0; i < 16; ++i) {
      r[i] = i < count ? _mm512_castsi512_ps(row_pairs(src + i * rs + 2 * q0, kc - 2 * q0)) : _mm512_setzero_ps();
    }
    transpose16x16(r);
    for (int64_t t = 0; t < std::min<int64_t>(16, pairs - q0); ++t) _mm512_mask_storeu_ps(dst + (q0 + t) * ldd, lanes, r[t]);
  }
}

// A unit-stride row's (kc + 1) / 2 pair slots, contiguous (an AMX A panel's row).
EMBER_BF16_TARGET void pack_row_pairs(const float* row, int64_t kc, float* dst) {
  const int64_t pairs = (kc + 1) / 2;
  for (int64_t q0 = 0; q0 < pairs; q0 += 16) {
    const int64_t n = std::min<int64_t>(16, pairs - q0);
    _mm512_mask_storeu_epi32(dst + q0, static_cast<__mmask16>((1u << n) - 1), row_pairs(row + 2 * q0, kc - 2 * q0));
  }
}

// A full panel of B with unit-stride rows (nr a multiple of 16).
EMBER_BF16_TARGET void pack_b_rows(int64_t nr, int64_t kc, const float* src, int64_t rs, float* dst) {
  for (int64_t q = 0; q < (kc + 1) / 2; ++q) {
    const float* r0 = src + 2 * q * rs;
    const float* r1 = 2 * q + 1 < kc ? r0 + rs : nullptr;
    for (int64_t h = 0; h < nr; h += 16) {
      _mm512_storeu_si512(dst + q * nr + h, interleave_pairs(r0 + h, r1 != nullptr ? r1 + h : nullptr));
    }
  }
}
#endif

}  // namespace

#if RT_GEMM_X86
bool bf16_supported() {
  static const bool ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                         __builtin_cpu_supports("avx512bf16");
  return ok;
}

EMBER_BF16_TARGET void ukernel_12x32_bf16(int64_t kc, const float* __restrict a, const float* __restrict b, float* c,
                                          int64_t rs, int64_t cs, bool accumulate, int64_t mv, int64_t nv,
                                          const TileEpilogue* e) {
  EMBER_GEMM_ROWS12(EMBER_GEMM_ZERO, __m512, _mm512_setzero_ps())
  const int64_t pairs = (kc + 1) / 2;
#pragma GCC unroll 2
  for (int64_t q = 0; q < pairs; ++q) {
    const __m512bh b0 = (__m512bh)_mm512_loadu_ps(b);
    const __m512bh b1 = (__m512bh)_mm512_loadu_ps(b + 16);
#define EMBER_GEMM_STEP(i, V, unused)                                           \
  {                                                                             \
    const __m512bh ai = (__m512bh)_mm512_set1_ps(a[i]);       \
    c##i##_0 = _mm512_dpbf16_ps(c##i##_0, ai, b0);                              \
    c##i##_1 = _mm512_dpbf16_ps(c##i##_1, ai, b1);                              \
  }
    EMBER_GEMM_ROWS12(EMBER_GEMM_STEP, , )
#undef EMBER_GEMM_STEP
    a += 12;
    b += 32;
  }
  __m512 acc[12][2] = {EMBER_GEMM_ROWS12(EMBER_GEMM_PAIR, , )};
  store_12x32_avx512(acc, c, rs, cs, accumulate, mv, nv, e);
}

// AMX-BF16: tiles 0 and 1 hold C (16 rows x 16 columns of float32 each); 2
// an A tile (16 rows x 16 pairs: 64 bytes of a row's pairs, rows pairs * 4
// bytes apart), 3 and 4 B tiles (16 pairs x 16 columns: a B panel's two
// halves, pairs 128 bytes apart); 5, 6 and 7 the same of the last pairs % 16
// pairs. TDPBF16PS adds a pair's two products to a float32 lane as
// VDPBF16PS does (bf16 products are exact in float32; denormals are zero).
bool amx_bf16_supported() {
  static const bool ok = bf16_supported() && amx_usable(22);
  return ok;
}

__attribute__((target("amx-tile,amx-bf16,avx512f"))) void ukernel_16x32_amx_bf16(
    int64_t kc, const float* a, const float* b, float* c, int64_t rs, int64_t cs, bool accumulate, int64_t mv,
    int64_t nv, const TileEpilogue* e) {
  const int64_t pairs = (kc + 1) / 2, full = pairs / 16, rest = pairs % 16, lda = pairs * 4;
  static const std::array<AmxTileConfig, 16> configs = [] {  // by rest
    std::array<AmxTileConfig, 16> c{};
    for (int r = 0; r < 16; ++r) {
      c[r].palette = 1;
      for (int t = 0; t < 8; ++t) {
        c[r].colsb[t] = 64;
        c[r].rows[t] = 16;
      }
      if (r > 0) {
        c[r].colsb[5] = static_cast<uint16_t>(r * 4);
        c[r].rows[6] = c[r].rows[7] = static_cast<uint8_t>(r);
      }
    }
    return c;
  }();
  amx_configure(configs[rest]);
  _tile_zero(0);
  _tile_zero(1);
  for (int64_t s = 0; s < full; ++s) {
    _tile_loadd(2, a + s * 16, lda);
    _tile_loadd(3, b + s * 16 * 32, 128);
    _tile_loadd(4, b + s * 16 * 32 + 16, 128);
    _tile_dpbf16ps(0, 2, 3);
    _tile_dpbf16ps(1, 2, 4);
  }
  if (rest > 0) {
    _tile_loadd(5, a + full * 16, lda);
    _tile_loadd(6, b + full * 16 * 32, 128);
    _tile_loadd(7, b + full * 16 * 32 + 16, 128);
    _tile_dpbf16ps(0, 5, 6);
    _tile_dpbf16ps(1, 5, 7);
  }
  alignas(kGemmAlign) float t[16 * 32];
  _tile_stored(0, t, 128);
  _tile_stored(1, t + 16, 128);
  // The rows through the AVX-512 family's stores, up to 12 at a time.
  for (int64_t r0 = 0; r0 < mv; r0 += 12) {
    const int64_t rows = std::min<int64_t>(12, mv - r0);
    __m512 acc[12][2];
    for (int64_t i = 0; i < 12; ++i) {  // (rows past mv: zeros, never stored)
      acc[i][0] = i < rows ? _mm512_load_ps(t + (r0 + i) * 32) : _mm512_setzero_ps();
      acc[i][1] = i < rows ? _mm512_load_ps(t + (r0 + i) * 32 + 16) : _mm512_setzero_ps();
    }
    TileEpilogue shifted;  // the row bias from row r0 on
    const TileEpilogue* er = e;
    if (e != nullptr && e->row_bias != nullptr) {
      shifted = *e;
      shifted.row_bias += r0;
      er = &shifted;
    }
    store_12x32_avx512(acc, c + r0 * rs, rs, cs, accumulate, rows, nv, er);
  }
}
#else
bool bf16_supported() { return false; }
bool amx_bf16_supported() { return false; }
void ukernel_12x32_bf16(int64_t, const float*, const float*, float*, int64_t, int64_t, bool, int64_t, int64_t,
                        const TileEpilogue*) {}
void ukernel_16x32_amx_bf16(int64_t, const float*, const float*, float*, int64_t, int64_t, bool, int64_t, int64_t,
                            const TileEpilogue*) {}
#endif

void pack_a_bf16(int64_t mr, int64_t mc, int64_t kc, MatrixRef<const float> a, float* dst) {
  const int64_t pairs = (kc + 1) / 2;
  for (int64_t r = 0; r < mc; r += mr) {
    const int64_t rows = std::min(mr, mc - r);
#if RT_GEMM_X86
    if (a.cs == 1 && rows == mr && mr <= 16) {
      pack_pair_runs(a.data + r * a.rs, a.rs, kc, mr, dst, mr);
      dst += mr * pairs;
      continue;
    }
#endif
    for (int64_t i = 0; i < mr; ++i) {
      if (i >= rows) {
        for (int64_t q = 0; q < pairs; ++q) dst[q * mr + i] = 0.0f;
        continue;
      }
      const float* row = a.data + (r + i) * a.rs;
#if RT_GEMM_X86
      if (a.cs == 1) {
        pack_a_row(row, kc, mr, i, dst);
        continue;
      }
#endif
      for (int64_t q = 0; q < pairs; ++q) {
        const int64_t p = 2 * q;
        dst[q * mr + i] = pair_slot(row[p * a.cs], p + 1 < kc ? row[(p + 1) * a.cs] : 0.0f);
      }
    }
    dst += mr * pairs;
  }
}

void pack_a_bf16_rows(int64_t mr, int64_t mc, int64_t kc, MatrixRef<const float> a, float* dst) {
  const int64_t pairs = (kc + 1) / 2;
  for (int64_t r = 0; r < mc; r += mr) {
    const int64_t rows = std::min(mr, mc - r);
    for (int64_t i = 0; i < mr; ++i, dst += pairs) {
      if (i >= rows) {
        std::memset(dst, 0, sizeof(float) * pairs);
        continue;
      }
      const float* row = a.data + (r + i) * a.rs;
#if RT_GEMM_X86
      if (a.cs == 1) {
        pack_row_pairs(row, kc, dst);
        continue;
      }
#endif
      for (int64_t q = 0; q < pairs; ++q) {
        const int64_t p = 2 * q;
        dst[q] = pair_slot(row[p * a.cs], p + 1 < kc ? row[(p + 1) * a.cs] : 0.0f);
      }
    }
  }
}

void pack_b_panel_bf16(int64_t nr, int64_t panel, int64_t nc, int64_t kc, MatrixRef<const float> b, float* dst) {
  const int64_t pairs = (kc + 1) / 2;
  const int64_t j0 = panel * nr;
  const int64_t cols = std::min(nr, nc - j0);
  dst += panel * nr * pairs;
  const float* src = b.data + j0 * b.cs;
#if RT_GEMM_X86
  if (b.cs == 1 && cols == nr && nr % 16 == 0) return pack_b_rows(nr, kc, src, b.rs, dst);
  if (b.rs == 1 && cols == nr && nr % 16 == 0) {  // columns contiguous along the depth
    for (int64_t h = 0; h < nr; h += 16) pack_pair_runs(src + h * b.cs, b.cs, kc, 16, dst + h, nr);
    return;
  }
#endif
  for (int64_t q = 0; q < pairs; ++q) {
    const int64_t p = 2 * q;
    float* d = dst + q * nr;
    int64_t j = 0;
    for (; j < cols; ++j) d[j] = pair_slot(src[p * b.rs + j * b.cs], p + 1 < kc ? src[(p + 1) * b.rs + j * b.cs] : 0.0f);
    for (; j < nr; ++j) d[j] = 0.0f;
  }
}

}  // namespace ember::cpu::detail
