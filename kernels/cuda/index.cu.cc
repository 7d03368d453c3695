// Embedding, Pad, GatherElements, ScatterElements and the backward kernels of
// Embedding and Pad on CUDA, for views of any strides and int32/int64 indices.
// The index maps are the reference's (kernels/ref/pad_index.h,
// scatter_combine.h; host and device). The front-ends reject indices out of
// range before a kernel runs (a kernel cannot fail per element without a
// host synchronization): here such an index writes zeros (Embedding,
// GatherElements) or nothing (the scatters and EmbeddingBackward). The
// backward kernels accumulate with atomics (16-bit floats: in a float32 copy
// in the workspace, rounded once).
// ScatterElements runs one thread per line along the axis, in index order, so
// duplicate indices combine exactly as in the reference (the last update wins
// for reduction none) and the result is deterministic.
#include <algorithm>
#include <type_traits>

#include "kernels/cuda/kernel_util.h"
#include "kernels/ref/pad_index.h"
#include "kernels/ref/scatter_combine.h"

namespace ember::cuda {
namespace {

// ---- Embedding ----------------------------------------------------------------

// out[i..., k] = weight[indices[i...], k], one thread per output element.
template <typename T>
__global__ void embedding_kernel(const T* w, NdView wv, const void* idx, bool idx64, NdView iv, T* y, NdView yv,
                                 int64_t total) {
  for (int64_t i = thread_index(); i < total; i += thread_count()) {
    int64_t at[kMaxRank + 1];
    unravel(i, yv.sizes, yv.rank, at);
    const int64_t row = read_index(idx, idx64, offset_at(iv, at));
    y[offset_at(yv, at)] = row >= 0 && row < wv.sizes[0] ? w[row * wv.strides[0] + at[iv.rank] * wv.strides[1]]
                                                         : convert<T>(0);
  }
}

// grad_weight[indices[i...], k] += grad[i..., k], one thread per element of grad.
template <typename T>
__global__ void embedding_backward_kernel(const T* g, NdView gv, const void* idx, bool idx64, NdView iv,
                                          compute_t<T>* gw, NdView gwv, int64_t total) {
  for (int64_t i = thread_index(); i < total; i += thread_count()) {
    int64_t at[kMaxRank + 1];
    unravel(i, gv.sizes, gv.rank, at);
    const int64_t row = read_index(idx, idx64, offset_at(iv, at));
    if (row < 0 || row >= gwv.sizes[0]) continue;
    atomic_accumulate(gw + row * gwv.strides[0] + at[iv.rank] * gwv.strides[1],
                      convert<compute_t<T>>(g[offset_at(gv, at)]));
  }
}

Status check_embedding(const TensorView& table, const TensorView& indices, const TensorView& rows) {
  EMBER_CHECK(table.rank == 2 && rows.rank == indices.rank + 1 && rows.dtype == table.dtype,
                     Status::InvalidArgument);
  EMBER_CHECK(indices.dtype == DType::Int32 || indices.dtype == DType::Int64, Status::DTypeMismatch);
  for (int d = 0; d < indices.rank; ++d) EMBER_CHECK(rows.sizes[d] == indices.sizes[d], Status::ShapeMismatch);
  EMBER_CHECK(rows.sizes[indices.rank] == table.sizes[1], Status::ShapeMismatch);
  return Status::Ok;
}

// ---- Pad ----------------------------------------------------------------------

struct PadGeometry {
  PadMode mode;
  int64_t before[kMaxRank], after[kMaxRank];
};

PadGeometry pad_geometry(const PadParams& p) {
  PadGeometry g;
  g.mode = p.mode;
  for (int d = 0; d < kMaxRank; ++d) {
    g.before[d] = p.before[d];
    g.after[d] = p.after[d];
  }
  return g;
}

// The offset in `src` (the unpadded tensor) that padded position `at` reads, or -1 for the constant.
__device__ inline int64_t pad_offset(const PadGeometry& g, const int64_t* at, const NdView& src) {
  int64_t off = 0;
  for (int d = 0; d < src.rank; ++d) {
    const int64_t i = ref::pad_source(g.mode, at[d], src.sizes[d], g.before[d], g.after[d]);
    if (i < 0) return -1;
    off += i * src.strides[d];
  }
  return off;
}

template <typename T>
__global__ void pad_kernel(const T* x, NdView xv, T* y, NdView yv, PadGeometry g, T value, int64_t total) {
  for (int64_t i = thread_index(); i < total; i += thread_count()) {
    int64_t at[kMaxRank];
    unravel(i, yv.sizes, yv.rank, at);
    const int64_t src = pad_offset(g, at, xv);
    y[offset_at(yv, at)] = src >= 0 ? x[src] : value;
  }
}

template <typename T>
__global__ void pad_backward_kernel(const T* g, NdView gv, compute_t<T>* gi, NdView giv, PadGeometry pg,
                                    int64_t total) {
  for (int64_t i = thread_index(); i < total; i += thread_count()) {
    int64_t at[kMaxRank];
    unravel(i, gv.sizes, gv.rank, at);
    const int64_t dst = pad_offset(pg, at, giv);
    if (dst >= 0) atomic_accumulate(gi + dst, convert<compute_t<T>>(g[offset_at(gv, at)]));
  }
}

// ---- GatherElements / ScatterElements -----------------------------------------

// The offset in `v` of index position `at` with the axis entry replaced by
// index[at] (negative: from the end); -1 when out of range.
__device__ inline int64_t target_offset(const NdView& v, int64_t i, const int64_t* at, int axis) {
  if (v.rank == 0) return 0;
  const int64_t size = v.sizes[axis];
  if (i < 0) i += size;
  if (i < 0 || i >= size) return -1;
  return offset_at(v, at) + (i - at[axis]) * v.strides[axis];
}

template <typename T>
__global__ void gather_kernel(const T* x, NdView xv, const void* idx, bool idx64, NdView iv, T* y, NdView yv,
                              int axis, int64_t total) {
  for (int64_t i = thread_index(); i < total; i += thread_count()) {
    int64_t at[kMaxRank] = {};
    unravel(i, yv.sizes, yv.rank, at);
    const int64_t src = target_offset(xv, read_index(idx, idx64, offset_at(iv, at)), at, axis);
    y[offset_at(yv, at)] = src >= 0 ? x[src] : convert<T>(0);
  }
}

// One thread per line of the index along the axis (the line's other
// coordinates fixed), walking it in order.
template <typename T>
__global__ void scatter_kernel(T* y, NdView yv, const void* idx, bool idx64, NdView iv, const T* u, NdView uv,
                               int axis, ScatterReduction r, int64_t lines) {
  NdView lv = iv;  // the lines: the index's shape with the axis collapsed
  const int64_t length = iv.rank == 0 ? 1 : iv.sizes[axis];
  if (iv.rank > 0) lv.sizes[axis] = 1;
  for (int64_t i = thread_index(); i < lines; i += thread_count()) {
    int64_t at[kMaxRank] = {};
    unravel(i, lv.sizes, lv.rank, at);
    for (int64_t j = 0; j < length; ++j) {
      if (iv.rank > 0) at[axis] = j;
      const int64_t dst = target_offset(yv, read_index(idx, idx64, offset_at(iv, at)), at, axis);
      if (dst >= 0) y[dst] = ref::scatter_combine(y[dst], u[offset_at(uv, at)], r);
    }
  }
}

int64_t normalized_axis(int64_t axis, int rank) { return axis < 0 ? axis + rank : axis; }

// Ranks, the index dtype and the index sizes within `bound`'s except along the axis.
Status check_index(const TensorView& index, const TensorView& bound, int64_t axis) {
  EMBER_CHECK(index.dtype == DType::Int32 || index.dtype == DType::Int64, Status::DTypeMismatch);
  EMBER_CHECK(index.rank == bound.rank && axis >= 0 && axis < std::max(index.rank, 1), Status::InvalidArgument);
  for (int d = 0; d < index.rank; ++d) {
    EMBER_CHECK(d == axis || index.sizes[d] <= bound.sizes[d], Status::ShapeMismatch);
  }
  return Status::Ok;
}

bool same_view(const TensorView& a, const TensorView& b) {
  if (a.data != b.data || a.rank != b.rank) return false;
  for (int d = 0; d < a.rank; ++d) {
    if (a.sizes[d] != b.sizes[d] || (a.sizes[d] != 1 && a.strides[d] != b.strides[d])) return false;
  }
  return true;
}

}  // namespace

EMBER_CUDA_KERNEL(embedding) {
  (void)params;
  EMBER_CHECK(in.size() == 2 && out.size() == 1, Status::InvalidArgument);
  const TensorView &weight = in[0], &indices = in[1], &y = out[0];
  EMBER_TRY(check_embedding(weight, indices, y));
  return on_dtype<kCudaAll>(weight.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto* k = &embedding_kernel<T>;
    return launch_1d(k, y.numel(), "embedding kernel", weight.ptr<const T>(), nd_view(weight),
                     static_cast<const void*>(indices.data), indices.dtype == DType::Int64, nd_view(indices),
                     y.ptr<T>(), nd_view(y), y.numel());
  });
}

size_t index_backward_workspace(Span<const TensorView>, Span<const TensorView> out, const OpParams&) {
  return out.size() == 1 ? accumulator_bytes(out[0]) : 0;
}

Status embedding_backward(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out,
                          const OpParams&) {
  EMBER_CHECK(in.size() == 2 && out.size() == 1, Status::InvalidArgument);
  const TensorView &grad = in[0], &indices = in[1], &gw = out[0];
  EMBER_TRY(check_embedding(gw, indices, grad));
  return on_dtype<kFloatingTypes & kCudaAll>(grad.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return with_accumulator<T>(ctx, gw, [&](const TensorView& acc) {
      auto* k = &embedding_backward_kernel<T>;
      return launch_1d(k, grad.numel(), "embedding_backward kernel", grad.ptr<const T>(), nd_view(grad),
                       static_cast<const void*>(indices.data), indices.dtype == DType::Int64, nd_view(indices),
                       acc.ptr<compute_t<T>>(), nd_view(acc), grad.numel());
    });
  });
}

EMBER_CUDA_KERNEL(pad) {
  const auto* p = std::get_if<PadParams>(&params);
  EMBER_CHECK(p != nullptr && in.size() == 1 && out.size() == 1, Status::InvalidArgument);
  const TensorView &x = in[0], &y = out[0];
  EMBER_CHECK(x.rank == y.rank && x.dtype == y.dtype, Status::InvalidArgument);
  for (int d = 0; d < x.rank; ++d) {
    EMBER_CHECK(ref::pad_dim_is_valid(p->mode, x.sizes[d], p->before[d], p->after[d], y.sizes[d]),
                       Status::InvalidArgument);
  }
  return on_dtype<kCudaAll>(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto* k = &pad_kernel<T>;
    return launch_1d(k, y.numel(), "pad kernel", x.ptr<const T>(), nd_view(x), y.ptr<T>(), nd_view(y),
                     pad_geometry(*p), convert<T>(p->value), y.numel());
  });
}

Status pad_backward(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out,
                    const OpParams& params) {
  const auto* p = std::get_if<PadParams>(&params);
  EMBER_CHECK(p != nullptr && in.size() == 1 && out.size() == 1, Status::InvalidArgument);
  const TensorView &grad = in[0], &gi = out[0];
  EMBER_CHECK(grad.rank == gi.rank && grad.dtype == gi.dtype, Status::InvalidArgument);
  for (int d = 0; d < grad.rank; ++d) {
    EMBER_CHECK(grad.sizes[d] == gi.sizes[d] + p->before[d] + p->after[d], Status::ShapeMismatch);
    if (grad.sizes[d] > 0 && (p->before[d] != 0 || p->after[d] != 0) && p->mode != PadMode::Constant) {
      const int64_t size = gi.sizes[d];
      const int64_t kept = size - std::max<int64_t>(-p->before[d], 0) - std::max<int64_t>(-p->after[d], 0);
      EMBER_CHECK(size > 0 && kept > 0, Status::InvalidArgument);
      EMBER_CHECK(p->mode != PadMode::Reflect || (p->before[d] < size && p->after[d] < size),
                         Status::InvalidArgument);
    }
  }
  return on_dtype<kFloatingTypes & kCudaAll>(grad.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return with_accumulator<T>(ctx, gi, [&](const TensorView& acc) {
      auto* k = &pad_backward_kernel<T>;
      return launch_1d(k, grad.numel(), "pad_backward kernel", grad.ptr<const T>(), nd_view(grad),
                       acc.ptr<compute_t<T>>(), nd_view(acc), pad_geometry(*p), grad.numel());
    });
  });
}

EMBER_CUDA_KERNEL(gather_elements) {
  const auto* p = std::get_if<AxisParams>(&params);
  EMBER_CHECK(p != nullptr && in.size() == 2 && out.size() == 1, Status::InvalidArgument);
  const TensorView &data = in[0], &index = in[1], &y = out[0];
  EMBER_CHECK(y.dtype == data.dtype && y.rank == index.rank, Status::DTypeMismatch);
  for (int d = 0; d < y.rank; ++d) EMBER_CHECK(y.sizes[d] == index.sizes[d], Status::ShapeMismatch);
  const int64_t axis = normalized_axis(p->axis, data.rank);
  EMBER_TRY(check_index(index, data, axis));
  return on_dtype<kCudaAll>(data.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto* k = &gather_kernel<T>;
    return launch_1d(k, y.numel(), "gather_elements kernel", data.ptr<const T>(), nd_view(data),
                     static_cast<const void*>(index.data), index.dtype == DType::Int64, nd_view(index), y.ptr<T>(),
                     nd_view(y), static_cast<int>(axis), y.numel());
  });
}

EMBER_CUDA_KERNEL(scatter_elements) {
  const auto* p = std::get_if<ScatterParams>(&params);
  EMBER_CHECK(p != nullptr && p->valid() && in.size() == 3 && out.size() == 1, Status::InvalidArgument);
  const TensorView &data = in[0], &index = in[1], &updates = in[2], &y = out[0];
  EMBER_CHECK(y.dtype == data.dtype && updates.dtype == data.dtype, Status::DTypeMismatch);
  EMBER_CHECK(y.rank == data.rank && updates.rank == index.rank, Status::ShapeMismatch);
  for (int d = 0; d < y.rank; ++d) {
    EMBER_CHECK(y.sizes[d] == data.sizes[d] && updates.sizes[d] >= index.sizes[d], Status::ShapeMismatch);
  }
  const int64_t axis = normalized_axis(p->axis, data.rank);
  EMBER_TRY(check_index(index, data, axis));
  if (y.numel() == 0) return Status::Ok;
  if (!same_view(data, y)) {  // the output starts as a copy of data (in place: it is data)
    TensorView src = data, dst = y;
    EMBER_TRY(copy(KernelContext{}, Span<const TensorView>(&src, 1), Span<TensorView>(&dst, 1), OpParams{}));
  }
  const int64_t length = index.rank == 0 ? 1 : index.sizes[axis];
  if (index.numel() == 0 || length == 0) return Status::Ok;
  return on_dtype<kCudaAll>(data.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto* k = &scatter_kernel<T>;
    return launch_1d(k, index.numel() / length, "scatter_elements kernel", y.ptr<T>(), nd_view(y),
                     static_cast<const void*>(index.data), index.dtype == DType::Int64, nd_view(index),
                     updates.ptr<const T>(), nd_view(updates), static_cast<int>(axis), p->reduction,
                     index.numel() / length);
  });
}

}  // namespace ember::cuda
