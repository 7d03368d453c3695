// Which input element a padded output element reads, for every padding mode
// (shared by the Pad kernel and its backward kernel).
#pragma once

#include <algorithm>
#include <cstdint>

#include "runtime/core/host_device.h"
#include "runtime/graph/op_params.h"

namespace ember::ref {

// The input index read for output index `o` along a dimension of input size
// `size` padded by (before, after); -1 means "the constant value".
EMBER_HD inline int64_t pad_source(PadMode mode, int64_t o, int64_t size, int64_t before,
                                   int64_t after) {
  const int64_t x = o - before;  // position in the input's coordinates
  switch (mode) {
    case PadMode::Constant:
      return x >= 0 && x < size ? x : -1;
    case PadMode::Reflect: {
      int64_t r = x < 0 ? -x : x;
      if (r >= size) r = 2 * (size - 1) - r;
      return r;
    }
    case PadMode::Replicate:
      return std::clamp<int64_t>(x, 0, size - 1);
    case PadMode::Circular: {
      // PyTorch crops negative pads first, then wraps around what is left.
      const int64_t crop_l = std::max<int64_t>(-before, 0);
      const int64_t kept = size - crop_l - std::max<int64_t>(-after, 0);
      const int64_t j = o - std::max<int64_t>(before, 0);
      return crop_l + ((j % kept) + kept) % kept;
    }
  }
  return -1;
}

// Whether every output index of a dimension maps inside the input (what the
// Pad kernels check before reading with pad_source).
EMBER_HD inline bool pad_dim_is_valid(PadMode mode, int64_t size, int64_t before, int64_t after,
                                      int64_t out_size) {
  if (out_size != size + before + after) return false;
  if (out_size == 0 || (before == 0 && after == 0)) return true;
  switch (mode) {
    case PadMode::Constant:
      return true;
    case PadMode::Reflect:
      return size > 0 && before < size && after < size;
    case PadMode::Replicate:
      return size > 0;
    case PadMode::Circular: {
      const int64_t kept = size - std::max<int64_t>(-before, 0) - std::max<int64_t>(-after, 0);
      return kept > 0 && before <= kept && after <= kept;
    }
  }
  return false;
}

}  // namespace ember::ref
