// Reference GridSample (GridSampleParams), 2-D and 3-D, as onnx.reference
// computes it: per output position and spatial dim i (grid component
// dims - 1 - i), the grid value denormalized to a source coordinate (in the
// input's float precision), rounded half to even for nearest; a coordinate
// outside [-0.5, size - 0.5] ([0, size - 1] with align_corners) clamped
// (border) or reflected (reflection); then the taps (nearest 1, linear 2,
// cubic 4 with a = -0.75) each resolved by the padding (zeros: outside reads
// 0; border: clamped; reflection: reflected), their weights multiplied
// across dims. Values accumulate in double. Any strides.
#include <cmath>

#include "kernels/ref/grid_taps.h"
#include "kernels/ref/ref_kernels.h"

namespace ember::ref {
namespace {

template <typename T>
void grid_sample_loop(const TensorView& x, const TensorView& grid, const TensorView& o, const GridSampleParams& p) {
  using C = compute_t<T>;
  const T* px = x.ptr<const T>();
  const T* pg = grid.ptr<const T>();
  T* po = o.ptr<T>();
  const int nd = x.rank - 2;
  int64_t out[3] = {1, 1, 1};
  for (int i = 0; i < nd; ++i) out[i] = o.sizes[2 + i];
  for (int64_t n = 0; n < o.sizes[0]; ++n) {
    for (int64_t a = 0; a < out[0]; ++a) {
      for (int64_t b = 0; b < out[1]; ++b) {
        for (int64_t c = 0; c < out[2]; ++c) {
          const int64_t pos[3] = {a, b, c};
          int64_t goff = n * grid.strides[0];
          for (int i = 0; i < nd; ++i) goff += pos[i] * grid.strides[1 + i];
          GridTaps taps[3];
          for (int i = 0; i < nd; ++i) {
            const double g = static_cast<double>(static_cast<C>(pg[goff + (nd - 1 - i) * grid.strides[nd + 1]]));
            taps[i] = grid_taps<C>(g, x.sizes[2 + i], p);
          }
          for (int64_t ch = 0; ch < o.sizes[1]; ++ch) {
            const double sum =
                grid_sample_point<C>(px, n * x.strides[0] + ch * x.strides[1], x.strides + 2, taps, nd);
            int64_t ooff = n * o.strides[0] + ch * o.strides[1];
            for (int i = 0; i < nd; ++i) ooff += pos[i] * o.strides[2 + i];
            po[ooff] = static_cast<T>(static_cast<C>(sum));
          }
        }
      }
    }
  }
}

}  // namespace

Status grid_sample(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  const auto* p = std::get_if<GridSampleParams>(&params);
  EMBER_TRY(check_grid_sample_args(in, out, p, kFloatingTypes));
  const TensorView &x = in[0], &grid = in[1], &o = out[0];
  if (o.numel() == 0) return Status::Ok;
  dispatch_dtype(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_integral_v<T>) grid_sample_loop<T>(x, grid, o, *p);
  });
  return Status::Ok;
}

}  // namespace ember::ref
