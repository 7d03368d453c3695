// COO <-> dense and the eager CSR packing and sparse linear (quant/coo.h); the
// packing itself is in quant/csr.cc, the SpMM kernels in quant/spmm.cc.
#include "quant/coo.h"

#include <algorithm>
#include <cstring>

#include "runtime/core/error.h"
#include "runtime/core/thread_pool.h"

namespace ember::sparse {

DType coo_index_dtype(const Shape& shape) {
  int64_t largest = 0;
  for (int64_t d : shape) largest = std::max(largest, d);
  if (largest <= 32768) return DType::Int16;
  if (largest <= (int64_t{1} << 31)) return DType::Int32;
  return DType::Int64;
}

namespace {

Status index_dtype_status(DType t) {
  EMBER_CHECK(t == DType::Int16 || t == DType::Int32 || t == DType::Int64, Status::DTypeMismatch,
              "COO indices must be int16, int32 or int64, got ", dtype_name(t));
  return Status::Ok;
}

void check_index_dtype(DType t) { unwrap(index_dtype_status(t)); }

void store_index(void* base, DType t, int64_t pos, int64_t v) {
  switch (t) {
    case DType::Int16:
      static_cast<int16_t*>(base)[pos] = static_cast<int16_t>(v);
      break;
    case DType::Int32:
      static_cast<int32_t*>(base)[pos] = static_cast<int32_t>(v);
      break;
    default:
      static_cast<int64_t*>(base)[pos] = v;
  }
}

// Row-major coordinates of flat index `flat` in `shape`.
void unravel(int64_t flat, const Shape& shape, int64_t* coords) {
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    const int64_t n = shape[static_cast<size_t>(d)];
    coords[d] = flat % n;
    flat /= n;
  }
}

bool is_nonzero(const std::byte* p, size_t esize) {
  for (size_t b = 0; b < esize; ++b)
    if (p[b] != std::byte{0}) return true;
  return false;
}

}  // namespace

CooParts dense_to_coo(const Tensor& dense, DType index_dtype) {
  check_index_dtype(index_dtype);
  EMBER_ENFORCE(dense.defined() && dense.device().is_cpu(), Status::InvalidArgument,
              "dense_to_coo needs a defined CPU tensor");
  const Shape& shape = dense.sizes();
  const int64_t rank = dense.dim();
  for (int64_t d : shape) {
    const int64_t limit = index_dtype == DType::Int16 ? 32768 : index_dtype == DType::Int32 ? (int64_t{1} << 31) : INT64_MAX;
    EMBER_ENFORCE(d <= limit, Status::InvalidArgument, "dense_to_coo: ", dtype_name(index_dtype),
                " indices cannot address shape ", shape_str(shape));
  }
  const Tensor c = dense.contiguous();
  const size_t esize = c.element_size();
  const auto* p = static_cast<const std::byte*>(c.numel() > 0 ? c.data_ptr() : nullptr);
  const int64_t n = c.numel();
  // -0.0 and NaN payloads: a float is a zero when it compares equal to 0.
  auto nonzero = [&](int64_t i) -> bool {
    const std::byte* e = p + static_cast<size_t>(i) * esize;
    switch (c.dtype()) {
      case DType::Float32: {
        float v;
        std::memcpy(&v, e, 4);
        return v != 0.f;
      }
      case DType::Float64: {
        double v;
        std::memcpy(&v, e, 8);
        return v != 0.0;
      }
      case DType::Float16: {
        uint16_t b;
        std::memcpy(&b, e, 2);
        return (b & 0x7fff) != 0;
      }
      case DType::BFloat16: {
        uint16_t b;
        std::memcpy(&b, e, 2);
        return (b & 0x7fff) != 0;
      }
      default:
        return is_nonzero(e, esize);
    }
  };
  int64_t nnz = 0;
  for (int64_t i = 0; i < n; ++i) nnz += nonzero(i) ? 1 : 0;
  CooParts out;
  out.indices = empty({rank, nnz}, index_dtype);
  out.values = empty({nnz}, c.dtype());
  void* ib = out.indices.numel() > 0 ? out.indices.data_ptr() : nullptr;
  auto* vb = static_cast<std::byte*>(nnz > 0 ? out.values.data_ptr() : nullptr);
  std::vector<int64_t> coords(static_cast<size_t>(std::max<int64_t>(rank, 1)));
  int64_t k = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!nonzero(i)) continue;
    unravel(i, shape, coords.data());
    for (int64_t d = 0; d < rank; ++d) store_index(ib, index_dtype, d * nnz + k, coords[static_cast<size_t>(d)]);
    std::memcpy(vb + static_cast<size_t>(k) * esize, p + static_cast<size_t>(i) * esize, esize);
    ++k;
  }
  return out;
}

int64_t coo_index(const Tensor& indices, int64_t d, int64_t k) {
  const int64_t pos = d * indices.size(1) + k;
  switch (indices.dtype()) {
    case DType::Int16:
      return static_cast<const int16_t*>(indices.data_ptr())[pos];
    case DType::Int32:
      return static_cast<const int32_t*>(indices.data_ptr())[pos];
    case DType::Int64:
      return static_cast<const int64_t*>(indices.data_ptr())[pos];
    default:
      check_index_dtype(indices.dtype());
      return 0;
  }
}

Tensor indices_to_int64(const Tensor& indices) {
  check_index_dtype(indices.dtype());
  return indices.to(DType::Int64).contiguous();
}

Result<Tensor> core::coo_to_dense(const Tensor& indices, const Tensor& values, const Shape& shape) {
  EMBER_TRY(index_dtype_status(indices.dtype()));
  const int64_t rank = static_cast<int64_t>(shape.size());
  EMBER_CHECK(indices.dim() == 2 && indices.size(0) == rank && values.dim() == 1 &&
                  values.size(0) == indices.size(1),
              Status::ShapeMismatch, "coo_to_dense: indices ", shape_str(indices.sizes()), " and values ",
              shape_str(values.sizes()), " do not describe ", rank, "-D COO data");
  EMBER_ASSIGN_OR_RETURN(const Tensor idx, ember::core::contiguous(indices));
  EMBER_ASSIGN_OR_RETURN(const Tensor val, ember::core::contiguous(values));
  EMBER_ASSIGN_OR_RETURN(Tensor out, ember::core::zeros(shape, val.dtype()));
  const int64_t nnz = val.size(0);
  if (nnz == 0) return out;
  // Flat offsets, then an index_put with accumulation through a [numel] view.
  Tensor flat = out.reshape({out.numel()});
  const size_t esize = val.element_size();
  auto* ob = static_cast<std::byte*>(flat.data_ptr());
  const auto* vb = static_cast<const std::byte*>(val.data_ptr());
  for (int64_t k = 0; k < nnz; ++k) {
    int64_t off = 0;
    for (int64_t d = 0; d < rank; ++d) {
      const int64_t c = coo_index(idx, d, k);
      EMBER_CHECK(c >= 0 && c < shape[static_cast<size_t>(d)], Status::OutOfRange, "COO index ", c, " of value ",
                  k, " out of bounds for dimension ", d, " of size ", shape[static_cast<size_t>(d)]);
      off = off * shape[static_cast<size_t>(d)] + c;
    }
    std::byte* dst = ob + static_cast<size_t>(off) * esize;
    switch (val.dtype()) {
      case DType::Float32:
        *reinterpret_cast<float*>(dst) += reinterpret_cast<const float*>(vb)[k];
        break;
      case DType::Float64:
        *reinterpret_cast<double*>(dst) += reinterpret_cast<const double*>(vb)[k];
        break;
      case DType::Int64:
        *reinterpret_cast<int64_t*>(dst) += reinterpret_cast<const int64_t*>(vb)[k];
        break;
      case DType::Int32:
        *reinterpret_cast<int32_t*>(dst) += reinterpret_cast<const int32_t*>(vb)[k];
        break;
      case DType::Float16: {
        Half& h = *reinterpret_cast<Half*>(dst);
        h = Half(static_cast<float>(h) + static_cast<float>(reinterpret_cast<const Half*>(vb)[k]));
        break;
      }
      default:
        // int8 and others: duplicates are not expected (the loader refuses them); copy.
        std::memcpy(dst, vb + static_cast<size_t>(k) * esize, esize);
    }
  }
  return out;
}

Tensor coo_to_dense(const Tensor& indices, const Tensor& values, const Shape& shape) {
  return unwrap(core::coo_to_dense(indices, values, shape));
}

double zero_fraction(const Tensor& t) {
  if (t.numel() == 0) return 0.0;
  const Tensor f = t.to(DType::Float32).contiguous();
  const float* p = f.data_ptr<float>();
  int64_t zeros_n = 0;
  for (int64_t i = 0; i < f.numel(); ++i) zeros_n += p[i] == 0.f ? 1 : 0;
  return static_cast<double>(zeros_n) / static_cast<double>(f.numel());
}

CsrMatrix pack_csr(const Tensor& indices, const Tensor& values, int64_t rows, int64_t cols,
                   const std::vector<float>& scales, const std::vector<int64_t>& zero_points) {
  const Tensor idx = indices.contiguous();
  const Tensor val = values.contiguous();
  CsrMatrix w;
  std::string why;
  const Status st = pack_csr(idx.kernel_view(), val.kernel_view(), rows, cols, scales, zero_points, &w, &why);
  if (st != Status::Ok) raise_error(st, why);
  return w;
}

CsrMatrix pack_csr_dense(const Tensor& dense) {
  EMBER_ENFORCE(dense.dim() == 2, Status::ShapeMismatch, "pack_csr_dense needs a 2-D tensor, got ",
              shape_str(dense.sizes()));
  CooParts coo = dense_to_coo(dense.to(DType::Float32), DType::Int64);
  return pack_csr(coo.indices, coo.values, dense.size(0), dense.size(1));
}

Tensor sparse_linear(const Tensor& x, const CsrMatrix& w, const Tensor& bias) {
  EMBER_ENFORCE(x.defined() && x.device().is_cpu(), Status::InvalidArgument, "sparse linear needs a CPU input");
  EMBER_ENFORCE(x.dtype() == DType::Float32, Status::DTypeMismatch, "sparse linear needs a float32 input, got ",
              dtype_name(x.dtype()));
  EMBER_ENFORCE(x.dim() >= 1 && x.size(-1) == w.cols, Status::ShapeMismatch, "sparse linear: input ",
              shape_str(x.sizes()), " does not end in ", w.cols, " (weight [", w.rows, ", ", w.cols, "])");
  Tensor b;
  if (bias.defined()) {
    EMBER_ENFORCE(bias.dim() == 1 && bias.size(0) == w.rows, Status::ShapeMismatch, "sparse linear: bias ",
                shape_str(bias.sizes()), " is not [", w.rows, "]");
    b = bias.to(DType::Float32).contiguous();
  }
  const int64_t m = x.numel() / std::max<int64_t>(w.cols, 1);
  const Tensor x2 = x.contiguous();
  Shape out_shape = x.sizes();
  out_shape.back() = w.rows;
  Tensor y = empty(out_shape, DType::Float32);
  if (w.cols == 0) {
    if (b.defined()) {
      y.copy_(b.expand(out_shape));
    } else {
      y.zero_();
    }
    return y;
  }
  spmm_linear(w, x2.numel() > 0 ? x2.data_ptr<float>() : nullptr, m, w.cols, b.defined() ? b.data_ptr<float>() : nullptr,
              y.numel() > 0 ? y.data_ptr<float>() : nullptr);
  return y;
}

}  // namespace ember::sparse
