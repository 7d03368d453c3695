// The eager sparse COO API, after PyTorch's torch.sparse_coo_tensor.
//
// Design: a separate value type, SparseTensor (indices int64 [ndim, nnz],
// values [nnz], a size), not a layout flag on ember::Tensor. A flag would make
// every dense op, kernel and autograd rule check for it; a separate type makes
// the compiler refuse a sparse tensor wherever only dense code exists, and the
// few ops PyTorch's COO tensors support are overloads here (mm, add,
// to_dense, coalesce). Hybrid tensors (values with dense trailing dims) and
// autograd through sparse ops are not supported.
#pragma once

#include <cstdint>

#include "runtime/tensor/tensor.h"

namespace ember {

class SparseTensor {
 public:
  SparseTensor() = default;

  bool defined() const { return values_.defined(); }
  const Tensor& indices() const { return indices_; }  // int64 [ndim, nnz]
  const Tensor& values() const { return values_; }    // [nnz]
  const Shape& sizes() const { return sizes_; }
  int64_t dim() const { return static_cast<int64_t>(sizes_.size()); }
  int64_t nnz() const { return values_.size(0); }
  DType dtype() const { return values_.dtype(); }
  // True when the indices are sorted in row-major order without duplicates
  // (after coalesce() and to_sparse()).
  bool is_coalesced() const { return coalesced_; }

  SparseTensor coalesce() const;
  Tensor to_dense() const;

 private:
  friend SparseTensor make_sparse(Tensor indices, Tensor values, Shape size, bool coalesced);
  Tensor indices_;
  Tensor values_;
  Shape sizes_;
  bool coalesced_ = false;
};

// torch.sparse_coo_tensor(indices, values, size): indices integer [ndim, nnz]
// (converted to int64), values 1-D [nnz]; every index must lie inside `size`.
// Without `size`: the smallest size that holds every index. Not coalesced.
SparseTensor sparse_coo_tensor(const Tensor& indices, const Tensor& values, IntArrayRef size);
SparseTensor sparse_coo_tensor(const Tensor& indices, const Tensor& values);

// Internal constructor (no checks).
SparseTensor make_sparse(Tensor indices, Tensor values, Shape size, bool coalesced);

inline bool is_sparse(const Tensor&) { return false; }
inline bool is_sparse(const SparseTensor& s) { return s.defined(); }

// Sorts the indices in row-major order and sums the values of duplicates
// (as torch, entries that sum to zero stay).
SparseTensor coalesce(const SparseTensor& s);
Tensor to_dense(const SparseTensor& s);
// Tensor.to_sparse(): the nonzeros of a dense tensor, coalesced.
SparseTensor to_sparse(const Tensor& dense);

// torch.sparse.mm / torch.mm(sparse, dense): [n, k] sparse x [k, m] dense ->
// [n, m] dense (float32 or float64, same dtype).
Tensor mm(const SparseTensor& a, const Tensor& b);

// sparse + dense and dense + sparse -> dense (same shape); sparse + sparse ->
// sparse, coalesced (same size and dtype).
Tensor add(const SparseTensor& a, const Tensor& b);
Tensor add(const Tensor& a, const SparseTensor& b);
SparseTensor add(const SparseTensor& a, const SparseTensor& b);

}  // namespace ember
