// ConvTranspose's geometry, with the spatial dims padded in front to three:
// shared by the reference kernel (conv_transpose.cc) and CUDA's
// (kernels/cuda/conv_transpose.cu.cc, device code).
#pragma once

#include <cstdint>

#include "runtime/core/host_device.h"
#include "runtime/graph/op_params.h"
#include "runtime/tensor/tensor_view.h"

namespace ember::ref {

struct ConvTransposeGeometry {
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1};
  int64_t s[3] = {1, 1, 1}, pad[3] = {0, 0, 0}, dil[3] = {1, 1, 1};
  int64_t xs[3] = {0, 0, 0}, ws[3] = {0, 0, 0}, os[3] = {0, 0, 0};  // strides
};

inline ConvTransposeGeometry conv_transpose_geometry(const TensorView& x, const TensorView& w, const TensorView& o,
                                                     const ConvTransposeParams& p) {
  ConvTransposeGeometry g;
  const int nsp = x.rank - 2;
  for (int i = 0; i < nsp; ++i) {
    const int j = 3 - nsp + i;
    g.in[j] = x.sizes[2 + i];
    g.out[j] = o.sizes[2 + i];
    g.k[j] = w.sizes[2 + i];
    g.s[j] = p.stride[i];
    g.pad[j] = p.pad_begin[i];
    g.dil[j] = p.dilation[i];
    g.xs[j] = x.strides[2 + i];
    g.ws[j] = w.strides[2 + i];
    g.os[j] = o.strides[2 + i];
  }
  return g;
}

// The input position of output position o through tap k along dim j, or -1.
EMBER_HD inline int64_t conv_transpose_source(const ConvTransposeGeometry& g, int j, int64_t o, int64_t k) {
  const int64_t t = o + g.pad[j] - k * g.dil[j];
  if (t < 0 || t % g.s[j] != 0) return -1;
  const int64_t i = t / g.s[j];
  return i < g.in[j] ? i : -1;
}

}  // namespace ember::ref
