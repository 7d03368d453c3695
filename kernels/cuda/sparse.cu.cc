// The sparse COO Linear (SparseLinear) on CUDA, bit for bit the reference
// kernel (kernels/ref/qlinear.cc): y = act(float(bias_j + sum_q x_iq * W_jq)),
// summed in double in column order. The weight is packed once on the host
// (prepare_sparse_linear) into CSR by output row (the COO sorted and unique,
// as the file format and the CPU's pack_csr require); int8 values are
// dequantized as the reference does (scale * (q - zp) in double). The values
// stay float32 on the device when every one is a float (float32, float16
// weights), else double. One thread per output element adds
// the row's nonzeros in column order (__dmul_rn / __dadd_rn: no FMA), which is
// the reference's sum without its zero terms (x * 0 is +-0 for finite x, so
// the sum is the same; a non-finite x meeting a structural zero gives NaN in
// the reference only, as PyTorch's sparse products skip the zeros too).
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cuda/kernel_util.h"
#include "runtime/tensor/half.h"

namespace ember::cuda {
namespace {

// The weight on the device: CSR [rows, cols], values float32 (or double when wide).
struct CudaSparseWeight final : PreparedWeight {
  int64_t* row_ptr = nullptr;  // [rows + 1]
  int32_t* col = nullptr;      // [nnz]
  void* values = nullptr;      // [nnz] float or double
  bool wide = false;
  size_t total = 0;
  ~CudaSparseWeight() override {
    Result<Context*> c = Context::get();
    if (!c.ok()) return;
    for (void* p : {static_cast<void*>(row_ptr), static_cast<void*>(col), values})
      if (p != nullptr) c.get()->release(p);
  }
  size_t bytes() const override { return total; }
};

struct SparseArgs {
  const float* x;
  const float* bias;  // [N] or nullptr
  float* y;
  const int64_t* row_ptr;
  const int32_t* col;
  int64_t m, n, k;
  Activation act;
};

template <typename V>
__global__ void sparse_linear_kernel(SparseArgs a, const V* values) {
  for (int64_t e = thread_index(); e < a.m * a.n; e += thread_count()) {
    const int64_t i = e / a.n, j = e - i * a.n;
    const float* xi = a.x + i * a.k;
    double acc = a.bias != nullptr ? static_cast<double>(a.bias[j]) : 0.0;
    for (int64_t t = a.row_ptr[j]; t < a.row_ptr[j + 1]; ++t)
      acc = __dadd_rn(acc, __dmul_rn(static_cast<double>(xi[a.col[t]]), static_cast<double>(values[t])));
    a.y[e] = activate(static_cast<float>(acc), a.act);
  }
}

Status fail_why(Status s, std::string why) {
  Context::set_why("sparse linear on cuda: " + std::move(why));
  return s;
}

int64_t coo_at(const TensorView& idx, int64_t pos) {
  switch (idx.dtype) {
    case DType::Int16: return idx.ptr<const int16_t>()[pos];
    case DType::Int32: return idx.ptr<const int32_t>()[pos];
    default: return idx.ptr<const int64_t>()[pos];
  }
}

Status check_desc(const WeightDesc& d) {
  const TensorView& v = d.weight;
  const TensorView& idx = d.indices;
  const bool index_dtype = idx.dtype == DType::Int16 || idx.dtype == DType::Int32 || idx.dtype == DType::Int64;
  if (idx.rank != 2 || idx.sizes[0] != 2 || !index_dtype || v.rank != 1 || v.sizes[0] != idx.sizes[1] ||
      (v.sizes[0] > 0 && (!idx.is_contiguous() || !v.is_contiguous())))
    return fail_why(Status::InvalidArgument,
                "the weight must be contiguous COO values [nnz] and int16/int32/int64 indices [2, nnz]");
  if (v.dtype != DType::Float32 && v.dtype != DType::Float16 && v.dtype != DType::Int8)
    return fail_why(Status::DTypeMismatch,
                "values of dtype " + std::string(dtype_name(v.dtype)) + " (float32, float16 or int8 only)");
  if (d.rows < 0 || d.cols < 0 || d.cols > INT32_MAX)
    return fail_why(Status::InvalidArgument, "the weight's shape must be [N, K] with 0 <= K < 2^31");
  if (v.dtype == DType::Int8) {
    const bool scales_ok = d.scales != nullptr && (d.num_scales == 1 || d.num_scales == static_cast<size_t>(d.rows));
    if (!scales_ok || (d.num_zero_points != 0 && d.num_zero_points != d.num_scales))
      return fail_why(Status::InvalidArgument, "int8 values need 1 or N scales, and as many zero points or none");
  }
  return Status::Ok;
}

// The COO value k as the reference reads it.
double coo_value(const WeightDesc& d, int64_t k, int64_t row) {
  const TensorView& v = d.weight;
  if (v.dtype == DType::Float32) return v.ptr<const float>()[k];
  if (v.dtype == DType::Float16) return static_cast<float>(v.ptr<const Half>()[k]);
  const size_t ch = d.num_scales == 1 ? 0 : static_cast<size_t>(row);
  const int64_t z = d.num_zero_points > 0 ? d.zero_points[ch] : 0;
  return static_cast<double>(d.scales[ch]) * static_cast<double>(v.ptr<const int8_t>()[k] - z);
}

Result<void*> upload(Context* c, const void* src, size_t bytes, size_t* total) {
  EMBER_ASSIGN_OR_RETURN(void* p, c->allocate(bytes));
  *total += bytes;
  EMBER_TRY(Context::check(cudaMemcpyAsync(p, src, bytes, cudaMemcpyHostToDevice, c->stream()),
                                    "cudaMemcpyAsync (sparse weight)"));
  return p;
}

}  // namespace

Result<std::shared_ptr<const PreparedWeight>> prepare_sparse_linear(const WeightDesc& d) {
  EMBER_TRY(check_desc(d));
  const int64_t nnz = d.weight.sizes[0];
  std::vector<int64_t> row_ptr(static_cast<size_t>(d.rows) + 1, 0);
  std::vector<int32_t> cols(static_cast<size_t>(nnz));
  std::vector<double> vals(static_cast<size_t>(nnz));
  int64_t prev_row = -1, prev_col = -1;
  for (int64_t t = 0; t < nnz; ++t) {
    const int64_t r = coo_at(d.indices, t), c = coo_at(d.indices, nnz + t);
    auto where = [&] {
      return "nonzero " + std::to_string(t) + " at (" + std::to_string(r) + ", " + std::to_string(c) + ")";
    };
    if (r < 0 || r >= d.rows || c < 0 || c >= d.cols)
      return fail_why(Status::OutOfRange,
                  where() + " is outside [" + std::to_string(d.rows) + ", " + std::to_string(d.cols) + "]");
    // As the CPU's pack_csr (quant/csr.cc) and the file format: sorted, unique.
    if (r < prev_row || (r == prev_row && c <= prev_col))
      return fail_why(Status::InvalidArgument,
                  where() + " is not sorted in row-major order or repeats a coordinate (coalesce first)");
    prev_row = r;
    prev_col = c;
    cols[static_cast<size_t>(t)] = static_cast<int32_t>(c);
    vals[static_cast<size_t>(t)] = 0.0 + coo_value(d, t, r);  // the reference's dense zero += the value
    ++row_ptr[static_cast<size_t>(r) + 1];
  }
  for (size_t r = 0; r < static_cast<size_t>(d.rows); ++r) row_ptr[r + 1] += row_ptr[r];
  auto w = std::make_shared<CudaSparseWeight>();
  w->shape = {d.rows, d.cols};
  w->device = DeviceType::CUDA;
  w->wide =
      std::any_of(vals.begin(), vals.end(), [](double v) { return static_cast<double>(static_cast<float>(v)) != v; });
  std::vector<float> narrow(w->wide ? 0 : vals.size());
  for (size_t t = 0; t < narrow.size(); ++t) narrow[t] = static_cast<float>(vals[t]);
  EMBER_ASSIGN_OR_RETURN(Context * c, Context::get());
  EMBER_ASSIGN_OR_RETURN(void* rp, upload(c, row_ptr.data(), row_ptr.size() * sizeof(int64_t), &w->total));
  w->row_ptr = static_cast<int64_t*>(rp);
  if (!vals.empty()) {
    EMBER_ASSIGN_OR_RETURN(void* cp, upload(c, cols.data(), cols.size() * sizeof(int32_t), &w->total));
    w->col = static_cast<int32_t*>(cp);
    EMBER_ASSIGN_OR_RETURN(w->values, w->wide ? upload(c, vals.data(), vals.size() * sizeof(double), &w->total)
                                           : upload(c, narrow.data(), narrow.size() * sizeof(float), &w->total));
  }
  // The host copies go out of scope: wait for the uploads.
  EMBER_TRY(c->synchronize());
  return std::shared_ptr<const PreparedWeight>(std::move(w));
}

// in: x float32 [*, K] contiguous, (weight), bias float32 [N] or absent; out: [*, N].
Status sparse_linear(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  const auto* p = std::get_if<QLinearParams>(&params);
  const auto* w = p != nullptr ? dynamic_cast<const CudaSparseWeight*>(p->weight) : nullptr;
  if (w == nullptr || w->shape.size() != 2 || in.size() < 1 || out.size() != 1)
    return fail_why(Status::InvalidArgument, "no weight prepared for cuda (Backend::prepare_weight)");
  const TensorView& x = in[0];
  const TensorView* b = in.size() > 2 && in[2].data != nullptr ? &in[2] : nullptr;
  const TensorView& y = out[0];
  const int64_t n = w->shape[0], k = w->shape[1];
  if (x.dtype != DType::Float32 || y.dtype != DType::Float32 || (b != nullptr && b->dtype != DType::Float32))
    return fail_why(Status::DTypeMismatch, "x, bias and y must be float32");
  if (x.rank < 1 || x.sizes[x.rank - 1] != k || (b != nullptr && (b->rank != 1 || b->sizes[0] != n)))
    return fail_why(Status::ShapeMismatch,
                "x must be [*, " + std::to_string(k) + "] and the bias [" + std::to_string(n) + "]");
  const int64_t m = k > 0 ? x.numel() / k : n > 0 ? y.numel() / n : 0;  // x's rows (y's when K = 0)
  if ((x.numel() > 0 && !x.is_contiguous()) || (y.numel() > 0 && !y.is_contiguous()) ||
      (b != nullptr && !b->is_contiguous()) || y.numel() != m * n)
    return fail_why(Status::InvalidArgument, "x, bias and y must be contiguous, y [*, N] with x's rows");
  const float* bias = b != nullptr ? b->ptr<const float>() : nullptr;
  const SparseArgs a{x.ptr<const float>(), bias, y.ptr<float>(), w->row_ptr, w->col, m, n, k, p->activation};
  if (w->wide)
    return launch_1d(sparse_linear_kernel<double>, m * n, "sparse linear", a, static_cast<const double*>(w->values));
  return launch_1d(sparse_linear_kernel<float>, m * n, "sparse linear", a, static_cast<const float*>(w->values));
}

}  // namespace ember::cuda
