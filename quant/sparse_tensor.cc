// The eager sparse COO API (quant/sparse_tensor.h).
#include "quant/sparse_tensor.h"

#include <algorithm>
#include <numeric>

#include "quant/coo.h"
#include "runtime/core/error.h"
#include "runtime/ops/ops.h"

namespace ember {

SparseTensor make_sparse(Tensor indices, Tensor values, Shape size, bool coalesced) {
  SparseTensor s;
  s.indices_ = std::move(indices);
  s.values_ = std::move(values);
  s.sizes_ = std::move(size);
  s.coalesced_ = coalesced;
  return s;
}

namespace {

void check_defined(const SparseTensor& s, const char* what) {
  EMBER_ENFORCE(s.defined(), Status::InvalidArgument, what, ": undefined sparse tensor");
}

// Validates and converts (indices -> contiguous int64, values -> contiguous).
std::pair<Tensor, Tensor> checked_parts(const Tensor& indices, const Tensor& values) {
  EMBER_ENFORCE(indices.defined() && values.defined(), Status::InvalidArgument,
              "sparse_coo_tensor: indices and values must be defined");
  EMBER_ENFORCE(indices.device().is_cpu() && values.device().is_cpu(), Status::DeviceMismatch,
              "sparse_coo_tensor: indices and values must be CPU tensors");
  EMBER_ENFORCE(indices.dtype() == DType::Int64 || indices.dtype() == DType::Int32 || indices.dtype() == DType::Int16,
              Status::DTypeMismatch, "sparse_coo_tensor: indices must be an integer tensor, got ",
              dtype_name(indices.dtype()));
  EMBER_ENFORCE(indices.dim() == 2, Status::ShapeMismatch, "sparse_coo_tensor: indices must be 2-D [ndim, nnz], got ",
              shape_str(indices.sizes()));
  EMBER_ENFORCE(values.dim() == 1, Status::NotSupported,
              "sparse_coo_tensor: values must be 1-D [nnz] (hybrid sparse tensors are not supported), got ",
              shape_str(values.sizes()));
  EMBER_ENFORCE(indices.size(1) == values.size(0), Status::ShapeMismatch,
              "sparse_coo_tensor: number of values (", values.size(0), ") does not match number of indices (",
              indices.size(1), ")");
  return {indices.to(DType::Int64).contiguous(), values.contiguous()};
}

}  // namespace

SparseTensor sparse_coo_tensor(const Tensor& indices, const Tensor& values, IntArrayRef size) {
  auto [idx, val] = checked_parts(indices, values);
  const int64_t ndim = idx.size(0), nnz = idx.size(1);
  EMBER_ENFORCE(static_cast<int64_t>(size.size()) == ndim, Status::ShapeMismatch,
              "sparse_coo_tensor: number of dimensions of the size (", size.size(),
              ") does not match the indices (", ndim, ")");
  const int64_t* p = idx.numel() > 0 ? idx.data_ptr<int64_t>() : nullptr;
  for (int64_t d = 0; d < ndim; ++d) {
    EMBER_ENFORCE(size[static_cast<size_t>(d)] >= 0, Status::InvalidArgument, "sparse_coo_tensor: negative size ",
                shape_str(size));
    for (int64_t k = 0; k < nnz; ++k) {
      const int64_t v = p[d * nnz + k];
      EMBER_ENFORCE(v >= 0, Status::OutOfRange, "sparse_coo_tensor: found negative index ", v, " for dim ", d);
      EMBER_ENFORCE(v < size[static_cast<size_t>(d)], Status::OutOfRange,
                  "size is inconsistent with indices: for dim ", d, ", size is ", size[static_cast<size_t>(d)],
                  " but found index ", v);
    }
  }
  return make_sparse(idx, val, Shape(size.begin(), size.end()), false);
}

SparseTensor sparse_coo_tensor(const Tensor& indices, const Tensor& values) {
  auto [idx, val] = checked_parts(indices, values);
  const int64_t ndim = idx.size(0), nnz = idx.size(1);
  Shape size(static_cast<size_t>(ndim), 0);
  const int64_t* p = idx.numel() > 0 ? idx.data_ptr<int64_t>() : nullptr;
  for (int64_t d = 0; d < ndim; ++d) {
    for (int64_t k = 0; k < nnz; ++k) {
      const int64_t v = p[d * nnz + k];
      EMBER_ENFORCE(v >= 0, Status::OutOfRange, "sparse_coo_tensor: found negative index ", v, " for dim ", d);
      size[static_cast<size_t>(d)] = std::max(size[static_cast<size_t>(d)], v + 1);
    }
  }
  return make_sparse(idx, val, size, false);
}

SparseTensor SparseTensor::coalesce() const { return ember::coalesce(*this); }
Tensor SparseTensor::to_dense() const { return ember::to_dense(*this); }

SparseTensor coalesce(const SparseTensor& s) {
  check_defined(s, "coalesce");
  if (s.is_coalesced()) return s;
  const int64_t ndim = s.dim(), nnz = s.nnz();
  const int64_t* p = nnz > 0 ? s.indices().data_ptr<int64_t>() : nullptr;
  // Row-major linear offsets (sizes are checked to fit: numel fits int64).
  std::vector<int64_t> lin(static_cast<size_t>(nnz), 0);
  for (int64_t k = 0; k < nnz; ++k) {
    int64_t off = 0;
    for (int64_t d = 0; d < ndim; ++d) off = off * s.sizes()[static_cast<size_t>(d)] + p[d * nnz + k];
    lin[static_cast<size_t>(k)] = off;
  }
  std::vector<int64_t> order(static_cast<size_t>(nnz));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return lin[static_cast<size_t>(a)] < lin[static_cast<size_t>(b)]; });
  // Unique positions, and for each input value the output slot it sums into.
  std::vector<int64_t> first;  // input index of each unique entry
  std::vector<int64_t> slot(static_cast<size_t>(nnz));
  for (size_t i = 0; i < order.size(); ++i) {
    if (i == 0 || lin[static_cast<size_t>(order[i])] != lin[static_cast<size_t>(order[i - 1])])
      first.push_back(order[i]);
    slot[static_cast<size_t>(order[i])] = static_cast<int64_t>(first.size()) - 1;
  }
  const int64_t out_nnz = static_cast<int64_t>(first.size());
  Tensor idx = empty({ndim, out_nnz}, DType::Int64);
  int64_t* q = idx.numel() > 0 ? idx.data_ptr<int64_t>() : nullptr;
  for (int64_t u = 0; u < out_nnz; ++u)
    for (int64_t d = 0; d < ndim; ++d) q[d * out_nnz + u] = p[d * nnz + first[static_cast<size_t>(u)]];
  // Values: sum in float64/int64 accumulators through index_add-like loops.
  const Tensor v = s.values().to(is_floating(s.dtype()) ? DType::Float64 : DType::Int64);
  Tensor acc = zeros({out_nnz}, v.dtype());
  for (int64_t k = 0; k < nnz; ++k) {
    const int64_t u = slot[static_cast<size_t>(k)];
    if (v.dtype() == DType::Float64) {
      acc.data_ptr<double>()[u] += v.data_ptr<double>()[k];
    } else {
      acc.data_ptr<int64_t>()[u] += v.data_ptr<int64_t>()[k];
    }
  }
  return make_sparse(idx, acc.to(s.dtype()), s.sizes(), true);
}

Tensor to_dense(const SparseTensor& s) {
  check_defined(s, "to_dense");
  return sparse::coo_to_dense(s.indices(), s.values(), s.sizes());
}

SparseTensor to_sparse(const Tensor& dense) {
  EMBER_ENFORCE(dense.defined(), Status::InvalidArgument, "to_sparse: undefined tensor");
  sparse::CooParts parts = sparse::dense_to_coo(dense, DType::Int64);
  return make_sparse(parts.indices, parts.values, dense.sizes(), true);
}

Tensor mm(const SparseTensor& a, const Tensor& b) {
  check_defined(a, "mm");
  EMBER_ENFORCE(a.dim() == 2, Status::ShapeMismatch, "mm: the sparse matrix must be 2-D, got ", shape_str(a.sizes()));
  EMBER_ENFORCE(b.defined() && b.dim() == 2, Status::ShapeMismatch, "mm: the dense matrix must be 2-D, got ",
              b.defined() ? shape_str(b.sizes()) : std::string("undefined"));
  EMBER_ENFORCE(a.sizes()[1] == b.size(0), Status::ShapeMismatch, "mm: mat1 and mat2 shapes cannot be multiplied (",
              a.sizes()[0], "x", a.sizes()[1], " and ", b.size(0), "x", b.size(1), ")");
  EMBER_ENFORCE(a.dtype() == b.dtype(), Status::DTypeMismatch, "mm: expected mat1 and mat2 to have the same dtype, but got: ",
              dtype_name(a.dtype()), " != ", dtype_name(b.dtype()));
  EMBER_ENFORCE(a.dtype() == DType::Float32 || a.dtype() == DType::Float64, Status::NotSupported,
              "mm: sparse x dense supports float32 and float64, got ", dtype_name(a.dtype()));
  const int64_t n = a.sizes()[0], m = b.size(1), nnz = a.nnz();
  const Tensor bc = b.contiguous();
  Tensor out = zeros({n, m}, a.dtype());
  const int64_t* p = nnz > 0 ? a.indices().data_ptr<int64_t>() : nullptr;
  auto run = [&](auto zero) {
    using T = decltype(zero);
    const T* v = static_cast<const T*>(a.values().data_ptr());
    const T* x = static_cast<const T*>(bc.numel() > 0 ? bc.data_ptr() : nullptr);
    T* y = static_cast<T*>(out.numel() > 0 ? out.data_ptr() : nullptr);
    for (int64_t k = 0; k < nnz; ++k) {
      const int64_t r = p[k], c = p[nnz + k];
      const T w = v[k];
      for (int64_t j = 0; j < m; ++j) y[r * m + j] += w * x[c * m + j];
    }
  };
  if (nnz == 0 || m == 0) return out;
  if (a.dtype() == DType::Float32) {
    run(0.f);
  } else {
    run(0.0);
  }
  return out;
}

Tensor add(const SparseTensor& a, const Tensor& b) {
  check_defined(a, "add");
  EMBER_ENFORCE(b.defined() && b.sizes() == a.sizes(), Status::ShapeMismatch, "add: sparse ", shape_str(a.sizes()),
              " and dense ", b.defined() ? shape_str(b.sizes()) : std::string("undefined"),
              " must have the same size");
  return add(to_dense(a), b);
}

Tensor add(const Tensor& a, const SparseTensor& b) { return add(b, a); }

SparseTensor add(const SparseTensor& a, const SparseTensor& b) {
  check_defined(a, "add");
  check_defined(b, "add");
  EMBER_ENFORCE(a.sizes() == b.sizes(), Status::ShapeMismatch, "add: sparse tensors of sizes ", shape_str(a.sizes()),
              " and ", shape_str(b.sizes()), " cannot be added");
  EMBER_ENFORCE(a.dtype() == b.dtype(), Status::DTypeMismatch, "add: sparse tensors of dtypes ", dtype_name(a.dtype()),
              " and ", dtype_name(b.dtype()), " cannot be added");
  const Tensor idx = cat({a.indices(), b.indices()}, 1);
  const Tensor val = cat({a.values(), b.values()}, 0);
  return coalesce(make_sparse(idx.contiguous(), val.contiguous(), a.sizes(), false));
}

}  // namespace ember
