// Reference Resize (ResizeParams): every output element is the sum, over the
// cartesian product of its taps along each dim (resize_taps.h), of the input
// times the product of the tap weights, in double; tf_crop_and_resize's
// positions outside the input take extrapolation_value. Any rank and strides.
// Integer outputs are truncated and saturated (ONNX's saturate_cast).
#include <cmath>

#include "kernels/ref/loops.h"
#include "kernels/ref/ref_kernels.h"
#include "kernels/ref/resize_taps.h"
#include "runtime/tensor/convert.h"

namespace ember::ref {
namespace {

template <typename T>
T resize_value(double v) {
  if constexpr (std::is_floating_point_v<T> || !std::is_arithmetic_v<T>) {
    return convert<T>(v);
  } else {
    if (std::isnan(v)) return T(0);
    const double lo = static_cast<double>(std::numeric_limits<T>::lowest());
    const double hi = static_cast<double>(std::numeric_limits<T>::max());
    return v <= lo ? std::numeric_limits<T>::lowest() : v >= hi ? std::numeric_limits<T>::max() : static_cast<T>(std::trunc(v));
  }
}

template <typename T>
void resize_loop(const TensorView& src, const TensorView& dst, const ResizeParams& p, const ResizeAxis* axes) {
  const T* s = src.ptr<const T>();
  T* o = dst.ptr<T>();
  const int rank = dst.rank;
  int64_t index[kMaxRank] = {};
  int64_t idx[kMaxRank][kMaxResizeTaps];
  double w[kMaxRank][kMaxResizeTaps];
  int n[kMaxRank] = {};
  do {
    bool outside = false;
    for (int d = 0; d < rank; ++d) {
      bool out_d = false;
      n[d] = resize_taps(p, axes[d], index[d], idx[d], w[d], &out_d);
      outside = outside || out_d;
    }
    if (outside) {
      o[offset_of(dst, index)] = resize_value<T>(p.extrapolation_value);
      continue;
    }
    // Odometer over the taps of every dim.
    int tap[kMaxRank] = {};
    double sum = 0.0;
    for (;;) {
      double weight = 1.0;
      int64_t off = 0;
      for (int d = 0; d < rank; ++d) {
        weight *= w[d][tap[d]];
        off += idx[d][tap[d]] * src.strides[d];
      }
      sum += weight * static_cast<double>(static_cast<compute_t<T>>(s[off]));
      int d = rank - 1;
      while (d >= 0 && ++tap[d] == n[d]) tap[d--] = 0;
      if (d < 0) break;
    }
    o[offset_of(dst, index)] = resize_value<T>(sum);
  } while (next_index(index, dst.sizes, rank));
}

}  // namespace

Status resize(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  const auto* p = std::get_if<ResizeParams>(&params);
  EMBER_CHECK(p != nullptr && p->valid() && in.size() == 1 && out.size() == 1, Status::InvalidArgument);
  const TensorView& src = in[0];
  const TensorView& dst = out[0];
  EMBER_CHECK(src.rank == dst.rank && src.rank == p->rank && src.dtype == dst.dtype, Status::InvalidArgument);
  ResizeAxis axes[kMaxRank];
  for (int d = 0; d < src.rank; ++d) {
    EMBER_CHECK(dst.sizes[d] == p->output_size(d, src.sizes[d]), Status::ShapeMismatch);
    axes[d] = resize_axis(*p, d, src.sizes[d], dst.sizes[d]);
    EMBER_CHECK(dst.sizes[d] == 0 || src.sizes[d] > 0, Status::ShapeMismatch);
    EMBER_CHECK(resize_tap_count(*p, axes[d]) <= kMaxResizeTaps, Status::NotSupported);
  }
  if (dst.numel() == 0) return Status::Ok;
  dispatch_dtype(src.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) resize_loop<T>(src, dst, *p, axes);
  });
  return Status::Ok;
}

}  // namespace ember::ref
