// The SpMM kernels of quant/csr.h: y = x @ W^T + b for a packed sparse W.
//
// - blocked AVX-512 kernel (x86-64 with AVX-512F, chosen at run time): the
//   BlockedSpmm layout (coo.h). For each slice of 16 output rows and each
//   32-column block, the block's 32 x values sit in two zmm registers and each
//   slot of 16 nonzeros costs one vpermi2ps (the 16 x values its columns name)
//   and one FMA into the slice's 16 accumulators. Up to 4 input rows share a
//   pass (the slot's columns and values are loaded once). Measured on Zen 4
//   against the alternatives the brief listed (bench/sparse/README.md): an
//   8-accumulator scalar CSR loop and SELL-16 with vgatherdps (zmm or 2x ymm)
//   reach 2.5-3 nonzeros/ns at batch 1, this kernel about 9 including its ~2x
//   padding at 90 % zeros.
// - portable CSR kernel (every target): a gather dot product per output row
//   (4 accumulators) at batch <= 2, tiles of 8 transposed input rows above.
#include <algorithm>
#include <cstring>

#include "quant/csr.h"
#include "runtime/core/thread_pool.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define EMBER_SPMM_X86 1
#else
#define EMBER_SPMM_X86 0
#endif

namespace ember::sparse {

namespace {

constexpr int64_t kSlice = 16;  // output rows per slice of the blocked layout
constexpr int64_t kBlock = 32;  // columns per block (two zmm registers of x)

}  // namespace

bool has_fast_spmm() {
#if EMBER_SPMM_X86
  static const bool yes = __builtin_cpu_supports("avx512f");
  return yes;
#else
  return false;
#endif
}

void build_blocked(CsrMatrix& w) {
  BlockedSpmm& b = w.blocked;
  b = BlockedSpmm();
  b.slices = (w.rows + kSlice - 1) / kSlice;
  b.blocks = (w.cols + kBlock - 1) / kBlock;
  if (b.slices == 0 || b.blocks == 0) return;
  auto col_at = [&](int64_t j) -> int64_t {
    return w.narrow ? w.col16[static_cast<size_t>(j)] : w.col32[static_cast<size_t>(j)];
  };
  // Pass 1: slot counts (a row has at most 32 nonzeros in a block).
  b.count.assign(static_cast<size_t>(b.slices * b.blocks), 0);
  b.slot_start.assign(1, 0);
  int64_t slots = 0;
  for (int64_t s = 0; s < b.slices; ++s) {
    uint8_t* cnt = b.count.data() + s * b.blocks;
    for (int64_t l = 0; l < kSlice && s * kSlice + l < w.rows; ++l) {
      const int64_t r = s * kSlice + l;
      int64_t prev_block = -1, n = 0;
      for (int64_t j = w.row_ptr[static_cast<size_t>(r)]; j < w.row_ptr[static_cast<size_t>(r + 1)]; ++j) {
        const int64_t blk = col_at(j) / kBlock;
        n = blk == prev_block ? n + 1 : 1;
        prev_block = blk;
        cnt[blk] = static_cast<uint8_t>(std::max<int64_t>(cnt[blk], n));
      }
    }
    for (int64_t k = 0; k < b.blocks; ++k) slots += cnt[k];
    b.slot_start.push_back(slots);
  }
  // Pass 2: fill the slots (pads: column 0, value 0).
  b.col.assign(static_cast<size_t>(slots * kSlice), 0);
  if (w.int8) {
    b.qvalues.assign(static_cast<size_t>(slots * kSlice), 0);
  } else {
    b.values.assign(static_cast<size_t>(slots * kSlice), 0.f);
  }
  int64_t base = 0;  // first slot of the current (slice, block)
  for (int64_t s = 0; s < b.slices; ++s) {
    int64_t pos[kSlice], end[kSlice];
    for (int64_t l = 0; l < kSlice; ++l) {
      const int64_t r = std::min(s * kSlice + l, w.rows);
      pos[l] = w.row_ptr[static_cast<size_t>(r)];
      end[l] = s * kSlice + l < w.rows ? w.row_ptr[static_cast<size_t>(r + 1)] : pos[l];
    }
    for (int64_t k = 0; k < b.blocks; ++k) {
      for (int64_t l = 0; l < kSlice; ++l) {
        for (int64_t t = 0; pos[l] < end[l] && col_at(pos[l]) / kBlock == k; ++t, ++pos[l]) {
          const size_t e = static_cast<size_t>((base + t) * kSlice + l);
          b.col[e] = static_cast<uint8_t>(col_at(pos[l]) - k * kBlock);
          if (w.int8) {
            b.qvalues[e] = w.qvalues[static_cast<size_t>(pos[l])];
          } else {
            b.values[e] = w.values[static_cast<size_t>(pos[l])];
          }
        }
      }
      base += b.count[static_cast<size_t>(s * b.blocks + k)];
    }
  }
}

namespace {

// --- portable CSR kernel -----------------------------------------------------

inline float value_at(const float* v, int64_t j) { return v[j]; }
inline float value_at(const int8_t* v, int64_t j) { return static_cast<float>(v[j]); }

// One output row, one input row: a gather dot product (4 accumulators).
template <typename Val, typename Col>
inline float row_dot(const Val* v, const Col* col, int64_t n, const float* x) {
  float a0 = 0.f, a1 = 0.f, a2 = 0.f, a3 = 0.f;
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    a0 += value_at(v, j) * x[col[j]];
    a1 += value_at(v, j + 1) * x[col[j + 1]];
    a2 += value_at(v, j + 2) * x[col[j + 2]];
    a3 += value_at(v, j + 3) * x[col[j + 3]];
  }
  for (; j < n; ++j) a0 += value_at(v, j) * x[col[j]];
  return (a0 + a1) + (a2 + a3);
}

constexpr int64_t kTile = 8;  // input rows per tile: a fixed-size inner loop the compiler vectorizes

// Output rows [r0, r1) for one tile of `mt` (<= kTile) input rows starting at
// row i0, with x packed to xt [cols, kTile] (zero-padded).
template <typename Val, typename Col>
void rows_tile(const CsrMatrix& w, const Val* val, const Col* col, const float* xt, int64_t i0, int64_t mt,
               const float* bias, float* y, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    float a[kTile] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    const int64_t e = w.row_ptr[static_cast<size_t>(r + 1)];
    for (int64_t j = w.row_ptr[static_cast<size_t>(r)]; j < e; ++j) {
      const float v = value_at(val, j);
      const float* xr = xt + static_cast<int64_t>(col[j]) * kTile;
      for (int64_t i = 0; i < kTile; ++i) a[i] += v * xr[i];
    }
    const float scale = w.int8 ? w.row_scale[static_cast<size_t>(r)] : 1.f;
    const float b = bias != nullptr ? bias[r] : 0.f;
    for (int64_t i = 0; i < mt; ++i) y[(i0 + i) * w.rows + r] = (w.int8 ? a[i] * scale : a[i]) + b;
  }
}

template <typename Val, typename Col>
void csr_impl(const CsrMatrix& w, const Val* val, const Col* col, const float* x, int64_t m, int64_t ldx,
              const float* bias, float* y) {
  const int64_t avg = std::max<int64_t>(1, w.nnz() / std::max<int64_t>(1, w.rows));
  if (m <= 2) {
    const int64_t grain = std::max<int64_t>(1, 32768 / (avg * m));
    parallel_for(0, w.rows, grain, [&](int64_t r0, int64_t r1) {
      for (int64_t i = 0; i < m; ++i) {
        const float* xi = x + i * ldx;
        float* yi = y + i * w.rows;
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t s = w.row_ptr[static_cast<size_t>(r)], e = w.row_ptr[static_cast<size_t>(r + 1)];
          float d = row_dot(val + s, col + s, e - s, xi);
          if (w.int8) d *= w.row_scale[static_cast<size_t>(r)];
          yi[r] = d + (bias != nullptr ? bias[r] : 0.f);
        }
      }
    });
    return;
  }
  // Tiles of kTile input rows, each transposed to [cols, kTile] so a nonzero
  // reads kTile contiguous floats.
  const int64_t tiles = (m + kTile - 1) / kTile;
  std::vector<float> xt(static_cast<size_t>(tiles * w.cols * kTile), 0.f);
  for (int64_t t = 0; t < tiles; ++t) {
    float* dst = xt.data() + t * w.cols * kTile;
    for (int64_t i = 0; i < std::min(kTile, m - t * kTile); ++i) {
      const float* src = x + (t * kTile + i) * ldx;
      for (int64_t k = 0; k < w.cols; ++k) dst[k * kTile + i] = src[k];
    }
  }
  const int64_t grain = std::max<int64_t>(1, 32768 / (avg * kTile * tiles));
  parallel_for(0, w.rows, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t t = 0; t < tiles; ++t)
      rows_tile(w, val, col, xt.data() + t * w.cols * kTile, t * kTile, std::min(kTile, m - t * kTile), bias, y,
                r0, r1);
  });
}

template <typename Val>
void csr_dispatch(const CsrMatrix& w, const Val* val, const float* x, int64_t m, int64_t ldx, const float* bias,
                  float* y) {
  if (w.narrow) {
    csr_impl(w, val, w.col16.data(), x, m, ldx, bias, y);
  } else {
    csr_impl(w, val, w.col32.data(), x, m, ldx, bias, y);
  }
}

// --- blocked AVX-512 kernel --------------------------------------------------

#if EMBER_SPMM_X86

// Slices [s0, s1) for MT (1..4) input rows x[i * ldx], writing y[i * rows].
// Q: int8 values (converted to fp32 per slot; the row scale is applied to the sums).
template <int MT, bool Q>
__attribute__((target("avx512f"))) void blocked_rows(const CsrMatrix& w, const int64_t* slot_start, const float* x,
                                                      int64_t ldx, const float* bias, float* y, int64_t s0,
                                                      int64_t s1) {
  const BlockedSpmm& b = w.blocked;
  const int64_t tail = w.cols - (b.blocks - 1) * kBlock;  // columns of the last block (1..32)
  const __mmask16 tail0 = static_cast<__mmask16>(tail >= 16 ? 0xffff : (1u << tail) - 1);
  const __mmask16 tail1 = static_cast<__mmask16>(tail <= 16 ? 0 : tail >= 32 ? 0xffff : (1u << (tail - 16)) - 1);
  for (int64_t s = s0; s < s1; ++s) {
    const uint8_t* cnt = b.count.data() + s * b.blocks;
    const int64_t first = slot_start[s] * kSlice;
    const uint8_t* cp = b.col.data() + first;
    const float* vp = Q ? nullptr : b.values.data() + first;
    const int8_t* qp = Q ? b.qvalues.data() + first : nullptr;
    __m512 acc[MT];
#pragma GCC unroll 4
    for (int t = 0; t < MT; ++t) acc[t] = _mm512_setzero_ps();
    for (int64_t k = 0; k < b.blocks; ++k) {
      const int n = cnt[k];
      if (n == 0) continue;
      __m512 x0[MT], x1[MT];
      const __mmask16 m0 = k + 1 < b.blocks ? static_cast<__mmask16>(0xffff) : tail0;
      const __mmask16 m1 = k + 1 < b.blocks ? static_cast<__mmask16>(0xffff) : tail1;
#pragma GCC unroll 4
      for (int t = 0; t < MT; ++t) {
        x0[t] = _mm512_maskz_loadu_ps(m0, x + t * ldx + k * kBlock);
        x1[t] = _mm512_maskz_loadu_ps(m1, x + t * ldx + k * kBlock + 16);
      }
      for (int j = 0; j < n; ++j) {
        const __m512i idx =
            _mm512_maskz_cvtepu8_epi32(0xffff, _mm_loadu_si128(reinterpret_cast<const __m128i*>(cp)));
        __m512 v;
        if (Q) {
          v = _mm512_maskz_cvtepi32_ps(
              0xffff, _mm512_maskz_cvtepi8_epi32(0xffff, _mm_loadu_si128(reinterpret_cast<const __m128i*>(qp))));
          qp += kSlice;
        } else {
          v = _mm512_loadu_ps(vp);
          vp += kSlice;
        }
#pragma GCC unroll 4
        for (int t = 0; t < MT; ++t) acc[t] = _mm512_fmadd_ps(v, _mm512_permutex2var_ps(x0[t], idx, x1[t]), acc[t]);
        cp += kSlice;
      }
    }
    const int64_t r0 = s * kSlice;
    const int64_t nr = std::min(kSlice, w.rows - r0);
    const __mmask16 rm = static_cast<__mmask16>(nr >= 16 ? 0xffff : (1u << nr) - 1);
    const __m512 scale = Q ? _mm512_maskz_loadu_ps(rm, w.row_scale.data() + r0) : _mm512_set1_ps(1.f);
    const __m512 bv = bias != nullptr ? _mm512_maskz_loadu_ps(rm, bias + r0) : _mm512_setzero_ps();
#pragma GCC unroll 4
    for (int t = 0; t < MT; ++t) {
      const __m512 out = Q ? _mm512_fmadd_ps(acc[t], scale, bv) : _mm512_add_ps(acc[t], bv);
      _mm512_mask_storeu_ps(y + t * w.rows + r0, rm, out);
    }
  }
}

template <bool Q>
void blocked_tile(const CsrMatrix& w, const int64_t* slot_start, const float* x, int64_t mt, int64_t ldx,
                  const float* bias, float* y, int64_t s0, int64_t s1) {
  switch (mt) {
    case 1:
      blocked_rows<1, Q>(w, slot_start, x, ldx, bias, y, s0, s1);
      break;
    case 2:
      blocked_rows<2, Q>(w, slot_start, x, ldx, bias, y, s0, s1);
      break;
    case 3:
      blocked_rows<3, Q>(w, slot_start, x, ldx, bias, y, s0, s1);
      break;
    default:
      blocked_rows<4, Q>(w, slot_start, x, ldx, bias, y, s0, s1);
  }
}

void blocked_spmm(const CsrMatrix& w, const float* x, int64_t m, int64_t ldx, const float* bias, float* y) {
  const BlockedSpmm& b = w.blocked;
  const int64_t* slot_start = b.slot_start.data();
  constexpr int64_t kRows = 4;  // input rows per pass
  const int64_t slots_per_slice = std::max<int64_t>(1, b.slot_start.back() / b.slices);
  const int64_t grain = std::max<int64_t>(1, 4096 / (slots_per_slice * std::min(m, kRows)));
  parallel_for(0, b.slices, grain, [&](int64_t s0, int64_t s1) {
    for (int64_t i = 0; i < m; i += kRows) {
      const int64_t mt = std::min(kRows, m - i);
      if (w.int8) {
        blocked_tile<true>(w, slot_start, x + i * ldx, mt, ldx, bias, y + i * w.rows, s0, s1);
      } else {
        blocked_tile<false>(w, slot_start, x + i * ldx, mt, ldx, bias, y + i * w.rows, s0, s1);
      }
    }
  });
}

#endif  // EMBER_SPMM_X86

}  // namespace

void spmm_linear(const CsrMatrix& w, const float* x, int64_t m, int64_t ldx, const float* bias, float* y) {
  if (m == 0 || w.rows == 0) return;
#if EMBER_SPMM_X86
  if (!w.blocked.empty() && has_fast_spmm()) {
    blocked_spmm(w, x, m, ldx, bias, y);
    return;
  }
#endif
  if (w.int8) {
    csr_dispatch(w, w.qvalues.data(), x, m, ldx, bias, y);
  } else {
    csr_dispatch(w, w.values.data(), x, m, ldx, bias, y);
  }
}

void spmm_linear_ref(const CsrMatrix& w, const float* x, int64_t m, int64_t ldx, const float* bias, float* y) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t r = 0; r < w.rows; ++r) {
      double acc = 0.0;
      for (int64_t j = w.row_ptr[static_cast<size_t>(r)]; j < w.row_ptr[static_cast<size_t>(r + 1)]; ++j) {
        const int64_t c = w.narrow ? w.col16[static_cast<size_t>(j)] : w.col32[static_cast<size_t>(j)];
        const double v = w.int8 ? static_cast<double>(w.qvalues[static_cast<size_t>(j)])
                                : static_cast<double>(w.values[static_cast<size_t>(j)]);
        acc += v * x[i * ldx + c];
      }
      if (w.int8) acc *= static_cast<double>(w.row_scale[static_cast<size_t>(r)]);
      if (bias != nullptr) acc += bias[r];
      y[i * w.rows + r] = static_cast<float>(acc);
    }
  }
}

}  // namespace ember::sparse
