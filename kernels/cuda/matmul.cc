// MatMul on CUDA: one cublasGemmStridedBatchedEx per call. Row-major
// out[b] = a[b] @ b[b] is the column-major product out^T = b^T a^T, so each
// operand goes in as it lies when one of its two strides is 1 (op N or T);
// other layouts are copied contiguous into the workspace first.
// Float16/bfloat16 accumulate in float32 (PyTorch's CUDA default); float32
// uses TF32 only when allow_tf32 is set (off by default, as PyTorch).
#include "kernels/cuda/context.h"
#include "kernels/cuda/cublas_api.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/gemm_operand.h"
#include "runtime/core/error.h"

namespace ember::cuda {
namespace {

GemmOperand classify(const TensorView& v) { return gemm_operand(v.sizes[1], v.sizes[2], v.strides[1], v.strides[2]); }

cudaDataType data_type(DType t) {
  switch (t) {
    case DType::Float64: return CUDA_R_64F;
    case DType::Float16: return CUDA_R_16F;
    case DType::BFloat16: return CUDA_R_16BF;
    default: return CUDA_R_32F;
  }
}

size_t aligned(size_t bytes) { return (bytes + 255) / 256 * 256; }

size_t dense_bytes(const TensorView& v) { return aligned(static_cast<size_t>(v.numel()) * element_size(v.dtype)); }

// A contiguous [B, rows, cols] view over `scratch`, filled from `v` by the copy kernel.
Result<TensorView> densify(const TensorView& v, char*& scratch) {
  TensorView d = v;
  d.data = scratch;
  d.strides[2] = 1;
  d.strides[1] = v.sizes[2];
  d.strides[0] = v.sizes[1] * v.sizes[2];
  scratch += dense_bytes(v);
  TensorView src = v;
  TensorView dst = d;
  EMBER_TRY(copy(KernelContext{}, Span<const TensorView>(&src, 1), Span<TensorView>(&dst, 1), OpParams{}));
  return d;
}

}  // namespace

size_t matmul_workspace(Span<const TensorView> in, Span<const TensorView>, const OpParams&) {
  size_t bytes = 0;
  for (int k = 0; k < 2; ++k)
    if (in[k].rank == 3 && !classify(in[k]).ok) bytes += dense_bytes(in[k]);
  return bytes;
}

Status matmul(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out, const OpParams&) {
  EMBER_CHECK(in.size() == 2 && out.size() == 1, Status::InvalidArgument);
  TensorView a = in[0], b = in[1];
  const TensorView& o = out[0];
  EMBER_CHECK(a.rank == 3 && b.rank == 3 && o.rank == 3, Status::InvalidArgument);
  EMBER_CHECK(a.sizes[0] == o.sizes[0] && b.sizes[0] == o.sizes[0] && a.sizes[1] == o.sizes[1] &&
                         b.sizes[2] == o.sizes[2] && a.sizes[2] == b.sizes[1],
                     Status::ShapeMismatch);
  EMBER_CHECK(a.dtype == b.dtype && a.dtype == o.dtype && (kCudaFloat & dtype_bit(a.dtype)),
                     Status::DTypeMismatch);
  const int64_t batch = o.sizes[0], m = o.sizes[1], n = o.sizes[2], k = a.sizes[2];
  if (o.numel() == 0) return Status::Ok;
  EMBER_CHECK(m <= INT32_MAX && n <= INT32_MAX && k <= INT32_MAX && batch <= INT32_MAX, Status::OutOfRange);
  const GemmOperand oo = classify(o);
  EMBER_CHECK(oo.ok && oo.op == CUBLAS_OP_N, Status::NotSupported);  // front-ends allocate dense outputs
  char* scratch = static_cast<char*>(ctx.scratch);
  GemmOperand oa = classify(a), ob = classify(b);
  if (!oa.ok) {
    EMBER_ASSIGN_OR_RETURN(a, densify(a, scratch));
    oa = classify(a);
  }
  if (!ob.ok) {
    EMBER_ASSIGN_OR_RETURN(b, densify(b, scratch));
    ob = classify(b);
  }
  EMBER_ASSIGN_OR_RETURN(const CublasApi* api, cublas());
  const cudaDataType type = data_type(a.dtype);
  const bool f64 = a.dtype == DType::Float64;
  const cublasComputeType_t compute = f64 ? CUBLAS_COMPUTE_64F
                                      : (a.dtype == DType::Float32 && allow_tf32()) ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                                                    : CUBLAS_COMPUTE_32F;
  const float one = 1.0f, zero = 0.0f;
  const double one_d = 1.0, zero_d = 0.0;
  const void* alpha = f64 ? static_cast<const void*>(&one_d) : static_cast<const void*>(&one);
  const void* beta = f64 ? static_cast<const void*>(&zero_d) : static_cast<const void*>(&zero);
  if (k == 0) {  // an empty sum: zeros (cuBLAS leaves C alone when k is 0 only with beta 0 on some versions)
    EMBER_ASSIGN_OR_RETURN(Context * c, Context::get());
    return Context::check(cudaMemsetAsync(o.data, 0, static_cast<size_t>(o.numel()) * element_size(o.dtype),
                                          c->stream()),
                          "cudaMemsetAsync");
  }
  // Column-major: out^T [n, m] = b^T [n, k] x a^T [k, m].
  const cublasStatus_t s = api->cublasGemmStridedBatchedEx(
      api->handle, ob.op, oa.op, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), alpha, b.data,
      type, static_cast<int>(ob.ld), b.sizes[0] == 1 ? 0 : b.strides[0], a.data, type, static_cast<int>(oa.ld), a.sizes[0] == 1 ? 0 : a.strides[0],
      beta, o.data, type, static_cast<int>(oo.ld), o.strides[0], static_cast<int>(batch), compute, CUBLAS_GEMM_DEFAULT);
  if (s != CUBLAS_STATUS_SUCCESS) {
    Context::set_why(str_cat("cublasGemmStridedBatchedEx: ", api->cublasGetStatusString(s)));
    return Status::Internal;
  }
  return Status::Ok;
}

}  // namespace ember::cuda
