// CSR packing of a COO matrix (quant/csr.h), over raw views: no exceptions,
// the errors are returned with their message.
#include <cstring>
#include <string>
#include <utility>

#include "quant/csr.h"
#include "runtime/core/error.h"
#include "runtime/tensor/half.h"

namespace ember::sparse {
namespace {

std::string dims_str(const TensorView& v) {
  std::string s = "[";
  for (int d = 0; d < v.rank; ++d) s += str_cat(d > 0 ? ", " : "", v.sizes[d]);
  return s + "]";
}

int64_t index_at(const TensorView& idx, int64_t pos) {
  switch (idx.dtype) {
    case DType::Int16: return static_cast<const int16_t*>(idx.data)[pos];
    case DType::Int32: return static_cast<const int32_t*>(idx.data)[pos];
    default: return static_cast<const int64_t*>(idx.data)[pos];
  }
}

Status fail(std::string* why, Status st, std::string message) {
  if (why != nullptr) *why = std::move(message);
  return st;
}

}  // namespace

Status pack_csr(const TensorView& indices, const TensorView& values, int64_t rows, int64_t cols,
                const std::vector<float>& scales, const std::vector<int64_t>& zero_points, CsrMatrix* out,
                std::string* why, bool blocked) {
  const DType it = indices.dtype;
  if (it != DType::Int16 && it != DType::Int32 && it != DType::Int64)
    return fail(why, Status::DTypeMismatch, str_cat("COO indices must be int16, int32 or int64, got ", dtype_name(it)));
  if (!(indices.rank == 2 && indices.sizes[0] == 2 && values.rank == 1 && values.sizes[0] == indices.sizes[1]))
    return fail(why, Status::ShapeMismatch, str_cat("pack_csr: indices ", dims_str(indices), " and values ",
                                                    dims_str(values), " are not a 2-D COO matrix"));
  const DType vt = values.dtype;
  if (vt != DType::Float32 && vt != DType::Float16 && vt != DType::Int8)
    return fail(why, Status::DTypeMismatch, str_cat("pack_csr: values must be float32, float16 or int8, got ",
                                                    dtype_name(vt)));
  if (vt == DType::Int8) {
    if (!(scales.size() == 1 || static_cast<int64_t>(scales.size()) == rows))
      return fail(why, Status::InvalidArgument,
                  str_cat("pack_csr: int8 values need 1 or ", rows, " scales, got ", scales.size()));
    if (!(zero_points.empty() || zero_points.size() == scales.size()))
      return fail(why, Status::InvalidArgument,
                  str_cat("pack_csr: ", zero_points.size(), " zero points for ", scales.size(), " scales"));
  }
  if (values.sizes[0] > 0 && (!indices.is_contiguous() || !values.is_contiguous()))
    return fail(why, Status::InvalidArgument, "pack_csr: indices and values must be contiguous");
  const int64_t nnz = values.sizes[0];
  CsrMatrix w;
  w.rows = rows;
  w.cols = cols;
  w.narrow = cols <= 65536;
  w.row_ptr.assign(static_cast<size_t>(rows + 1), 0);
  // Symmetric int8 (every zero point 0) stays int8 with a scale per row.
  bool symmetric = true;
  for (int64_t z : zero_points) symmetric = symmetric && z == 0;
  w.int8 = vt == DType::Int8 && symmetric;
  if (w.int8) {
    w.qvalues.resize(static_cast<size_t>(nnz));
    w.row_scale.resize(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r)
      w.row_scale[static_cast<size_t>(r)] = scales[scales.size() == 1 ? 0 : static_cast<size_t>(r)];
  } else {
    w.values.resize(static_cast<size_t>(nnz));
  }
  (w.narrow ? w.col16.resize(static_cast<size_t>(nnz)) : w.col32.resize(static_cast<size_t>(nnz)));
  int64_t prev_r = 0, prev_c = -1;
  for (int64_t k = 0; k < nnz; ++k) {
    const int64_t r = index_at(indices, k), c = index_at(indices, nnz + k);
    if (!(r >= 0 && r < rows && c >= 0 && c < cols))
      return fail(why, Status::OutOfRange, str_cat("pack_csr: COO value ", k, " at (", r, ", ", c, ") is outside [",
                                                   rows, ", ", cols, "]"));
    if (!(r > prev_r || (r == prev_r && c > prev_c)))
      return fail(why, Status::InvalidArgument,
                  str_cat("pack_csr: COO value ", k, " at (", r, ", ", c,
                          ") is not sorted in row-major order or repeats a coordinate (coalesce first)"));
    prev_r = r;
    prev_c = c;
    ++w.row_ptr[static_cast<size_t>(r + 1)];
    if (w.narrow) {
      w.col16[static_cast<size_t>(k)] = static_cast<uint16_t>(c);
    } else {
      w.col32[static_cast<size_t>(k)] = static_cast<int32_t>(c);
    }
    if (w.int8) {
      w.qvalues[static_cast<size_t>(k)] = static_cast<const int8_t*>(values.data)[k];
      continue;
    }
    float v;
    if (vt == DType::Float32) {
      v = static_cast<const float*>(values.data)[k];
    } else if (vt == DType::Float16) {
      v = static_cast<float>(static_cast<const Half*>(values.data)[k]);
    } else {
      const size_t ch = scales.size() == 1 ? 0 : static_cast<size_t>(r);
      const int64_t z = zero_points.empty() ? 0 : zero_points[ch];
      v = scales[ch] * static_cast<float>(static_cast<int64_t>(static_cast<const int8_t*>(values.data)[k]) - z);
    }
    w.values[static_cast<size_t>(k)] = v;
  }
  for (int64_t r = 0; r < rows; ++r) w.row_ptr[static_cast<size_t>(r + 1)] += w.row_ptr[static_cast<size_t>(r)];
  if (blocked && has_fast_spmm()) build_blocked(w);
  *out = std::move(w);
  return Status::Ok;
}

}  // namespace ember::sparse
