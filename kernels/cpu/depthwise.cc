// Depthwise Conv2d (depthwise.h). Per plane, a zero-padded copy `pad` of the
// input (rows of `wp` floats, wide enough that the last vector of a row reads
// inside its row); its border is zeroed once per thread and call, and each
// plane writes only the interior, a few rows ahead of the output rows that
// read them (so that reading the input overlaps the arithmetic, and the rows
// are read back from L1; planes whose rows take one row_block pass keep only
// a window of 16 padded rows, depthwise_body.inc's Filler). Stride 1:
//   pad[r, c] = x[r - ph, c - pw] (0 outside);
//   out[oh, ow .. ow+15] = act(bias + sum over taps (i, j) of
//       w[i, j] * pad[oh*sh + i*dh, ow .. ow+15 + j*dw]).
// Stride 2: each padded row is stored deinterleaved, its even columns first
// and its odd columns from `half` on, so that every tap is a plain load too:
//   padded column c lives at (c odd ? half : 0) + c / 2, and
//   out[oh, ow ..] reads row oh*sh + i*dh at (j*dw odd ? half : 0) + ow + j*dw / 2.
// Partial vectors at the end of a row are stored with a mask. 3x3 windows at
// dilation 1 take row_block: up to four output rows at once, so that an
// input row loaded once serves every output row that reads it. Small planes
// put channels in the vector lanes instead (channel_group). Other strides,
// and runs without scratch, use the scalar loop. The same padded rows serve
// convolutions of few input channels (stem_conv2d, stem_body.inc): blocks of
// output channels share each input vector loaded (into channels_last on
// AVX-512: blocks of positions share each tap's weight vectors).
#include "kernels/cpu/depthwise.h"

#include <algorithm>
#include <cstring>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemv.h"
#include "kernels/cpu/prefetch.h"
#include "kernels/cpu/transpose16.h"
#include "runtime/core/thread_pool.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define RT_DW_X86 1
#else
#define RT_DW_X86 0
#endif

namespace ember::cpu {
namespace {

constexpr int64_t kLanes = 16;  // the widest vector (padding is sized for it)
constexpr size_t kAlign = 64;

struct Plane {
  int64_t h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw;
  int64_t xs_h, xs_w, os_h, os_w;  // strides of the input and output planes
  int64_t row0, row1;              // the output rows computed (row_blocks: else all)
  int64_t wp, hp;                  // padded plane
  int64_t half;                    // stride 2: offset of a row's odd columns (0: stride 1 layout)
  float lo, hi;                    // activation bounds (+-inf: none)
  bool hardswish;                  // the activation is HardSwish (after the bounds)
};

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

Plane plane_of(const TensorView& x, const TensorView& wt, const TensorView& o, const Conv2dParams& prm) {
  Plane p;
  p.h = x.sizes[2];
  p.w = x.sizes[3];
  p.oh = o.sizes[2];
  p.ow = o.sizes[3];
  p.kh = wt.sizes[2];
  p.kw = wt.sizes[3];
  p.sh = prm.stride[0];
  p.sw = prm.stride[1];
  p.ph = prm.padding[0];
  p.pw = prm.padding[1];
  p.dh = prm.dilation[0];
  p.dw = prm.dilation[1];
  p.xs_h = x.strides[2];
  p.xs_w = x.strides[3];
  p.os_h = o.strides[2];
  p.os_w = o.strides[3];
  p.row0 = 0;
  p.row1 = p.oh;
  // The last vector of an output row reads below round_up(ow, 16) + (kw - 1) * dw (stride 1), or
  // below round_up(ow, 16) + (kw - 1) * dw / 2 in either half of a deinterleaved row (stride 2);
  // row_block's shifted taps read the vector from round_up(ow, 16) on. Rows and halves start on
  // vector boundaries (the taps' loads whole vectors; the copies' stores may straddle two).
  if (p.sw == 2) {
    p.half = round_up(std::max((p.w + 2 * p.pw + 1) / 2, round_up(p.ow, kLanes) + kLanes + (p.kw - 1) * p.dw / 2 + 1),
                      kLanes);
    p.wp = 2 * p.half;
  } else {
    p.half = 0;
    p.wp = round_up(std::max(p.w + 2 * p.pw, round_up(p.ow, kLanes) + kLanes + (p.kw - 1) * p.dw), kLanes);
  }
  p.hp = p.h + 2 * p.ph;
  p.lo = -__builtin_inff();
  p.hi = __builtin_inff();
  const Activation& a = prm.activation;
  p.hardswish = a.kind == ActivationKind::HardSwish;
  if (a.kind == ActivationKind::Relu) {
    p.lo = 0.0f;
  } else if (a.kind == ActivationKind::Clamp) {
    p.lo = static_cast<float>(a.min);
    p.hi = static_cast<float>(a.max);
  }
  return p;
}

// Where padded column c of a row lies in its row buffer: at stride 1 at c; at
// stride 2 (deinterleaved) in the odd or the even half, at c / 2.
inline int64_t column_offset(const Plane& p, int64_t c) { return p.sw == 2 ? (c % 2 == 1 ? p.half : 0) + c / 2 : c; }

constexpr int64_t kMaxTaps = 64;
// The few-input-channel convolution (stem_conv2d): at most this many input
// channels, and input rows (channels x kernel rows) a block reads.
constexpr int64_t kStemMaxCin = 4;
constexpr int64_t kStemMaxRows = 32;

// stem_rows pads the input rows of a band of output rows at once, then
// computes the band a block of channels at a time: each channel's output is
// written in one run of rows. (Row by row, ResNet-18's 7x7 stem wrote 64
// planes at once, a stream each: after the rest of the model had evicted its
// output, it took 2.0 ms there against 1.65 alone.) A band's padded rows
// take at most about kStemBandBytes. Up to kStemRowChannels output channels
// go row by row (bands of one row: the row's few padded inputs stay in L1;
// MobileNetV2's 3x3 stem, 32 channels, in bands 0.30 -> 0.32 ms).
constexpr int64_t kStemBandBytes = 192 * 1024;
constexpr int64_t kStemRowChannels = 32;

// The output rows of a band (at least one).
int64_t stem_band(const Plane& p, int64_t cin, int64_t cout) {
  if (cout <= kStemRowChannels) return 1;
  const int64_t rows = kStemBandBytes / (cin * p.wp * 4);
  return std::max<int64_t>(1, (rows - p.kh) / p.sh + 1);
}

// The padded input rows of a band of `band` output rows.
int64_t stem_band_rows(const Plane& p, int64_t band) { return (band - 1) * p.sh + p.kh; }

bool vectorizable(const Plane& p) {
  return (p.sw == 1 || p.sw == 2) && p.oh > 0 && p.ow > 0 && p.kh * p.kw <= kMaxTaps;
}

// 3x3 windows at dilation 1 and stride 1 or 2: row_block's (plane_rows).
bool row_blocks(const Plane& p) {
  return p.kh == 3 && p.kw == 3 && p.dh == 1 && p.dw == 1 && p.sh == p.sw && (p.sh == 1 || p.sh == 2);
}

size_t slot_bytes(const Plane& p) { return round_up(p.hp * p.wp * 4, kAlign); }

inline float clampf(float v, float lo, float hi) { return v < lo ? lo : (v > hi ? hi : v); }

// One plane with bounds checks (any strides; no scratch).
void plane_scalar(const Plane& p, const float* x, const float* w, float bias, float* o) {
  for (int64_t oh = 0; oh < p.oh; ++oh) {
    for (int64_t ow = 0; ow < p.ow; ++ow) {
      float acc = bias;
      for (int64_t i = 0; i < p.kh; ++i) {
        const int64_t ih = oh * p.sh - p.ph + i * p.dh;
        if (ih < 0 || ih >= p.h) continue;
        for (int64_t j = 0; j < p.kw; ++j) {
          const int64_t iw = ow * p.sw - p.pw + j * p.dw;
          if (iw >= 0 && iw < p.w) acc += w[i * p.kw + j] * x[ih * p.xs_h + iw * p.xs_w];
        }
      }
      const float v = clampf(acc, p.lo, p.hi);
      o[oh * p.os_h + ow * p.os_w] = p.hardswish ? hardswish_value(v) : v;
    }
  }
}

// Copies input rows [r0, r1) of the plane into the interiors of padded rows
// from `rows` on (stride 1 layout; the border stays as zeroed).
void pad_interior(const Plane& p, const float* x, float* rows, int64_t r0, int64_t r1) {
  for (int64_t ih = r0; ih < r1; ++ih) {
    float* dst = rows + (ih - r0) * p.wp + p.pw;
    const float* src = x + ih * p.xs_h;
    if (p.xs_w == 1) {
      std::memcpy(dst, src, sizeof(float) * p.w);
    } else {
      for (int64_t c = 0; c < p.w; ++c) dst[c] = src[c * p.xs_w];
    }
  }
}

// --- the vector body per ISA (depthwise_body.inc) ---------------------------
// vmax(lo, v) = lo > v ? lo : v and vmin(hi, v) = hi < v ? hi : v: a NaN v is
// kept (as the scalar activate()).

namespace portable {  // 4 lanes in GCC vector extensions: SSE2 on x86, NEON on ARM
typedef float Vec __attribute__((vector_size(16)));
typedef int Veci __attribute__((vector_size(16)));
constexpr int64_t kL = 4;
constexpr int kRowVectors = 2;  // 16 registers on SSE2: 4 accumulators, 9 weights, an input
constexpr int64_t kLaneBlock = 2;
inline Vec vload(const float* s) {
  Vec v;
  std::memcpy(&v, s, sizeof(v));
  return v;
}
#if defined(__clang__)
inline Vec veven(Vec a, Vec b) { return __builtin_shufflevector(a, b, 0, 2, 4, 6); }
inline Vec vodd(Vec a, Vec b) { return __builtin_shufflevector(a, b, 1, 3, 5, 7); }
#else
inline Vec veven(Vec a, Vec b) { return __builtin_shuffle(a, b, Veci{0, 2, 4, 6}); }
inline Vec vodd(Vec a, Vec b) { return __builtin_shuffle(a, b, Veci{1, 3, 5, 7}); }
#endif
constexpr bool kShiftRows = false;
inline Vec vset1(float f) { return Vec{f, f, f, f}; }
inline Vec vfma(Vec a, Vec b, Vec acc) { return acc + a * b; }
inline Vec vmax(Vec lo, Vec v) { return lo > v ? lo : v; }
inline Vec vmin(Vec hi, Vec v) { return hi < v ? hi : v; }
inline void vstore(float* d, Vec v) { std::memcpy(d, &v, sizeof(v)); }
inline void vstore_n(float* d, Vec v, int64_t n) { std::memcpy(d, &v, sizeof(float) * n); }
inline Vec vload_n(const float* s, int64_t n) {
  Vec v = {0, 0, 0, 0};
  std::memcpy(&v, s, sizeof(float) * n);
  return v;
}
inline void vtranspose(Vec r[4]) { detail::transpose4(r); }
#include "kernels/cpu/depthwise_body.inc"
#include "kernels/cpu/depthwise_cl_body.inc"
constexpr int kStemOC = 4;  // 8 accumulators
constexpr int kStemNV = 2;
constexpr int kStemClOC = 0;  // channels_last outputs transposed (stem_row_cl)
inline void stem_store_cl(Vec* r, float* dst, int64_t os_w, int64_t npos, int64_t noc) {
  vtranspose(r);  // r[l]: position l's 4 channels
  for (int64_t l = 0; l < npos; ++l) noc == kStemOC ? vstore(dst + l * os_w, r[l]) : vstore_n(dst + l * os_w, r[l], noc);
}
#include "kernels/cpu/stem_body.inc"
}  // namespace portable

#if RT_DW_X86
#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace avx2 {
using Vec = __m256;
constexpr int64_t kL = 8;
constexpr int kRowVectors = 2;  // 16 registers: 4 accumulators, 9 weights, an input
constexpr int64_t kLaneBlock = 4;
inline Vec vload(const float* s) { return _mm256_loadu_ps(s); }
inline Vec veven(Vec a, Vec b) {
  const __m256 e = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));  // a0 a2 b0 b2 | a4 a6 b4 b6
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), _MM_SHUFFLE(3, 1, 2, 0)));
}
inline Vec vodd(Vec a, Vec b) {
  const __m256 o = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));  // a1 a3 b1 b3 | a5 a7 b5 b7
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(o), _MM_SHUFFLE(3, 1, 2, 0)));
}
constexpr bool kShiftRows = false;
inline Vec vset1(float f) { return _mm256_set1_ps(f); }
inline Vec vfma(Vec a, Vec b, Vec acc) { return _mm256_fmadd_ps(a, b, acc); }
inline Vec vmax(Vec lo, Vec v) { return _mm256_max_ps(lo, v); }
inline Vec vmin(Vec hi, Vec v) { return _mm256_min_ps(hi, v); }
inline void vstore(float* d, Vec v) { _mm256_storeu_ps(d, v); }
alignas(32) constexpr int32_t kMask[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
inline void vstore_n(float* d, Vec v, int64_t n) {
  _mm256_maskstore_ps(d, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kMask + 8 - n)), v);
}
inline Vec vload_n(const float* s, int64_t n) {
  return _mm256_maskload_ps(s, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kMask + 8 - n)));
}
inline void vtranspose(Vec r[8]) {
  Vec t[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 2; ++i) {
    r[4 * i] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int j = 0; j < 4; ++j) {
    t[j] = _mm256_permute2f128_ps(r[j], r[j + 4], 0x20);
    t[j + 4] = _mm256_permute2f128_ps(r[j], r[j + 4], 0x31);
  }
  for (int j = 0; j < 8; ++j) r[j] = t[j];
}
#include "kernels/cpu/depthwise_body.inc"
#include "kernels/cpu/depthwise_cl_body.inc"
constexpr int kStemOC = 4;  // 12 of 16 registers as accumulators (8: ResNet-18's 7x7 stem 2.90 -> 2.73 ms, Zen 3)
constexpr int kStemNV = 3;
constexpr int kStemClOC = 0;
// 4 channels x 8 positions: each 128-bit half transposed 4x4 (_MM_TRANSPOSE4_PS), a position's 4 channels a store.
inline void stem_store_cl(const Vec* r, float* dst, int64_t os_w, int64_t npos, int64_t noc) {
  __m128 q[8];
  for (int c = 0; c < 4; ++c) {
    q[c] = _mm256_castps256_ps128(r[c]);
    q[c + 4] = _mm256_extractf128_ps(r[c], 1);
  }
  _MM_TRANSPOSE4_PS(q[0], q[1], q[2], q[3]);
  _MM_TRANSPOSE4_PS(q[4], q[5], q[6], q[7]);
  if (noc == kStemOC) {
    for (int64_t l = 0; l < npos; ++l) _mm_storeu_ps(dst + l * os_w, q[l]);
  } else {
    const __m128i m = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kMask + 8 - noc));
    for (int64_t l = 0; l < npos; ++l) _mm_maskstore_ps(dst + l * os_w, m, q[l]);
  }
}
#include "kernels/cpu/stem_body.inc"
}  // namespace avx2
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx512f")
namespace avx512 {
using Vec = __m512;
constexpr int64_t kL = 16;
constexpr int kRowVectors = 8;  // 32 registers: 16 accumulators, 9 weights, an input
constexpr int64_t kLaneBlock = 4;
inline Vec vload(const float* s) { return _mm512_loadu_ps(s); }
inline Vec veven(Vec a, Vec b) {
  return _mm512_permutex2var_ps(a, _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30), b);
}
inline Vec vodd(Vec a, Vec b) {
  return _mm512_permutex2var_ps(a, _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31), b);
}
template <int J>
inline Vec vshift(Vec a, Vec b) {  // lanes J .. J + 15 of a then b
  // (the zero-masked form with every lane kept: GCC 12's _mm512_alignr_epi32 trips -Wuninitialized in its header)
  return _mm512_castsi512_ps(
      _mm512_maskz_alignr_epi32(static_cast<__mmask16>(0xffff), _mm512_castps_si512(b), _mm512_castps_si512(a), J));
}
constexpr bool kShiftRows = true;
inline Vec vset1(float f) { return _mm512_set1_ps(f); }
inline Vec vfma(Vec a, Vec b, Vec acc) { return _mm512_fmadd_ps(a, b, acc); }
// (compare and blend: GCC 12's _mm512_max_ps trips -Wuninitialized in its header)
inline Vec vmax(Vec lo, Vec v) { return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(lo, v, _CMP_GT_OQ), v, lo); }
inline Vec vmin(Vec hi, Vec v) { return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(hi, v, _CMP_LT_OQ), v, hi); }
inline void vstore(float* d, Vec v) { _mm512_storeu_ps(d, v); }
inline void vstore_n(float* d, Vec v, int64_t n) {
  _mm512_mask_storeu_ps(d, static_cast<__mmask16>((1u << n) - 1), v);
}
inline Vec vload_n(const float* s, int64_t n) { return _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << n) - 1), s); }
inline void vtranspose(Vec r[16]) { transpose16x16(r); }
#include "kernels/cpu/depthwise_body.inc"
#include "kernels/cpu/depthwise_cl_body.inc"
constexpr int kStemOC = 8;  // 24 of 32 registers as accumulators
constexpr int kStemNV = 3;
// Channels_last outputs by positions (stem_row_cl), blocks of 32 channels.
// MobileNetV2's 3x3 stride-2 stem (32 channels), one thread: 0.375 -> 0.321
// ms; MobileNetV3's (16 channels, HardSwish) 0.236 -> 0.212 (transposed 8
// channels at a time by stem_store_cl before; the rest is mostly reading the
// image, 0.09 ms, cold).
constexpr int kStemClOC = 32;
// 8 channels x 16 positions transposed in registers: each 128-bit lane 4 x 4
// (unpack, shuffle), then a position's channels 0-3 and 4-7 joined
// (vpermt2ps), a position's channels one store. (A scatter per channel,
// 16 stores each: MobileNetV3's stem 0.300 -> 0.226 ms on a Zen 4.)
// (GCC 12's headers trip -Wmaybe-uninitialized in these shuffles.)
#if !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
inline void stem_store_cl(const Vec* r, float* dst, int64_t os_w, int64_t npos, int64_t noc) {
  static_assert(kStemOC == 8, "two 4-channel halves");
  Vec t[8], u[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 2; ++i) {  // u[4 i + k]: channels 4 i .. 4 i + 3 of position 4 L + k in lane L
    u[4 * i] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    u[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  const __m512i join[2] = {_mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23),
                           _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31)};
  const __mmask16 m = static_cast<__mmask16>((1u << noc) - 1);
  for (int k = 0; k < 4; ++k) {
    for (int s = 0; s < 2; ++s) {  // positions k + 8 s (low half) and k + 8 s + 4 (high half)
      const Vec v = _mm512_permutex2var_ps(u[k], join[s], u[4 + k]);
      for (int h = 0; h < 2; ++h) {
        const int64_t l = k + 8 * s + 4 * h;
        if (l >= npos) continue;
        const __m256 half = h == 0 ? _mm512_castps512_ps256(v)
                                   : _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
        if (noc == kStemOC) {
          _mm256_storeu_ps(dst + l * os_w, half);
        } else {
          _mm512_mask_storeu_ps(dst + l * os_w, m, _mm512_zextps256_ps512(half));
        }
      }
    }
  }
}
#if !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#include "kernels/cpu/stem_body.inc"
}  // namespace avx512
#pragma GCC pop_options
#endif  // RT_DW_X86

using PlaneFn = void (*)(const Plane&, const float*, float*, const float*, const int64_t*, float, float*);
using StemFn = void (*)(const Plane&, int64_t, const float*, int64_t, const float*, const float*, int64_t, float*,
                        int64_t, float*);
using GroupFn = void (*)(const Plane&, int64_t, const float*, int64_t, const float*, const float*, int64_t, float*,
                         int64_t, float*, float*);
using ClRowsFn = void (*)(const Plane&, int64_t, const float*, int64_t, const float*, const float*, float*, int64_t,
                          int64_t, int64_t);

struct Kernels {
  PlaneFn plane[2];  // stride 1, stride 2
  GroupFn group;     // channel_group
  StemFn stem;       // stem_rows
  ClRowsFn cl;       // cl_rows (channels_last)
  void (*cl_pack)(int64_t, int64_t, int64_t, const float*, float*);  // its weight layout
  int64_t lanes, stem_oc;
  int64_t stem_cl_oc;  // stem_oc of channels_last outputs (kStemClOC, else kStemOC)
  bool shift_rows;   // row_block shifts its taps from whole vectors (kShiftRows)
};

// The variant of the GEMM's micro-kernel family (gemm.h: the widest the CPU
// runs, or the one tests select).
const Kernels& kernels() {
  static const Kernels portable_k{{&portable::plane_s1, &portable::plane_s2},
                                  &portable::channel_group_any,
                                  &portable::stem_rows,
                                  &portable::cl_rows,
                                  &portable::cl_pack,
                                  portable::kL,
                                  portable::kStemOC,
                                  portable::kStemOC,
                                  portable::kShiftRows};
#if RT_DW_X86
  static const Kernels avx2_k{{&avx2::plane_s1, &avx2::plane_s2}, &avx2::channel_group_any, &avx2::stem_rows,
                              &avx2::cl_rows, &avx2::cl_pack, avx2::kL, avx2::kStemOC, avx2::kStemOC,
                              avx2::kShiftRows};
  static const Kernels avx512_k{{&avx512::plane_s1, &avx512::plane_s2}, &avx512::channel_group_any,
                                &avx512::stem_rows, &avx512::cl_rows, &avx512::cl_pack, avx512::kL, avx512::kStemOC,
                                avx512::kStemClOC, avx512::kShiftRows};
  switch (sgemm_isa()) {
    case GemmIsa::Avx512: return avx512_k;
    case GemmIsa::Avx2: return avx2_k;
    default: break;
  }
#endif
  return portable_k;
}

// channel_group's buffers for kLanes channels: the padded planes and the outputs.
size_t group_bytes(const Plane& p) {
  return round_up((p.hp * (p.w + 2 * p.pw) + p.oh * p.ow) * kLanes * 4, kAlign);
}

// Output rows of up to two vectors put channels in the vector lanes
// (channel_group): plane_s1 / plane_s2 leave lanes idle there, or run
// row_block on few vectors. Contiguous planes are transposed in registers.
// Measured on MobileNetV2's depthwise layers (bench/ops/layers.py, AVX-512,
// min of 300 runs, planes -> lanes): 960x7x7 0.054 -> 0.026 ms, 576x14x14
// stride 2 0.062 -> 0.025, 384x14x14 0.047 -> 0.034, 192x28x28 0.065 ->
// 0.063, 144x56x56 stride 2 0.092 -> 0.086; wider rows were not measured
// faster (and take more scratch). With row_block's shifted taps (AVX-512),
// 3x3 rows of 17 to 32 outputs run faster on row_block (MobileNetV2 at 1
// thread, in the model: 192x28x28 0.080-0.086 -> 0.062-0.065 ms, 144x56x56
// stride 2 0.135-0.158 -> 0.105).
bool channel_lanes(const Plane& p, int64_t channels) {
  const int64_t widest = row_blocks(p) && kernels().shift_rows ? kLanes : 2 * kLanes;
  return channels >= kLanes / 2 && p.ow <= widest && group_bytes(p) <= (512u << 10);
}

// Whether each of `parts` threads' share of a plane's output rows starts on a
// whole cache line (the planes start on one: arena tensors are aligned), so
// that no line of the output is written by two threads.
bool rows_split_on_lines(const Plane& p, int64_t parts) {
  for (int64_t part = 1; part < parts; ++part) {
    if (p.oh * part / parts * p.ow % (kAlign / 4) != 0) return false;
  }
  return true;
}

// The channels_last path (cl_rows): x and o have channel stride 1, and a
// position's channels do not overlap the next position's.
bool channels_last_applies(const TensorView& x, const TensorView& o) {
  const int64_t c = o.sizes[1];
  return x.strides[1] == 1 && o.strides[1] == 1 && x.strides[3] >= c && o.strides[3] >= c && x.strides[2] >= c &&
         o.strides[2] >= c;
}

// cl_rows over the threads (rows of (image, output row) split between them).
void depthwise_channels_last(const Plane& p, const TensorView& x, const TensorView& wt, const TensorView& bias,
                             const TensorView& o, void* scratch, int threads, const DepthwiseClWeight* packed) {
  const int64_t c = o.sizes[1], taps = p.kh * p.kw;
  const DepthwiseClOperands ops = depthwise_cl_operands(wt, bias, packed, scratch);
  const Kernels& k = kernels();
  const int64_t rows = o.sizes[0] * p.oh;
  const int64_t useful = std::max<int64_t>(1, rows * c * p.ow * taps / 32768);
  // Up to kChunksPerThread bands of rows a thread (another thread can take a
  // slow one's last), each of at least 16 x 32768 multiply-adds: smaller
  // bands cost more than they balance (MobileNetV2's 14x14x576 layers, 2
  // threads, 6 bands a call: 0.130 -> 0.139 ms with the 1x1 before them).
  const int64_t parts = std::max<int64_t>(1, std::min({static_cast<int64_t>(std::max(1, threads)), rows, useful}));
  const int64_t bands = std::min(rows, parts * std::clamp<int64_t>(useful / (parts * 16), 1, kChunksPerThread));
  auto run = [&](int64_t r0, int64_t r1) {
    k.cl(p, c, x.ptr<const float>(), x.strides[0], ops.w, ops.b, o.ptr<float>(), o.strides[0], r0, r1);
  };
  if (threads > 1 && bands > 1) {
    parallel_for(0, rows, (rows + bands - 1) / bands, run);
  } else {
    run(0, rows);
  }
}

}  // namespace

// The weight's layout comes packed at load where it can (`packed`, for this
// ISA): laid out here on every call, its 3x3 and 5x5 taps one value at a
// time, it was half of a 960-channel 7x7 layer's time on one thread, and more
// on two (MobileNetV2 and V3's late layers).
DepthwiseClOperands depthwise_cl_operands(const TensorView& wt, const TensorView& bias,
                                          const DepthwiseClWeight* packed, void* scratch) {
  const int64_t c = wt.sizes[0], cp = round_up(c, kLanes), taps = wt.sizes[2] * wt.sizes[3];
  float* b = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(scratch) + kAlign - 1) / kAlign * kAlign);
  const float* pb = bias.ptr<const float>();
  for (int64_t ch = 0; ch < cp; ++ch) b[ch] = ch < c && pb != nullptr ? pb[ch * bias.strides[0]] : 0.0f;
  const Kernels& k = kernels();
  if (packed != nullptr && packed->lanes == k.lanes) return {packed->data.as<float>(), b};
  float* laid = b + cp;
  k.cl_pack(c, cp, taps, wt.ptr<const float>(), laid);  // [cp / lanes][taps][lanes]
  return {laid, b};
}

size_t depthwise_cl_operands_bytes(int64_t channels, int64_t taps) {
  return kAlign + static_cast<size_t>((taps + 1) * round_up(channels, kLanes)) * sizeof(float);
}

void depthwise_cl_band(const TensorView& x, const TensorView& wt, const TensorView& o, const Conv2dParams& prm,
                       const float* band, int64_t first, int64_t rows, const DepthwiseClOperands& ops, int64_t r0,
                       int64_t r1) {
  Plane p = plane_of(x, wt, o, prm);
  p.h = rows;  // the band as the image: rows outside it lie outside the image or are not read
  p.ph += first;
  p.xs_w = o.sizes[1];
  p.xs_h = x.sizes[3] * p.xs_w;
  kernels().cl(p, o.sizes[1], band, 0, ops.w, ops.b, o.ptr<float>(), 0, r0, r1);
}

size_t depthwise_cl_weight_bytes(int64_t channels, int64_t taps) {
  return static_cast<size_t>(round_up(channels, kLanes) * taps) * sizeof(float);
}

DepthwiseClWeight depthwise_cl_weight(const float* w, int64_t channels, int64_t taps) {
  DepthwiseClWeight d;
  const Kernels& k = kernels();
  d.lanes = k.lanes;
  d.data = WeightBuffer(depthwise_cl_weight_bytes(channels, taps));
  k.cl_pack(channels, round_up(channels, kLanes), taps, w, d.data.as<float>());
  return d;
}

size_t depthwise_workspace(const TensorView& x, const TensorView& w, const TensorView& o, const Conv2dParams& prm,
                           int threads) {
  const Plane p = plane_of(x, w, o, prm);
  if (channels_last_applies(x, o)) return depthwise_cl_operands_bytes(o.sizes[1], p.kh * p.kw);
  if (!vectorizable(p)) return 0;
  const int64_t planes = o.sizes[0] * o.sizes[1];
  const size_t slot = channel_lanes(p, o.sizes[1]) ? group_bytes(p) : slot_bytes(p);
  return kAlign + slot * static_cast<size_t>(std::max<int64_t>(1, std::min<int64_t>(threads, planes)));
}

void depthwise_conv2d(const TensorView& x, const TensorView& wt, const TensorView& bias, const TensorView& o,
                      const Conv2dParams& prm, void* scratch, size_t scratch_bytes, int threads,
                      const DepthwiseClWeight* packed) {
  const Plane p = plane_of(x, wt, o, prm);
  if (channels_last_applies(x, o) && scratch_bytes >= depthwise_cl_operands_bytes(o.sizes[1], p.kh * p.kw)) {
    return depthwise_channels_last(p, x, wt, bias, o, scratch, threads, packed);
  }
  const int64_t channels = o.sizes[1], planes = o.sizes[0] * channels, taps = p.kh * p.kw;
  const float* px = x.ptr<const float>();
  const float* pw = wt.ptr<const float>();
  const float* pb = bias.ptr<const float>();
  float* po = o.ptr<float>();
  const Kernels& k = kernels();
  const bool lanes = vectorizable(p) && channel_lanes(p, channels);
  const size_t slot = lanes ? group_bytes(p) : slot_bytes(p);
  const bool vec = vectorizable(p) && scratch_bytes >= kAlign + slot;
  // Work units: planes, or groups of k.lanes channels of one image.
  const int64_t groups = (channels + k.lanes - 1) / k.lanes;
  const int64_t units = vec && lanes ? o.sizes[0] * groups : planes;
  const int64_t slots = vec ? static_cast<int64_t>((scratch_bytes - kAlign) / slot) : units;
  // About 2^15 multiply-adds per thread at least.
  const int64_t useful = std::max<int64_t>(1, planes * p.oh * p.ow * taps / 32768);
  const int64_t parts = std::max<int64_t>(1, std::min({slots, static_cast<int64_t>(std::max(1, threads)), units, useful}));
  const uintptr_t base = (reinterpret_cast<uintptr_t>(scratch) + kAlign - 1) / kAlign * kAlign;
  int64_t tap_off[kMaxTaps];
  for (int64_t t = 0; vec && t < taps; ++t) {
    const int64_t jd = t % p.kw * p.dw;
    tap_off[t] = t / p.kw * p.dh * p.wp + column_offset(p, jd);
  }
  // With threads, each unit's output lines are claimed for writing before it
  // is computed: lines the other core read last (the 1x1 product after this
  // convolution in the previous run, splitting by output channels, reads
  // every channel) cost 3-5x to write to unclaimed. MobileNetV2 14x14 block
  // (expand, depthwise, project), 2 threads: its depthwise 0.049 -> 0.033 ms.
  // (One thread: about 1 % slower with it.)
  const bool claim = parts > 1;
  // Large planes on row_block (3x3 windows): each thread takes its share of
  // every plane's output rows rather than its share of the planes. The 1x1
  // products before and after such planes split their columns (positions)
  // across the threads, so a thread then reads and writes mostly lines it
  // wrote or reads next itself. MobileNetV2, 2 threads, median of 9
  // alternating rounds: 0.965x (its 112x112 and 56x56 depthwise layers and
  // their projections); alone (conv_bench) the same or faster.
  // Where the threads' rows would share a line (28x28 planes: 14 rows of 28
  // floats), they take whole planes: MobileNetV2's 192x28x28 at 2 threads
  // 0.072-0.075 -> 0.048 ms.
  const bool by_rows = vec && !lanes && parts > 1 && p.oh >= 4 * parts && row_blocks(p) &&
                       p.os_h == p.ow && rows_split_on_lines(p, parts);
  auto run = [&](int64_t part) {
    float* pad = reinterpret_cast<float*>(base + static_cast<size_t>(part) * slot);
    if (vec && lanes) {
      const int64_t padded = p.hp * (p.w + 2 * p.pw) * k.lanes;
      std::memset(pad, 0, sizeof(float) * padded);  // the border; groups write the interior
      for (int64_t u = units * part / parts; u < units * (part + 1) / parts; ++u) {
        const int64_t n = u / groups, c0 = u % groups * k.lanes;
        if (claim && o.strides[1] == p.oh * p.ow) {
          prefetch_write(po + n * o.strides[0] + c0 * o.strides[1],
                         std::min(k.lanes, channels - c0) * o.strides[1] * static_cast<int64_t>(sizeof(float)));
        }
        k.group(p, std::min(k.lanes, channels - c0), px + n * x.strides[0] + c0 * x.strides[1], x.strides[1],
                pw + c0 * taps, pb != nullptr ? pb + c0 * bias.strides[0] : nullptr, bias.strides[0],
                po + n * o.strides[0] + c0 * o.strides[1], o.strides[1], pad, pad + padded);
      }
      return;
    }
    if (vec) std::memset(pad, 0, sizeof(float) * p.hp * p.wp);  // the border; planes write the interior
    Plane q = p;  // this part's planes [u0, u1), output rows [row0, row1) of each
    int64_t u0 = planes * part / parts, u1 = planes * (part + 1) / parts;
    if (by_rows) {
      u0 = 0;
      u1 = planes;
      q.row0 = p.oh * part / parts;
      q.row1 = p.oh * (part + 1) / parts;
    }
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t n = u / channels, c = u % channels;
      const float* xc = px + n * x.strides[0] + c * x.strides[1];
      float* oc = po + n * o.strides[0] + c * o.strides[1];
      const float b = pb != nullptr ? pb[c * bias.strides[0]] : 0.0f;
      if (claim && p.os_h == p.ow) {
        prefetch_write(oc + q.row0 * p.ow, (q.row1 - q.row0) * p.ow * static_cast<int64_t>(sizeof(float)));
      }
      if (!vec) {
        plane_scalar(p, xc, pw + c * taps, b, oc);
        continue;
      }
      k.plane[p.sw == 1 ? 0 : 1](q, xc, pad, pw + c * taps, tap_off, b, oc);
    }
  };
  if (parts > 1) {
    parallel_for(0, parts, 1, [&](int64_t a, int64_t e) {
      for (int64_t part = a; part < e; ++part) run(part);
    });
  } else {
    run(0);
  }
}

namespace {

// stem_conv2d's scratch: the packed weights and bias (blocks of stem_oc
// channels), then per thread cin * kh padded rows.
struct StemPlan {
  Plane p;
  int64_t cin, cout, oc, oc_pad, taps;  // oc: channels a weight block (the kernels' stem_oc for this output)
  size_t weight_bytes, rows_bytes;
};

StemPlan stem_plan(const TensorView& x, const TensorView& wt, const TensorView& o, const Conv2dParams& prm) {
  StemPlan s;
  s.p = plane_of(x, wt, o, prm);
  s.cin = wt.sizes[1];
  s.cout = wt.sizes[0];
  s.oc = o.strides[1] == 1 ? kernels().stem_cl_oc : kernels().stem_oc;
  s.oc_pad = round_up(s.cout, s.oc);
  s.taps = s.cin * s.p.kh * s.p.kw;
  s.weight_bytes = round_up((s.oc_pad * s.taps + s.oc_pad) * 4, kAlign);
  s.rows_bytes = round_up(s.cin * stem_band_rows(s.p, stem_band(s.p, s.cin, s.cout)) * s.p.wp * 4, kAlign);
  return s;
}

int64_t stem_parts(const StemPlan& s, int threads) {
  const int64_t useful = std::max<int64_t>(1, s.cout * s.taps * s.p.oh * s.p.ow / 65536);
  return std::max<int64_t>(1, std::min({static_cast<int64_t>(std::max(1, threads)), s.p.oh, useful}));
}

}  // namespace

bool stem_applies(const TensorView& x, const TensorView& wt, const TensorView& o, const Conv2dParams& prm) {
  if (prm.groups != 1 || x.rank != 4 || wt.rank != 4 || o.rank != 4 || !wt.is_contiguous() ||
      wt.sizes[1] > kStemMaxCin || wt.sizes[0] < 8 || o.sizes[3] < kLanes) {
    return false;
  }
  const Plane p = plane_of(x, wt, o, prm);
  return vectorizable(p) && p.sh == p.sw && p.dh == 1 && p.dw == 1 && wt.sizes[1] * p.kh <= kStemMaxRows;
}

size_t stem_workspace(const TensorView& x, const TensorView& w, const TensorView& o, const Conv2dParams& prm,
                      int threads) {
  const StemPlan s = stem_plan(x, w, o, prm);
  return kAlign + s.weight_bytes + s.rows_bytes * static_cast<size_t>(stem_parts(s, threads));
}

bool stem_conv2d(const TensorView& x, const TensorView& wt, const TensorView& bias, const TensorView& o,
                 const Conv2dParams& prm, void* scratch, size_t scratch_bytes, int threads) {
  const StemPlan s = stem_plan(x, wt, o, prm);
  const int64_t parts = stem_parts(s, threads);
  if (scratch_bytes < kAlign + s.weight_bytes + s.rows_bytes * static_cast<size_t>(parts)) return false;
  const Kernels& k = kernels();
  char* base = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(scratch) + kAlign - 1) / kAlign * kAlign);
  // Weights [cout / oc][taps][oc], zero past cout; the bias after them.
  float* w = reinterpret_cast<float*>(base);
  float* b = w + s.oc_pad * s.taps;
  const float* pw = wt.ptr<const float>();
  const float* pb = bias.ptr<const float>();
  for (int64_t c = 0; c < s.oc_pad; ++c) {
    float* dst = w + c / s.oc * s.taps * s.oc + c % s.oc;
    for (int64_t t = 0; t < s.taps; ++t) dst[t * s.oc] = c < s.cout ? pw[c * s.taps + t] : 0.0f;
    b[c] = c < s.cout && pb != nullptr ? pb[c * bias.strides[0]] : 0.0f;
  }
  // A band of output rows a thread, each thread's padded rows a slot. (Four
  // bands a thread: MobileNetV3's stem 0.115 -> 0.124 ms at 2 threads.)
  const int64_t bands = parts;
  parallel_tasks(bands, static_cast<int>(parts), [&](int64_t band, int slot) {
    float* buf = reinterpret_cast<float*>(base + s.weight_bytes + static_cast<size_t>(slot) * s.rows_bytes);
    std::memset(buf, 0, s.rows_bytes);  // the border; rows write the interior
    Plane q = s.p;
    q.row0 = s.p.oh * band / bands;
    q.row1 = s.p.oh * (band + 1) / bands;
    for (int64_t n = 0; n < o.sizes[0]; ++n) {
      k.stem(q, s.cin, x.ptr<const float>() + n * x.strides[0], x.strides[1], w, b, s.cout,
             o.ptr<float>() + n * o.strides[0], o.strides[1], buf);
    }
  });
  return true;
}

}  // namespace ember::cpu
