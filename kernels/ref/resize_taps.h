// The taps of Resize along one dim (ResizeParams, op_params.h): for an output
// position, the input indices and weights it interpolates, as ONNX's
// reference (onnx/reference/ops/op_resize.py) computes them: the source
// coordinate by the coordinate transformation mode, then the window of n taps
// nearest to it (the left one preferred: an integer coordinate has ratio 1),
// the coefficients of the mode (antialiased: the filter stretched by 1 / scale
// when shrinking), taps outside the input zeroed and the rest renormalized
// with exclude_outside, and the indices clamped to the input (edge padding).
// Shared by the reference, CPU and CUDA kernels (host and device).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "runtime/core/host_device.h"
#include "runtime/graph/op_params.h"

namespace ember::ref {

// The most taps one dim may take (antialiased cubic at scale 1/15 takes 62).
constexpr int kMaxResizeTaps = 64;

// One resized dim: sizes, the coordinate scale and roi.
struct ResizeAxis {
  int64_t in = 1, out = 1;
  double scale = 1.0;
  double roi_start = 0.0, roi_end = 1.0;
  bool identity = true;  // copied as it is (ONNX's reference skips the dim)
};

inline bool resize_close(double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b)); }

inline ResizeAxis resize_axis(const ResizeParams& p, int d, int64_t in, int64_t out) {
  ResizeAxis a;
  a.in = in;
  a.out = out;
  a.scale = p.coord_scale(d, in, out);
  const bool tf = p.coord == ResizeCoord::TfCropAndResize;
  a.roi_start = tf ? p.roi_start[d] : 0.0;
  a.roi_end = tf ? p.roi_end[d] : 1.0;
  a.identity = out == in && resize_close(a.scale, 1.0) && a.roi_start == 0.0 && resize_close(a.roi_end, 1.0);
  return a;
}

// How many taps each output position of `a` takes (before nearest picks one).
EMBER_HD inline int resize_tap_count(const ResizeParams& p, const ResizeAxis& a) {
  if (a.identity) return 1;
  if (p.mode == ResizeMode::Nearest) return 2;
  if (!p.antialias) return p.mode == ResizeMode::Linear ? 2 : 4;
  const double s = std::min(a.scale, 1.0);
  const double start = std::floor((p.mode == ResizeMode::Linear ? -1.0 : -2.0) / s) + 1.0;
  const double n = 2.0 - 2.0 * start;
  return n > kMaxResizeTaps ? kMaxResizeTaps + 1 : static_cast<int>(n);
}

// The source coordinate of output position y; *outside: tf_crop_and_resize's
// coordinate falls outside the input (the output takes extrapolation_value).
EMBER_HD inline double resize_source(const ResizeParams& p, const ResizeAxis& a, int64_t y, bool* outside) {
  const double in = static_cast<double>(a.in), s = a.scale, width = s * in, yd = static_cast<double>(y);
  *outside = false;
  switch (p.coord) {
    case ResizeCoord::AlignCorners:
      return width == 1.0 ? 0.0 : yd * (in - 1.0) / (width - 1.0);
    case ResizeCoord::Asymmetric:
      return yd / s;
    case ResizeCoord::TfCropAndResize: {
      double x = width == 1.0 ? (a.roi_end - a.roi_start) * (in - 1.0) / 2.0
                              : yd * (a.roi_end - a.roi_start) * (in - 1.0) / (width - 1.0);
      x += a.roi_start * (in - 1.0);
      *outside = x < 0.0 || x > in - 1.0;
      return x;
    }
    case ResizeCoord::PytorchHalfPixel:
      return width == 1.0 ? -0.5 : (yd + 0.5) / s - 0.5;
    case ResizeCoord::HalfPixel:
      return (yd + 0.5) / s - 0.5;
    case ResizeCoord::HalfPixelSymmetric: {
      const double adjustment = static_cast<double>(a.out) / width, center = in / 2.0;
      return center * (1.0 - adjustment) + (yd + 0.5) / s - 0.5;
    }
  }
  return yd;
}

EMBER_HD inline double resize_cubic(double x, double A) {
  x = std::fabs(x);
  if (x <= 1.0) return ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0;
  if (x < 2.0) return ((A * x - 5.0 * A) * x + 8.0 * A) * x - 4.0 * A;
  return 0.0;
}

// The taps of output position y: n indices (clamped into the input) and
// weights; returns n (at most kMaxResizeTaps; nearest: 1). *outside as in
// resize_source.
EMBER_HD inline int resize_taps(const ResizeParams& p, const ResizeAxis& a, int64_t y, int64_t* idx, double* w,
                       bool* outside) {
  *outside = false;
  if (a.identity) {
    idx[0] = y;
    w[0] = 1.0;
    return 1;
  }
  const int count = resize_tap_count(p, a);
  const int n = count < kMaxResizeTaps ? count : kMaxResizeTaps;  // (std::min would odr-use it: not in device code)
  const double x = resize_source(p, a, y, outside);
  const double xf = std::floor(x);
  const bool integer = x == xf;
  const double ratio = integer ? 1.0 : x - xf;
  const int64_t start = static_cast<int64_t>(xf) - n / 2 + (integer ? 0 : 1);
  const double s = std::min(a.scale, 1.0), A = p.cubic_coeff_a;
  if (p.mode == ResizeMode::Nearest) {
    bool right = true;  // an integer coordinate: the second tap, x itself
    if (!integer) {
      switch (p.nearest) {
        case NearestMode::RoundPreferFloor: right = ratio > 0.5; break;
        case NearestMode::RoundPreferCeil: right = ratio >= 0.5; break;
        case NearestMode::Floor: right = false; break;
        case NearestMode::Ceil: right = true; break;
      }
    }
    const int64_t i = start + (right ? 1 : 0);
    w[0] = p.exclude_outside && (i < 0 || i >= a.in) ? 0.0 : 1.0;
    idx[0] = std::clamp<int64_t>(i, 0, a.in - 1);
    return 1;
  }
  for (int k = 0; k < n; ++k) {
    if (p.mode == ResizeMode::Linear) {
      w[k] = p.antialias ? std::clamp(1.0 - std::fabs((static_cast<double>(k + 1 - n / 2) - ratio) * s), 0.0, 1.0)
                         : (k == 0 ? 1.0 - ratio : ratio);
    } else {
      w[k] = p.antialias ? resize_cubic((static_cast<double>(k + 1 - n / 2) - ratio) * s, A)
                         : resize_cubic(static_cast<double>(k - 1) - ratio, A);
    }
  }
  if (p.antialias) {
    double sum = 0.0;
    for (int k = 0; k < n; ++k) sum += w[k];
    for (int k = 0; k < n; ++k) w[k] /= sum;
  }
  if (p.exclude_outside) {
    double sum = 0.0;
    for (int k = 0; k < n; ++k) {
      if (start + k < 0 || start + k >= a.in) w[k] = 0.0;
      sum += w[k];
    }
    if (sum != 0.0) {
      for (int k = 0; k < n; ++k) w[k] /= sum;
    }
  }
  for (int k = 0; k < n; ++k) idx[k] = std::clamp<int64_t>(start + k, 0, a.in - 1);
  return n;
}

}  // namespace ember::ref
