// Unpacked small-M SGEMM paths (see gemv.h). Each kernel keeps an MB x NB block
// of C (MB <= 4 rows) in registers over all of K and writes it once; the
// drivers walk row groups inside column blocks so that the few columns of B in
// use stay in L1 while every row group reads them.
#include "kernels/cpu/gemv.h"

#include <algorithm>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define RT_GEMV_X86 1
#else
#define RT_GEMV_X86 0
#endif

namespace ember::cpu::detail {
namespace {

constexpr int kMB = 4;  // rows of C per kernel call

// dot: C[i, j] (+)= sum_p A[i*lda + p] * B[j*ldb + p] for i < MB, j < NB.
using DotFn = void (*)(int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                       int64_t rs, int64_t cs, bool accumulate);
// axpy: C[i*ldc + j] (+)= sum_p A[i*ars + p*acs] * B[p*ldb + j] for i < MB, j < nv
// (nv: the columns this call covers, at most the kernel's width).
using AxpyFn = void (*)(int64_t k, const float* a, int64_t ars, int64_t acs, const float* b, int64_t ldb, float* c,
                        int64_t ldc, bool accumulate, int64_t nv);

inline void put(float* d, float v, bool accumulate) { *d = accumulate ? *d + v : v; }

// The kernels keep their MB x NB accumulators in named variables c<i>_<j>
// (declared for the largest tile, 4 x 4; the ones outside MB x NB are never
// updated and fold away): GCC keeps an accumulator array indexed in the k loop
// in memory and stores it back on every step (as in gemm.cc). RT_GEMV_MAC(i, j,
// acc) is each loop's multiply-add, defined right before RT_GEMV_TILE(RT_GEMV_STEP).
#define RT_GEMV_TILE(X) \
  X(0, 0) X(0, 1) X(0, 2) X(0, 3) X(1, 0) X(1, 1) X(1, 2) X(1, 3) X(2, 0) X(2, 1) X(2, 2) X(2, 3) X(3, 0) X(3, 1) X(3, 2) X(3, 3)
#define RT_GEMV_DECL(i, j) auto c##i##_##j = zero;
#define RT_GEMV_STEP(i, j) \
  if constexpr (i < MB && j < NB) c##i##_##j = RT_GEMV_MAC(i, j, c##i##_##j);
#define RT_GEMV_ROW(i) {c##i##_0, c##i##_1, c##i##_2, c##i##_3}
// Declares the zeroed accumulators (of zero's type).
#define RT_GEMV_ZERO(value) \
  auto zero = value;        \
  RT_GEMV_TILE(RT_GEMV_DECL)
// The accumulators as an array acc[4][4], for the write-back after the k loop.
#define RT_GEMV_ARRAY decltype(zero) acc[4][4] = {RT_GEMV_ROW(0), RT_GEMV_ROW(1), RT_GEMV_ROW(2), RT_GEMV_ROW(3)}

// --- portable: GCC/Clang vector extensions (SSE on x86, NEON on ARM) --------

template <int MB, int NB>
void dot_portable(int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t rs,
                  int64_t cs, bool accumulate) {
  RT_GEMV_ZERO((v4f{0, 0, 0, 0}))
  int64_t p = 0;
  for (; p + 4 <= k; p += 4) {
#define RT_GEMV_MAC(i, j, acc) acc + load4(a + i * lda + p) * load4(b + j * ldb + p)
    RT_GEMV_TILE(RT_GEMV_STEP)
#undef RT_GEMV_MAC
  }
  RT_GEMV_ARRAY;
  for (int i = 0; i < MB; ++i) {
    for (int j = 0; j < NB; ++j) {
      float s = (acc[i][j][0] + acc[i][j][1]) + (acc[i][j][2] + acc[i][j][3]);
      for (int64_t q = p; q < k; ++q) s += a[i * lda + q] * b[j * ldb + q];
      put(c + i * rs + j * cs, s, accumulate);
    }
  }
}

// NV vectors of 4 columns; the last call of a row (NV == 1) may cover fewer.
template <int MB, int NV>
void axpy_portable(int64_t k, const float* a, int64_t ars, int64_t acs, const float* b, int64_t ldb, float* c,
                   int64_t ldc, bool accumulate, int64_t nv) {
  if (nv < 4 * NV) {  // fewer than 4 columns: scalar
    for (int i = 0; i < MB; ++i) {
      for (int64_t j = 0; j < nv; ++j) {
        float s = 0.0f;
        for (int64_t p = 0; p < k; ++p) s += a[i * ars + p * acs] * b[p * ldb + j];
        put(c + i * ldc + j, s, accumulate);
      }
    }
    return;
  }
  constexpr int NB = NV;
  RT_GEMV_ZERO((v4f{0, 0, 0, 0}))
  for (int64_t p = 0; p < k; ++p) {
#define RT_GEMV_MAC(i, v, acc) acc + a[i * ars + p * acs] * load4(b + p * ldb + 4 * v)
    RT_GEMV_TILE(RT_GEMV_STEP)
#undef RT_GEMV_MAC
  }
  RT_GEMV_ARRAY;
  for (int i = 0; i < MB; ++i) {
    for (int v = 0; v < NV; ++v) {
      float* d = c + i * ldc + 4 * v;
      store4(d, accumulate ? acc[i][v] + load4(d) : acc[i][v]);
    }
  }
}

#if RT_GEMV_X86
// --- AVX2 + FMA ---------------------------------------------------------------
__attribute__((target("avx2"))) inline __m256i avx2_mask(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
__attribute__((target("avx2"))) inline float avx2_sum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// kNext: the NB columns after these are prefetched as these are read, a line
// of each every 16 values (the single-row form, Family::row_dot).
template <int MB, int NB, bool kNext = false>
__attribute__((target("avx2,fma"))) void dot_avx2(int64_t k, const float* a, int64_t lda, const float* b,
                                                   int64_t ldb, float* c, int64_t rs, int64_t cs, bool accumulate) {
  RT_GEMV_ZERO(_mm256_setzero_ps())
  int64_t p = 0;
  for (; p + 8 <= k; p += 8) {
    if constexpr (kNext) {
      if ((p & 15) == 0) {
        for (int j = 0; j < NB; ++j) _mm_prefetch(reinterpret_cast<const char*>(b + (NB + j) * ldb + p), _MM_HINT_T0);
      }
    }
#define RT_GEMV_MAC(i, j, acc) _mm256_fmadd_ps(_mm256_loadu_ps(a + i * lda + p), _mm256_loadu_ps(b + j * ldb + p), acc)
    RT_GEMV_TILE(RT_GEMV_STEP)
#undef RT_GEMV_MAC
  }
  if (p < k) {
    const __m256i mask = avx2_mask(k - p);
#define RT_GEMV_MAC(i, j, acc) \
  _mm256_fmadd_ps(_mm256_maskload_ps(a + i * lda + p, mask), _mm256_maskload_ps(b + j * ldb + p, mask), acc)
    RT_GEMV_TILE(RT_GEMV_STEP)
#undef RT_GEMV_MAC
  }
  RT_GEMV_ARRAY;
  for (int i = 0; i < MB; ++i)
    for (int j = 0; j < NB; ++j) put(c + i * rs + j * cs, avx2_sum(acc[i][j]), accumulate);
}

template <int MB, int NV>
__attribute__((target("avx2,fma"))) void axpy_avx2(int64_t k, const float* a, int64_t ars, int64_t acs,
                                                    const float* b, int64_t ldb, float* c, int64_t ldc,
                                                    bool accumulate, int64_t nv) {
  const __m256i mask = avx2_mask(nv - 8 * (NV - 1));  // the last vector may be partial
  constexpr int NB = NV;
  RT_GEMV_ZERO(_mm256_setzero_ps())
  for (int64_t p = 0; p < k; ++p) {
    const float* bp = b + p * ldb;
#define RT_GEMV_MAC(i, v, acc)                                                                                 \
  _mm256_fmadd_ps(_mm256_broadcast_ss(a + i * ars + p * acs),                                                   \
                  v + 1 < NV ? _mm256_loadu_ps(bp + 8 * v) : _mm256_maskload_ps(bp + 8 * (NV - 1), mask), acc)
    RT_GEMV_TILE(RT_GEMV_STEP)
#undef RT_GEMV_MAC
  }
  RT_GEMV_ARRAY;
  for (int i = 0; i < MB; ++i) {
    float* d = c + i * ldc;
    for (int v = 0; v < NV - 1; ++v) {
      if (accumulate) acc[i][v] = _mm256_add_ps(acc[i][v], _mm256_loadu_ps(d + 8 * v));
      _mm256_storeu_ps(d + 8 * v, acc[i][v]);
    }
    float* dl = d + 8 * (NV - 1);
    if (accumulate) acc[i][NV - 1] = _mm256_add_ps(acc[i][NV - 1], _mm256_maskload_ps(dl, mask));
    _mm256_maskstore_ps(dl, mask, acc[i][NV - 1]);
  }
}

// One row of A, 64 columns: 8 accumulators (4 groups of 2 vectors; the 4x4
// tile's rows are column groups here), so the chains of multiply-adds hide
// their latency where axpy_avx2<1, NV> has NV of them.
__attribute__((target("avx2,fma"))) void axpy_row_avx2(int64_t k, const float* a, int64_t acs, const float* b,
                                                        int64_t ldb, float* c, bool accumulate) {
  constexpr int MB = 4, NB = 2;
  RT_GEMV_ZERO(_mm256_setzero_ps())
  for (int64_t p = 0; p < k; ++p) {
    const float* bp = b + p * ldb;
    const __m256 av = _mm256_broadcast_ss(a + p * acs);
#define RT_GEMV_MAC(i, v, acc) _mm256_fmadd_ps(av, _mm256_loadu_ps(bp + 16 * i + 8 * v), acc)
    RT_GEMV_TILE(RT_GEMV_STEP)
#undef RT_GEMV_MAC
  }
  RT_GEMV_ARRAY;
  for (int i = 0; i < MB; ++i) {
    for (int v = 0; v < NB; ++v) {
      float* d = c + 16 * i + 8 * v;
      _mm256_storeu_ps(d, accumulate ? _mm256_add_ps(acc[i][v], _mm256_loadu_ps(d)) : acc[i][v]);
    }
  }
}

// --- AVX-512 --------------------------------------------------------------------
// (not _mm512_reduce_add_ps: GCC 12's header trips -Wmaybe-uninitialized)
__attribute__((target("avx512f"))) inline float avx512_sum(__m512 v) {
  v = _mm512_add_ps(v, _mm512_maskz_shuffle_f32x4(0xFFFF, v, v, 0x4E));  // + the other 256-bit half
  v = _mm512_add_ps(v, _mm512_maskz_shuffle_f32x4(0xFFFF, v, v, 0xB1));  // + the other 128-bit lane
  __m128 s = _mm512_maskz_extractf32x4_ps(0xF, v, 0);
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// kNext: as dot_avx2's, a line of each of NB columns ahead every 16 values,
// but into L2 (into L1 it was no faster: the line fill buffers are what the
// stream needs), and at least 8 KiB ahead: the NB columns after these where
// they span that, else as many groups of NB further on as it takes. Zen 4,
// 1 thread, batch-1 Linears whose weights come from memory (8 x 2048 x 2048,
// 40 x 960 x 960; ONNX Runtime 5.4-5.6 and 6.7-7.0 ms): 6.4-6.6 -> 4.9-5.3
// ms, 8.1-8.6 -> 5.9-6.4 ms; MobileNetV3's squeeze-and-excitation FCs (30 x
// 960 -> 240 -> 960, ORT 1.9-2.0 ms): 2.7 -> 2.2 ms, one group ahead 2.7.
constexpr int64_t kDotAheadBytes = 8192;
template <int MB, int NB, bool kNext = false>
__attribute__((target("avx512f"))) void dot_avx512(int64_t k, const float* a, int64_t lda, const float* b,
                                                    int64_t ldb, float* c, int64_t rs, int64_t cs,
                                                    bool accumulate) {
  RT_GEMV_ZERO(_mm512_setzero_ps())
  const int64_t group_bytes = NB * ldb * static_cast<int64_t>(sizeof(float));
  const int64_t ahead = NB * std::max<int64_t>(1, (kDotAheadBytes + group_bytes - 1) / std::max<int64_t>(1, group_bytes));
  int64_t p = 0;
  for (; p + 16 <= k; p += 16) {
    if constexpr (kNext) {
      for (int j = 0; j < NB; ++j) _mm_prefetch(reinterpret_cast<const char*>(b + (ahead + j) * ldb + p), _MM_HINT_T1);
    }
#define RT_GEMV_MAC(i, j, acc) _mm512_fmadd_ps(_mm512_loadu_ps(a + i * lda + p), _mm512_loadu_ps(b + j * ldb + p), acc)
    RT_GEMV_TILE(RT_GEMV_STEP)
#undef RT_GEMV_MAC
  }
  if (p < k) {
    const __mmask16 mask = static_cast<__mmask16>((1u << (k - p)) - 1);
#define RT_GEMV_MAC(i, j, acc) \
  _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, a + i * lda + p), _mm512_maskz_loadu_ps(mask, b + j * ldb + p), acc)
    RT_GEMV_TILE(RT_GEMV_STEP)
#undef RT_GEMV_MAC
  }
  RT_GEMV_ARRAY;
  for (int i = 0; i < MB; ++i)
    for (int j = 0; j < NB; ++j) put(c + i * rs + j * cs, avx512_sum(acc[i][j]), accumulate);
}

template <int MB, int NV>
__attribute__((target("avx512f"))) void axpy_avx512(int64_t k, const float* a, int64_t ars, int64_t acs,
                                                     const float* b, int64_t ldb, float* c, int64_t ldc,
                                                     bool accumulate, int64_t nv) {
  const int64_t last = nv - 16 * (NV - 1);  // columns of the last vector, 1..16
  const __mmask16 mask = static_cast<__mmask16>(last >= 16 ? 0xFFFFu : (1u << last) - 1);
  constexpr int NB = NV;
  RT_GEMV_ZERO(_mm512_setzero_ps())
  for (int64_t p = 0; p < k; ++p) {
    const float* bp = b + p * ldb;
#define RT_GEMV_MAC(i, v, acc)                                                                               \
  _mm512_fmadd_ps(_mm512_set1_ps(a[i * ars + p * acs]),                                                       \
                  v + 1 < NV ? _mm512_loadu_ps(bp + 16 * v) : _mm512_maskz_loadu_ps(mask, bp + 16 * (NV - 1)), acc)
    RT_GEMV_TILE(RT_GEMV_STEP)
#undef RT_GEMV_MAC
  }
  RT_GEMV_ARRAY;
  for (int i = 0; i < MB; ++i) {
    float* d = c + i * ldc;
    for (int v = 0; v < NV - 1; ++v) {
      if (accumulate) acc[i][v] = _mm512_add_ps(acc[i][v], _mm512_loadu_ps(d + 16 * v));
      _mm512_storeu_ps(d + 16 * v, acc[i][v]);
    }
    float* dl = d + 16 * (NV - 1);
    if (accumulate) acc[i][NV - 1] = _mm512_add_ps(acc[i][NV - 1], _mm512_maskz_loadu_ps(mask, dl));
    _mm512_mask_storeu_ps(dl, mask, acc[i][NV - 1]);
  }
}

// One row of A, 256 columns: 16 accumulators (as axpy_row_avx2).
__attribute__((target("avx512f"))) void axpy_row_avx512(int64_t k, const float* a, int64_t acs, const float* b,
                                                         int64_t ldb, float* c, bool accumulate) {
  constexpr int MB = 4, NB = 4;
  RT_GEMV_ZERO(_mm512_setzero_ps())
  for (int64_t p = 0; p < k; ++p) {
    const float* bp = b + p * ldb;
    const __m512 av = _mm512_set1_ps(a[p * acs]);
#define RT_GEMV_MAC(i, v, acc) _mm512_fmadd_ps(av, _mm512_loadu_ps(bp + 64 * i + 16 * v), acc)
    RT_GEMV_TILE(RT_GEMV_STEP)
#undef RT_GEMV_MAC
  }
  RT_GEMV_ARRAY;
  for (int i = 0; i < MB; ++i) {
    for (int v = 0; v < NB; ++v) {
      float* d = c + 64 * i + 16 * v;
      _mm512_storeu_ps(d, accumulate ? _mm512_add_ps(acc[i][v], _mm512_loadu_ps(d)) : acc[i][v]);
    }
  }
}
#endif  // RT_GEMV_X86

// A family: dot kernels [MB - 1][0: NB columns, 1: one column]; axpy kernels
// [MB - 1][0: the wide block of `wide` columns, 1: one vector of `vec` columns];
// for a single row of A, `row` over blocks of `row_wide` columns (or none),
// and `row_dot` over blocks of `row_nb` columns (or none): a batch-1 Linear or
// squeeze-and-excitation FC, whose weight rows (a K of 960: 3.75 KiB) come
// from memory and are short for the hardware's prefetchers (MobileNetV3, one
// thread: its Linears and SE FCs 15 % of a run, stalled on those loads).
using AxpyRowFn = void (*)(int64_t k, const float* a, int64_t acs, const float* b, int64_t ldb, float* c,
                           bool accumulate);
struct Family {
  int nb;
  DotFn dot[kMB][2];
  int64_t wide, vec;
  AxpyFn axpy[kMB][2];
  int64_t row_wide = 0;
  AxpyRowFn row = nullptr;
  int row_nb = 0;
  DotFn row_dot = nullptr;
};

#define RT_DOT(f, nb) {f<1, nb>, f<1, 1>}, {f<2, nb>, f<2, 1>}, {f<3, nb>, f<3, 1>}, {f<4, nb>, f<4, 1>}
#define RT_AXPY(f, nv) {f<1, nv>, f<1, 1>}, {f<2, nv>, f<2, 1>}, {f<3, nv>, f<3, 1>}, {f<4, nv>, f<4, 1>}

const Family kPortableFamily{2, {RT_DOT(dot_portable, 2)}, 8, 4, {RT_AXPY(axpy_portable, 2)}};
#if RT_GEMV_X86
const Family kAvx2Family{2,  {RT_DOT(dot_avx2, 2)}, 16, 8, {RT_AXPY(axpy_avx2, 2)}, 64, axpy_row_avx2,
                         4, dot_avx2<1, 4, true>};
const Family kAvx512Family{4, {RT_DOT(dot_avx512, 4)}, 64, 16, {RT_AXPY(axpy_avx512, 4)}, 256, axpy_row_avx512,
                           4, dot_avx512<1, 4, true>};
#endif
#undef RT_DOT
#undef RT_AXPY

const Family& family(GemmIsa isa) {
#if RT_GEMV_X86
  if (isa == GemmIsa::Avx512) return kAvx512Family;
  if (isa == GemmIsa::Avx2) return kAvx2Family;
#else
  (void)isa;
#endif
  return kPortableFamily;
}

}  // namespace

DirectKind sgemm_direct_kind(MatrixRef<const float> a, MatrixRef<const float> b, MatrixRef<float> c) {
  if (b.rs == 1 && a.cs == 1) return DirectKind::Dot;
  if (b.cs == 1 && c.cs == 1) return DirectKind::Axpy;
  return DirectKind::None;
}

void sgemm_direct(GemmIsa isa, DirectKind kind, int64_t m, int64_t j0, int64_t j1, int64_t k,
                  MatrixRef<const float> a, MatrixRef<const float> b, MatrixRef<float> c, bool accumulate) {
  const Family& f = family(isa);
  if (kind == DirectKind::Dot) {
    int64_t j = j0;
    if (m == 1 && f.row_dot != nullptr) {
      for (; j + f.row_nb <= j1; j += f.row_nb) {
        f.row_dot(k, a.data, a.rs, b.data + j * b.cs, b.cs, c.data + j * c.cs, c.rs, c.cs, accumulate);
      }
    }
    while (j < j1) {
      const bool full = j + f.nb <= j1;
      for (int64_t i = 0; i < m; i += kMB) {
        const int64_t mb = std::min<int64_t>(kMB, m - i);
        f.dot[mb - 1][full ? 0 : 1](k, a.data + i * a.rs, a.rs, b.data + j * b.cs, b.cs,
                                    c.data + i * c.rs + j * c.cs, c.rs, c.cs, accumulate);
      }
      j += full ? f.nb : 1;
    }
    return;
  }
  int64_t j = j0;
  if (m == 1 && f.row != nullptr) {
    for (; j + f.row_wide <= j1; j += f.row_wide) f.row(k, a.data, a.cs, b.data + j, b.rs, c.data + j, accumulate);
  }
  while (j < j1) {
    const bool full = j + f.wide <= j1;
    const int64_t nv = full ? f.wide : std::min(f.vec, j1 - j);
    for (int64_t i = 0; i < m; i += kMB) {
      const int64_t mb = std::min<int64_t>(kMB, m - i);
      f.axpy[mb - 1][full ? 0 : 1](k, a.data + i * a.rs, a.rs, a.cs, b.data + j, b.rs, c.data + i * c.rs + j,
                                   c.rs, accumulate, nv);
    }
    j += nv;
  }
}

}  // namespace ember::cpu::detail
