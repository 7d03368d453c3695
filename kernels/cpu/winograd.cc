// Winograd F(4x4, 3x3) Conv2d (winograd.h). Workspace, in order: U (unless
// pre-transformed), the tile tables (gather_tiles), V [36, Cin, tp], M [36,
// Cout, tp], one GEMM packing slot per thread; tp is the tile count rounded up
// to 16 so every vector group of tiles stays inside its row. Four parallel
// regions: the weight transform (when needed), the input transform over
// (channel, tile group), the 36 GEMMs (each single-threaded, the frequencies
// split among the threads), the output transform over (channel, tile group).
// Or, where V and M outgrow L2 (tile_block), blocks of tiles, each with its
// own V, M and GEMM slot, whole blocks a thread.
#include "kernels/cpu/winograd.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/transpose16.h"
#include "runtime/core/thread_pool.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define RT_WG_X86 1
#else
#define RT_WG_X86 0
#endif

// No floating-point contraction (GCC contracts across statements in C++ by
// default): the transforms give the same bits on every ISA, so a weight
// transformed at load matches the per-call transform whichever GEMM family runs.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#elif defined(__clang__)
#pragma clang fp contract(off)
#endif

namespace ember::cpu {
namespace {

constexpr size_t kAlign = 64;
constexpr int64_t kMaxLanes = 16;

size_t aligned(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

struct Geo {
  int64_t cin, h, w, cout, oh, ow, ph, pw;
  int64_t tiles_w, tiles_img, tiles, tp;  // tiles per row, per image, in all; GEMM row stride
  int64_t t_base;                         // the tile in V's and M's first column (a block's first)
  int64_t vfs, mfs;                       // V's and M's frequency strides (columns_of)
  int64_t xs[4], os[4];
  float lo, hi;    // activation bounds (+-inf: none)
  bool hardswish;  // the activation is HardSwish (after the bounds)
  const float* residual;  // added before the activation, with the output's strides (os); or null
  bool gather;     // a tile's input offsets fit the 32-bit indices of gather_tiles
  // gather_tiles: per tile (tp of them) its first input row and column and
  // their offset in the input; past the last tile, rows and columns outside.
  const int32_t *tile_ih, *tile_iw, *tile_off;
};

// V's and M's columns: tp of them from tile t_base on. A frequency's rows
// ([channels, tp]) are a cache line further apart than their size, so that a
// tile group's 36 values do not fall in one L1 set: 64 channels of 32 tiles
// are 8 KiB, and the 36 loads of an output group missed L1.
void columns_of(Geo& g, int64_t tp, int64_t t_base) {
  g.tp = tp;
  g.t_base = t_base;
  g.vfs = g.cin * tp + static_cast<int64_t>(kAlign / sizeof(float));
  g.mfs = g.cout * tp + static_cast<int64_t>(kAlign / sizeof(float));
}

Geo geo_of(const TensorView& x, const TensorView& o, const Conv2dParams* prm) {
  Geo g;
  g.cin = x.sizes[1];
  g.h = x.sizes[2];
  g.w = x.sizes[3];
  g.cout = o.sizes[1];
  g.oh = o.sizes[2];
  g.ow = o.sizes[3];
  g.ph = prm != nullptr ? prm->padding[0] : 0;
  g.pw = prm != nullptr ? prm->padding[1] : 0;
  g.tiles_w = (g.ow + kWinogradTile - 1) / kWinogradTile;
  g.tiles_img = g.tiles_w * ((g.oh + kWinogradTile - 1) / kWinogradTile);
  g.tiles = o.sizes[0] * g.tiles_img;
  columns_of(g, (g.tiles + kMaxLanes - 1) / kMaxLanes * kMaxLanes, 0);
  for (int d = 0; d < 4; ++d) {
    g.xs[d] = x.strides[d];
    g.os[d] = o.strides[d];
  }
  const int64_t extent =
      (x.sizes[0] - 1) * x.strides[0] + (g.h + 2 * g.ph + 6) * x.strides[2] + (g.w + 2 * g.pw + 6) * x.strides[3];
  g.gather = x.strides[0] >= 0 && x.strides[2] >= 0 && x.strides[3] >= 0 && extent < (int64_t{1} << 31);
  g.tile_ih = g.tile_iw = g.tile_off = nullptr;
  g.residual = nullptr;
  g.lo = -__builtin_inff();
  g.hi = __builtin_inff();
  g.hardswish = prm != nullptr && prm->activation.kind == ActivationKind::HardSwish;
  if (prm != nullptr && prm->activation.kind == ActivationKind::Relu) {
    g.lo = 0.0f;
  } else if (prm != nullptr && prm->activation.kind == ActivationKind::Clamp) {
    g.lo = static_cast<float>(prm->activation.min);
    g.hi = static_cast<float>(prm->activation.max);
  }
  return g;
}

// Tile t's image, tile row and tile column, stepped to the next tile without
// a division (two divisions a lane cost about as much as the transforms).
struct TileWalk {
  int64_t img, row, col;
  TileWalk(const Geo& g, int64_t t) : img(t / g.tiles_img), row(t % g.tiles_img / g.tiles_w), col(t % g.tiles_w) {}
  void next(const Geo& g) {
    if (++col < g.tiles_w) return;
    col = 0;
    if (++row * g.tiles_w < g.tiles_img) return;
    row = 0;
    ++img;
  }
};

// Geo's activation on a GCC vector of floats: clamped to [lo, hi] (a NaN
// stays NaN, as activate()), then HardSwish (as hardswish_value).
template <typename V>
inline V activated(const Geo& g, V r) {
  const V lo = V{} + g.lo, hi = V{} + g.hi, zero = V{}, three = V{} + 3.0f, six = V{} + 6.0f;
  r = r < lo ? lo : r;
  r = r > hi ? hi : r;
  if (g.hardswish) {
    V t = r + three;
    t = t < zero ? zero : t;
    t = t > six ? six : t;
    r = r * t / six;
  }
  return r;
}

// --- the vector body per ISA (winograd_body.inc) -----------------------------

namespace portable {  // 4 lanes in GCC vector extensions: SSE2 on x86, NEON on ARM
typedef float Vec __attribute__((vector_size(16)));
constexpr int64_t kL = 4;
// No vector gathers or tile stores here: input_group takes tile_values and
// output_group stores each value (the hooks below are never called).
constexpr bool kGather = false;
constexpr bool kTileStores = false;
inline void gather_tiles(const Geo&, const float*, int64_t, int64_t, Vec*) {}
inline void store_tiles(const Geo&, const Vec*, float*, int64_t, int64_t) {}
#include "kernels/cpu/winograd_body.inc"
}  // namespace portable

#if RT_WG_X86
#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace avx2 {
typedef float Vec __attribute__((vector_size(32)));
constexpr int64_t kL = 8;
constexpr bool kGather = true;
constexpr bool kTileStores = false;  // (store_tiles never called)
inline void store_tiles(const Geo&, const Vec*, float*, int64_t, int64_t) {}
// tile_values by masked gathers: per lane the tile's first input offset
// (Geo's tables), per (i, j) the lanes whose row ih0 + i and column iw0 + j
// lie in the image.
inline void gather_tiles(const Geo& g, const float* x, int64_t ci, int64_t t0, Vec* dv) {
  const __m256i vo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(g.tile_off + t0));
  const __m256i vh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(g.tile_ih + t0));
  const __m256i vw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(g.tile_iw + t0));
  const __m256i h = _mm256_set1_epi32(static_cast<int32_t>(g.h)), w = _mm256_set1_epi32(static_cast<int32_t>(g.w));
  const __m256i minus1 = _mm256_set1_epi32(-1);
  __m256i rows[6], cols[6];  // lanes inside (all bits set)
  for (int i = 0; i < 6; ++i) {
    const __m256i r = _mm256_add_epi32(vh, _mm256_set1_epi32(i)), c = _mm256_add_epi32(vw, _mm256_set1_epi32(i));
    rows[i] = _mm256_and_si256(_mm256_cmpgt_epi32(r, minus1), _mm256_cmpgt_epi32(h, r));
    cols[i] = _mm256_and_si256(_mm256_cmpgt_epi32(c, minus1), _mm256_cmpgt_epi32(w, c));
  }
  const float* base = x + ci * g.xs[1];
  for (int i = 0; i < 6; ++i) {
    for (int j = 0; j < 6; ++j) {
      const __m256i idx = _mm256_add_epi32(vo, _mm256_set1_epi32(static_cast<int32_t>(i * g.xs[2] + j * g.xs[3])));
      dv[i * 6 + j] = _mm256_mask_i32gather_ps(_mm256_setzero_ps(), base, idx,
                                               _mm256_castsi256_ps(_mm256_and_si256(rows[i], cols[j])), 4);
    }
  }
}
#include "kernels/cpu/winograd_body.inc"
}  // namespace avx2
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx512f")
namespace avx512 {
typedef float Vec __attribute__((vector_size(64)));
constexpr int64_t kL = 16;
constexpr bool kGather = true;
constexpr bool kTileStores = true;
// out[n, co] for tiles t0 .. t0 + 16 from y[i * 4 + j] (lane l: tile t0 + l's
// output at row i, column j): transposed, so that a tile inside the image
// with contiguous rows takes four 4-float stores (a value at a time cost
// about as much as the transform). With a residual (y not yet activated),
// each stored row adds the residual's row and then takes the activation (a
// transpose of the residual to y's layout cost 0.09 of 0.67 ms on 64@56x56).
// (GCC 12's headers trip -Wuninitialized in the shuffles and extracts.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
inline void store_tiles(const Geo& g, const Vec* y, float* o, int64_t co, int64_t t0) {
  __m512 t[16];
  for (int k = 0; k < 16; ++k) t[k] = y[k];
  transpose16x16(t);  // t[l]: tile t0 + l's outputs, row after row
  TileWalk at(g, t0);
  for (int64_t l = 0; l < kL && t0 + l < g.tiles; ++l, at.next(g)) {
    const int64_t oh0 = at.row * kWinogradTile, ow0 = at.col * kWinogradTile;
    float* dst = o + at.img * g.os[0] + co * g.os[1] + oh0 * g.os[2] + ow0 * g.os[3];
    const float* res = g.residual != nullptr ? g.residual + (dst - o) : nullptr;  // (the output's strides)
    if (oh0 + kWinogradTile <= g.oh && ow0 + kWinogradTile <= g.ow && g.os[3] == 1) {
      if (res != nullptr) {
        __m512 r = _mm512_castps128_ps512(_mm_loadu_ps(res));
        r = _mm512_mask_broadcast_f32x4(r, 0x00f0, _mm_loadu_ps(res + g.os[2]));
        r = _mm512_mask_broadcast_f32x4(r, 0x0f00, _mm_loadu_ps(res + 2 * g.os[2]));
        r = _mm512_mask_broadcast_f32x4(r, 0xf000, _mm_loadu_ps(res + 3 * g.os[2]));
        t[l] = activated(g, t[l] + r);
      }
      _mm_storeu_ps(dst, _mm512_extractf32x4_ps(t[l], 0));
      _mm_storeu_ps(dst + g.os[2], _mm512_extractf32x4_ps(t[l], 1));
      _mm_storeu_ps(dst + 2 * g.os[2], _mm512_extractf32x4_ps(t[l], 2));
      _mm_storeu_ps(dst + 3 * g.os[2], _mm512_extractf32x4_ps(t[l], 3));
      continue;
    }
    const int64_t rows = std::min<int64_t>(kWinogradTile, g.oh - oh0), cols = std::min<int64_t>(kWinogradTile, g.ow - ow0);
    alignas(64) float b[16];
    if (res != nullptr) {
      alignas(64) float rb[16] = {};
      for (int64_t i = 0; i < rows; ++i) {
        for (int64_t j = 0; j < cols; ++j) rb[i * 4 + j] = res[i * g.os[2] + j * g.os[3]];
      }
      t[l] = activated(g, t[l] + _mm512_load_ps(rb));
    }
    _mm512_store_ps(b, t[l]);
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j) dst[i * g.os[2] + j * g.os[3]] = b[i * 4 + j];
    }
  }
}
#pragma GCC diagnostic pop
// As avx2::gather_tiles.
inline void gather_tiles(const Geo& g, const float* x, int64_t ci, int64_t t0, Vec* dv) {
  const __m512i vo = _mm512_loadu_si512(g.tile_off + t0), vh = _mm512_loadu_si512(g.tile_ih + t0);
  const __m512i vw = _mm512_loadu_si512(g.tile_iw + t0);
  const __m512i zero = _mm512_setzero_si512();
  const __m512i h = _mm512_set1_epi32(static_cast<int32_t>(g.h)), w = _mm512_set1_epi32(static_cast<int32_t>(g.w));
  __mmask16 rows[6], cols[6];  // lanes inside
  for (int i = 0; i < 6; ++i) {
    const __m512i r = _mm512_add_epi32(vh, _mm512_set1_epi32(i)), c = _mm512_add_epi32(vw, _mm512_set1_epi32(i));
    rows[i] = _mm512_cmpge_epi32_mask(r, zero) & _mm512_cmplt_epi32_mask(r, h);
    cols[i] = _mm512_cmpge_epi32_mask(c, zero) & _mm512_cmplt_epi32_mask(c, w);
  }
  const float* base = x + ci * g.xs[1];
  for (int i = 0; i < 6; ++i) {
    for (int j = 0; j < 6; ++j) {
      const __m512i idx = _mm512_add_epi32(vo, _mm512_set1_epi32(static_cast<int32_t>(i * g.xs[2] + j * g.xs[3])));
      dv[i * 6 + j] = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), rows[i] & cols[j], idx, base, 4);
    }
  }
}
#include "kernels/cpu/winograd_body.inc"
}  // namespace avx512
#pragma GCC pop_options
#endif  // RT_WG_X86

struct Fns {
  int64_t lanes;
  void (*input)(const Geo&, const float*, float*, int64_t, int64_t);
  void (*output)(const Geo&, const float*, float, float*, int64_t, int64_t);
  void (*weight)(const float*, int64_t, int64_t, float*, int64_t, int64_t);
};

// The variant of the GEMM's micro-kernel family (gemm.h), as depthwise.cc.
const Fns& fns() {
  static const Fns portable_fns{portable::kL, &portable::input_group, &portable::output_group,
                                &portable::weight_group};
#if RT_WG_X86
  static const Fns avx2_fns{avx2::kL, &avx2::input_group, &avx2::output_group, &avx2::weight_group};
  static const Fns avx512_fns{avx512::kL, &avx512::input_group, &avx512::output_group, &avx512::weight_group};
  switch (sgemm_isa()) {
    case GemmIsa::Avx512: return avx512_fns;
    case GemmIsa::Avx2: return avx2_fns;
    default: break;
  }
#endif
  return portable_fns;
}

// fn over [0, n) in chunks of at least `grain`, on the pool when threads > 1.
template <typename F>
void run(int64_t n, int64_t grain, int threads, const F& fn) {
  if (threads > 1 && n > grain) {
    parallel_for(0, n, grain, fn);
  } else if (n > 0) {
    fn(0, n);
  }
}

int64_t slots_for(int threads) { return std::min<int64_t>(std::max(1, threads), kWinogradFreqs); }

// Geo's tile tables (gather_tiles): three int32 arrays of tp.
size_t table_bytes(const Geo& g) { return aligned(static_cast<size_t>(3 * g.tp) * sizeof(int32_t)); }

void fill_tables(Geo& g, int32_t* table) {
  int32_t *ih = table, *iw = table + g.tp, *off = table + 2 * g.tp;
  TileWalk at(g, 0);
  for (int64_t t = 0; t < g.tp; ++t, at.next(g)) {
    const bool tile = t < g.tiles;
    ih[t] = tile ? static_cast<int32_t>(at.row * kWinogradTile - g.ph) : -(1 << 20);
    iw[t] = tile ? static_cast<int32_t>(at.col * kWinogradTile - g.pw) : -(1 << 20);
    off[t] = tile ? static_cast<int32_t>(at.img * g.xs[0] + ih[t] * g.xs[2] + iw[t] * g.xs[3]) : 0;
  }
  g.tile_ih = ih;
  g.tile_iw = iw;
  g.tile_off = off;
}

// Tile blocks. V and M take 36 x (cin + cout) floats a tile: where they
// outgrow L2 while U is small, the tiles go in blocks of tb (a multiple of
// 16) whose V and M stay in L2: each block's input transform, 36 products
// (U read again from L2) and output transform, a block after the other; the
// threads take blocks. Else one block of all tiles (tb = tp): the threads
// split each stage. Every output adds the same terms in the same order
// either way. ResNet-18's 64@56x56 (196 tiles, V and M 1.9 MB each, U 0.6
// MB; blocks of 32 tiles), pre-transformed U, one thread: 0.77-0.81 -> 0.69-0.73
// ms; a block of 16 or 64 tiles was slower.
constexpr size_t kBlockBytes = 768 << 10;   // a block's V and M
constexpr size_t kMaxBlockedU = 1u << 20;  // U, read once per block

int64_t tile_block(const Geo& g) {
  const int64_t per_tile = kWinogradFreqs * (g.cin + g.cout) * static_cast<int64_t>(sizeof(float));
  const int64_t tb = std::max<int64_t>(kMaxLanes, static_cast<int64_t>(kBlockBytes) / per_tile / kMaxLanes * kMaxLanes);
  return tb < g.tp && winograd_weight_bytes(g.cout, g.cin) <= kMaxBlockedU ? tb : g.tp;
}

// V's and M's bytes.
size_t v_bytes(const Geo& g) { return aligned(static_cast<size_t>(kWinogradFreqs * g.vfs) * sizeof(float)); }
size_t m_bytes(const Geo& g) { return aligned(static_cast<size_t>(kWinogradFreqs * g.mfs) * sizeof(float)); }

// Geo of tile block b (tb tiles from tile b * tb).
Geo block_of(const Geo& g, int64_t tb, int64_t b) {
  Geo gb = g;
  columns_of(gb, tb, b * tb);
  return gb;
}

// A block's scratch: its V and M, and a GEMM packing slot.
size_t block_bytes(const Geo& g, int64_t tb) {
  const Geo gb = block_of(g, tb, 0);
  return v_bytes(gb) + m_bytes(gb) + aligned(sgemm_workspace(g.cout, tb, g.cin, 1));
}

int64_t block_slots(const Geo& g, int64_t tb, int threads) {
  return std::min<int64_t>(std::max(1, threads), (g.tp + tb - 1) / tb);
}

// M[q] = U[q] @ V[q] over the first n columns of g's V and M, on the calling
// thread: U per call (uw) or pre-packed (u). The blocked product either way,
// bitwise the same whether U comes packed or not.
bool frequency_product(const Geo& g, int64_t q, const float* uw, const PackedOperand* u, const float* v, float* m,
                       int64_t n, char* workspace, size_t workspace_bytes) {
  const GemmOperand a{{uw != nullptr ? uw + q * g.cout * g.cin : nullptr, g.cin, 1}, u != nullptr ? u + q : nullptr};
  return sgemm_fused(g.cout, n, g.cin, a, {{v + q * g.vfs, g.tp, 1}, nullptr}, {m + q * g.mfs, g.tp, 1},
                     GemmEpilogue{}, workspace, workspace_bytes, 1);
}

}  // namespace

bool winograd_applies(const TensorView& x, const TensorView& w, const TensorView& o, const Conv2dParams& prm) {
  return x.rank == 4 && w.rank == 4 && o.rank == 4 && x.dtype == DType::Float32 && w.dtype == DType::Float32 &&
         o.dtype == DType::Float32 && w.sizes[2] == 3 && w.sizes[3] == 3 && prm.groups == 1 &&
         prm.stride[0] == 1 && prm.stride[1] == 1 && prm.dilation[0] == 1 && prm.dilation[1] == 1 &&
         w.is_contiguous() && w.sizes[1] == x.sizes[1] && w.sizes[0] == o.sizes[1] &&
         o.sizes[2] == x.sizes[2] + 2 * prm.padding[0] - 2 && o.sizes[3] == x.sizes[3] + 2 * prm.padding[1] - 2;
}

// //bench/ops:conv_bench, AVX2, 1 thread (ms, im2col vs Winograd per call vs
// pre-transformed): 64@56x56 3.86 / 2.00 / 1.82, 128@28x28 3.16 / 2.17 / 1.68,
// 256@14x14 3.25 / 4.18 / 2.11, 512@7x7 4.83 / 30.1 / 25.8, 16@56x56 0.47 /
// 0.39, 32@28x28 0.41 / 0.33. The per-call weight transform writes U (36 floats
// per (co, ci), memory-bound: ~30 ns a pair), so it pays from about 25 tiles
// per call (batch included); with U pre-transformed, 16 tiles pay. Below 16
// tiles the 36 GEMMs have too few columns for the micro-kernel.
bool winograd_profitable(int64_t cin, int64_t cout, int64_t n, int64_t oh, int64_t ow, bool pretransformed) {
  const int64_t tiles = n * ((oh + kWinogradTile - 1) / kWinogradTile) * ((ow + kWinogradTile - 1) / kWinogradTile);
  return cin >= 16 && cout >= 16 && tiles >= (pretransformed ? 16 : 36);
}

bool winograd_profitable(const TensorView& x, const TensorView& w, const TensorView& o, bool pretransformed) {
  (void)w;
  return winograd_profitable(x.sizes[1], o.sizes[1], o.sizes[0], o.sizes[2], o.sizes[3], pretransformed);
}

size_t winograd_weight_bytes(int64_t cout, int64_t cin) {
  return static_cast<size_t>(kWinogradFreqs * cout * cin) * sizeof(float);
}

void winograd_transform_weight(const float* w, int64_t cout, int64_t cin, float* u, int threads) {
  const Fns& f = fns();
  const int64_t groups = (cin + f.lanes - 1) / f.lanes;
  run(cout * groups, 16, threads, [&](int64_t a, int64_t e) {
    for (int64_t i = a; i < e; ++i) f.weight(w, cout, cin, u, i / groups, i % groups * f.lanes);
  });
}

std::vector<PackedOperand> winograd_pack_weight(const float* w, int64_t cout, int64_t cin, int threads) {
  std::vector<float> u(winograd_weight_bytes(cout, cin) / sizeof(float));
  winograd_transform_weight(w, cout, cin, u.data(), threads);
  std::vector<PackedOperand> packed;
  packed.reserve(kWinogradFreqs);
  for (int64_t q = 0; q < kWinogradFreqs; ++q) {
    packed.push_back(sgemm_pack_a(cout, cin, MatrixRef<const float>{u.data() + q * cout * cin, cin, 1}));
  }
  return packed;
}

size_t winograd_workspace(const TensorView& x, const TensorView& o, bool pretransformed, int threads) {
  const Geo g = geo_of(x, o, nullptr);
  const size_t u = (pretransformed ? 0 : aligned(winograd_weight_bytes(g.cout, g.cin))) + table_bytes(g);
  const int64_t tb = tile_block(g);
  if (tb < g.tp) return kAlign + u + block_bytes(g, tb) * static_cast<size_t>(block_slots(g, tb, threads));
  const size_t gemm = aligned(sgemm_workspace(g.cout, g.tiles, g.cin, 1));
  return kAlign + u + v_bytes(g) + m_bytes(g) + gemm * static_cast<size_t>(slots_for(threads));
}

bool winograd_conv2d(const TensorView& x, const TensorView& w, const TensorView& bias, const TensorView& o,
                     const Conv2dParams& prm, const PackedOperand* u, void* scratch, size_t scratch_bytes,
                     int threads, const float* residual) {
  if (scratch_bytes < winograd_workspace(x, o, u != nullptr, threads)) return false;
  if (u != nullptr && !sgemm_packed_current(u[0])) return false;
  Geo g = geo_of(x, o, &prm);
  g.residual = residual;
  if (o.numel() == 0) return true;
  const Fns& f = fns();
  char* base = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(scratch) + kAlign - 1) / kAlign * kAlign);
  const float* uw = nullptr;  // U transformed per call (when not pre-packed)
  if (u == nullptr) {
    float* t = reinterpret_cast<float*>(base);
    winograd_transform_weight(w.ptr<const float>(), g.cout, g.cin, t, threads);
    uw = t;
    base += aligned(winograd_weight_bytes(g.cout, g.cin));
  }
  if (g.gather) fill_tables(g, reinterpret_cast<int32_t*>(base));
  base += table_bytes(g);
  const float* pb = bias.ptr<const float>();
  float* po = o.ptr<float>();
  const float* px = x.ptr<const float>();
  const int64_t tb = tile_block(g);
  if (tb < g.tp) {  // tile blocks, whole blocks a task, each thread's scratch a slot
    const int64_t blocks = (g.tp + tb - 1) / tb;
    const size_t bytes = block_bytes(g, tb);
    std::atomic<bool> ok{true};
    parallel_tasks(blocks, static_cast<int>(block_slots(g, tb, threads)), [&](int64_t b, int slot_index) {
      char* slot = base + static_cast<size_t>(slot_index) * bytes;
      const Geo g0 = block_of(g, tb, 0);
      float* v = reinterpret_cast<float*>(slot);
      float* m = reinterpret_cast<float*>(slot + v_bytes(g0));
      char* gemm = slot + v_bytes(g0) + m_bytes(g0);
      const size_t gemm_bytes = bytes - v_bytes(g0) - m_bytes(g0);
      const Geo gb = block_of(g, tb, b);  // V and M: this block's tiles
      const int64_t t1 = std::min(g.tiles, gb.t_base + tb);
      for (int64_t ci = 0; ci < g.cin; ++ci) {
        for (int64_t t0 = gb.t_base; t0 < t1; t0 += f.lanes) f.input(gb, px, v, ci, t0);
      }
      for (int64_t q = 0; q < kWinogradFreqs; ++q) {
        if (!frequency_product(gb, q, uw, u, v, m, t1 - gb.t_base, gemm, gemm_bytes)) ok = false;
      }
      for (int64_t co = 0; co < g.cout; ++co) {
        const float bco = pb != nullptr ? pb[co * bias.strides[0]] : 0.0f;
        for (int64_t t0 = gb.t_base; t0 < t1; t0 += f.lanes) f.output(gb, m, bco, po, co, t0);
      }
    });
    return ok.load();
  }
  float* v = reinterpret_cast<float*>(base);
  float* m = v + v_bytes(g) / sizeof(float);
  char* gemm_base = reinterpret_cast<char*>(m) + m_bytes(g);
  const size_t gemm_bytes = aligned(sgemm_workspace(g.cout, g.tiles, g.cin, 1));
  const int64_t groups = (g.tiles + f.lanes - 1) / f.lanes;

  run(g.cin * groups, 8, threads, [&](int64_t a, int64_t e) {
    for (int64_t i = a; i < e; ++i) f.input(g, px, v, i / groups, i % groups * f.lanes);
  });

  std::atomic<bool> ok{true};
  parallel_tasks(kWinogradFreqs, static_cast<int>(slots_for(threads)), [&](int64_t q, int slot) {
    if (!frequency_product(g, q, uw, u, v, m, g.tiles, gemm_base + slot * gemm_bytes, gemm_bytes)) ok = false;
  });
  if (!ok.load()) return false;

  run(g.cout * groups, 8, threads, [&](int64_t a, int64_t e) {
    for (int64_t i = a; i < e; ++i) {
      const int64_t co = i / groups;
      f.output(g, m, pb != nullptr ? pb[co * bias.strides[0]] : 0.0f, po, co, i % groups * f.lanes);
    }
  });
  return true;
}

}  // namespace ember::cpu
