// How a ScatterElements update combines with the value it lands on (shared by
// the reference kernel and the CUDA kernel, so both compute one formula).
#pragma once

#include "runtime/core/host_device.h"
#include "runtime/graph/op_params.h"
#include "runtime/tensor/dtype.h"

namespace ember::ref {

template <typename T>
EMBER_HD inline T scatter_combine(T old, T v, ScatterReduction r) {
  using C = compute_t<T>;
  const C a = static_cast<C>(old), b = static_cast<C>(v);
  switch (r) {
    case ScatterReduction::None: return v;
    case ScatterReduction::Add: return static_cast<T>(a + b);
    case ScatterReduction::Mul: return static_cast<T>(a * b);
    case ScatterReduction::Max: return (b > a || b != b) ? v : old;  // NaN propagates (np.maximum)
    case ScatterReduction::Min: return (b < a || b != b) ? v : old;
  }
  return v;
}

}  // namespace ember::ref
