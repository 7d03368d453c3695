// Row reductions on CUDA, shared by reduce.cu.cc, softmax_norm.cu.cc and
// scan_topk.cu.cc: a block of kRowThreads threads splits into groups of G
// lanes, one row per group (PyTorch's Reduce.cuh configurations): G = 1 is a
// thread per row, 32 a warp per row, 256 a block per row. Lanes are adjacent
// threads (lane stride S = 1: a row's elements are read coalesced), or rows
// are (S = 256 / G: when the kept dims are the contiguous ones, adjacent
// threads read adjacent rows). A group combines its lanes with warp shuffles
// (xor butterfly: every lane gets the result) and, when it spans warps,
// through shared memory in a fixed order.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/cuda/context.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/cuda_rt.h"
#include "kernels/cuda/launch.h"
#include "kernels/ref/elementwise_ops.h"
#include "runtime/backend/backend.h"
#include "runtime/tensor/convert.h"

namespace ember::cuda {

constexpr int kRowThreads = 256;

// The accumulator of a floating T: float for float and the 16-bit floats
// (PyTorch's acc_type on CUDA), double for double.
template <typename T>
using float_acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

// Dims of one index space (row-major), in element strides for up to four operands.
template <int N>
struct Dims {
  int rank;
  int64_t sizes[kMaxRank];
  int64_t strides[N][kMaxRank];
  int64_t numel;

  // Operand k's offset of the row-major position i.
  __device__ int64_t offset(int k, int64_t i) const {
    if (rank == 1) return i * strides[k][0];
    int64_t off = 0;
    for (int d = rank - 1; d >= 0; --d) {
      const int64_t q = i / sizes[d];
      off += (i - q * sizes[d]) * strides[k][d];
      i = q;
    }
    return off;
  }
};

// Builds Dims<N> over the dims of `v[0]` that `pick(d)` selects, in order: size-1
// dims dropped, neighbours merged when every operand allows it.
template <int N, typename Pick>
Dims<N> make_dims(const TensorView* const* v, Pick&& pick) {
  Dims<N> g{};
  g.numel = 1;
  for (int d = 0; d < v[0]->rank; ++d) {
    if (!pick(d)) continue;
    const int64_t n = v[0]->sizes[d];
    g.numel *= n;
    if (n == 1) continue;
    bool merge = g.rank > 0;
    for (int k = 0; k < N && merge; ++k) merge = g.strides[k][g.rank - 1] == v[k]->strides[d] * n;
    if (merge) {
      g.sizes[g.rank - 1] *= n;
      for (int k = 0; k < N; ++k) g.strides[k][g.rank - 1] = v[k]->strides[d];
    } else {
      g.sizes[g.rank] = n;
      for (int k = 0; k < N; ++k) g.strides[k][g.rank] = v[k]->strides[d];
      ++g.rank;
    }
  }
  return g;
}

// How the block's threads map to rows (see the file comment).
struct RowLayout {
  int G;  // lanes per row: a power of two in [1, kRowThreads]
  int S;  // lane stride: 1, or kRowThreads / G (rows adjacent)

  __device__ int lane() const { return (static_cast<int>(threadIdx.x) / S) % G; }
  __device__ int group() const {
    const int t = static_cast<int>(threadIdx.x);
    return (t / (S * G)) * S + t % S;
  }
  __host__ __device__ int rows_per_block() const { return kRowThreads / G; }
};

inline int pow2_at_least(int64_t n, int cap) {
  int g = 1;
  while (g < n && g < cap) g *= 2;
  return g;
}

// Rows of at most kThreadRow elements: a thread per row (no exchange).
constexpr int64_t kThreadRow = 8;

// The layout for `rows` rows of `inner` elements: a thread per short row;
// 8 lanes a row, rows adjacent, when `rows_contiguous` (the kept dims are the
// contiguous ones) and the rows are many; else the power of two at least
// `inner` (at most a block) of adjacent lanes.
inline RowLayout choose_layout(int64_t rows, int64_t inner, bool rows_contiguous) {
  if (inner <= kThreadRow) return RowLayout{1, 1};
  if (rows_contiguous && rows >= 32) return RowLayout{8, kRowThreads / 8};
  return RowLayout{pow2_at_least(inner, kRowThreads), 1};
}

inline unsigned row_blocks(int64_t rows, const RowLayout& l) {
  const int64_t per = l.rows_per_block();
  const int64_t b = (rows + per - 1) / per;
  return static_cast<unsigned>(b < 1 ? 1 : (b > (int64_t{1} << 20) ? (int64_t{1} << 20) : b));
}

// Warp exchange of the accumulators (every lane of the warp takes part).
__device__ inline float shfl_xor(float v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
__device__ inline double shfl_xor(double v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
__device__ inline long long shfl_xor(long long v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
__device__ inline int64_t shfl_xor_i64(int64_t v, int m) {
  return static_cast<int64_t>(shfl_xor(static_cast<long long>(v), m));
}
__device__ inline uint64_t shfl_xor(uint64_t v, int m) {
  return static_cast<uint64_t>(shfl_xor(static_cast<long long>(v), m));
}

// A value and its index (max/min, argmax/argmin): index kNoIndex is "none yet".
template <typename K>
struct Best {
  K v;
  int64_t i;
};
constexpr int64_t kNoIndex = INT64_MAX;

template <typename K>
__device__ inline Best<K> shfl_xor(Best<K> b, int m) {
  Best<K> r;
  r.v = static_cast<K>(shfl_xor(b.v, m));
  r.i = shfl_xor_i64(b.i, m);
  return r;
}

// Combines each group's lanes with `op` (commutative); every lane of the group
// gets the result. Block-uniform: every thread of the block calls it.
// `smem`: kRowThreads values of shared memory.
template <typename V, typename Op>
__device__ V group_reduce(V v, Op op, const RowLayout& l, V* smem) {
  const int span = l.S * l.G;
  for (int m = l.S; m < span && m < 32; m *= 2) v = op(v, shfl_xor(v, m));
  if (span > 32) {
    const int t = static_cast<int>(threadIdx.x);
    if (t % 32 < l.S) smem[t] = v;
    __syncthreads();
    const int first = t % l.S + (t / span) * span;
    v = smem[first];
    for (int k = 1; k < span / 32; ++k) v = op(v, smem[first + 32 * k]);
    __syncthreads();
  }
  return v;
}

template <typename A>
struct AddOp {
  __device__ A operator()(A a, A b) const { return a + b; }
};

// The larger (kMax) or smaller; a NaN wins.
template <typename A, bool kMax>
struct PickNanOp {
  __device__ A operator()(A a, A b) const {
    if (ref::is_nan(a)) return a;
    if (ref::is_nan(b)) return b;
    return (kMax ? a > b : a < b) ? a : b;
  }
};

}  // namespace ember::cuda
