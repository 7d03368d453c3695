// The emulation's cuBLAS: the functions of cublas_api.h on the host, with
// cuBLAS's column-major semantics (C = alpha op(A) op(B) + beta C), so the
// backend's calls (transposes, leading dimensions, batch strides) are checked.
#include <cstdint>

#include "kernels/cuda/cublas_api.h"
#include "runtime/tensor/half.h"

struct cublasContext {
  cudaStream_t stream = nullptr;
};

namespace ember::cuda {
namespace {

double load(const void* p, cudaDataType t, int64_t i) {
  switch (t) {
    case CUDA_R_32F: return static_cast<const float*>(p)[i];
    case CUDA_R_64F: return static_cast<const double*>(p)[i];
    case CUDA_R_16F: return static_cast<float>(static_cast<const Half*>(p)[i]);
    case CUDA_R_16BF: return static_cast<float>(static_cast<const BFloat16*>(p)[i]);
    case CUDA_R_8I: return static_cast<const int8_t*>(p)[i];
    case CUDA_R_32I: return static_cast<const int32_t*>(p)[i];
  }
  return 0;
}

void store(void* p, cudaDataType t, int64_t i, double v) {
  switch (t) {
    case CUDA_R_32F: static_cast<float*>(p)[i] = static_cast<float>(v); break;
    case CUDA_R_64F: static_cast<double*>(p)[i] = v; break;
    case CUDA_R_16F: static_cast<Half*>(p)[i] = Half(static_cast<float>(v)); break;
    case CUDA_R_16BF: static_cast<BFloat16*>(p)[i] = BFloat16(static_cast<float>(v)); break;
    case CUDA_R_8I: static_cast<int8_t*>(p)[i] = static_cast<int8_t>(v); break;
    case CUDA_R_32I: static_cast<int32_t*>(p)[i] = static_cast<int32_t>(v); break;
  }
}

cublasStatus_t create(cublasHandle_t* h) {
  *h = new cublasContext;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t destroy(cublasHandle_t h) {
  delete h;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t set_stream(cublasHandle_t h, cudaStream_t s) {
  h->stream = s;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t set_math_mode(cublasHandle_t, cublasMath_t) { return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t set_workspace(cublasHandle_t, void*, size_t) { return CUBLAS_STATUS_SUCCESS; }
const char* status_string(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "the operation completed successfully";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
    case CUBLAS_STATUS_INVALID_VALUE: return "an invalid value was used as an argument";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "the functionality requested is not supported";
  }
  return "unknown error";
}

cublasStatus_t gemm_strided_batched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                    int k, const void* alpha, const void* a, cudaDataType at, int lda,
                                    long long sa, const void* b, cudaDataType bt, int ldb, long long sb,
                                    const void* beta, void* c, cudaDataType ct, int ldc, long long sc, int batch,
                                    cublasComputeType_t compute, cublasGemmAlgo_t) {
  if (m < 0 || n < 0 || k < 0 || batch < 0) return CUBLAS_STATUS_INVALID_VALUE;
  if (lda < (ta == CUBLAS_OP_N ? m : k) || ldb < (tb == CUBLAS_OP_N ? k : n) || ldc < m)
    return CUBLAS_STATUS_INVALID_VALUE;
  const bool integer = compute == CUBLAS_COMPUTE_32I;
  const bool dbl = compute == CUBLAS_COMPUTE_64F;
  const double al = integer ? *static_cast<const int32_t*>(alpha)
                            : dbl ? *static_cast<const double*>(alpha) : *static_cast<const float*>(alpha);
  const double be = integer ? *static_cast<const int32_t*>(beta)
                            : dbl ? *static_cast<const double*>(beta) : *static_cast<const float*>(beta);
  auto run = [=] {
    for (int p = 0; p < batch; ++p) {
      for (int j = 0; j < n; ++j) {
        for (int i = 0; i < m; ++i) {
          double acc = 0;
          float facc = 0;  // float32 compute accumulates in float, as the GPU does
          for (int l = 0; l < k; ++l) {
            const double x = load(a, at, p * sa + (ta == CUBLAS_OP_N ? i + int64_t{l} * lda : l + int64_t{i} * lda));
            const double y = load(b, bt, p * sb + (tb == CUBLAS_OP_N ? l + int64_t{j} * ldb : j + int64_t{l} * ldb));
            if (dbl || integer) acc += x * y;
            else facc += static_cast<float>(x) * static_cast<float>(y);
          }
          const int64_t ci = p * sc + i + int64_t{j} * ldc;
          const double sum = dbl || integer ? acc : facc;
          const double old = be == 0 ? 0 : be * load(c, ct, ci);
          store(c, ct, ci, integer || dbl ? al * sum + old : static_cast<float>(al * sum + old));
        }
      }
    }
  };
  if (h->stream != nullptr) {
    // Through the emulated stream, so a captured graph replays it.
    EMBER_LAUNCH(run, dim3(1), dim3(1), 0, h->stream);
  } else {
    run();
  }
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

void fill_emulated_cublas(CublasApi* api) {
  api->cublasCreate_v2 = create;
  api->cublasDestroy_v2 = destroy;
  api->cublasSetStream_v2 = set_stream;
  api->cublasSetMathMode = set_math_mode;
  api->cublasSetWorkspace_v2 = set_workspace;
  api->cublasGetStatusString = status_string;
  api->cublasGemmStridedBatchedEx = gemm_strided_batched;
}

}  // namespace ember::cuda
