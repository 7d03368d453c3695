// Reference RoiAlign (RoiAlignParams), as onnx.reference computes it: per roi
// the box [x1, y1, x2, y2] * spatial_scale (less 0.5 with half_pixel; else its
// size at least 1) cut into output_height x output_width bins, each sampled
// on a grid of sampling_ratio (0: ceil(bin size)) points per dim; a point
// outside [-1, size] reads 0, else the 4 bilinear taps (clamped to the
// input). avg: the mean of the samples; max: the largest of the weighted
// taps over the samples (ONNX's definition). In double; any strides.
#include <algorithm>
#include <cmath>

#include "kernels/ref/ref_kernels.h"

namespace ember::ref {
namespace {

struct Sample {
  int64_t y0 = 0, y1 = 0, x0 = 0, x1 = 0;
  double w[4] = {0.0, 0.0, 0.0, 0.0};  // (y0, x0), (y0, x1), (y1, x0), (y1, x1)
};

Sample sample_at(double y, double x, int64_t h, int64_t w) {
  Sample s;
  if (y < -1.0 || y > static_cast<double>(h) || x < -1.0 || x > static_cast<double>(w)) return s;
  y = std::max(y, 0.0);
  x = std::max(x, 0.0);
  s.y0 = static_cast<int64_t>(y);
  s.x0 = static_cast<int64_t>(x);
  if (s.y0 >= h - 1) {
    s.y0 = s.y1 = h - 1;
    y = static_cast<double>(s.y0);
  } else {
    s.y1 = s.y0 + 1;
  }
  if (s.x0 >= w - 1) {
    s.x0 = s.x1 = w - 1;
    x = static_cast<double>(s.x0);
  } else {
    s.x1 = s.x0 + 1;
  }
  const double ly = y - static_cast<double>(s.y0), lx = x - static_cast<double>(s.x0);
  const double hy = 1.0 - ly, hx = 1.0 - lx;
  s.w[0] = hy * hx;
  s.w[1] = hy * lx;
  s.w[2] = ly * hx;
  s.w[3] = ly * lx;
  return s;
}

template <typename T>
void roi_align_loop(const TensorView& x, const TensorView& rois, const TensorView& bi, const TensorView& o,
                    const RoiAlignParams& p) {
  using C = compute_t<T>;
  const T* px = x.ptr<const T>();
  const T* pr = rois.ptr<const T>();
  const int64_t* pb = bi.ptr<const int64_t>();
  T* po = o.ptr<T>();
  const int64_t h = x.sizes[2], w = x.sizes[3], oh = o.sizes[2], ow = o.sizes[3];
  const double off = p.half_pixel ? 0.5 : 0.0;
  for (int64_t r = 0; r < o.sizes[0]; ++r) {
    auto coord = [&](int k) { return static_cast<double>(static_cast<C>(pr[r * rois.strides[0] + k * rois.strides[1]])); };
    const double x_start = coord(0) * p.spatial_scale - off, y_start = coord(1) * p.spatial_scale - off;
    double roi_w = coord(2) * p.spatial_scale - off - x_start, roi_h = coord(3) * p.spatial_scale - off - y_start;
    if (!p.half_pixel) {
      roi_w = std::max(roi_w, 1.0);
      roi_h = std::max(roi_h, 1.0);
    }
    const double bin_h = roi_h / static_cast<double>(oh), bin_w = roi_w / static_cast<double>(ow);
    const int64_t grid_h = p.sampling_ratio > 0 ? p.sampling_ratio : static_cast<int64_t>(std::ceil(bin_h));
    const int64_t grid_w = p.sampling_ratio > 0 ? p.sampling_ratio : static_cast<int64_t>(std::ceil(bin_w));
    const double count = static_cast<double>(std::max<int64_t>(grid_h * grid_w, 1));
    const int64_t b = pb[r * bi.strides[0]];
    for (int64_t c = 0; c < o.sizes[1]; ++c) {
      const T* plane = px + b * x.strides[0] + c * x.strides[1];
      auto at = [&](int64_t yy, int64_t xx) {
        return static_cast<double>(static_cast<C>(plane[yy * x.strides[2] + xx * x.strides[3]]));
      };
      for (int64_t ph = 0; ph < oh; ++ph) {
        for (int64_t pw = 0; pw < ow; ++pw) {
          double acc = 0.0;
          bool first = true;
          for (int64_t iy = 0; iy < grid_h; ++iy) {
            const double yy = y_start + static_cast<double>(ph) * bin_h +
                              (static_cast<double>(iy) + 0.5) * bin_h / static_cast<double>(grid_h);
            for (int64_t ix = 0; ix < grid_w; ++ix) {
              const double xx = x_start + static_cast<double>(pw) * bin_w +
                                (static_cast<double>(ix) + 0.5) * bin_w / static_cast<double>(grid_w);
              const Sample s = sample_at(yy, xx, h, w);
              const double v[4] = {s.w[0] * at(s.y0, s.x0), s.w[1] * at(s.y0, s.x1), s.w[2] * at(s.y1, s.x0),
                                   s.w[3] * at(s.y1, s.x1)};
              if (p.mode == RoiAlignMode::Avg) {
                acc += v[0] + v[1] + v[2] + v[3];
              } else {
                const double m = std::max(std::max(v[0], v[1]), std::max(v[2], v[3]));
                acc = first ? m : std::max(acc, m);
                first = false;
              }
            }
          }
          if (p.mode == RoiAlignMode::Avg) acc /= count;
          po[r * o.strides[0] + c * o.strides[1] + ph * o.strides[2] + pw * o.strides[3]] =
              static_cast<T>(static_cast<C>(acc));
        }
      }
    }
  }
}

}  // namespace

Status roi_align(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  const auto* p = std::get_if<RoiAlignParams>(&params);
  EMBER_CHECK(p != nullptr && p->valid() && in.size() == 3 && out.size() == 1, Status::InvalidArgument);
  const TensorView &x = in[0], &rois = in[1], &bi = in[2], &o = out[0];
  EMBER_CHECK(x.dtype == rois.dtype && x.dtype == o.dtype && bi.dtype == DType::Int64 &&
                         (kFloatingTypes & dtype_bit(x.dtype)),
                     Status::DTypeMismatch);
  EMBER_CHECK(x.rank == 4 && rois.rank == 2 && rois.sizes[1] == 4 && bi.rank == 1 && o.rank == 4,
                     Status::InvalidArgument);
  EMBER_CHECK(o.sizes[0] == rois.sizes[0] && bi.sizes[0] == rois.sizes[0] && o.sizes[1] == x.sizes[1] &&
                         o.sizes[2] == p->output_height && o.sizes[3] == p->output_width,
                     Status::ShapeMismatch);
  if (o.numel() == 0) return Status::Ok;
  EMBER_CHECK(x.sizes[2] > 0 && x.sizes[3] > 0, Status::InvalidArgument);
  for (int64_t r = 0; r < bi.sizes[0]; ++r) {
    const int64_t b = bi.ptr<const int64_t>()[r * bi.strides[0]];
    EMBER_CHECK(b >= 0 && b < x.sizes[0], Status::OutOfRange);
  }
  dispatch_dtype(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_integral_v<T>) roi_align_loop<T>(x, rois, bi, o, *p);
  });
  return Status::Ok;
}

}  // namespace ember::ref
