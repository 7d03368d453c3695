// Blocked SGEMM (see gemm.h). Loop structure (Goto/BLIS):
//   for jc in N by NC:                      B panel  KC x NC  -> packed once, shared
//     for pc in K by KC:
//       pack B[pc:pc+KC, jc:jc+NC] into NR-wide column panels (threads over panels)
//       threads over (MC row block x N chunk) tasks:
//         pack A[ic:ic+MC, pc:pc+KC] into MR-tall row panels (per-thread buffer)
//         for each NR panel jr, MR panel ir: micro-kernel MR x NR over KC
// Partial tiles are zero-padded in the packed panels; the micro-kernel writes
// only the valid part of its tile.
#include "kernels/cpu/gemm.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "kernels/cpu/gemv.h"
#include "runtime/core/thread_pool.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define RT_GEMM_X86 1
#else
#define RT_GEMM_X86 0
#endif

namespace ember::cpu {
namespace {

using detail::load4;
using detail::store4;
using detail::v4f;

constexpr int64_t kKC = 256;   // depth of a packed block (A and B panels stay in L1/L2)
constexpr int64_t kNC = 4096;  // columns of a packed B block (L3)
constexpr size_t kAlign = 64;
// Up to this many rows of A, products whose layout allows it skip packing
// (gemv.h): packing B costs more than the product there. Measured with
// bench/gemm_bench (Zen 4, AVX-512): for a W^T operand the unpacked dot
// products beat pack + GEMM through M = 64 (K, N = 768, 3072, one thread,
// loaded machine: about 4.4 vs 6.8 ms at M = 64, 0.9 vs 3.8 ms at M = 16) and
// tie at M = 128. The broadcast-FMA path is used only
// for a few rows (its B packing is a cheap row copy).
constexpr int64_t kDotMaxM = 64;
constexpr int64_t kAxpyMaxM = 8;
constexpr int64_t kDirectChunk = 64;  // columns per thread chunk of the unpacked paths

using Ukernel = void (*)(int64_t kc, const float* a, const float* b, float* c, int64_t rs, int64_t cs,
                         bool accumulate, int64_t mv, int64_t nv);

struct UkernelInfo {
  int64_t mr, nr, mc;  // tile rows and columns; rows of a packed A block (a multiple of mr)
  Ukernel fn;
  const char* name;
  GemmIsa isa;
};

// Writes the valid mv x nv part of a row-major mr x nr tile to C.
inline void store_tile(const float* t, int64_t nr, float* c, int64_t rs, int64_t cs, bool accumulate,
                       int64_t mv, int64_t nv) {
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

// --- portable 8x8 (GCC/Clang vector extensions: SSE on x86, NEON on ARM) ----

void ukernel_8x8_portable(int64_t kc, const float* __restrict a, const float* __restrict b, float* c,
                          int64_t rs, int64_t cs, bool accumulate, int64_t mv, int64_t nv) {
  v4f acc[8][2];
  for (int i = 0; i < 8; ++i) acc[i][0] = acc[i][1] = v4f{0, 0, 0, 0};
  for (int64_t p = 0; p < kc; ++p) {
    const v4f b0 = load4(b), b1 = load4(b + 4);
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) {
      const v4f ai = v4f{a[i], a[i], a[i], a[i]};
      acc[i][0] += ai * b0;
      acc[i][1] += ai * b1;
    }
    a += 8;
    b += 8;
  }
  if (mv == 8 && nv == 8 && cs == 1) {
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
  alignas(kAlign) float t[8 * 8];
  for (int i = 0; i < 8; ++i) {
    store4(t + i * 8, acc[i][0]);
    store4(t + i * 8 + 4, acc[i][1]);
  }
  store_tile(t, 8, c, rs, cs, accumulate, mv, nv);
}

#if RT_GEMM_X86
// --- AVX2 + FMA 6x16: 12 accumulators, 2 B vectors, 1 broadcast --------------
__attribute__((target("avx2,fma"))) void ukernel_6x16_avx2(int64_t kc, const float* __restrict a,
                                                            const float* __restrict b, float* c,
                                                            int64_t rs, int64_t cs, bool accumulate,
                                                            int64_t mv, int64_t nv) {
  __m256 acc[6][2];
  for (int i = 0; i < 6; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
#pragma GCC unroll 4
  for (int64_t p = 0; p < kc; ++p) {
    const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
#pragma GCC unroll 6
    for (int i = 0; i < 6; ++i) {
      const __m256 ai = _mm256_broadcast_ss(a + i);
      acc[i][0] = _mm256_fmadd_ps(ai, b0, acc[i][0]);
      acc[i][1] = _mm256_fmadd_ps(ai, b1, acc[i][1]);
    }
    a += 6;
    b += 16;
  }
  if (mv == 6 && nv == 16 && cs == 1) {
    for (int i = 0; i < 6; ++i) {
      float* ci = c + i * rs;
      if (accumulate) {
        acc[i][0] = _mm256_add_ps(acc[i][0], _mm256_loadu_ps(ci));
        acc[i][1] = _mm256_add_ps(acc[i][1], _mm256_loadu_ps(ci + 8));
      }
      _mm256_storeu_ps(ci, acc[i][0]);
      _mm256_storeu_ps(ci + 8, acc[i][1]);
    }
    return;
  }
  alignas(kAlign) float t[6 * 16];
  for (int i = 0; i < 6; ++i) {
    _mm256_store_ps(t + i * 16, acc[i][0]);
    _mm256_store_ps(t + i * 16 + 8, acc[i][1]);
  }
  store_tile(t, 16, c, rs, cs, accumulate, mv, nv);
}

// --- AVX-512 12x32: 24 accumulators, 2 B vectors, embedded broadcasts --------
__attribute__((target("avx512f"))) void ukernel_12x32_avx512(int64_t kc, const float* __restrict a,
                                                              const float* __restrict b, float* c,
                                                              int64_t rs, int64_t cs, bool accumulate,
                                                              int64_t mv, int64_t nv) {
  __m512 acc[12][2];
  for (int i = 0; i < 12; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
#pragma GCC unroll 2
  for (int64_t p = 0; p < kc; ++p) {
    const __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) {
      const __m512 ai = _mm512_set1_ps(a[i]);
      acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
    }
    a += 12;
    b += 32;
  }
  if (mv == 12 && nv == 32 && cs == 1) {
    for (int i = 0; i < 12; ++i) {
      float* ci = c + i * rs;
      if (accumulate) {
        acc[i][0] = _mm512_add_ps(acc[i][0], _mm512_loadu_ps(ci));
        acc[i][1] = _mm512_add_ps(acc[i][1], _mm512_loadu_ps(ci + 16));
      }
      _mm512_storeu_ps(ci, acc[i][0]);
      _mm512_storeu_ps(ci + 16, acc[i][1]);
    }
    return;
  }
  alignas(kAlign) float t[12 * 32];
  for (int i = 0; i < 12; ++i) {
    _mm512_store_ps(t + i * 32, acc[i][0]);
    _mm512_store_ps(t + i * 32 + 16, acc[i][1]);
  }
  store_tile(t, 32, c, rs, cs, accumulate, mv, nv);
}
#endif  // RT_GEMM_X86

constexpr UkernelInfo kPortable{8, 8, 128, &ukernel_8x8_portable, "portable 8x8", GemmIsa::Portable};
#if RT_GEMM_X86
constexpr UkernelInfo kAvx2{6, 16, 120, &ukernel_6x16_avx2, "avx2 6x16", GemmIsa::Avx2};
constexpr UkernelInfo kAvx512{12, 32, 144, &ukernel_12x32_avx512, "avx512 12x32", GemmIsa::Avx512};
#endif

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
size_t floats_bytes(int64_t n) { return static_cast<size_t>(round_up(n * 4, kAlign)); }

// Packs rows [0, mc) x depth [0, kc) of A into MR-tall panels: panel r holds, for
// each p, the MR values A[r*MR + i, p] (zero past mc).
void pack_a(const UkernelInfo& u, int64_t mc, int64_t kc, MatrixRef<const float> a, float* dst) {
  const int64_t mr = u.mr;
  for (int64_t r = 0; r < mc; r += mr) {
    const int64_t rows = std::min(mr, mc - r);
    const float* src = a.data + r * a.rs;
    if (a.rs == 1 && rows == mr) {  // column-major A: each p is a contiguous run of MR
      for (int64_t p = 0; p < kc; ++p) std::memcpy(dst + p * mr, src + p * a.cs, sizeof(float) * mr);
    } else {
      for (int64_t i = 0; i < rows; ++i) {
        const float* row = src + i * a.rs;
        if (a.cs == 1) {
          for (int64_t p = 0; p < kc; ++p) dst[p * mr + i] = row[p];
        } else {
          for (int64_t p = 0; p < kc; ++p) dst[p * mr + i] = row[p * a.cs];
        }
      }
      for (int64_t i = rows; i < mr; ++i) {
        for (int64_t p = 0; p < kc; ++p) dst[p * mr + i] = 0.0f;
      }
    }
    dst += mr * kc;
  }
}

// Packs NR-wide column panel `panel` (columns [panel*NR, +NR) of the block, nc
// columns in all) of the kc x nc block of B: for each p, NR values B[p, j].
void pack_b_panel(const UkernelInfo& u, int64_t panel, int64_t nc, int64_t kc, MatrixRef<const float> b,
                  float* dst) {
  const int64_t nr = u.nr;
  const int64_t j0 = panel * nr;
  const int64_t cols = std::min(nr, nc - j0);
  dst += panel * nr * kc;
  const float* src = b.data + j0 * b.cs;
  if (b.cs == 1 && cols == nr) {
    for (int64_t p = 0; p < kc; ++p) std::memcpy(dst + p * nr, src + p * b.rs, sizeof(float) * nr);
    return;
  }
  for (int64_t p = 0; p < kc; ++p) {
    const float* row = src + p * b.rs;
    float* d = dst + p * nr;
    int64_t j = 0;
    for (; j < cols; ++j) d[j] = row[j * b.cs];
    for (; j < nr; ++j) d[j] = 0.0f;
  }
}

// How many threads an m x n x k product is worth (about 2^18 multiply-adds each).
int threads_for(int64_t m, int64_t n, int64_t k, int threads) {
  const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  const double useful = std::max(1.0, work / (1 << 18));
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(threads, static_cast<int64_t>(useful))));
}

struct Sizes {
  int64_t kc, nc, mc;
  size_t b_bytes, a_bytes;  // packed B block; one thread's packed A block
};

Sizes block_sizes(const UkernelInfo& u, int64_t m, int64_t n, int64_t k) {
  Sizes s;
  s.kc = std::min(k, kKC);
  s.nc = std::min(round_up(n, u.nr), round_up(kNC, u.nr));
  s.mc = std::min(round_up(m, u.mr), u.mc);
  s.b_bytes = floats_bytes(s.kc * s.nc);
  s.a_bytes = floats_bytes(s.kc * s.mc);
  return s;
}

}  // namespace

size_t sgemm_workspace(int64_t m, int64_t n, int64_t k, int threads) {
  if (m <= 0 || n <= 0 || k <= 0) return 0;
  const Sizes s = block_sizes(kernel(), m, n, k);
  const int t = threads_for(m, n, k, std::max(1, threads));
  return kAlign + s.b_bytes + static_cast<size_t>(t) * s.a_bytes;
}

bool sgemm(int64_t m, int64_t n, int64_t k, MatrixRef<const float> a, MatrixRef<const float> b,
           MatrixRef<float> c, bool accumulate, void* workspace, size_t workspace_bytes, int threads) {
  if (m <= 0 || n <= 0) return true;
  if (k <= 0) {
    if (!accumulate) {
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) c.data[i * c.rs + j * c.cs] = 0.0f;
      }
    }
    return true;
  }
  const UkernelInfo& u = kernel();
  if (m <= kDotMaxM) {
    const detail::DirectKind kind = detail::sgemm_direct_kind(a, b, c);
    if (kind == detail::DirectKind::Dot || (kind == detail::DirectKind::Axpy && m <= kAxpyMaxM)) {
      const int nt = threads_for(m, n, k, std::max(1, threads));
      const int64_t chunks = (n + kDirectChunk - 1) / kDirectChunk;
      auto run = [&](int64_t c0, int64_t c1) {
        detail::sgemm_direct(u.isa, kind, m, c0 * kDirectChunk, std::min(n, c1 * kDirectChunk), k, a, b, c,
                             accumulate);
      };
      if (nt > 1 && chunks > 1) {
        parallel_for(0, chunks, (chunks + nt - 1) / nt, run);
      } else {
        run(0, chunks);
      }
      return true;
    }
  }
  const Sizes s = block_sizes(u, m, n, k);
  // Threads are capped by the work and by the packed-A buffers the workspace holds.
  int nt = threads_for(m, n, k, std::max(1, threads));
  if (workspace_bytes < kAlign + s.b_bytes + s.a_bytes) return false;
  nt = static_cast<int>(std::min<size_t>(static_cast<size_t>(nt),
                                         (workspace_bytes - kAlign - s.b_bytes) / s.a_bytes));
  const uintptr_t base = (reinterpret_cast<uintptr_t>(workspace) + kAlign - 1) / kAlign * kAlign;
  float* bpack = reinterpret_cast<float*>(base);
  char* apack_base = reinterpret_cast<char*>(base) + s.b_bytes;

  for (int64_t jc = 0; jc < n; jc += s.nc) {
    const int64_t nc = std::min(s.nc, n - jc);
    const int64_t n_panels = (nc + u.nr - 1) / u.nr;
    for (int64_t pc = 0; pc < k; pc += s.kc) {
      const int64_t kc = std::min(s.kc, k - pc);
      const bool acc = accumulate || pc > 0;
      const MatrixRef<const float> bblock{b.data + pc * b.rs + jc * b.cs, b.rs, b.cs};
      auto pack_b_range = [&](int64_t p0, int64_t p1) {
        for (int64_t p = p0; p < p1; ++p) pack_b_panel(u, p, nc, kc, bblock, bpack);
      };
      if (nt > 1) {
        parallel_for(0, n_panels, std::max<int64_t>(1, n_panels / nt), pack_b_range);
      } else {
        pack_b_range(0, n_panels);
      }

      // Tasks: (row block, column chunk), chunk index fastest, split evenly over
      // the threads so that each repacks A only when its row block changes.
      const int64_t m_blocks = (m + s.mc - 1) / s.mc;
      int64_t n_chunks = 1;
      if (m_blocks < 2 * nt) n_chunks = std::min(n_panels, (2 * nt + m_blocks - 1) / m_blocks);
      const int64_t panels_per_chunk = (n_panels + n_chunks - 1) / n_chunks;
      n_chunks = (n_panels + panels_per_chunk - 1) / panels_per_chunk;
      const int64_t tasks = m_blocks * n_chunks;
      const int64_t workers = std::min<int64_t>(nt, tasks);

      auto run_worker = [&](int64_t w) {
        float* apack = reinterpret_cast<float*>(apack_base + static_cast<size_t>(w) * s.a_bytes);
        const int64_t t0 = tasks * w / workers, t1 = tasks * (w + 1) / workers;
        int64_t packed_block = -1;
        for (int64_t t = t0; t < t1; ++t) {
          const int64_t mb = t / n_chunks, ch = t % n_chunks;
          const int64_t ic = mb * s.mc;
          const int64_t mc = std::min(s.mc, m - ic);
          if (mb != packed_block) {
            pack_a(u, mc, kc, MatrixRef<const float>{a.data + ic * a.rs + pc * a.cs, a.rs, a.cs}, apack);
            packed_block = mb;
          }
          const int64_t p_end = std::min(n_panels, (ch + 1) * panels_per_chunk);
          for (int64_t jp = ch * panels_per_chunk; jp < p_end; ++jp) {
            const int64_t jr = jp * u.nr;
            const int64_t nv = std::min(u.nr, nc - jr);
            const float* bp = bpack + jp * u.nr * kc;
            for (int64_t ir = 0; ir < mc; ir += u.mr) {
              const int64_t mv = std::min(u.mr, mc - ir);
              float* cp = c.data + (ic + ir) * c.rs + (jc + jr) * c.cs;
              u.fn(kc, apack + ir * kc, bp, cp, c.rs, c.cs, acc, mv, nv);
            }
          }
        }
      };
      if (workers > 1) {
        parallel_for(0, workers, 1, [&](int64_t w0, int64_t w1) {
          for (int64_t w = w0; w < w1; ++w) run_worker(w);
        });
      } else {
        run_worker(0);
      }
    }
  }
  return true;
}

bool sgemm_isa_supported(GemmIsa isa) { return isa_supported(isa); }

bool sgemm_set_isa(GemmIsa isa) {
  if (!isa_supported(isa)) return false;
  g_kernel.store(info_for(isa), std::memory_order_release);
  return true;
}

const char* sgemm_kernel_name() { return kernel().name; }

}  // namespace ember::cpu
