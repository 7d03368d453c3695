// Resize and GridSample on CUDA: one thread per output element (GridSample:
// per output position, looping over the channels), the taps computed on the
// device by the reference's own functions (kernels/ref/resize_taps.h,
// grid_taps.h; host and device), the weighted sum in double as the reference
// does, so the results match it. Any rank (Resize) and any strides. Resize's
// taps are separable: a first kernel writes those of every dim's output
// positions into a table in the workspace, which the output kernel reads.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "kernels/cuda/kernel_util.h"
#include "kernels/ref/grid_taps.h"
#include "kernels/ref/ref_kernels.h"
#include "kernels/ref/resize_taps.h"

namespace ember::cuda {
namespace {

struct ResizeAxes {
  ref::ResizeAxis a[kMaxRank];
};

// The taps of every output position of every dim, in the workspace: entry
// entry_off[d] + y holds position y of dim d (count, outside), its taps at
// tap_off[d] + y * width[d] of idx and w.
struct ResizeTable {
  int rank = 0;
  int64_t entry_off[kMaxRank] = {}, tap_off[kMaxRank] = {};
  int64_t width[kMaxRank] = {};
  int64_t entries = 0, taps = 0;
  int32_t* count = nullptr;
  uint8_t* outside = nullptr;
  int64_t* idx = nullptr;
  double* w = nullptr;
};

size_t aligned(size_t bytes) { return (bytes + 255) / 256 * 256; }

size_t table_bytes(const ResizeTable& t) {
  return aligned(static_cast<size_t>(t.entries) * sizeof(int32_t)) + aligned(static_cast<size_t>(t.entries)) +
         aligned(static_cast<size_t>(t.taps) * sizeof(int64_t)) + aligned(static_cast<size_t>(t.taps) * sizeof(double));
}

// The table's layout for `axes` (pointers into `scratch` when given).
ResizeTable resize_table(const ResizeParams& p, const ResizeAxes& axes, int rank, void* scratch) {
  ResizeTable t;
  t.rank = rank;
  for (int d = 0; d < rank; ++d) {
    const ref::ResizeAxis& a = axes.a[d];
    t.width[d] = std::min(ref::resize_tap_count(p, a), ref::kMaxResizeTaps);
    t.entry_off[d] = t.entries;
    t.tap_off[d] = t.taps;
    t.entries += a.out;
    t.taps += a.out * t.width[d];
  }
  if (scratch != nullptr) {
    char* s = static_cast<char*>(scratch);
    t.count = reinterpret_cast<int32_t*>(s);
    s += aligned(static_cast<size_t>(t.entries) * sizeof(int32_t));
    t.outside = reinterpret_cast<uint8_t*>(s);
    s += aligned(static_cast<size_t>(t.entries));
    t.idx = reinterpret_cast<int64_t*>(s);
    s += aligned(static_cast<size_t>(t.taps) * sizeof(int64_t));
    t.w = reinterpret_cast<double*>(s);
  }
  return t;
}

// Fills the table: one thread per (dim, output position).
__global__ void resize_taps_kernel(ResizeParams p, ResizeAxes axes, ResizeTable t) {
  for (int64_t i = thread_index(); i < t.entries; i += thread_count()) {
    int d = 0;
    while (d + 1 < t.rank && i >= t.entry_off[d + 1]) ++d;
    const int64_t y = i - t.entry_off[d], at = t.tap_off[d] + y * t.width[d];
    bool outside = false;
    t.count[i] = ref::resize_taps(p, axes.a[d], y, t.idx + at, t.w + at, &outside);
    t.outside[i] = outside ? 1 : 0;
  }
}

// The sum as the output type: integers truncated and saturated (ONNX's saturate_cast).
template <typename T>
__device__ inline T resize_value(double v) {
  if constexpr (std::is_floating_point_v<T> || !std::is_arithmetic_v<T>) {
    return convert<T>(v);
  } else {
    if (v != v) return T(0);
    const double lo = static_cast<double>(std::numeric_limits<T>::lowest());
    const double hi = static_cast<double>(std::numeric_limits<T>::max());
    return v <= lo ? std::numeric_limits<T>::lowest() : v >= hi ? std::numeric_limits<T>::max()
                                                                : static_cast<T>(std::trunc(v));
  }
}

template <typename T>
__global__ void resize_kernel(const T* x, NdView xv, T* y, NdView yv, double extrapolation, ResizeTable t,
                              int64_t total) {
  for (int64_t i = thread_index(); i < total; i += thread_count()) {
    int64_t at[kMaxRank], first[kMaxRank];
    unravel(i, yv.sizes, yv.rank, at);
    int n[kMaxRank];
    bool outside = false;
    for (int d = 0; d < yv.rank; ++d) {
      const int64_t e = t.entry_off[d] + at[d];
      n[d] = t.count[e];
      outside = outside || t.outside[e] != 0;
      first[d] = t.tap_off[d] + at[d] * t.width[d];
    }
    T& result = y[offset_at(yv, at)];
    if (outside) {
      result = resize_value<T>(extrapolation);
      continue;
    }
    int tap[kMaxRank] = {};  // an odometer over the taps of every dim
    double sum = 0.0;
    for (;;) {
      double weight = 1.0;
      int64_t off = 0;
      for (int d = 0; d < yv.rank; ++d) {
        weight *= t.w[first[d] + tap[d]];
        off += t.idx[first[d] + tap[d]] * xv.strides[d];
      }
      sum += weight * static_cast<double>(convert<compute_t<T>>(x[off]));
      int d = yv.rank - 1;
      while (d >= 0 && ++tap[d] == n[d]) tap[d--] = 0;
      if (d < 0) break;
    }
    result = resize_value<T>(sum);
  }
}

// x [N, C, *in], grid [N, *out, nd], y [N, C, *out]; nd spatial dims (2 or 3).
template <typename T>
__global__ void grid_sample_kernel(const T* x, NdView xv, const T* grid, NdView gv, T* y, NdView yv,
                                   GridSampleParams p, int64_t positions) {
  using C = compute_t<T>;
  const int nd = xv.rank - 2;
  for (int64_t i = thread_index(); i < positions; i += thread_count()) {
    int64_t pos[4];  // n, then the output position
    unravel(i, gv.sizes, nd + 1, pos);
    int64_t goff = 0;
    for (int d = 0; d <= nd; ++d) goff += pos[d] * gv.strides[d];
    ref::GridTaps taps[3];
    for (int d = 0; d < nd; ++d) {
      const double g = static_cast<double>(convert<C>(grid[goff + (nd - 1 - d) * gv.strides[nd + 1]]));
      taps[d] = ref::grid_taps<C>(g, xv.sizes[2 + d], p);
    }
    for (int64_t ch = 0; ch < yv.sizes[1]; ++ch) {
      const double sum =
          ref::grid_sample_point<C>(x, pos[0] * xv.strides[0] + ch * xv.strides[1], xv.strides + 2, taps, nd);
      int64_t yoff = pos[0] * yv.strides[0] + ch * yv.strides[1];
      for (int d = 0; d < nd; ++d) yoff += pos[1 + d] * yv.strides[2 + d];
      y[yoff] = convert<T>(static_cast<C>(sum));
    }
  }
}

}  // namespace

namespace {

// The checks of Resize, and the axes.
Status resize_axes(const TensorView& x, const TensorView& y, const ResizeParams* p, ResizeAxes* axes) {
  EMBER_CHECK(p != nullptr && p->valid(), Status::InvalidArgument);
  EMBER_CHECK(x.rank == y.rank && x.rank == p->rank && x.dtype == y.dtype, Status::InvalidArgument);
  for (int d = 0; d < x.rank; ++d) {
    EMBER_CHECK(y.sizes[d] == p->output_size(d, x.sizes[d]), Status::ShapeMismatch);
    axes->a[d] = ref::resize_axis(*p, d, x.sizes[d], y.sizes[d]);
    EMBER_CHECK(y.sizes[d] == 0 || x.sizes[d] > 0, Status::ShapeMismatch);
    EMBER_CHECK(ref::resize_tap_count(*p, axes->a[d]) <= ref::kMaxResizeTaps, Status::NotSupported);
  }
  return Status::Ok;
}

}  // namespace

size_t resize_workspace(Span<const TensorView> in, Span<const TensorView> out, const OpParams& params) {
  const auto* p = std::get_if<ResizeParams>(&params);
  ResizeAxes axes;
  if (in.size() != 1 || out.size() != 1 || resize_axes(in[0], out[0], p, &axes) != Status::Ok) return 0;
  return table_bytes(resize_table(*p, axes, out[0].rank, nullptr));
}

Status resize(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  EMBER_CHECK(in.size() == 1 && out.size() == 1, Status::InvalidArgument);
  const auto* p = std::get_if<ResizeParams>(&params);
  const TensorView &x = in[0], &y = out[0];
  ResizeAxes axes;
  EMBER_TRY(resize_axes(x, y, p, &axes));
  if (y.numel() == 0) return Status::Ok;
  const ResizeTable table = resize_table(*p, axes, y.rank, ctx.scratch);
  EMBER_CHECK(ctx.scratch != nullptr && ctx.scratch_bytes >= table_bytes(table), Status::InvalidArgument);
  auto* taps = &resize_taps_kernel;
  EMBER_TRY(launch_1d(taps, table.entries, "resize taps kernel", *p, axes, table));
  return on_dtype<kNumericTypes & kCudaAll>(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto* k = &resize_kernel<T>;
    return launch_1d(k, y.numel(), "resize kernel", x.ptr<const T>(), nd_view(x), y.ptr<T>(), nd_view(y),
                     p->extrapolation_value, table, y.numel());
  });
}

EMBER_CUDA_KERNEL(grid_sample) {
  const auto* p = std::get_if<GridSampleParams>(&params);
  EMBER_TRY(ref::check_grid_sample_args(in, out, p, kFloatingTypes & kCudaAll));
  const TensorView &x = in[0], &grid = in[1], &o = out[0];
  const int nd = x.rank - 2;
  if (o.numel() == 0) return Status::Ok;
  const int64_t positions = grid.numel() / nd;
  return on_dtype<kFloatingTypes & kCudaAll>(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto* k = &grid_sample_kernel<T>;
    return launch_1d(k, positions, "grid_sample kernel", x.ptr<const T>(), nd_view(x), grid.ptr<const T>(),
                     nd_view(grid), o.ptr<T>(), nd_view(o), *p, positions);
  });
}

}  // namespace ember::cuda
