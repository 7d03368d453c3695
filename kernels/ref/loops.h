// Strided loops for the reference kernels: N operands that share one shape
// (inputs already broadcast to it by stride-0 dims), each with its own strides.
// Dimensions that can be merged for every operand are merged first, so
// contiguous and simply-broadcast cases run as one flat inner loop.
#pragma once

#include <array>
#include <cstdint>

#include "runtime/tensor/tensor_view.h"

namespace ember::ref {

template <size_t N>
struct StridedGeometry {
  int rank = 0;
  int64_t sizes[kMaxRank] = {};
  int64_t strides[N][kMaxRank] = {};  // in bytes
};

// Builds merged geometry over `views` (all of the same shape).
template <size_t N>
StridedGeometry<N> make_geometry(const std::array<const TensorView*, N>& views) {
  StridedGeometry<N> g;
  const TensorView& ref = *views[0];
  for (int d = 0; d < ref.rank; ++d) {
    if (ref.sizes[d] == 1) continue;  // size-1 dims carry no iteration
    bool merge = g.rank > 0;
    for (size_t k = 0; k < N && merge; ++k) {
      const int64_t es = static_cast<int64_t>(element_size(views[k]->dtype));
      merge = g.strides[k][g.rank - 1] == views[k]->strides[d] * es * ref.sizes[d];
    }
    if (merge) {
      g.sizes[g.rank - 1] *= ref.sizes[d];
      for (size_t k = 0; k < N; ++k) {
        g.strides[k][g.rank - 1] = views[k]->strides[d] * static_cast<int64_t>(element_size(views[k]->dtype));
      }
    } else {
      g.sizes[g.rank] = ref.sizes[d];
      for (size_t k = 0; k < N; ++k) {
        g.strides[k][g.rank] = views[k]->strides[d] * static_cast<int64_t>(element_size(views[k]->dtype));
      }
      ++g.rank;
    }
  }
  return g;
}

// Calls inner(ptrs, n, strides) for every innermost row: ptrs[k] points at the
// row's first element of operand k, strides[k] is its byte step along the row.
template <size_t N, typename Inner>
void for_each_row(const std::array<const TensorView*, N>& views, Inner&& inner) {
  for (size_t k = 0; k < N; ++k) {
    if (views[k]->numel() == 0) return;
  }
  const StridedGeometry<N> g = make_geometry<N>(views);
  std::array<char*, N> base;
  for (size_t k = 0; k < N; ++k) base[k] = static_cast<char*>(views[k]->data);
  std::array<int64_t, N> row_strides;
  if (g.rank == 0) {  // a single element
    row_strides.fill(0);
    inner(base, int64_t{1}, row_strides);
    return;
  }
  const int last = g.rank - 1;
  for (size_t k = 0; k < N; ++k) row_strides[k] = g.strides[k][last];
  int64_t index[kMaxRank] = {};
  std::array<char*, N> ptrs = base;
  for (;;) {
    inner(ptrs, g.sizes[last], row_strides);
    int d = last - 1;
    for (; d >= 0; --d) {
      if (++index[d] < g.sizes[d]) {
        for (size_t k = 0; k < N; ++k) ptrs[k] += g.strides[k][d];
        break;
      }
      for (size_t k = 0; k < N; ++k) ptrs[k] -= g.strides[k][d] * (g.sizes[d] - 1);
      index[d] = 0;
    }
    if (d < 0) return;
  }
}

// Element offset (in elements) of a multi-index.
inline int64_t offset_of(const TensorView& v, const int64_t* index) {
  int64_t off = 0;
  for (int d = 0; d < v.rank; ++d) off += index[d] * v.strides[d];
  return off;
}

// Advances a row-major multi-index over `sizes`; false after the last one.
inline bool next_index(int64_t* index, const int64_t* sizes, int rank) {
  for (int d = rank - 1; d >= 0; --d) {
    if (++index[d] < sizes[d]) return true;
    index[d] = 0;
  }
  return false;
}

}  // namespace ember::ref
