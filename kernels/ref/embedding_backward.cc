// EmbeddingBackward: grad_weight[indices[i...], :] += grad[i..., :] for
// int32/int64 indices of any shape and strides (grad: [*indices.shape, D]).
// The output [V, D] is zeroed by the front-end; repeated indices accumulate.
// An index outside [0, V) returns OutOfRange before anything is written.
#include <type_traits>

#include "kernels/ref/loops.h"
#include "kernels/ref/ref_kernels.h"
#include "runtime/tensor/convert.h"

namespace ember::ref {

Status embedding_backward(const KernelContext&, Span<const TensorView> in, Span<TensorView> out,
                          const OpParams&) {
  EMBER_CHECK(in.size() == 2 && out.size() == 1, Status::InvalidArgument);
  const TensorView& grad = in[0];
  const TensorView& indices = in[1];
  TensorView& gw = out[0];
  EMBER_CHECK(gw.rank == 2 && grad.rank == indices.rank + 1 && gw.dtype == grad.dtype,
                     Status::InvalidArgument);
  EMBER_CHECK(indices.dtype == DType::Int32 || indices.dtype == DType::Int64, Status::DTypeMismatch);
  for (int d = 0; d < indices.rank; ++d) EMBER_CHECK(grad.sizes[d] == indices.sizes[d], Status::ShapeMismatch);
  EMBER_CHECK(grad.sizes[indices.rank] == gw.sizes[1], Status::ShapeMismatch);
  if (indices.numel() == 0) return Status::Ok;
  const int64_t rows = gw.sizes[0], D = gw.sizes[1];
  auto index_at = [&](const int64_t* idx) -> int64_t {
    const int64_t off = offset_of(indices, idx);
    return indices.dtype == DType::Int32 ? indices.ptr<const int32_t>()[off] : indices.ptr<const int64_t>()[off];
  };
  int64_t idx[kMaxRank] = {};
  do {
    const int64_t row = index_at(idx);
    EMBER_CHECK(row >= 0 && row < rows, Status::OutOfRange);
  } while (next_index(idx, indices.sizes, indices.rank));
  if (D == 0) return Status::Ok;
  dispatch_dtype(grad.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = compute_t<T>;
    if constexpr (std::is_floating_point_v<A>) {
      const T* g = grad.ptr<const T>();
      T* w = gw.ptr<T>();
      const int64_t step = grad.strides[indices.rank];
      int64_t i[kMaxRank] = {};
      do {
        T* row = w + index_at(i) * gw.strides[0];
        const T* src = g + offset_of(grad, i);  // grad's leading dims match indices'; the last index is 0
        for (int64_t k = 0; k < D; ++k) {
          T& dst = row[k * gw.strides[1]];
          dst = convert<T>(convert<A>(dst) + convert<A>(src[k * step]));
        }
      } while (next_index(i, indices.sizes, indices.rank));
    }
  });
  return Status::Ok;
}

}  // namespace ember::ref
