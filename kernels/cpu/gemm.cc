// Blocked SGEMM (see gemm.h). The threads split C into a grid of tiles (one
// parallel region per product), or a deep product of few rows over an
// unpacked B its depth (sgemm_split_depth); each runs, on its own packing
// buffers, the Goto/BLIS loop over its tile:
//   for jc in its columns by NC:
//     for pc in K by KC:
//       pack B[pc:pc+KC, jc:jc+NC] into NR-wide column panels
//       for ic in its rows by MC:
//         pack A[ic:ic+MC, pc:pc+KC] into MR-tall row panels
//         for each NR panel jr, MR panel ir: micro-kernel MR x NR over KC
// Partial tiles are zero-padded in the packed panels; the micro-kernel writes
// only the valid part of its tile. AVX-512 runs a tile's right or bottom edge
// through kernels that compute only its valid columns or rows (UkernelInfo::
// edge), with the same values bit for bit.
#include "kernels/cpu/gemm.h"

#include <algorithm>
#include <atomic>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/gemm_tile.h"
#include "kernels/cpu/gemv.h"
#include "kernels/cpu/prefetch.h"
#include "runtime/core/thread_pool.h"

namespace ember::cpu {
namespace {

using detail::epilogue;
using detail::pack_a;
using detail::pack_b_panel;
using detail::store_tile;
using detail::TileEpilogue;
using detail::UkernelInfo;
#if RT_GEMM_X86
using detail::edge_12x32_avx512;
using detail::ukernel_12x32_avx512;
#endif

constexpr int64_t kNC = 4096;  // columns of a packed B block (L3)
constexpr size_t kAlign = detail::kGemmAlign;
// Shallow products (depth up to kShallowK: 1x1 convolutions with few input
// channels) are bound by C's traffic, not by the multiply-adds. Their packed
// B block is capped at kShallowBlock floats (it stays in L2) and swept once
// per MR row panel, so that C is written in MR sequential streams, rather
// than once per NR column panel over all of the rows (the usual order).
// Measured on a Zen core (AVX2, 1x1 16->96 at 112x112): about 1.2 -> 0.85 ms;
// channels_last (positions x C_out, C_out columns), where the block of C is
// small: 16->96 1.02 -> 0.86 ms, 16->64 0.60 -> 0.53 (per-op minima in
// MobileNetV2 and V3).
constexpr int64_t kShallowK = 64;
constexpr int64_t kShallowBlock = 96 * 1024;
// Up to this many rows of A, products whose layout allows it skip packing
// (gemv.h): packing B costs more than the product there. Measured with
// bench/gemm_bench (Zen 4, AVX-512): for a W^T operand the unpacked dot
// products beat pack + GEMM through M = 64 (K, N = 768, 3072, one thread,
// loaded machine: about 4.4 vs 6.8 ms at M = 64, 0.9 vs 3.8 ms at M = 16) and
// tie at M = 128; on AVX2 ([1], Zen 3) through M = 16 (M = 64: 7.1 vs 4.1 ms;
// a B packed at load 3.2). The broadcast-FMA path: a few rows (a cheap B copy).
constexpr int64_t kDotMaxM[2] = {64, 16};
constexpr int64_t kAxpyMaxM = 8;
constexpr int64_t kDirectChunk = 64;  // columns per thread chunk of the unpacked paths
constexpr int64_t kDirectPerThread = 1 << 15;  // values of B a thread of the unpacked paths streams at least
// A read in place up to this many columns of C a thread (the portable kernel: 64; AVX2 and AVX-512: 768).
constexpr int64_t a_in_place_columns(GemmIsa isa) { return isa == GemmIsa::Portable ? 64 : 768; }
constexpr int64_t kPrefetchB = 1 << 20;  // a thread's unpacked B read in order first, up to (sgemm_blocked)
// Tasks a thread's tile of C is cut into at most (sgemm_blocked): what another
// thread can take over when this one falls behind.
constexpr int64_t kTileParts = 4;
constexpr int64_t kClaimC = 1 << 18;  // C's values from which gemm_tile claims its tiles' rows ahead (1 MiB)
constexpr int64_t kSplitDepthRatio = 3;  // a product splits its depth across threads from k >= this * m on (split_depth)

constexpr UkernelInfo kPortable{8, 8, 128, &detail::ukernel_8x8_portable, "portable 8x8", GemmIsa::Portable};
#if RT_GEMM_X86
constexpr UkernelInfo kAvx2{6,     16, 120, &detail::ukernel_6x16_avx2, "avx2 6x16", GemmIsa::Avx2,
                            false, &detail::edge_6x16_avx2, &detail::in_place_6x16_avx2, nullptr, false,
                            &detail::sweep_6x16_avx2, true, &detail::narrow_6x16_avx2};
constexpr UkernelInfo kAvx512Streamed{12,    32, 144, &ukernel_12x32_avx512<true>, "avx512 12x32", GemmIsa::Avx512,
                                       false, &edge_12x32_avx512<true>, &detail::in_place_12x32_avx512<true>, nullptr,
                                       false, &detail::sweep_12x32_avx512, true};
constexpr UkernelInfo kAvx512{12,    32, 144, &ukernel_12x32_avx512<false>, "avx512 12x32", GemmIsa::Avx512,
                               false, &edge_12x32_avx512<false>, &detail::in_place_12x32_avx512<false>,
                               &kAvx512Streamed, false, &detail::sweep_12x32_avx512, true};
#endif
// Run only products with a bf16-packed operand (where detail::bf16_supported()):
// AMX-BF16 where the CPU has it (bf16_family), else AVX-512 BF16.
constexpr UkernelInfo kBf16{12, 32, 144, &detail::ukernel_12x32_bf16, "avx512-bf16 12x32", GemmIsa::Avx512, true};
constexpr UkernelInfo kAmxBf16{
    16, 32, 144, &detail::ukernel_16x32_amx_bf16, "amx-bf16 16x32", GemmIsa::Avx512, true, nullptr, nullptr, nullptr,
    true};
std::atomic<bool> g_bf16_amx{true};  // sgemm_set_bf16_amx

const UkernelInfo& bf16_family() {
  return g_bf16_amx.load(std::memory_order_relaxed) && detail::amx_bf16_supported() ? kAmxBf16 : kBf16;
}

bool isa_supported(GemmIsa isa) {
  switch (isa) {
    case GemmIsa::Auto:
    case GemmIsa::Portable:
      return true;
#if RT_GEMM_X86
    case GemmIsa::Avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case GemmIsa::Avx512:
      return __builtin_cpu_supports("avx512f");
#else
    default:
      return false;
#endif
  }
  return false;
}

const UkernelInfo* info_for(GemmIsa isa) {
  switch (isa) {
#if RT_GEMM_X86
    case GemmIsa::Avx512: return &kAvx512;
    case GemmIsa::Avx2: return &kAvx2;
#endif
    case GemmIsa::Portable: return &kPortable;
    default: break;
  }
#if RT_GEMM_X86
  if (isa_supported(GemmIsa::Avx512)) return &kAvx512;
  if (isa_supported(GemmIsa::Avx2)) return &kAvx2;
#endif
  return &kPortable;
}

std::atomic<const UkernelInfo*> g_kernel{nullptr};

const UkernelInfo& kernel() {
  const UkernelInfo* k = g_kernel.load(std::memory_order_acquire);
  if (k == nullptr) {
    k = info_for(GemmIsa::Auto);
    g_kernel.store(k, std::memory_order_release);
  }
  return *k;
}

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }
// The 32-bit slots a depth of k takes in u's packed panels, per row or column.
int64_t slots(const UkernelInfo& u, int64_t k) { return u.bf16 ? (k + 1) / 2 : k; }
size_t floats_bytes(int64_t n) { return static_cast<size_t>(round_up(n * 4, kAlign)); }

// How many threads an m x n x k product is worth (about 2^18 multiply-adds each).
int threads_for(int64_t m, int64_t n, int64_t k, int threads) {
  const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  const double useful = std::max(1.0, work / (1 << 18));
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(threads, static_cast<int64_t>(useful))));
}

// The most depth of a packed block: a B panel of it (nr columns) stays in L2
// and an A tile (mr rows) in L1. 512 for the AVX-512 float32 family: half
// the K blocks of 256, so half the passes over C (Zen 4, 1 MB of L2,
// gemm_bench one thread: 1024^3 101-105 -> 107-109 GFLOP/s, 2048^3 103-106
// -> 109-110; MobileNetV2, MobileNetV3, BERT b8 and the transformer per-op
// sums within 1 % or faster at 1 and 2 threads). 256 for the others (not
// measured deeper: the AVX2 hosts had 512 KB of L2; bf16 panels).
int64_t most_depth(const UkernelInfo& u) { return u.isa == GemmIsa::Avx512 && !u.bf16 ? 512 : 256; }

// The depth of a K block: about equal blocks of at most most_depth(u), an
// even number of them when there are several (the rounding below may leave
// one fewer), so that two threads can split a product's depth at a block
// boundary (split_depth) and still add the blocks' sums in one thread's
// order. Rounded up to 32: AMX-BF16 tiles take 32 of the depth, so only the
// last block has a tail. (Blocks of at most 256: K = 384 takes 2 x 192, 576
// 3 x 160 + 96.)
int64_t depth_block(const UkernelInfo& u, int64_t k) {
  const int64_t most = most_depth(u);
  if (k <= most) return k;
  const int64_t blocks = round_up((k + most - 1) / most, 2);
  return round_up((k + blocks - 1) / blocks, 32);
}

// Whether nt threads split the depth of an m x n x k product over an unpacked
// B rather than C (sgemm_blocked): a deep product of few rows, whose K blocks
// each thread can take its share of.
bool split_depth(const UkernelInfo& u, int64_t m, int64_t k, int nt) {
  const int64_t kc = depth_block(u, k);
  return nt > 1 && k >= kSplitDepthRatio * m && (k + kc - 1) / kc >= nt;
}

// The K blocks whose sums the threads after the first keep apart (split_depth): m x n floats each.
int64_t split_partials(const UkernelInfo& u, int64_t k, int nt) {
  const int64_t kc = depth_block(u, k), blocks = (k + kc - 1) / kc;
  return blocks - blocks / nt;
}

// The threads split C into a tm x tn grid of tiles (rows in MR steps, columns in
// NR steps); each thread runs the whole blocked loop over its tile on its own
// packed panels, so a product opens one parallel region and needs no barrier.
struct Plan {
  int threads;      // tm * tn
  int64_t tm, tn;   // grid
  int64_t kc, nc, mc;
  size_t b_bytes, a_bytes, slot_bytes;  // one thread's packed B block, packed A block, both
};

Plan plan_for(const UkernelInfo& u, int64_t m, int64_t n, int64_t k, int threads, bool a_packed = false,
              bool b_packed = false) {
  const int64_t m_tiles = (m + u.mr - 1) / u.mr, n_tiles = (n + u.nr - 1) / u.nr;
  Plan p{};
  double best = -1.0;
  for (int64_t tm = 1; tm <= std::min<int64_t>(threads, m_tiles); ++tm) {
    const int64_t tn = std::min<int64_t>(threads / tm, n_tiles);
    // Per-thread cost: the (padded) tile's multiply-adds plus packing its A and
    // B panels (each element copied costs roughly as much as 8 multiply-adds;
    // one pre-packed, read from memory, as 1). Zen 3, 2 threads, B packed: 128
    // x 256 x 1024 then splits rows (each thread packs half of A, not all of
    // it) 0.438 -> 0.417 ms, 128 x 384 x 1536 0.948 -> 0.814; 128 x 1536 x 384
    // still splits columns (each thread reads half of B).
    const double rows = static_cast<double>((m_tiles + tm - 1) / tm * u.mr);
    const double cols = static_cast<double>((n_tiles + tn - 1) / tn * u.nr);
    const double cost = rows * cols + (a_packed ? 1.0 : 8.0) * rows + (b_packed ? 1.0 : 8.0) * cols;
    if (best < 0 || cost < best) {
      best = cost;
      p.tm = tm;
      p.tn = tn;
    }
  }
  p.threads = static_cast<int>(p.tm * p.tn);
  const int64_t cols = (n_tiles + p.tn - 1) / p.tn * u.nr;
  p.kc = depth_block(u, k);
  p.nc = std::min(cols, round_up(p.kc <= kShallowK ? kShallowBlock / p.kc : kNC, u.nr));
  p.mc = std::min(round_up(m, u.mr), u.mc);
  p.b_bytes = floats_bytes(p.kc * p.nc);
  p.a_bytes = floats_bytes(p.kc * p.mc);
  p.slot_bytes = p.b_bytes + p.a_bytes;
  return p;
}

// One product: operands (a packed operand's data, else null: packed per call),
// C, and what the micro-kernel does as it stores.
struct Product {
  int64_t m, n, k;
  MatrixRef<const float> a, b;
  const float* a_packed;  // sgemm_pack_a's layout
  const float* b_packed;  // sgemm_pack_b's layout
  MatrixRef<float> c;
  bool accumulate;
  const GemmEpilogue* epilogue;  // or null
};

// The epilogue of the micro-tile at (i, j) in K block [pc, pc + kc); null when nothing applies.
const TileEpilogue* tile_epilogue(const Product& pr, int64_t i, int64_t j, int64_t pc, int64_t kc, TileEpilogue* t) {
  if (pr.epilogue == nullptr) return nullptr;
  const GemmEpilogue& e = *pr.epilogue;
  const bool first = pc == 0, last = pc + kc >= pr.k;
  *t = TileEpilogue{first && e.row_bias != nullptr ? e.row_bias + i : nullptr,
                    last && e.col_bias != nullptr ? e.col_bias + j : nullptr, last && e.clamp, e.lo, e.hi,
                    last && e.hardswish};
  return t->row_bias != nullptr || t->col_bias != nullptr || t->clamp || t->hardswish ? t : nullptr;
}

// C[m0:m1, n0:n1] (+)= A[m0:m1, k0:k1] @ B[k0:k1, n0:n1] on the calling thread
// (k0, k1 on K block boundaries), with packing buffers `bpack` (kc x nc) and
// `apack` (kc x mc) for the operands not pre-packed.
void gemm_tile(const UkernelInfo& u, const Plan& s, int64_t m0, int64_t m1, int64_t n0, int64_t n1, int64_t k0,
               int64_t k1, const Product& pr, float* bpack, float* apack) {
  const int64_t k = k1;
  const int64_t m_pad = round_up(pr.m, u.mr), n_pad = round_up(pr.n, u.nr);
  const MatrixRef<const float>&a = pr.a, &b = pr.b;
  // B with contiguous rows is read in place by the full-width tiles (a partial
  // last panel is packed), but not with a row stride a multiple of 1 KiB and a
  // deep block (its rows fall in at most 4 sets of L1 and evict each other;
  // Xeon, gemm_bench: n = 512 142 -> 174 GFLOP/s, n = 1024 127 -> 170 packed).
  const bool aliased = (b.rs * static_cast<int64_t>(sizeof(float))) % 1024 == 0 && s.kc > 48;
  // Not on AVX2 (a Zen 3: L1 of 8 ways): MobileNetV2's expansions lost up to
  // 0.35 ms, its 7x7 and 14x14 products 0.03-0.09 (loads across two lines).
  const bool b_in_place_isa = u.isa != GemmIsa::Avx2;
  const bool in_place = u.in_place != nullptr && pr.b_packed == nullptr && b.cs == 1 && !aliased && b_in_place_isa;
  // A with contiguous rows is read in place too when its packed block would
  // serve few column panels: attention's P V (Xeon, BM_ember_heads: 126 -> 84
  // us), a projection to 24 or 40 channels (packing its A was a third of its
  // time), and on AVX2 and AVX-512 up to 768 columns (Zen 3: a deep A from L3
  // cost more to pack than read in place: 1024 x 384 x 1536 88.4 -> 93.1
  // GFLOP/s, 96 panels -3 %; Zen 4, gemm_bench: BERT's Linears 2.5-3.5 % faster,
  // MobileNetV3's projections to 112 and 160 channels 6 %).
  const bool edges_in_place = u.in_place_edges && !in_place;
  const bool a_in_place = u.in_place != nullptr && pr.a_packed == nullptr && a.cs == 1 &&
                          (pr.n % u.nr == 0 || edges_in_place) && n1 - n0 <= a_in_place_columns(u.isa) &&
                          (a.rs * static_cast<int64_t>(sizeof(float))) % 4096 != 0;
  // A C larger than L2 swept by more than one K block: each tile's rows are
  // claimed into L1 before its kernel runs (the epilogue's reads of C held 11 %
  // of a 1024^3 product's kernel time; Zen 3, gemm_bench: 76.6 -> 86.7 GFLOP/s).
  const bool claim_c = k - k0 > s.kc && pr.c.cs == 1 && pr.m * pr.n >= kClaimC;
  // Rows of tiles a call each (UkernelInfo::sweep) for a shallow product, A
  // read in place where contiguous, and for one whose A is read in place (a
  // row tile of A then serves every panel from L1; Zen 3, gemm_bench: 3136 x
  // 144 x 24 0.43-0.46 -> 0.31-0.33 ms, BM_ember_heads P V 183-225 -> 160-169 us).
  const bool sweep = u.sweep != nullptr && (s.kc <= kShallowK || a_in_place) && !in_place && pr.c.cs == 1;
  const bool sweep_a = sweep && pr.a_packed == nullptr && a.cs == 1 && a.rs > 0;
  for (int64_t jc = n0; jc < n1; jc += s.nc) {
    const int64_t nc = std::min(s.nc, n1 - jc);
    const int64_t n_panels = (nc + u.nr - 1) / u.nr;
    for (int64_t pc = k0; pc < k; pc += s.kc) {
      const int64_t kc = std::min(s.kc, k - pc);
      const bool acc = pr.accumulate || pc > k0;
      const float* bblock_packed = bpack;
      const MatrixRef<const float> bblock{b.data + pc * b.rs + jc * b.cs, b.rs, b.cs};
      if (pr.b_packed != nullptr) {
        bblock_packed = pr.b_packed + slots(u, pc) * n_pad + jc * slots(u, kc);
      } else if (in_place) {
        if (nc % u.nr != 0) pack_b_panel(u, n_panels - 1, nc, kc, bblock, bpack);  // the partial panel only
      } else {
        for (int64_t jp = 0; jp < n_panels; ++jp) pack_b_panel(u, jp, nc, kc, bblock, bpack);
      }
      for (int64_t ic = m0; ic < m1; ic += s.mc) {
        const int64_t mc = std::min(s.mc, m1 - ic);
        const float* ablock = apack;
        // The sweep reads A in place but for a block with a bottom edge (its last tile through micro).
        const bool a_rows = a_in_place || (sweep_a && mc % u.mr == 0);
        if (pr.a_packed != nullptr) {
          ablock = pr.a_packed + slots(u, pc) * m_pad + ic * slots(u, kc);
        } else if (!a_rows) {
          pack_a(u, mc, kc, MatrixRef<const float>{a.data + ic * a.rs + pc * a.cs, a.rs, a.cs}, apack);
        }
        // The tile (jp, ir), bringing pf_lines lines from pf on into L2.
        auto micro = [&](int64_t jp, int64_t ir, const char* pf = nullptr, int64_t pf_lines = 0) {
          const int64_t jr = jp * u.nr;
          TileEpilogue te;
          const int64_t mv = std::min(u.mr, mc - ir), nv = std::min(u.nr, nc - jr);
          for (int64_t i = 0; claim_c && i < mv; ++i) {
            prefetch_write(pr.c.data + (ic + ir + i) * pr.c.rs + jc + jr, nv * static_cast<int64_t>(sizeof(float)));
          }
          if ((in_place || a_in_place || pf_lines > 0) && u.in_place != nullptr && (nv == u.nr || edges_in_place)) {
            u.in_place(kc, a_in_place ? a.data + (ic + ir) * a.rs + pc : ablock + ir * slots(u, kc),
                       a_in_place ? a.rs : 0, in_place ? bblock.data + jr : bblock_packed + jp * u.nr * slots(u, kc),
                       in_place ? b.rs : u.nr, pr.c.data + (ic + ir) * pr.c.rs + (jc + jr) * pr.c.cs, pr.c.rs,
                       pr.c.cs, acc, mv, nv, tile_epilogue(pr, ic + ir, jc + jr, pc, kc, &te), pf, pf_lines);
            return;
          }
          for (; pf_lines > 0; --pf_lines, pf += 64) prefetch_l2(pf);
          ((nv < u.nr || mv < u.mr) && u.edge != nullptr ? u.edge : u.fn)(
              kc, ablock + ir * slots(u, kc), bblock_packed + jp * u.nr * slots(u, kc),
              pr.c.data + (ic + ir) * pr.c.rs + (jc + jr) * pr.c.cs, pr.c.rs, pr.c.cs, acc, mv, nv,
              tile_epilogue(pr, ic + ir, jc + jr, pc, kc, &te));
        };
        if (sweep || s.kc <= kShallowK) {
          for (int64_t ir = 0; ir < mc; ir += u.mr) {
            TileEpilogue te;
            if (!sweep || mc - ir < u.mr) {
              for (int64_t jp = 0; jp < n_panels; ++jp) micro(jp, ir);
              continue;
            }
            u.sweep(kc, a_rows ? a.data + (ic + ir) * a.rs + pc : ablock + ir * slots(u, kc), a_rows ? a.rs : 0,
                    bblock_packed, nc, pr.c.data + (ic + ir) * pr.c.rs + jc, pr.c.rs, acc,
                    tile_epilogue(pr, ic + ir, jc, pc, kc, &te));
          }
        } else {
          // A B packed at load (a Linear's weight) comes from L3 or DRAM on its
          // first row tile, faster than those stream it: each tile prefetches
          // its share of the next panel into L2 (BERT at batch 1, one thread:
          // its Linears 20.9-21.3 -> 19.4-19.6 ms in all), spread over its
          // steps by the kernels that can (UkernelInfo::in_place).
          const int64_t panel_bytes = u.nr * slots(u, kc) * static_cast<int64_t>(sizeof(float));
          const int64_t tiles = (mc + u.mr - 1) / u.mr;
          // Not for fewer than 4 tiles: a panel then serves few rows and is
          // read about once, a stream the hardware prefetcher follows, and each
          // tile's share would be a burst of up to a whole panel.
          const int64_t share = pr.b_packed != nullptr && tiles >= 4 ? (panel_bytes / 64 + tiles - 1) / tiles : 0;
          for (int64_t jp = 0; jp < n_panels; ++jp) {
            const int64_t nv = nc - jp * u.nr;
            if (nv <= 4 && u.narrow != nullptr && !a_in_place && !in_place) {
              TileEpilogue te;
              u.narrow(kc, ablock, mc, bblock_packed + jp * u.nr * slots(u, kc), nv,
                       pr.c.data + ic * pr.c.rs + (jc + jp * u.nr) * pr.c.cs, pr.c.rs, pr.c.cs, acc,
                       tile_epilogue(pr, ic, jc + jp * u.nr, pc, kc, &te));
              continue;
            }
            const bool ahead = share > 0 && jp + 1 < n_panels;
            const char* next = ahead ? reinterpret_cast<const char*>(bblock_packed + (jp + 1) * u.nr * slots(u, kc))
                                     : nullptr;
            int64_t line = 0;
            for (int64_t ir = 0; ir < mc; ir += u.mr) {
              const int64_t lines = ahead ? std::min(panel_bytes / 64 - line, share) : 0;
              micro(jp, ir, next + line * 64, lines);
              line += lines;
            }
          }
        }
      }
    }
  }
}

// The unpacked paths for few rows of A (gemv.h); false when the layout has none.
bool sgemm_direct(const UkernelInfo& u, int64_t m, int64_t n, int64_t k, MatrixRef<const float> a,
                  MatrixRef<const float> b, MatrixRef<float> c, bool accumulate, int threads) {
  if (m > kDotMaxM[u.isa == GemmIsa::Avx2]) return false;
  const detail::DirectKind kind = detail::sgemm_direct_kind(a, b, c);
  if (!(kind == detail::DirectKind::Dot || (kind == detail::DirectKind::Axpy && m <= kAxpyMaxM))) return false;
  // These paths stream B, each of its values used by the few rows of A: a
  // thread is worth kDirectPerThread of them (about 8 us from L3) below
  // threads_for's bar of multiply-adds. MobileNetV3's squeeze-and-excitation
  // FCs (960 -> 240 -> 960 on a 1x1 input), 2 threads: one thread each before.
  const int64_t streamed = std::min<int64_t>(std::max(1, threads), n * k / kDirectPerThread);
  const int nt = std::max<int>(threads_for(m, n, k, std::max(1, threads)), static_cast<int>(streamed));
  const int64_t chunks = (n + kDirectChunk - 1) / kDirectChunk;
  auto run = [&](int64_t c0, int64_t c1) {
    detail::sgemm_direct(u.isa, kind, m, c0 * kDirectChunk, std::min(n, c1 * kDirectChunk), k, a, b, c, accumulate);
  };
  if (nt > 1 && chunks > 1) {
    parallel_for(0, chunks, (chunks + nt - 1) / nt, run);
  } else {
    run(0, chunks);
  }
  return true;
}

}  // namespace

size_t sgemm_workspace(int64_t m, int64_t n, int64_t k, int threads) {
  if (m <= 0 || n <= 0 || k <= 0) return 0;
  size_t bytes = 0;
  for (const UkernelInfo* u : {&kernel(), detail::bf16_supported() ? &bf16_family() : nullptr}) {  // either may run
    if (u == nullptr) continue;
    const int nt = threads_for(m, n, k, std::max(1, threads));
    for (int packed = 0; packed < 4; ++packed) {  // whichever operands come pre-packed
      const Plan s = plan_for(*u, m, n, k, nt, packed & 1, packed & 2);
      bytes = std::max(bytes, kAlign + static_cast<size_t>(s.threads) * s.slot_bytes);
    }
    if (split_depth(*u, m, k, nt)) {
      bytes = std::max(bytes, kAlign + static_cast<size_t>(nt) * plan_for(*u, m, n, k, 1).slot_bytes +
                                  static_cast<size_t>(split_partials(*u, k, nt)) * floats_bytes(m * n));
    }
  }
  return bytes;
}

namespace {

// A row of C += a K block's sums P, then the epilogue e (no row bias: not
// the first block), as a tile store takes them (store_tile): a loop the
// compiler vectorizes per ISA clone.
RT_SIMD_CLONES void add_block_row(float* __restrict c, const float* __restrict p, int64_t n, const TileEpilogue e) {
  for (int64_t j = 0; j < n; ++j) c[j] = epilogue(p[j] + c[j], e, 0, j);
}

// The product with nt threads splitting its depth (split_depth): thread t
// sums K blocks [blocks * t / nt, blocks * (t + 1) / nt); the first thread
// into C, the others each block into its own m x n partial. Then, in a
// second region, each thread adds the partials, block after block, into its
// share of C's rows, the last block with the epilogue: each element gets one
// thread's sums, in its order. A 1x1 convolution's projection (K = 384 -> M =
// 64 at 14x14) reads B, its input's channels, as the threads of the
// depthwise convolution before it wrote them; split over C's rows or
// columns, each thread read half of B from the other core. MobileNetV2, 2
// threads (median of 50 runs): its six 14x14 projections 0.061-0.112 ->
// 0.040-0.082 ms, as fast as ONNX Runtime's; the model 4.3 -> 4.05 ms.
// False when the workspace holds too little (sgemm_workspace).
bool sgemm_split_depth(const UkernelInfo& u, const Product& pr, int nt, void* workspace, size_t workspace_bytes) {
  const int64_t m = pr.m, n = pr.n, k = pr.k;
  const Plan s = plan_for(u, m, n, k, 1);
  const int64_t blocks = (k + s.kc - 1) / s.kc, first = blocks / nt;
  const size_t partial = floats_bytes(m * n);
  if (workspace_bytes < kAlign + static_cast<size_t>(nt) * s.slot_bytes + split_partials(u, k, nt) * partial) {
    return false;
  }
  char* base = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(workspace) + kAlign - 1) / kAlign * kAlign);
  float* partials = reinterpret_cast<float*>(base + static_cast<size_t>(nt) * s.slot_bytes);
  auto block_partial = [&](int64_t b) { return partials + (b - first) * (partial / sizeof(float)); };
  const UkernelInfo& uk = pr.a_packed != nullptr && u.streamed != nullptr ? *u.streamed : u;
  parallel_for(0, nt, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      char* slot = base + static_cast<size_t>(t) * s.slot_bytes;
      float* bpack = reinterpret_cast<float*>(slot);
      float* apack = reinterpret_cast<float*>(slot + s.b_bytes);
      const int64_t b0 = blocks * t / nt, b1 = blocks * (t + 1) / nt;
      if (t == 0) {
        gemm_tile(uk, s, 0, m, 0, n, 0, b1 * s.kc, pr, bpack, apack);
        continue;
      }
      for (int64_t b = b0; b < b1; ++b) {
        Product p = pr;
        p.c = MatrixRef<float>{block_partial(b), n, 1};
        p.accumulate = false;
        p.epilogue = nullptr;
        gemm_tile(uk, s, 0, m, 0, n, b * s.kc, std::min(k, (b + 1) * s.kc), p, bpack, apack);
      }
    }
  });
  parallel_for(0, nt, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t i = m * t0 / nt; i < m * t1 / nt; ++i) {
      float* c = pr.c.data + i * pr.c.rs;
      for (int64_t b = first; b < blocks; ++b) {
        const int64_t pc = b * s.kc;
        TileEpilogue te{};
        const TileEpilogue* e = tile_epilogue(pr, i, 0, pc, std::min(s.kc, k - pc), &te);
        const TileEpilogue ep = e != nullptr ? *e : TileEpilogue{};
        const float* p = block_partial(b) + i * n;
        if (pr.c.cs == 1) {
          add_block_row(c, p, n, ep);
        } else {
          for (int64_t j = 0; j < n; ++j) c[j * pr.c.cs] = epilogue(p[j] + c[j * pr.c.cs], ep, 0, j);
        }
      }
    }
  });
  return true;
}

// The blocked product (packing what is not pre-packed); false when the workspace is too small.
bool sgemm_blocked(const UkernelInfo& u, const Product& pr, void* workspace, size_t workspace_bytes, int threads) {
  const int64_t m = pr.m, n = pr.n, k = pr.k;
  // Threads are capped by the work and by the packing slots the workspace holds.
  int nt = threads_for(m, n, k, std::max(1, threads));
  if (pr.b_packed == nullptr && split_depth(u, m, k, nt) && sgemm_split_depth(u, pr, nt, workspace, workspace_bytes)) {
    return true;
  }
  const bool a_packed = pr.a_packed != nullptr, b_packed = pr.b_packed != nullptr;
  Plan s = plan_for(u, m, n, k, nt, a_packed, b_packed);
  while (workspace_bytes < kAlign + static_cast<size_t>(s.threads) * s.slot_bytes) {
    if (nt == 1) return false;
    s = plan_for(u, m, n, k, --nt, a_packed, b_packed);
  }
  const uintptr_t base = (reinterpret_cast<uintptr_t>(workspace) + kAlign - 1) / kAlign * kAlign;
  const int64_t m_tiles = (m + u.mr - 1) / u.mr, n_tiles = (n + u.nr - 1) / u.nr;
  // Each thread's tile of C is cut into up to kTileParts tasks
  // (parallel_tasks runs a thread's own in order, and a thread done with its
  // own takes another's last): a pre-packed B's tile into whole blocks of
  // rows (s.mc), a pre-packed A's into whole blocks of columns (s.nc), the
  // blocks gemm_tile takes one after the other anyway, so that no operand is
  // packed or streamed once more (with neither packed, across the smaller
  // extent). MobileNetV3's 7x7 1x1 convolutions (49 rows), cut into 4 parts
  // of rows, read their B 4 times: 0.074 -> 0.083 ms at 2 threads.
  const bool cut_columns = a_packed || (!b_packed && m_tiles / s.tm < n_tiles / s.tn);
  const int64_t per_block = cut_columns ? s.nc / u.nr : s.mc / u.mr;  // micro-tiles a block
  const int64_t widest = cut_columns ? (n_tiles + s.tn - 1) / s.tn : (m_tiles + s.tm - 1) / s.tm;
  const int64_t parts = s.threads > 1 ? std::min(kTileParts, (widest + per_block - 1) / per_block) : 1;
  auto run_task = [&](int64_t task, int slot_index) {
    const int64_t t = task / parts, part = task % parts;
    const int64_t ti = t / s.tn, tj = t % s.tn;
    int64_t i0 = m_tiles * ti / s.tm, i1 = m_tiles * (ti + 1) / s.tm;  // tile rows and columns, in micro-tiles
    int64_t j0 = n_tiles * tj / s.tn, j1 = n_tiles * (tj + 1) / s.tn;
    int64_t& c0 = cut_columns ? j0 : i0;
    int64_t& c1 = cut_columns ? j1 : i1;
    const int64_t blocks = (c1 - c0 + per_block - 1) / per_block;
    c1 = std::min(c1, c0 + blocks * (part + 1) / parts * per_block);
    c0 += blocks * part / parts * per_block;
    const int64_t m0 = std::min(m, i0 * u.mr), m1 = std::min(m, i1 * u.mr);
    const int64_t n0 = std::min(n, j0 * u.nr), n1 = std::min(n, j1 * u.nr);
    if (m0 >= m1 || n0 >= n1) return;
    char* slot = reinterpret_cast<char*>(base) + static_cast<size_t>(slot_index) * s.slot_bytes;
    // With threads, an unpacked B of up to kPrefetchB bytes a thread is read
    // first in memory order (prefetched): the previous op's threads wrote
    // it, and the lines the other core wrote come over at about 16 GB/s
    // read in order, at a fraction of that as the tiles meet them (a panel's
    // rows, one line each, faster than the hardware prefetchers follow).
    // MobileNetV2's 384 -> 64 1x1 at 14x14 after its depthwise, 2 threads:
    // 68 -> 48 us a thread.
    if (s.threads > 1 && pr.b_packed == nullptr && pr.b.cs == 1 && (cut_columns || part == 0) &&
        k * (n1 - n0) * static_cast<int64_t>(sizeof(float)) <= kPrefetchB) {
      for (int64_t r = 0; r < k; ++r) {
        prefetch_read(pr.b.data + r * pr.b.rs + n0, (n1 - n0) * static_cast<int64_t>(sizeof(float)));
      }
    }
    gemm_tile(pr.a_packed != nullptr && u.streamed != nullptr ? *u.streamed : u, s, m0, m1, n0, n1, 0, k, pr,
              reinterpret_cast<float*>(slot), reinterpret_cast<float*>(slot + s.b_bytes));
  };
  if (s.threads > 1) {
    parallel_tasks(s.threads * parts, s.threads, run_task);
  } else {
    run_task(0, 0);
  }
  return true;
}

// Row i of C, contiguous, through epilogue(), as a loop the compiler
// vectorizes per ISA clone: the pass a Linear's bias and activation take
// after the few-row products.
RT_SIMD_CLONES void epilogue_row(float* __restrict c, int64_t n, bool accumulate, int64_t i, const TileEpilogue e) {
  for (int64_t j = 0; j < n; ++j) c[j] = epilogue(accumulate ? c[j] : 0.0f, e, i, j);
}

// Zeros C for an empty depth (k <= 0) unless accumulating, then the epilogue.
void sgemm_empty_depth(int64_t m, int64_t n, MatrixRef<float> c, bool accumulate, const GemmEpilogue* ep) {
  const TileEpilogue e{ep != nullptr ? ep->row_bias : nullptr, ep != nullptr ? ep->col_bias : nullptr,
                       ep != nullptr && ep->clamp, ep != nullptr ? ep->lo : 0.0f, ep != nullptr ? ep->hi : 0.0f,
                       ep != nullptr && ep->hardswish};
  if (c.cs == 1) {
    for (int64_t i = 0; i < m; ++i) epilogue_row(c.data + i * c.rs, n, accumulate, i, e);
    return;
  }
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float& cij = c.data[i * c.rs + j * c.cs];
      cij = epilogue(accumulate ? cij : 0.0f, e, i, j);
    }
  }
}

// The packed data of `op` when it fits an operand of `outer` x k for kernel u, else null.
const float* packed_data(const PackedOperand* op, bool is_a, int64_t outer, int64_t k, const UkernelInfo& u) {
  if (op == nullptr || op->is_a != is_a || op->isa != u.isa || op->bf16 != u.bf16 || op->outer != outer || op->k != k ||
      op->panel != (is_a ? u.mr : u.nr) || op->kc != depth_block(u, k)) {
    return nullptr;
  }
  return op->data.as<float>();
}

// The bf16 family where an operand comes packed as bf16 or asks for it (and
// the CPU has it), else the kernel in use.
const UkernelInfo& kernel_for(const GemmOperand& a, const GemmOperand& b) {
  const bool bf16 = a.bf16 || b.bf16 || (a.packed != nullptr && a.packed->bf16) || (b.packed != nullptr && b.packed->bf16);
  return bf16 && detail::bf16_supported() ? bf16_family() : kernel();
}

PackedOperand pack_operand(bool is_a, int64_t outer, int64_t k, MatrixRef<const float> src, bool bf16) {
  const UkernelInfo& u = bf16 ? bf16_family() : kernel();
  PackedOperand p;
  p.isa = u.isa;
  p.bf16 = u.bf16;
  p.is_a = is_a;
  p.outer = std::max<int64_t>(outer, 0);
  p.k = std::max<int64_t>(k, 0);
  p.panel = is_a ? u.mr : u.nr;
  p.kc = depth_block(u, p.k);
  const int64_t pad = round_up(p.outer, p.panel);
  p.data = WeightBuffer(static_cast<size_t>(pad * slots(u, p.k)) * sizeof(float));
  float* dst = p.data.as<float>();
  for (int64_t pc = 0; pc < p.k; pc += p.kc) {
    const int64_t kc = std::min(p.kc, p.k - pc);
    if (is_a) {
      pack_a(u, p.outer, kc, MatrixRef<const float>{src.data + pc * src.cs, src.rs, src.cs}, dst);
    } else {
      const MatrixRef<const float> block{src.data + pc * src.rs, src.rs, src.cs};
      for (int64_t jp = 0; jp < pad / p.panel; ++jp) pack_b_panel(u, jp, p.outer, kc, block, dst);
    }
    dst += pad * slots(u, kc);
  }
  return p;
}

}  // namespace

bool sgemm(int64_t m, int64_t n, int64_t k, MatrixRef<const float> a, MatrixRef<const float> b,
           MatrixRef<float> c, bool accumulate, void* workspace, size_t workspace_bytes, int threads) {
  return sgemm_packed(m, n, k, GemmOperand{a, nullptr}, GemmOperand{b, nullptr}, c, accumulate, workspace,
                      workspace_bytes, threads);
}

bool sgemm_packed(int64_t m, int64_t n, int64_t k, GemmOperand a, GemmOperand b, MatrixRef<float> c,
                  bool accumulate, void* workspace, size_t workspace_bytes, int threads) {
  if (m <= 0 || n <= 0) return true;
  if (k <= 0) {
    sgemm_empty_depth(m, n, c, accumulate, nullptr);
    return true;
  }
  if (a.m.data == nullptr || b.m.data == nullptr) return false;
  if (!a.bf16 && !b.bf16 && sgemm_direct(kernel(), m, n, k, a.m, b.m, c, accumulate, threads)) return true;
  const UkernelInfo& u = kernel_for(a, b);
  const Product pr{m, n, k, a.m, b.m, packed_data(a.packed, true, m, k, u), packed_data(b.packed, false, n, k, u),
                   c, accumulate, nullptr};
  return sgemm_blocked(u, pr, workspace, workspace_bytes, threads);
}

bool sgemm_fused(int64_t m, int64_t n, int64_t k, GemmOperand a, GemmOperand b, MatrixRef<float> c,
                 const GemmEpilogue& epilogue, void* workspace, size_t workspace_bytes, int threads) {
  if (m <= 0 || n <= 0) return true;
  if (k <= 0) {
    sgemm_empty_depth(m, n, c, false, &epilogue);
    return true;
  }
  const UkernelInfo& u = kernel_for(a, b);
  const Product pr{m, n, k, a.m, b.m, packed_data(a.packed, true, m, k, u), packed_data(b.packed, false, n, k, u),
                   c, false, &epilogue};
  if ((pr.a_packed == nullptr && a.m.data == nullptr) || (pr.b_packed == nullptr && b.m.data == nullptr)) return false;
  return sgemm_blocked(u, pr, workspace, workspace_bytes, threads);
}

bool sgemm_linear(int64_t m, int64_t n, int64_t k, GemmOperand a, GemmOperand b, MatrixRef<float> c,
                  const GemmEpilogue& epilogue, void* workspace, size_t workspace_bytes, int threads) {
  if (m > 0 && n > 0 && k > 0 && epilogue.row_bias == nullptr && a.m.data != nullptr && b.m.data != nullptr &&
      !a.bf16 && !b.bf16 && sgemm_direct(kernel(), m, n, k, a.m, b.m, c, false, threads)) {
    sgemm_empty_depth(m, n, c, /*accumulate=*/true, &epilogue);  // the epilogue on C as a pass
    return true;
  }
  return sgemm_fused(m, n, k, a, b, c, epilogue, workspace, workspace_bytes, threads);
}

size_t sgemm_packed_bytes(bool is_a, int64_t outer, int64_t k, bool bf16) {
  const UkernelInfo& u = bf16 ? bf16_family() : kernel();
  return static_cast<size_t>(round_up(std::max<int64_t>(outer, 0), is_a ? u.mr : u.nr) *
                             slots(u, std::max<int64_t>(k, 0))) *
         sizeof(float);
}

PackedOperand sgemm_pack_a(int64_t m, int64_t k, MatrixRef<const float> a, bool bf16) {
  return pack_operand(true, m, k, a, bf16 && detail::bf16_supported());
}
PackedOperand sgemm_pack_b(int64_t k, int64_t n, MatrixRef<const float> b, bool bf16) {
  return pack_operand(false, n, k, b, bf16 && detail::bf16_supported());
}

bool sgemm_packed_current(const PackedOperand& p) {
  return p.bf16 ? detail::bf16_supported() : p.isa == kernel().isa;
}

bool sgemm_bf16_supported() { return detail::bf16_supported(); }

bool sgemm_set_bf16_amx(bool use) {
  if (use && !detail::amx_bf16_supported()) return false;
  g_bf16_amx.store(use, std::memory_order_relaxed);
  return true;
}

const char* sgemm_bf16_kernel_name() { return detail::bf16_supported() ? bf16_family().name : "none"; }

bool sgemm_isa_supported(GemmIsa isa) { return isa_supported(isa); }

std::vector<GemmIsa> sgemm_supported_isas() {
  std::vector<GemmIsa> isas;
  for (GemmIsa isa : {GemmIsa::Portable, GemmIsa::Avx2, GemmIsa::Avx512}) {
    if (isa_supported(isa)) isas.push_back(isa);
  }
  return isas;
}

bool sgemm_set_isa(GemmIsa isa) {
  if (!isa_supported(isa)) return false;
  g_kernel.store(info_for(isa), std::memory_order_release);
  return true;
}

const char* sgemm_kernel_name() { return kernel().name; }

GemmIsa sgemm_isa() { return kernel().isa; }

}  // namespace ember::cpu
