// The taps of GridSample along one spatial dim (GridSampleParams,
// op_params.h), as onnx.reference computes them: the grid value denormalized
// to a source coordinate in the input's float precision C, rounded half to
// even for nearest, clamped (border) or reflected (reflection) when outside,
// then the taps (nearest 1, linear 2, cubic 4 with a = -0.75), each resolved
// by the padding (zeros: -1, read as 0). Shared by the reference and the CUDA
// kernels (host and device).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/ref/resize_taps.h"
#include "runtime/core/host_device.h"
#include "runtime/graph/op_params.h"

namespace ember::ref {

struct GridTaps {
  int n = 1;
  int64_t idx[4] = {};  // -1: outside (zeros padding)
  double w[4] = {};
};

EMBER_HD inline double grid_reflect(double x, double lo, double hi) {
  const double range = hi - lo;
  if (x < lo) {
    const double dx = lo - x;
    const double n = std::trunc(dx / range), r = dx - n * range;
    return std::fmod(n, 2.0) == 0.0 ? lo + r : hi - r;
  }
  if (x > hi) {
    const double dx = x - hi;
    const double n = std::trunc(dx / range), r = dx - n * range;
    return std::fmod(n, 2.0) == 0.0 ? hi - r : lo + r;
  }
  return x;
}

template <typename C>
EMBER_HD inline GridTaps grid_taps(double g, int64_t size, const GridSampleParams& p) {
  const C gc = static_cast<C>(g), len = static_cast<C>(size);
  double x = p.align_corners ? static_cast<double>(static_cast<C>((gc + C(1)) / C(2) * (len - C(1))))
                             : static_cast<double>(static_cast<C>(((gc + C(1)) * len - C(1)) / C(2)));
  if (p.mode == ResizeMode::Nearest) x = std::nearbyint(x);
  const double lo = p.align_corners ? 0.0 : -0.5, hi = p.align_corners ? static_cast<double>(size - 1) : size - 0.5;
  if (x < lo || x > hi) {
    if (p.padding == GridPadding::Border) x = std::clamp(x, 0.0, static_cast<double>(size - 1));
    if (p.padding == GridPadding::Reflection) x = grid_reflect(x, lo, hi);
  }
  auto pixel = [&](int64_t i) -> int64_t {
    switch (p.padding) {
      case GridPadding::Zeros:
        return i >= 0 && i < size ? i : -1;
      case GridPadding::Border:
        return std::clamp<int64_t>(i, 0, size - 1);
      case GridPadding::Reflection:
        return std::clamp<int64_t>(static_cast<int64_t>(grid_reflect(static_cast<double>(i), lo, hi)), 0, size - 1);
    }
    return -1;
  };
  GridTaps t;
  if (p.mode == ResizeMode::Nearest) {
    t.n = 1;
    t.idx[0] = pixel(static_cast<int64_t>(x));
    t.w[0] = 1.0;
    return t;
  }
  const double x0 = std::floor(x), f = x - x0;
  const int64_t i0 = static_cast<int64_t>(x0);
  if (p.mode == ResizeMode::Linear) {
    t.n = 2;
    t.idx[0] = pixel(i0), t.w[0] = 1.0 - f;
    t.idx[1] = pixel(i0 + 1), t.w[1] = f;
    return t;
  }
  t.n = 4;
  for (int k = 0; k < 4; ++k) {
    t.idx[k] = pixel(i0 - 1 + k);
    t.w[k] = resize_cubic(static_cast<double>(k - 1) - f, -0.75);
  }
  return t;
}

// One output value: the taps of the nd spatial dims combined over x's channel
// at `base` (x's element offset of that image and channel), as doubles; taps
// with index -1 read zero.
template <typename C, typename T>
EMBER_HD inline double grid_sample_point(const T* x, int64_t base, const int64_t* spatial_strides,
                                         const GridTaps* taps, int nd) {
  double sum = 0.0;
  int k[3] = {0, 0, 0};
  for (;;) {
    double w = 1.0;
    int64_t off = base;
    bool zero = false;
    for (int d = 0; d < nd; ++d) {
      w *= taps[d].w[k[d]];
      zero = zero || taps[d].idx[k[d]] < 0;
      off += taps[d].idx[k[d]] * spatial_strides[d];
    }
    if (!zero) sum += w * static_cast<double>(static_cast<C>(x[off]));
    int d = nd - 1;
    while (d >= 0 && ++k[d] == taps[d].n) k[d--] = 0;
    if (d < 0) return sum;
  }
}

}  // namespace ember::ref
