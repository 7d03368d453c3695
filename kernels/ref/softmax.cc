// Softmax and LogSoftmax along one dim of a strided view, numerically stable:
// the maximum is subtracted before exp. Values compute in double.
#include <cmath>

#include "kernels/ref/ref_kernels.h"
#include "runtime/tensor/convert.h"

namespace ember::ref {
namespace {

template <bool kLog>
Status softmax_impl(Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  const auto* p = std::get_if<SoftmaxParams>(&params);
  EMBER_CHECK(p != nullptr && in.size() == 1 && out.size() == 1, Status::InvalidArgument);
  const TensorView& x = in[0];
  TensorView& y = out[0];
  EMBER_CHECK(x.dtype == y.dtype && is_floating(x.dtype), Status::DTypeMismatch);
  EMBER_CHECK(x.rank == y.rank, Status::ShapeMismatch);
  for (int d = 0; d < x.rank; ++d) EMBER_CHECK(x.sizes[d] == y.sizes[d], Status::ShapeMismatch);
  const int dim = p->dim;
  EMBER_CHECK(x.rank == 0 ? (dim == 0 || dim == -1) : (dim >= 0 && dim < x.rank),
                     Status::InvalidArgument);
  if (x.numel() == 0) return Status::Ok;
  // Geometry: the softmax dim, and the other dims to iterate over.
  const int64_t n = x.rank == 0 ? 1 : x.sizes[dim];
  const int64_t xs = x.rank == 0 ? 0 : x.strides[dim];
  const int64_t ys = y.rank == 0 ? 0 : y.strides[dim];
  int rank = 0;
  int64_t sizes[kMaxRank] = {}, xst[kMaxRank] = {}, yst[kMaxRank] = {};
  for (int d = 0; d < x.rank; ++d) {
    if (d == dim) continue;
    sizes[rank] = x.sizes[d];
    xst[rank] = x.strides[d];
    yst[rank++] = y.strides[d];
  }
  dispatch_dtype(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_integral_v<T>) {
      const T* xp = x.ptr<const T>();
      T* yp = y.ptr<T>();
      int64_t index[kMaxRank] = {};
      int64_t xo = 0, yo = 0;
      for (;;) {
        double m = -INFINITY;
        for (int64_t i = 0; i < n; ++i) {
          const double v = convert<double>(xp[xo + i * xs]);
          if (v != v) {
            m = v;
            break;
          }
          if (v > m) m = v;
        }
        double sum = 0;
        for (int64_t i = 0; i < n; ++i) sum += std::exp(convert<double>(xp[xo + i * xs]) - m);
        if (kLog) {
          const double log_sum = std::log(sum);
          for (int64_t i = 0; i < n; ++i) yp[yo + i * ys] = convert<T>(convert<double>(xp[xo + i * xs]) - m - log_sum);
        } else {
          for (int64_t i = 0; i < n; ++i) yp[yo + i * ys] = convert<T>(std::exp(convert<double>(xp[xo + i * xs]) - m) / sum);
        }
        int d = rank - 1;
        for (; d >= 0; --d) {
          if (++index[d] < sizes[d]) {
            xo += xst[d];
            yo += yst[d];
            break;
          }
          xo -= xst[d] * (sizes[d] - 1);
          yo -= yst[d] * (sizes[d] - 1);
          index[d] = 0;
        }
        if (d < 0) break;
      }
    }
  });
  return Status::Ok;
}

}  // namespace

Status softmax(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  return softmax_impl<false>(in, out, params);
}

Status log_softmax(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  return softmax_impl<true>(in, out, params);
}

}  // namespace ember::ref
