// Dynamic int8 Linear (QLinear) on CUDA, bit for bit the reference kernel
// (kernels/ref/qlinear.cc) and the CPU's: x is quantized to uint8 per tensor
// or per row by quant/qscheme.h's formulas (ATen's ChooseQuantizationParams,
// round half to even), the int8 weight's products are summed exactly in
// int32, and the epilogue is the CPU's, without contraction into an FMA:
//   y = act(float(acc - zp * rowsum(w_j)) * (a_scale * w_scale_j) + bias_j).
// Three launches: min/max and the (scale, zero point) per group (one block per
// row, or one for the tensor) into the workspace, then a 16 x 16 tiled int
// GEMM that quantizes x as it loads it.
// The int8 Conv2d (QConv2d, groups 1) is the reference's direct convolution:
// x quantized per tensor (the same first launch, one group), padding read as
// the zero point (real 0), one thread per output, the same epilogue.
#include <algorithm>
#include <memory>
#include <vector>

#include "kernels/cuda/kernel_util.h"
#include "quant/qscheme.h"

namespace ember::cuda {
namespace {

constexpr int kTile = 16;
constexpr int kStatThreads = 256;

// The weight on the device: int8 [N, K], its row sums, N (or 1) scales and the optional bias.
struct CudaQWeight final : PreparedWeight {
  int8_t* q = nullptr;
  int32_t* rowsum = nullptr;
  float* scales = nullptr;
  float* bias = nullptr;
  bool per_channel = false;
  size_t total = 0;
  ~CudaQWeight() override {
    Result<Context*> c = Context::get();
    if (!c.ok()) return;
    for (void* p : {static_cast<void*>(q), static_cast<void*>(rowsum), static_cast<void*>(scales),
                    static_cast<void*>(bias)})
      if (p != nullptr) c.get()->release(p);
  }
  size_t bytes() const override { return total; }
};

// Per group g (a row, or the whole tensor): min and max as the CPU's min_max
// (NaN never wins a comparison), then ATen's parameters, into scale[g], zp[g].
__global__ void qparams_kernel(const float* x, int64_t groups, int64_t len, float* scale, int32_t* zp) {
  __shared__ float lo_s[kStatThreads];
  __shared__ float hi_s[kStatThreads];
  for (int64_t g = blockIdx.x; g < groups; g += gridDim.x) {
    float lo = INFINITY, hi = -INFINITY;
    const float* xg = x + g * len;
    for (int64_t i = threadIdx.x; i < len; i += blockDim.x) {
      const float v = xg[i];
      lo = v < lo ? v : lo;
      hi = v > hi ? v : hi;
    }
    lo_s[threadIdx.x] = lo;
    hi_s[threadIdx.x] = hi;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
      if (threadIdx.x < s) {
        const float a = lo_s[threadIdx.x + s], b = hi_s[threadIdx.x + s];
        lo_s[threadIdx.x] = a < lo_s[threadIdx.x] ? a : lo_s[threadIdx.x];
        hi_s[threadIdx.x] = b > hi_s[threadIdx.x] ? b : hi_s[threadIdx.x];
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      // ATen: an empty input quantizes over [0, 0].
      const quant::QParams p =
          len > 0 ? quant::choose_qparams(lo_s[0], hi_s[0], 0, 255) : quant::choose_qparams(0.0f, 0.0f, 0, 255);
      scale[g] = p.scale;
      zp[g] = p.zero_point;
    }
    __syncthreads();
  }
}

// x's uint8 code as quant::quantize_activations_u8 computes it (clamp, then round half to even).
__device__ inline int32_t quantize_u8(float v, float inv, int32_t zp) {
  float t = v * inv;
  const float lo = static_cast<float>(-zp), hi = static_cast<float>(255 - zp);
  t = t < lo ? lo : t;
  t = t > hi ? hi : t;
  return static_cast<int32_t>(rintf(t)) + zp;
}

struct QGemmArgs {
  const float* x;
  float* y;
  int64_t m, n, k;
  bool per_row;
  Activation act;
};

// Row tiles beyond the grid's y limit are taken in turns by the same blocks.
__global__ void qgemm_kernel(QGemmArgs a, const int8_t* w, const int32_t* rowsum, const float* w_scale,
                             bool per_channel, const float* bias, const float* a_scale, const int32_t* a_zp) {
  __shared__ int32_t xs[kTile][kTile + 1];
  __shared__ int32_t ws[kTile][kTile + 1];
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  const int64_t j = static_cast<int64_t>(blockIdx.x) * kTile + tx;     // output column
  const int64_t wrow = static_cast<int64_t>(blockIdx.x) * kTile + ty;  // weight row this thread loads
  for (int64_t i0 = static_cast<int64_t>(blockIdx.y) * kTile; i0 < a.m; i0 += static_cast<int64_t>(gridDim.y) * kTile) {
    const int64_t i = i0 + ty;  // output row
    const int64_t g = a.per_row && i < a.m ? i : 0;
    const float inv = 1.0f / a_scale[g];
    const int32_t zp = a_zp[g];
    int32_t acc = 0;
    for (int64_t k0 = 0; k0 < a.k; k0 += kTile) {
      const int64_t kk = k0 + tx;
      xs[ty][tx] = i < a.m && kk < a.k ? quantize_u8(a.x[i * a.k + kk], inv, zp) : 0;
      ws[ty][tx] = wrow < a.n && kk < a.k ? static_cast<int32_t>(w[wrow * a.k + kk]) : 0;
      __syncthreads();
      for (int t = 0; t < kTile; ++t) acc += xs[ty][t] * ws[tx][t];
      __syncthreads();
    }
    if (i < a.m && j < a.n) {
      const float o = __fmul_rn(static_cast<float>(acc - zp * rowsum[j]),
                                __fmul_rn(a_scale[g], w_scale[per_channel ? j : 0]));
      a.y[i * a.n + j] = activate(bias != nullptr ? __fadd_rn(o, bias[j]) : o, a.act);
    }
  }
}

// The reference's output size: 0 when the window does not fit.
int64_t conv_out(int64_t in, int64_t k, const Conv2dParams& c, int d) {
  const int64_t span = c.dilation[d] * (k - 1) + 1;
  const int64_t padded = in + 2 * c.padding[d];
  return padded < span ? 0 : (padded - span) / c.stride[d] + 1;
}

struct QConvArgs {
  const float* x;
  float* y;
  int64_t nb, ci, h, w, co, kh, kw, oh, ow;
  Conv2dParams conv;
  int64_t xs[4], ys[4];  // x's and y's strides (NCHW or channels_last)
};

// Dense NCHW, or dense channels_last: strides [H*W*C, 1, W*C, C].
bool dense_4d(const TensorView& v) {
  if (v.numel() == 0 || v.is_contiguous()) return true;
  const int64_t c = v.sizes[1], h = v.sizes[2], w = v.sizes[3];
  return (c == 1 || v.strides[1] == 1) && (w == 1 || v.strides[3] == c) && (h == 1 || v.strides[2] == w * c) &&
         (v.sizes[0] == 1 || v.strides[0] == h * w * c);
}

__global__ void qconv2d_kernel(QConvArgs a, const int8_t* wq, const int32_t* rowsum, const float* w_scale,
                               bool per_channel, const float* bias, const float* a_scale, const int32_t* a_zp) {
  const Conv2dParams& c = a.conv;
  const float inv = 1.0f / a_scale[0];
  const int32_t zp = a_zp[0];
  const int64_t total = a.nb * a.co * a.oh * a.ow;
  for (int64_t e = thread_index(); e < total; e += thread_count()) {
    const int64_t ox = e % a.ow, oy = e / a.ow % a.oh, o = e / (a.ow * a.oh) % a.co, b = e / (a.ow * a.oh * a.co);
    const int8_t* wo = wq + o * a.ci * a.kh * a.kw;
    int32_t acc = 0;
    for (int64_t cc = 0; cc < a.ci; ++cc) {
      for (int64_t ky = 0; ky < a.kh; ++ky) {
        const int64_t iy = oy * c.stride[0] - c.padding[0] + ky * c.dilation[0];
        for (int64_t kx = 0; kx < a.kw; ++kx) {
          const int64_t ix = ox * c.stride[1] - c.padding[1] + kx * c.dilation[1];
          const int32_t v = iy < 0 || iy >= a.h || ix < 0 || ix >= a.w
                                ? zp
                                : quantize_u8(a.x[b * a.xs[0] + cc * a.xs[1] + iy * a.xs[2] + ix * a.xs[3]], inv, zp);
          acc += v * static_cast<int32_t>(wo[(cc * a.kh + ky) * a.kw + kx]);
        }
      }
    }
    const float out = __fmul_rn(static_cast<float>(acc - zp * rowsum[o]),
                                __fmul_rn(a_scale[0], w_scale[per_channel ? o : 0]));
    a.y[b * a.ys[0] + o * a.ys[1] + oy * a.ys[2] + ox * a.ys[3]] =
        activate(bias != nullptr ? __fadd_rn(out, bias[o]) : out, c.activation);
  }
}

// Activation quantization groups: one per row, or one for the tensor.
int64_t groups_of(const QLinearParams& p, int64_t m) { return p.per_row_activations ? m : 1; }

Result<void*> upload(Context* c, const void* src, size_t bytes, size_t* total) {
  EMBER_ASSIGN_OR_RETURN(void* p, c->allocate(bytes));
  *total += bytes;
  EMBER_TRY(Context::check(cudaMemcpyAsync(p, src, bytes, cudaMemcpyHostToDevice, c->stream()),
                                    "cudaMemcpyAsync (int8 weight)"));
  return p;
}

// QLinear's weight int8 [N, K], QConv2d's [C_out, C_in, kh, kw] (its rows: K = C_in * kh * kw).
Result<std::shared_ptr<const PreparedWeight>> prepare_int8(const WeightDesc& d, bool conv) {
  const TensorView& v = d.weight;
  if (v.data == nullptr || v.dtype != DType::Int8 || v.rank != (conv ? 4 : 2) || !v.is_contiguous() ||
      d.scales == nullptr || d.num_scales != static_cast<size_t>(d.per_channel ? v.sizes[0] : 1) ||
      (d.bias.data != nullptr && (d.bias.dtype != DType::Float32 || d.bias.numel() != v.sizes[0]))) {
    Context::set_why(conv ? "int8 conv2d on cuda: the weight must be a contiguous int8 [C_out, C_in, kh, kw] with "
                            "C_out (per channel) or 1 scales and a float32 [C_out] bias or none"
                          : "int8 linear on cuda: the weight must be a contiguous int8 [N, K] with N (per channel) or "
                            "1 scales and a float32 [N] bias or none");
    return Status::InvalidArgument;
  }
  if (conv && d.conv.groups != 1) {
    Context::set_why("int8 conv2d on cuda: groups must be 1");
    return Status::InvalidArgument;
  }
  EMBER_ASSIGN_OR_RETURN(Context * c, Context::get());
  const int64_t n = v.sizes[0], k = n > 0 ? v.numel() / n : 0;
  const int8_t* q = v.ptr<const int8_t>();
  std::vector<int32_t> rowsum(static_cast<size_t>(n), 0);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t t = 0; t < k; ++t) rowsum[static_cast<size_t>(j)] += q[j * k + t];
  auto w = std::make_shared<CudaQWeight>();
  w->shape.assign(v.sizes, v.sizes + v.rank);
  w->device = DeviceType::CUDA;
  w->per_channel = d.per_channel;
  // Nothing is allocated for an empty weight: the kernel does not run.
  if (n * k > 0) {
    EMBER_ASSIGN_OR_RETURN(void* pq, upload(c, q, static_cast<size_t>(n * k), &w->total));
    w->q = static_cast<int8_t*>(pq);
  }
  if (n > 0) {
    EMBER_ASSIGN_OR_RETURN(void* pr, upload(c, rowsum.data(), rowsum.size() * sizeof(int32_t), &w->total));
    w->rowsum = static_cast<int32_t*>(pr);
  }
  EMBER_ASSIGN_OR_RETURN(void* ps, upload(c, d.scales, d.num_scales * sizeof(float), &w->total));
  w->scales = static_cast<float*>(ps);
  if (d.bias.data != nullptr && n > 0) {
    EMBER_ASSIGN_OR_RETURN(void* pb, upload(c, d.bias.data, static_cast<size_t>(n) * sizeof(float), &w->total));
    w->bias = static_cast<float*>(pb);
  }
  // The host copies (rowsum) go out of scope: wait for the uploads.
  EMBER_TRY(c->synchronize());
  return std::shared_ptr<const PreparedWeight>(std::move(w));
}

}  // namespace

Result<std::shared_ptr<const PreparedWeight>> prepare_qlinear(const WeightDesc& d) { return prepare_int8(d, false); }

Result<std::shared_ptr<const PreparedWeight>> prepare_qconv2d(const WeightDesc& d) { return prepare_int8(d, true); }

// The workspace: a (scale, zero point) per group, float and int32 arrays.
size_t qlinear_workspace(Span<const TensorView> in, Span<const TensorView>, const OpParams& params) {
  const auto* p = std::get_if<QLinearParams>(&params);
  if (p == nullptr || p->weight == nullptr || in.size() < 1 || p->weight->shape.size() != 2) return 0;
  const int64_t k = p->weight->shape[1];
  const int64_t m = k > 0 ? in[0].numel() / k : 0;
  return static_cast<size_t>(groups_of(*p, m)) * (sizeof(float) + sizeof(int32_t));
}

Status qlinear(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  const auto* p = std::get_if<QLinearParams>(&params);
  EMBER_CHECK(p != nullptr && in.size() >= 1 && out.size() == 1, Status::InvalidArgument);
  const auto* w = dynamic_cast<const CudaQWeight*>(p->weight);
  EMBER_CHECK(w != nullptr && w->shape.size() == 2, Status::InvalidArgument);
  const TensorView& x = in[0];
  const TensorView& y = out[0];
  const int64_t n = w->shape[0], k = w->shape[1];
  EMBER_CHECK(x.dtype == DType::Float32 && y.dtype == DType::Float32, Status::DTypeMismatch);
  EMBER_CHECK(x.rank >= 1 && x.sizes[x.rank - 1] == k, Status::ShapeMismatch);
  EMBER_CHECK(dense_4d(x) && dense_4d(y), Status::InvalidArgument);  // x's values read as one run by qparams_kernel
  const int64_t m = k > 0 ? x.numel() / k : 0;
  if (m <= 0 || n <= 0) return Status::Ok;
  const int64_t groups = groups_of(*p, m);
  EMBER_CHECK(ctx.scratch != nullptr && ctx.scratch_bytes >= qlinear_workspace(in, {}, params),
                     Status::InvalidArgument);
  auto* a_scale = static_cast<float*>(ctx.scratch);
  auto* a_zp = reinterpret_cast<int32_t*>(a_scale + groups);
  EMBER_ASSIGN_OR_RETURN(Context * c, Context::get());
  const unsigned stat_blocks = static_cast<unsigned>(groups < 65535 ? groups : 65535);
  EMBER_LAUNCH(qparams_kernel, dim3(stat_blocks), dim3(kStatThreads), 0, c->stream(), x.ptr<const float>(), groups,
               p->per_row_activations ? k : m * k, a_scale, a_zp);
  EMBER_TRY(Context::check(cudaGetLastError(), "int8 linear (activation parameters)"));
  const QGemmArgs args{x.ptr<const float>(), y.ptr<float>(), m, n, k, p->per_row_activations, p->activation};
  const int64_t row_tiles = (m + kTile - 1) / kTile;
  EMBER_CHECK((n + kTile - 1) / kTile <= 0x7fffffff, Status::OutOfRange);
  const dim3 grid(static_cast<unsigned>((n + kTile - 1) / kTile),
                  static_cast<unsigned>(row_tiles < 65535 ? row_tiles : 65535));
  EMBER_LAUNCH(qgemm_kernel, grid, dim3(kTile, kTile), 0, c->stream(), args, w->q, w->rowsum, w->scales,
               w->per_channel, w->bias, a_scale, a_zp);
  return Context::check(cudaGetLastError(), "int8 linear");
}

// The workspace: x's (scale, zero point), one group.
size_t qconv2d_workspace(Span<const TensorView>, Span<const TensorView>, const OpParams&) {
  return sizeof(float) + sizeof(int32_t);
}

// in: x float32 [N, C_in, H, W], (weight); out: [N, C_out, OH, OW]; each dense
// NCHW or channels_last.
Status qconv2d(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  const auto* p = std::get_if<QConv2dParams>(&params);
  const auto* w = p != nullptr ? dynamic_cast<const CudaQWeight*>(p->weight) : nullptr;
  if (w == nullptr || w->shape.size() != 4 || in.size() < 1 || out.size() != 1) {
    Context::set_why("int8 conv2d on cuda: no weight prepared for cuda (Backend::prepare_weight)");
    return Status::InvalidArgument;
  }
  const TensorView& x = in[0];
  const TensorView& y = out[0];
  EMBER_CHECK(x.dtype == DType::Float32 && y.dtype == DType::Float32, Status::DTypeMismatch);
  const int64_t co = w->shape[0], ci = w->shape[1], kh = w->shape[2], kw = w->shape[3];
  EMBER_CHECK(x.rank == 4 && x.sizes[1] == ci && y.rank == 4, Status::ShapeMismatch);
  const Conv2dParams& c = p->conv;
  EMBER_CHECK(c.groups == 1, Status::InvalidArgument);
  QConvArgs a{x.ptr<const float>(), y.ptr<float>(), x.sizes[0], ci, x.sizes[2], x.sizes[3], co, kh, kw,
              conv_out(x.sizes[2], kh, c, 0), conv_out(x.sizes[3], kw, c, 1), c, {}, {}};
  std::copy(x.strides, x.strides + 4, a.xs);
  std::copy(y.strides, y.strides + 4, a.ys);
  EMBER_CHECK(y.sizes[0] == a.nb && y.sizes[1] == co && y.sizes[2] == a.oh && y.sizes[3] == a.ow,
                     Status::ShapeMismatch);
  EMBER_CHECK(dense_4d(x) && dense_4d(y), Status::InvalidArgument);  // x's values read as one run by qparams_kernel
  if (y.numel() == 0) return Status::Ok;
  EMBER_CHECK(ctx.scratch != nullptr && ctx.scratch_bytes >= qconv2d_workspace(in, {}, params),
                     Status::InvalidArgument);
  auto* a_scale = static_cast<float*>(ctx.scratch);
  auto* a_zp = reinterpret_cast<int32_t*>(a_scale + 1);
  EMBER_ASSIGN_OR_RETURN(Context * cx, Context::get());
  EMBER_LAUNCH(qparams_kernel, dim3(1), dim3(kStatThreads), 0, cx->stream(), x.ptr<const float>(), int64_t{1},
               x.numel(), a_scale, a_zp);
  EMBER_TRY(Context::check(cudaGetLastError(), "int8 conv2d (activation parameters)"));
  return launch_1d(qconv2d_kernel, y.numel(), "int8 conv2d", a, w->q, w->rowsum, w->scales, w->per_channel, w->bias,
                   static_cast<const float*>(a_scale), static_cast<const int32_t*>(a_zp));
}

}  // namespace ember::cuda
