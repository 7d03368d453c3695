// GatherElements and ScatterElements along one axis (ONNX's ops; torch.gather
// and torch.scatter): data, index and output share a rank; the index may be
// int32 or int64, any strides (broadcast ones too), and negative entries count
// from the end of the axis. Every index is checked before anything is written
// (OutOfRange: the output is untouched).
#include <cmath>

#include "kernels/ref/loops.h"
#include "kernels/ref/ref_kernels.h"
#include "kernels/ref/scatter_combine.h"

namespace ember::ref {
namespace {

int64_t index_value(const TensorView& index, const int64_t* at) {
  const int64_t off = offset_of(index, at);
  return index.dtype == DType::Int32 ? index.ptr<const int32_t>()[off] : index.ptr<const int64_t>()[off];
}

// The checks both ops share: ranks, the index dtype, index sizes within
// `bound`'s except along the axis, and every index within [-size, size).
Status check_index(const TensorView& index, const TensorView& bound, int64_t axis, int64_t size) {
  EMBER_CHECK(index.dtype == DType::Int32 || index.dtype == DType::Int64, Status::DTypeMismatch);
  EMBER_CHECK(index.rank == bound.rank && axis >= 0 && axis < std::max(index.rank, 1), Status::InvalidArgument);
  for (int d = 0; d < index.rank; ++d) {
    EMBER_CHECK(d == axis || index.sizes[d] <= bound.sizes[d], Status::ShapeMismatch);
  }
  if (index.numel() == 0) return Status::Ok;
  int64_t at[kMaxRank] = {};
  do {
    const int64_t i = index_value(index, at);
    EMBER_CHECK(i >= -size && i < size, Status::OutOfRange);
  } while (next_index(at, index.sizes, index.rank));
  return Status::Ok;
}

// The element offset in `v` of the index position `at` with the axis entry replaced by index[at].
int64_t target_offset(const TensorView& v, const TensorView& index, const int64_t* at, int64_t axis) {
  if (v.rank == 0) return 0;
  const int64_t size = v.sizes[axis];
  int64_t i = index_value(index, at);
  if (i < 0) i += size;
  return offset_of(v, at) + (i - at[axis]) * v.strides[axis];
}

int64_t normalized_axis(int64_t axis, int rank) { return axis < 0 ? axis + rank : axis; }

}  // namespace

Status gather_elements(const KernelContext&, Span<const TensorView> in, Span<TensorView> out,
                       const OpParams& params) {
  const auto* p = std::get_if<AxisParams>(&params);
  EMBER_CHECK(p != nullptr && in.size() == 2 && out.size() == 1, Status::InvalidArgument);
  const TensorView &data = in[0], &index = in[1];
  TensorView& y = out[0];
  EMBER_CHECK(y.dtype == data.dtype && y.rank == index.rank, Status::DTypeMismatch);
  for (int d = 0; d < y.rank; ++d) EMBER_CHECK(y.sizes[d] == index.sizes[d], Status::ShapeMismatch);
  const int64_t axis = normalized_axis(p->axis, data.rank);
  const int64_t size = data.rank == 0 ? 1 : data.sizes[axis];
  EMBER_TRY(check_index(index, data, axis, size));
  if (y.numel() == 0) return Status::Ok;
  dispatch_dtype(data.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = data.ptr<const T>();
    T* o = y.ptr<T>();
    int64_t at[kMaxRank] = {};
    do {
      o[offset_of(y, at)] = x[target_offset(data, index, at, axis)];
    } while (next_index(at, y.sizes, y.rank));
  });
  return Status::Ok;
}

Status scatter_elements(const KernelContext&, Span<const TensorView> in, Span<TensorView> out,
                        const OpParams& params) {
  const auto* p = std::get_if<ScatterParams>(&params);
  EMBER_CHECK(p != nullptr && in.size() == 3 && out.size() == 1, Status::InvalidArgument);
  const TensorView &data = in[0], &index = in[1], &updates = in[2];
  TensorView& y = out[0];
  EMBER_CHECK(y.dtype == data.dtype && updates.dtype == data.dtype, Status::DTypeMismatch);
  EMBER_CHECK(y.rank == data.rank && updates.rank == index.rank, Status::ShapeMismatch);
  for (int d = 0; d < y.rank; ++d) {
    EMBER_CHECK(y.sizes[d] == data.sizes[d] && updates.sizes[d] >= index.sizes[d], Status::ShapeMismatch);
  }
  const int64_t axis = normalized_axis(p->axis, data.rank);
  const int64_t size = data.rank == 0 ? 1 : data.sizes[axis];
  EMBER_TRY(check_index(index, data, axis, size));
  if (y.numel() == 0) return Status::Ok;
  dispatch_dtype(data.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = data.ptr<const T>();
    const T* u = updates.ptr<const T>();
    T* o = y.ptr<T>();
    int64_t at[kMaxRank] = {};
    if (x != o) {  // the output starts as a copy of data (in place: it is data)
      do {
        o[offset_of(y, at)] = x[offset_of(data, at)];
      } while (next_index(at, y.sizes, y.rank));
    }
    if (index.numel() == 0) return;
    do {  // in index order: with duplicates, the last update wins (reduction none)
      T& dst = o[target_offset(y, index, at, axis)];
      dst = scatter_combine(dst, u[offset_of(updates, at)], p->reduction);
    } while (next_index(at, index.sizes, index.rank));
  });
  return Status::Ok;
}

}  // namespace ember::ref
