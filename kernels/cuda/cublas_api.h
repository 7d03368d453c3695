// cuBLAS, opened with dlopen at first use (as kernels/vulkan/vk_api.h opens
// the Vulkan loader): linking it would cost every process ~0.09 s and ~216 MB
// at start and keep binaries from starting where it is missing. The X-macro
// list spells each function's type (cublasGemmEx is overloaded in C++).
// In the emulation (//kernels/cuda:emu) the table holds host implementations.
#pragma once

#include "kernels/cuda/cuda_rt.h"
#include "runtime/core/result.h"

#if defined(EMBER_CUDA_EMU)
// The cuBLAS types and constants ember uses, with the toolkit's values.
struct cublasContext;
using cublasHandle_t = cublasContext*;
enum cublasStatus_t { CUBLAS_STATUS_SUCCESS = 0, CUBLAS_STATUS_NOT_INITIALIZED = 1, CUBLAS_STATUS_INVALID_VALUE = 7,
                      CUBLAS_STATUS_NOT_SUPPORTED = 15 };
enum cublasOperation_t { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 };
enum cublasMath_t { CUBLAS_DEFAULT_MATH = 0, CUBLAS_PEDANTIC_MATH = 2, CUBLAS_TF32_TENSOR_OP_MATH = 3,
                    CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION = 16 };
enum cublasComputeType_t { CUBLAS_COMPUTE_32F = 68, CUBLAS_COMPUTE_64F = 70, CUBLAS_COMPUTE_32I = 72,
                           CUBLAS_COMPUTE_32F_FAST_TF32 = 77 };
enum cublasGemmAlgo_t { CUBLAS_GEMM_DEFAULT = -1 };
enum cudaDataType { CUDA_R_32F = 0, CUDA_R_64F = 1, CUDA_R_16F = 2, CUDA_R_8I = 3, CUDA_R_32I = 10, CUDA_R_16BF = 14 };
#else
#include <cublas_api.h>
#endif

namespace ember::cuda {

using PFN_cublasCreate_v2 = cublasStatus_t (*)(cublasHandle_t*);
using PFN_cublasDestroy_v2 = cublasStatus_t (*)(cublasHandle_t);
using PFN_cublasSetStream_v2 = cublasStatus_t (*)(cublasHandle_t, cudaStream_t);
using PFN_cublasSetMathMode = cublasStatus_t (*)(cublasHandle_t, cublasMath_t);
using PFN_cublasSetWorkspace_v2 = cublasStatus_t (*)(cublasHandle_t, void*, size_t);
using PFN_cublasGetStatusString = const char* (*)(cublasStatus_t);
using PFN_cublasGemmStridedBatchedEx = cublasStatus_t (*)(
    cublasHandle_t, cublasOperation_t, cublasOperation_t, int m, int n, int k, const void* alpha, const void* a,
    cudaDataType a_type, int lda, long long stride_a, const void* b, cudaDataType b_type, int ldb,
    long long stride_b, const void* beta, void* c, cudaDataType c_type, int ldc, long long stride_c, int batch,
    cublasComputeType_t compute, cublasGemmAlgo_t algo);

// X(name): every function ember takes from libcublas.so.
#define EMBER_CUBLAS_FUNCTIONS(X) \
  X(cublasCreate_v2)              \
  X(cublasDestroy_v2)             \
  X(cublasSetStream_v2)           \
  X(cublasSetMathMode)            \
  X(cublasSetWorkspace_v2)        \
  X(cublasGetStatusString)        \
  X(cublasGemmStridedBatchedEx)

struct CublasApi {
#define EMBER_CUBLAS_MEMBER(name) PFN_##name name = nullptr;
  EMBER_CUBLAS_FUNCTIONS(EMBER_CUBLAS_MEMBER)
#undef EMBER_CUBLAS_MEMBER
  cublasHandle_t handle = nullptr;  // one, on the context's stream
};

// The library and a handle on the context's stream, opened at first use.
// Fails (Context::why() says why: library missing, a symbol missing, no device).
Result<const CublasApi*> cublas();

// The file names dlopen tries, in order (EMBER_CUBLAS_LIBRARY first when set).
const char* const* cublas_library_names();

// TF32 for float32 GEMMs: off by default, as torch.backends.cuda.matmul.allow_tf32.
void set_allow_tf32(bool allow);
bool allow_tf32();

}  // namespace ember::cuda
