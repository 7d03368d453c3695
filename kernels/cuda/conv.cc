// Conv2d on CUDA. Per image and group, out[n, g] ([C_out/g, OH*OW]) is the
// GEMM W_g [C_out/g, K] x cols [K, OH*OW], K = C_in/g * KH * KW, run by
// cublasGemmStridedBatchedEx (column-major: out^T = cols^T W_g^T):
//   * 1x1, stride 1, no padding: cols is x itself (its spatial dims merged),
//     no copy, one GEMM batched over the images (or the groups);
//   * otherwise im2col (conv.cu.cc) writes cols for a chunk of images into
//     the workspace first;
//   * depthwise (groups == C_in, C_out a multiple of it): a direct kernel.
// The bias is written into the output first and the GEMM adds to it (beta 1),
// so 16-bit outputs are rounded once. Float16/bfloat16 accumulate in float32
// (PyTorch's CUDA default); float32 uses TF32 only when allow_tf32 is set.
// A weight whose rows are not dense and an output that is not contiguous go
// through the workspace (copy kernel).
#include <algorithm>

#include "kernels/cuda/context.h"
#include "kernels/cuda/conv.h"
#include "kernels/cuda/cublas_api.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/gemm_operand.h"
#include "kernels/ref/ref_kernels.h"
#include "runtime/core/error.h"

namespace ember::cuda {
namespace {

constexpr size_t kColsBudget = size_t{256} << 20;  // bytes of im2col columns per chunk of images

size_t aligned(size_t bytes) { return (bytes + 255) / 256 * 256; }

// What one Conv2d call does and the workspace it needs (the workspace
// function and the kernel compute it alike).
struct ConvPlan {
  int64_t groups = 1, cg = 0, cog = 0, kh = 0, kw = 0, oh = 0, ow = 0, p = 0, k = 0;
  bool depthwise = false;
  GemmOperand x_direct;             // ok: the 1x1 path reads x as the GEMM's A (no im2col)
  int64_t x_spatial_stride = 0;  // the merged OH*OW dim's stride in x (1x1 path)
  bool dense_weight = false;    // weight rows [K] contiguous: the GEMM reads it in place
  bool dense_out = false;       // out contiguous: the GEMM writes it in place
  int64_t chunk = 0;            // images per im2col
  size_t weight_bytes = 0, out_bytes = 0, cols_bytes = 0;
  size_t workspace() const { return aligned(weight_bytes) + aligned(out_bytes) + aligned(cols_bytes); }
};

bool dense_rows(const TensorView& w) {
  int64_t expected = 1;
  for (int d = 3; d >= 1; --d) {
    if (w.sizes[d] != 1 && w.strides[d] != expected) return false;
    expected *= w.sizes[d];
  }
  return w.sizes[0] == 1 || w.strides[0] >= expected;
}

ConvPlan plan_conv(const TensorView& x, const TensorView& w, const TensorView& o, const Conv2dParams& prm) {
  ConvPlan c;
  const size_t es = element_size(x.dtype);
  c.groups = prm.groups;
  c.cg = w.sizes[1];
  c.cog = o.sizes[1] / prm.groups;
  c.kh = w.sizes[2];
  c.kw = w.sizes[3];
  c.oh = o.sizes[2];
  c.ow = o.sizes[3];
  c.p = c.oh * c.ow;
  c.k = c.cg * c.kh * c.kw;
  c.depthwise = prm.groups == x.sizes[1] && c.cg == 1;
  if (c.depthwise) return c;
  const int64_t H = x.sizes[2], W = x.sizes[3];
  const bool pointwise = c.kh == 1 && c.kw == 1 && prm.stride[0] == 1 && prm.stride[1] == 1 &&
                         prm.padding[0] == 0 && prm.padding[1] == 0;
  if (pointwise && (H == 1 || W == 1 || x.strides[2] == W * x.strides[3])) {
    c.x_spatial_stride = W == 1 ? x.strides[2] : x.strides[3];
    c.x_direct = gemm_operand(c.cg, c.p, x.strides[1], c.x_spatial_stride);
  }
  c.dense_weight = dense_rows(w);
  if (!c.dense_weight) c.weight_bytes = static_cast<size_t>(w.numel()) * es;
  c.dense_out = o.is_contiguous();
  if (!c.dense_out) c.out_bytes = static_cast<size_t>(o.numel()) * es;
  if (!c.x_direct.ok) {
    const size_t per_image = static_cast<size_t>(x.sizes[1] * c.kh * c.kw * c.p) * es;
    const int64_t fit = static_cast<int64_t>(kColsBudget / std::max<size_t>(per_image, 1));
    c.chunk = std::max<int64_t>(1, std::min<int64_t>(o.sizes[0], fit));
    c.cols_bytes = static_cast<size_t>(c.chunk) * per_image;
  }
  return c;
}

// A dense copy of `v` at `*scratch` (the copy kernel), advancing it.
Result<TensorView> dense_copy(const TensorView& v, char*& scratch, size_t bytes) {
  TensorView d = v;
  d.data = scratch;
  int64_t step = 1;
  for (int i = v.rank - 1; i >= 0; --i) {
    d.strides[i] = step;
    step *= v.sizes[i];
  }
  scratch += aligned(bytes);
  TensorView src = v;
  EMBER_TRY(copy(KernelContext{}, Span<const TensorView>(&src, 1), Span<TensorView>(&d, 1), OpParams{}));
  return d;
}

// One strided-batched GEMM: C [m, n] (ld m) = A [m, k] B [k, n] + beta C, column-major.
struct Gemm {
  const CublasApi* api;
  cudaDataType type;
  cublasComputeType_t compute;
  bool f64;
  float beta_f;
  Status run(int64_t m, int64_t n, int64_t k, const void* a, cublasOperation_t op_a, int64_t lda, int64_t stride_a,
             const void* b, int64_t ldb, int64_t stride_b, void* c, int64_t stride_c, int64_t batch) const {
    const float one = 1.0f;
    const double one_d = 1.0, beta_d = beta_f;
    const void* alpha = f64 ? static_cast<const void*>(&one_d) : static_cast<const void*>(&one);
    const void* beta = f64 ? static_cast<const void*>(&beta_d) : static_cast<const void*>(&beta_f);
    const cublasStatus_t s = api->cublasGemmStridedBatchedEx(
        api->handle, op_a, CUBLAS_OP_N, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a, type,
        static_cast<int>(lda), stride_a, b, type, static_cast<int>(ldb), stride_b, beta, c, type, static_cast<int>(m),
        stride_c, static_cast<int>(batch), compute, CUBLAS_GEMM_DEFAULT);
    if (s != CUBLAS_STATUS_SUCCESS) {
      Context::set_why(str_cat("cublasGemmStridedBatchedEx (conv2d): ", api->cublasGetStatusString(s)));
      return Status::Internal;
    }
    return Status::Ok;
  }
};

Gemm make_gemm(const CublasApi* api, DType t, bool bias) {
  Gemm g{api, CUDA_R_32F, CUBLAS_COMPUTE_32F, false, bias ? 1.0f : 0.0f};
  switch (t) {
    case DType::Float64: g.type = CUDA_R_64F, g.compute = CUBLAS_COMPUTE_64F, g.f64 = true; break;
    case DType::Float16: g.type = CUDA_R_16F; break;
    case DType::BFloat16: g.type = CUDA_R_16BF; break;
    default: g.compute = allow_tf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F; break;
  }
  return g;
}

// The GEMMs of images [n0, n0 + count): A is x itself (1x1 path) or the chunk's columns.
Status conv_gemms(const ConvPlan& c, const Gemm& gemm, const TensorView& x, const char* cols, const char* weight,
                  int64_t ldb, char* target, int64_t cout, int64_t n0, int64_t count) {
  const int64_t es = static_cast<int64_t>(element_size(x.dtype));
  const bool direct = c.x_direct.ok;
  const cublasOperation_t op_a = direct ? c.x_direct.op : CUBLAS_OP_N;
  const int64_t lda = direct ? c.x_direct.ld : c.p;
  const char* a0 = direct ? static_cast<const char*>(x.data) + n0 * x.strides[0] * es : cols;
  const int64_t image_a = direct ? x.strides[0] : c.groups * c.k * c.p;  // elements between images
  const int64_t group_a = direct ? c.cg * x.strides[1] : c.k * c.p;       // elements between groups
  char* c0 = target + n0 * cout * c.p * es;
  if (c.groups == 1) {
    return gemm.run(c.p, c.cog, c.k, a0, op_a, lda, count == 1 ? 0 : image_a, weight, ldb, 0, c0, cout * c.p, count);
  }
  for (int64_t i = 0; i < count; ++i) {
    EMBER_TRY(gemm.run(c.p, c.cog, c.k, a0 + i * image_a * es, op_a, lda, group_a, weight, ldb,
                                c.cog * ldb, c0 + i * cout * c.p * es, c.cog * c.p, c.groups));
  }
  return Status::Ok;
}

}  // namespace

size_t conv2d_workspace(Span<const TensorView> in, Span<const TensorView> out, const OpParams& params) {
  const auto* p = std::get_if<Conv2dParams>(&params);
  if (p == nullptr || in.size() != 3 || out.size() != 1 || p->groups <= 0 || in[0].rank != 4 || in[1].rank != 4 ||
      out[0].rank != 4)
    return 0;
  return plan_conv(in[0], in[1], out[0], *p).workspace();
}

Status conv2d(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  const auto* p = std::get_if<Conv2dParams>(&params);
  EMBER_TRY(ref::check_conv2d_args(in, out, p, kCudaFloat));
  const TensorView &x = in[0], &w = in[1], &bias = in[2], &o = out[0];
  if (o.numel() == 0) return Status::Ok;
  const ConvPlan c = plan_conv(x, w, o, *p);
  if (c.depthwise) return conv2d_depthwise(x, w, bias, o, *p);
  EMBER_CHECK(c.p <= INT32_MAX && c.k <= INT32_MAX && c.cog <= INT32_MAX && c.groups <= INT32_MAX &&
                         o.sizes[0] <= INT32_MAX,
                     Status::OutOfRange);
  EMBER_CHECK(c.workspace() == 0 || (ctx.scratch != nullptr && ctx.scratch_bytes >= c.workspace()),
                     Status::InvalidArgument);
  EMBER_ASSIGN_OR_RETURN(Context * cx, Context::get());
  const size_t es = element_size(x.dtype);
  char* scratch = static_cast<char*>(ctx.scratch);
  TensorView weight = w;
  if (!c.dense_weight) {
    EMBER_ASSIGN_OR_RETURN(weight, dense_copy(w, scratch, c.weight_bytes));
  }
  const int64_t ldb = weight.sizes[0] == 1 ? std::max<int64_t>(c.k, 1) : weight.strides[0];
  EMBER_CHECK(ldb <= INT32_MAX, Status::OutOfRange);
  char* target = static_cast<char*>(o.data);
  if (!c.dense_out) {
    target = scratch;
    scratch += aligned(c.out_bytes);
  }
  const int64_t batch = o.sizes[0], cout = o.sizes[1];
  if (bias.data != nullptr) {
    EMBER_TRY(conv2d_bias_fill(bias, batch, c.p, target));
  } else if (c.k == 0) {
    const size_t bytes = static_cast<size_t>(o.numel()) * es;
    EMBER_TRY(Context::check(cudaMemsetAsync(target, 0, bytes, cx->stream()), "cudaMemsetAsync"));
  }
  if (c.k > 0) {
    EMBER_ASSIGN_OR_RETURN(const CublasApi* api, cublas());
    const Gemm gemm = make_gemm(api, x.dtype, bias.data != nullptr);
    const int64_t chunk = c.x_direct.ok ? batch : c.chunk;
    for (int64_t n0 = 0; n0 < batch; n0 += chunk) {
      const int64_t count = std::min(chunk, batch - n0);
      if (!c.x_direct.ok) {
        EMBER_TRY(conv2d_im2col(x, n0, count, c.kh, c.kw, c.oh, c.ow, *p, scratch));
      }
      EMBER_TRY(conv_gemms(c, gemm, x, scratch, static_cast<const char*>(weight.data), ldb, target, cout, n0,
                                    count));
    }
  }
  if (c.dense_out) return Status::Ok;
  TensorView dense = o;
  dense.data = target;
  int64_t step = 1;
  for (int i = 3; i >= 0; --i) {
    dense.strides[i] = step;
    step *= o.sizes[i];
  }
  TensorView dst = o;
  return copy(KernelContext{}, Span<const TensorView>(&dense, 1), Span<TensorView>(&dst, 1), OpParams{});
}

}  // namespace ember::cuda
