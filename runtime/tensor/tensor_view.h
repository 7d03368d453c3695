// TensorView: what a kernel sees of a tensor. Non-owning, fixed-size, no
// allocation: a data pointer (already at the view's first element), a dtype,
// and sizes and strides (in elements, as Tensor::stride()).
#pragma once

#include <cstdint>

#include "runtime/tensor/dtype.h"

namespace ember {

// Kernels handle up to this many dimensions; front-ends coalesce or reject more.
constexpr int kMaxRank = 8;

// Bytes a kernel may read (never write) past the end of any buffer that ember
// allocates; SIMD tails rely on it.
constexpr size_t kTensorTailPadding = 64;

struct TensorView {
  void* data = nullptr;
  DType dtype = DType::Float32;
  int rank = 0;
  int64_t sizes[kMaxRank] = {};
  int64_t strides[kMaxRank] = {};

  int64_t numel() const {
    int64_t n = 1;
    for (int d = 0; d < rank; ++d) n *= sizes[d];
    return n;
  }
  bool is_contiguous() const {
    int64_t expected = 1;
    for (int d = rank - 1; d >= 0; --d) {
      if (sizes[d] != 1 && strides[d] != expected) return false;
      expected *= sizes[d];
    }
    return true;
  }
  template <typename T>
  T* ptr() const {
    return static_cast<T*>(data);
  }
};

}  // namespace ember
