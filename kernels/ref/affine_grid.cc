// Reference AffineGrid (AffineGridParams), as onnx.reference computes it: the
// normalized coordinate of position i of a dim of size n is -1 + 2 i / (n - 1)
// with align_corners (-1 when n is 1), else -1 + (2 i + 1) / n; output row r
// is theta[r] . (x, y[, z], 1), in double. Any strides.
#include "kernels/ref/ref_kernels.h"

namespace ember::ref {
namespace {

double coord(int64_t i, int64_t n, bool align) {
  if (align) return n > 1 ? -1.0 + static_cast<double>(i) * (2.0 / static_cast<double>(n - 1)) : -1.0;
  const double step = 2.0 / static_cast<double>(n);
  return -1.0 + step / 2.0 + static_cast<double>(i) * step;
}

template <typename T>
void affine_grid_loop(const TensorView& theta, const TensorView& o, bool align) {
  using C = compute_t<T>;
  const int nd = o.rank - 2;  // 2 or 3 spatial dims; the last output dim holds nd values
  const T* pt = theta.ptr<const T>();
  T* po = o.ptr<T>();
  const int64_t d_n = nd == 3 ? o.sizes[1] : 1, h_n = o.sizes[nd == 3 ? 2 : 1], w_n = o.sizes[nd == 3 ? 3 : 2];
  for (int64_t n = 0; n < o.sizes[0]; ++n) {
    for (int64_t z = 0; z < d_n; ++z) {
      for (int64_t y = 0; y < h_n; ++y) {
        for (int64_t x = 0; x < w_n; ++x) {
          double g[4] = {coord(x, w_n, align), coord(y, h_n, align), 1.0, 1.0};
          if (nd == 3) g[2] = coord(z, d_n, align);
          int64_t ooff = n * o.strides[0];
          if (nd == 3) ooff += z * o.strides[1] + y * o.strides[2] + x * o.strides[3];
          else ooff += y * o.strides[1] + x * o.strides[2];
          for (int r = 0; r < nd; ++r) {
            double acc = 0.0;
            for (int j = 0; j <= nd; ++j) {
              acc += static_cast<double>(static_cast<C>(pt[n * theta.strides[0] + r * theta.strides[1] +
                                                           j * theta.strides[2]])) * g[j];
            }
            po[ooff + r * o.strides[nd + 1]] = static_cast<T>(static_cast<C>(acc));
          }
        }
      }
    }
  }
}

}  // namespace

Status affine_grid(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  const auto* p = std::get_if<AffineGridParams>(&params);
  EMBER_CHECK(p != nullptr && !in.empty() && out.size() == 1, Status::InvalidArgument);
  const TensorView &theta = in[0], &o = out[0];
  EMBER_CHECK(theta.dtype == o.dtype && (kFloatingTypes & dtype_bit(o.dtype)), Status::DTypeMismatch);
  EMBER_CHECK((o.rank == 4 || o.rank == 5) && theta.rank == 3, Status::InvalidArgument);
  const int nd = o.rank - 2;
  EMBER_CHECK(theta.sizes[0] == o.sizes[0] && theta.sizes[1] == nd && theta.sizes[2] == nd + 1 &&
                         o.sizes[o.rank - 1] == nd,
                     Status::ShapeMismatch);
  if (o.numel() == 0) return Status::Ok;
  dispatch_dtype(o.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_integral_v<T>) affine_grid_loop<T>(theta, o, p->align_corners);
  });
  return Status::Ok;
}

}  // namespace ember::ref
