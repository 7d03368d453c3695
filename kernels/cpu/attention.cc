// ScaledDotProductAttention in float32 (kernels/ref/attention.cc's
// semantics). A task is one batch entry's block of query rows, on one thread:
// its scores S = q_rows @ k^T (the blocked GEMM) into the thread's scratch,
// S * scale + mask (a mask row shared by every query, BERT's padding mask, is
// added by the GEMM as it stores S, a column bias), softmax rows (the Softmax kernel's, softmax.h), then
// out_rows = P @ v. The scores of a block (256 KB at most, two copies) stay in
// the core's caches: the unfused graph (MatMul, Add, Softmax, MatMul) wrote
// every head's scores to memory and read them back three times. Under a
// padding mask, keys whose weights are exactly 0 are skipped (keys_kept).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/softmax.h"
#include "kernels/ref/ref_kernels.h"
#include "runtime/core/thread_pool.h"

namespace ember::cpu {
namespace {

constexpr int64_t kScoreFloats = 32768;  // a block's scores: 128 KB, twice (scores, then probabilities)

struct Plan {
  int rank = 0;
  int64_t batches = 1, L = 0, S = 0, E = 0, Ev = 0;
  int64_t block = 1;   // query rows a task
  int64_t tasks = 0;   // batches x row blocks
  int64_t slots = 1;   // threads' scratch slots
  size_t per_slot = 0; // scratch bytes a slot
};

size_t round_up(size_t bytes) { return (bytes + 63) / 64 * 64; }

Plan plan_for(const TensorView& q, const TensorView& k, const TensorView& v, int threads) {
  Plan p;
  p.rank = q.rank;
  for (int d = 0; d < q.rank - 2; ++d) p.batches *= q.sizes[d];
  p.L = q.sizes[q.rank - 2];
  p.E = q.sizes[q.rank - 1];
  p.S = k.sizes[k.rank - 2];
  p.Ev = v.sizes[v.rank - 1];
  p.block = std::clamp<int64_t>(kScoreFloats / std::max<int64_t>(p.S, 1), 1, std::max<int64_t>(p.L, 1));
  // Enough tasks for every thread: fewer batch entries than threads split their rows.
  const int64_t per_batch = (std::max(1, threads) + p.batches - 1) / std::max<int64_t>(p.batches, 1);
  if (per_batch > 1) p.block = std::min(p.block, std::max<int64_t>(1, (p.L + per_batch - 1) / per_batch));
  p.tasks = p.batches * ((p.L + p.block - 1) / p.block);
  p.slots = std::max<int64_t>(1, std::min<int64_t>(std::max(1, threads), p.tasks));
  const size_t scores = round_up(static_cast<size_t>(p.block * p.S) * sizeof(float));
  p.per_slot = 2 * scores + round_up(std::max(sgemm_workspace(p.block, p.S, p.E, 1), sgemm_workspace(p.block, p.Ev, p.S, 1)));
  return p;
}

// d = s * scale + mask (mask rows `mrs` apart, columns `mcs`; none: null),
// `rows` rows of n values, contiguous in s and d.
RT_SIMD_CLONES void scale_add(const float* __restrict s, float* __restrict d, int64_t rows, int64_t n, float scale,
                              const float* mask, int64_t mrs, int64_t mcs) {
  for (int64_t i = 0; i < rows; ++i) {
    const float* si = s + i * n;
    float* di = d + i * n;
    if (mask == nullptr) {
      for (int64_t j = 0; j < n; ++j) di[j] = si[j] * scale;
      continue;
    }
    const float* mi = mask + i * mrs;
    if (mcs == 1) {
      for (int64_t j = 0; j < n; ++j) di[j] = si[j] * scale + mi[j];
    } else {
      for (int64_t j = 0; j < n; ++j) di[j] = si[j] * scale + mi[j * mcs];
    }
  }
}

// A bound of the largest squared norm of n rows of E values (rows rs apart,
// values cs apart): the sum over e of the largest x_ie^2, which each row's
// squared norm is at most; NaN where a value is. Lane-wise maxima, up to 4
// vectors of columns a pass over the rows: the rows' own norms, each a
// horizontal sum, were 11 % of the kernel's time (perf, ops_bench
// sdpa_8x12x128x32_mask). int8 BERT b8, one thread, per-op minima: its
// attention ops 17.9 -> 16.5 ms.
RT_SIMD_CLONES double square_norm_bound(const float* x, int64_t rs, int64_t cs, int64_t n, int64_t E) {
  typedef float F8 __attribute__((vector_size(32)));
  typedef int I8 __attribute__((vector_size(32)));
  constexpr int kW = 4;  // vectors of columns a pass: independent chains of maxima
  double total = 0;
  I8 nan = {};
  int64_t e = 0;
  for (; cs == 1 && e + 8 <= E;) {
    const int w = static_cast<int>(std::min<int64_t>(kW, (E - e) / 8));
    F8 top[kW] = {};
    for (int64_t i = 0; i < n; ++i) {
      for (int j = 0; j < kW; ++j) {
        if (j >= w) break;
        F8 v;
        std::memcpy(&v, x + i * rs + e + 8 * j, sizeof(v));
        const F8 sq = v * v;
        nan |= sq != sq;
        top[j] = sq > top[j] ? sq : top[j];
      }
    }
    for (int j = 0; j < w; ++j) {
      for (int l = 0; l < 8; ++l) total += top[j][l];
    }
    e += 8 * w;
  }
  for (int l = 0; l < 8; ++l) {
    if (nan[l] != 0) return std::numeric_limits<double>::quiet_NaN();
  }
  for (; e < E; ++e) {
    float top = 0;
    for (int64_t i = 0; i < n; ++i) {
      const float sq = x[i * rs + e * cs] * x[i * rs + e * cs];
      if (std::isnan(sq)) return std::numeric_limits<double>::quiet_NaN();
      top = std::max(top, sq);
    }
    total += top;
  }
  return total;
}

// Padding masks (one mask row for every query: BERT's, large negative values
// on the padded keys): the keys after the last one a query can weigh are
// skipped. |scale q_i . k_j| <= bound = |scale| max_i |q_i| max_j |k_j|
// (Cauchy-Schwarz; the largest norms as square_norm_bound bounds them), so a
// row's maximum is at least m_max - bound and its score at key j at most
// m_j + bound: where m_j - m_max + 2 bound < -110, exp of the
// score less the maximum is exactly 0 (a float exp below -104 rounds to 0;
// softmax.h's kernels flush there), and key j adds nothing to the row's sum
// nor, through P, to the output (v's row j is not read: an inf or NaN there,
// which 0 * v would spread, is not). q, k or the mask not finite: none is
// skipped. `q` (`rows` rows), `k` (S keys) and `mask` (S values) at their
// strides; returns the keys kept, a prefix of the S. BERT at batch 8 (8 * b
// padded tokens in row b: 78 % of the keys kept), one thread: its six
// attention ops 17.8 -> 16.5 ms, less than the keys' share (a last panel of
// fewer than 32 columns costs as much as a whole one in q @ k^T).
constexpr double kZeroWeight = -110.0;  // a score this far below its row's maximum has weight exactly 0

int64_t keys_kept(const float* q, int64_t qrs, int64_t qcs, int64_t rows, const float* k, int64_t krs, int64_t kcs,
                  int64_t S, int64_t E, const float* mask, int64_t mcs, double scale) {
  double m_max = -std::numeric_limits<double>::infinity();
  for (int64_t j = 0; j < S; ++j) {
    const double mj = mask[j * mcs];
    if (!std::isfinite(mj)) return S;
    m_max = std::max(m_max, mj);
  }
  if (mask[(S - 1) * mcs] - m_max >= kZeroWeight) return S;  // the last key kept whatever the bound (no padding)
  // (1 + 2^-6: the float sums' and products' roundings, bf16's included.)
  const double bound = std::abs(scale) * std::sqrt(square_norm_bound(q, qrs, qcs, rows, E)) *
                       std::sqrt(square_norm_bound(k, krs, kcs, S, E)) * (1.0 + 1.0 / 64);
  if (!std::isfinite(bound)) return S;
  int64_t kept = S;
  while (kept > 1 && mask[(kept - 1) * mcs] - m_max + 2 * bound < kZeroWeight) --kept;
  return kept;
}

// The offset in view t of batch entry b (its index over `shape`'s leading dims).
int64_t batch_offset(const TensorView& t, const TensorView& shape, int64_t b) {
  int64_t off = 0;
  for (int d = shape.rank - 3; d >= 0; --d) {
    off += (b % shape.sizes[d]) * t.strides[d];
    b /= shape.sizes[d];
  }
  return off;
}

}  // namespace

size_t attention_f32_workspace(Span<const TensorView> in, Span<const TensorView> out, const OpParams&) {
  if (out.size() != 1 || !ref::attention_shapes_ok(in, out[0])) return 0;
  const Plan p = plan_for(in[0], in[1], in[2], get_num_threads());
  return p.per_slot * static_cast<size_t>(p.slots);
}

Status attention_f32(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out,
                     const OpParams& params) {
  const auto* ap = std::get_if<AttentionParams>(&params);
  EMBER_CHECK(ap != nullptr && out.size() == 1 && ref::attention_shapes_ok(in, out[0]), Status::InvalidArgument);
  EMBER_CHECK(in[0].dtype == DType::Float32, Status::DTypeMismatch);
  const TensorView &q = in[0], &k = in[1], &v = in[2], &m = in[3], &o = out[0];
  const Plan p = plan_for(q, k, v, ctx.num_threads);
  if (ctx.scratch_bytes < p.per_slot * static_cast<size_t>(p.slots)) {
    return ref::scaled_dot_product_attention(ctx, in, out, params);
  }
  if (p.tasks == 0 || p.Ev == 0) return Status::Ok;
  const int r = p.rank;
  const float scale = static_cast<float>(ap->scale);
  const bool pass = m.data != nullptr || scale != 1.0f;  // scores -> scaled and masked scores
  const bool padding_mask = m.data != nullptr && p.S > 0 && p.E > 0 && m.strides[r - 2] == 0;  // keys_kept
  const bool column_mask = padding_mask && scale == 1.0f && m.strides[r - 1] == 1;
  const bool bf16 = ap->bf16;
  const int64_t blocks = p.tasks / p.batches;
  const size_t scores_bytes = round_up(static_cast<size_t>(p.block * p.S) * sizeof(float));
  std::atomic<bool> ok{true};
  // A task a thread (slot) at a time, its scores in the slot's scratch.
  parallel_tasks(p.tasks, static_cast<int>(p.slots), [&](int64_t t, int slot) {
    char* base = static_cast<char*>(ctx.scratch) + static_cast<size_t>(slot) * p.per_slot;
    float* scores = reinterpret_cast<float*>(base);
    float* probs = reinterpret_cast<float*>(base + scores_bytes);
    void* ws = base + 2 * scores_bytes;
    const size_t ws_bytes = p.per_slot - 2 * scores_bytes;
    const int64_t b = t / blocks, row0 = t % blocks * p.block, rows = std::min(p.block, p.L - row0);
    const float* qb = q.ptr<const float>() + batch_offset(q, q, b) + row0 * q.strides[r - 2];
    const float* kb = k.ptr<const float>() + batch_offset(k, q, b);
    const float* vp = v.ptr<const float>() + batch_offset(v, q, b);
    float* ob = o.ptr<float>() + batch_offset(o, q, b) + row0 * o.strides[r - 2];
    // S = q_rows @ k^T: k^T's (e, j) is k's (j, e).
    const GemmOperand qa{{qb, q.strides[r - 2], q.strides[r - 1]}, nullptr, bf16};
    const GemmOperand kt{{kb, k.strides[r - 1], k.strides[r - 2]}, nullptr, bf16};
    const float* mb =
        m.data == nullptr ? nullptr : m.ptr<const float>() + batch_offset(m, q, b) + row0 * m.strides[r - 2];
    const int64_t S = padding_mask ? keys_kept(qb, q.strides[r - 2], q.strides[r - 1], rows, kb, k.strides[r - 2],
                                               k.strides[r - 1], p.S, p.E, mb, m.strides[r - 1], ap->scale)
                                   : p.S;
    float* in_softmax = scores;
    float* weights = probs;
    if (column_mask) {  // one mask row for every query (a padding mask): added as the GEMM stores S
      GemmEpilogue e;
      e.col_bias = mb;
      if (!sgemm_linear(rows, S, p.E, qa, kt, {scores, S, 1}, e, ws, ws_bytes, 1)) ok = false;
    } else {
      if (!sgemm_packed(rows, S, p.E, qa, kt, {scores, S, 1}, false, ws, ws_bytes, 1)) ok = false;
      if (pass) {
        scale_add(scores, probs, rows, S, scale, mb, mb != nullptr ? m.strides[r - 2] : 0,
                  mb != nullptr ? m.strides[r - 1] : 0);
        std::swap(in_softmax, weights);
      }
    }
    if (S > 0) softmax_rows_f32(in_softmax, weights, S, rows);
    // out_rows = P @ v.
    const GemmOperand pa{{weights, S, 1}, nullptr, bf16};
    const GemmOperand va{{vp, v.strides[r - 2], v.strides[r - 1]}, nullptr, bf16};
    if (!sgemm_packed(rows, p.Ev, S, pa, va, {ob, o.strides[r - 2], o.strides[r - 1]}, false, ws, ws_bytes, 1)) {
      ok = false;
    }
  });
  return ok.load() ? Status::Ok : Status::OutOfMemory;
}

}  // namespace ember::cpu
