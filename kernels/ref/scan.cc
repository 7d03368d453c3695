// CumSum and CumProd along params.axis (ScanParams): exclusive leaves the
// element itself out (the first output is 0, or 1 for the product), reverse
// runs from the end. Input and output share a dtype and shape, any strides;
// floating values accumulate in double, integers in int64 (wrapping).
#include <type_traits>

#include "kernels/ref/loops.h"
#include "kernels/ref/ref_kernels.h"

namespace ember::ref {
namespace {

template <bool kProduct>
Status scan(Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  const auto* p = std::get_if<ScanParams>(&params);
  EMBER_CHECK(p != nullptr && !in.empty() && out.size() == 1, Status::InvalidArgument);
  const TensorView& x = in[0];
  TensorView& y = out[0];
  EMBER_CHECK(x.dtype == y.dtype && x.rank == y.rank, Status::DTypeMismatch);
  for (int d = 0; d < x.rank; ++d) EMBER_CHECK(x.sizes[d] == y.sizes[d], Status::ShapeMismatch);
  const int64_t axis = p->axis < 0 ? p->axis + x.rank : p->axis;
  EMBER_CHECK(axis >= 0 && axis < std::max(x.rank, 1), Status::InvalidArgument);
  if (x.numel() == 0) return Status::Ok;
  // The lines: every position of the other dims (the axis held at 0).
  const int64_t n = x.rank == 0 ? 1 : x.sizes[axis];
  const int64_t sx = x.rank == 0 ? 0 : x.strides[axis], sy = y.rank == 0 ? 0 : y.strides[axis];
  int64_t outer[kMaxRank] = {};
  for (int d = 0; d < x.rank; ++d) outer[d] = d == axis ? 1 : x.sizes[d];
  dispatch_dtype(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      using Acc = std::conditional_t<std::is_integral_v<T>, int64_t, double>;
      const T* xp = x.ptr<const T>();
      T* yp = y.ptr<T>();
      int64_t at[kMaxRank] = {};
      do {
        const T* xl = xp + offset_of(x, at);
        T* yl = yp + offset_of(y, at);
        Acc acc = kProduct ? Acc(1) : Acc(0);
        for (int64_t s = 0; s < n; ++s) {
          const int64_t i = p->reverse ? n - 1 - s : s;
          const Acc v = static_cast<Acc>(static_cast<compute_t<T>>(xl[i * sx]));
          if (p->exclusive) yl[i * sy] = static_cast<T>(static_cast<compute_t<T>>(acc));
          if constexpr (kProduct) {
            acc = std::is_integral_v<T> ? static_cast<Acc>(static_cast<uint64_t>(acc) * static_cast<uint64_t>(v))
                                        : acc * v;
          } else {
            acc = std::is_integral_v<T> ? static_cast<Acc>(static_cast<uint64_t>(acc) + static_cast<uint64_t>(v))
                                        : acc + v;
          }
          if (!p->exclusive) yl[i * sy] = static_cast<T>(static_cast<compute_t<T>>(acc));
        }
      } while (next_index(at, outer, x.rank));
    }
  });
  return Status::Ok;
}

}  // namespace

Status cumsum(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  return scan<false>(in, out, params);
}

Status cumprod(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  return scan<true>(in, out, params);
}

}  // namespace ember::ref
