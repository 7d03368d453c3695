// Sparse COO weights: building them from dense tensors (what the converter
// stores), reading them back, and the eager forms of CSR packing and the
// sparse linear (the CSR layout and the SpMM kernels: quant/csr.h).
//
// The file format (runtime/model/ember.fbs) keeps COO: values [nnz] and
// indices [rank, nnz] (int16 when every dim <= 32768, else int32 or int64),
// sorted in row-major order, unique. At load the executor packs a Linear's
// [N, K] COO weight once into CSR by output row (pack_csr) and runs
// spmm_linear: y = x @ W^T + b.
#pragma once

#include <cstdint>
#include <vector>

#include "quant/csr.h"
#include "runtime/tensor/tensor.h"

namespace ember::sparse {

// The narrowest index dtype that addresses every dim of `shape`: Int16 when
// every dim <= 32768 (indices < 32768), Int32 when every dim <= 2^31, else Int64.
DType coo_index_dtype(const Shape& shape);

struct CooParts {
  Tensor indices;  // [rank, nnz], index dtype
  Tensor values;   // [nnz], the dense tensor's dtype
};

// The nonzeros of `dense` (any dtype, any strides, CPU) in row-major order.
// index_dtype: Int16, Int32 or Int64 (must address every dim).
CooParts dense_to_coo(const Tensor& dense, DType index_dtype);

// Coordinate d of value k of an int16/int32/int64 [rank, nnz] contiguous tensor.
int64_t coo_index(const Tensor& indices, int64_t d, int64_t k);

// The indices as a contiguous int64 tensor.
Tensor indices_to_int64(const Tensor& indices);

// Scatters `values` (contiguous [nnz]) at `indices` into a zero tensor of
// `shape` (duplicates are summed). Values float32/float16/... keep their dtype.
Tensor coo_to_dense(const Tensor& indices, const Tensor& values, const Shape& shape);
namespace core {
Result<Tensor> coo_to_dense(const Tensor& indices, const Tensor& values, const Shape& shape);  // its Status form
}  // namespace core

// Fraction of zeros of a tensor (0 for an empty one).
double zero_fraction(const Tensor& t);

// Packs a rank-2 COO matrix (quant/csr.h's pack_csr over the tensors' data,
// made contiguous). Raises ember::Error on a bad matrix.
CsrMatrix pack_csr(const Tensor& indices, const Tensor& values, int64_t rows, int64_t cols,
                   const std::vector<float>& scales = {}, const std::vector<int64_t>& zero_points = {});

// Packs a dense [rows, cols] float32 matrix (its nonzeros).
CsrMatrix pack_csr_dense(const Tensor& dense);

// The eager form: x [..., K] float32 (any strides), bias [N] or undefined;
// returns [..., N]. Raises ember::Error on a shape or dtype mismatch.
Tensor sparse_linear(const Tensor& x, const CsrMatrix& w, const Tensor& bias = Tensor());

}  // namespace ember::sparse
