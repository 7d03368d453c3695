// Softmax, LogSoftmax and LayerNorm on CUDA as row kernels (reduce_rows.h:
// a group of lanes per row, statistics combined by shuffles), and BatchNorm's
// inference form as an elementwise kernel; kernels/ref/softmax.cc and
// norm.cc's semantics. Statistics accumulate in float (double for double),
// as PyTorch's CUDA kernels: softmax subtracts the row's maximum (a NaN
// anywhere makes the row NaN), LayerNorm is two-pass (mean, then squared
// deviations; biased variance).
#include "kernels/cuda/reduce_rows.h"

namespace ember::cuda {
namespace {

__device__ inline float rsqrt_acc(float v) { return rsqrtf(v); }
__device__ inline double rsqrt_acc(double v) { return 1.0 / std::sqrt(v); }

// rows: the other dims (x, y); line: the softmax dim (x, y).
template <typename T, bool kLog>
__global__ void softmax_kernel(const T* x, T* y, Dims<2> rows, Dims<2> line, RowLayout l) {
  using A = float_acc_t<T>;
  __shared__ A smem[kRowThreads];
  const int lane = l.lane();
  const int64_t n = line.numel, per_block = l.rows_per_block();
  for (int64_t base = blockIdx.x * per_block; base < rows.numel; base += gridDim.x * per_block) {
    const int64_t row = base + l.group();
    const bool live = row < rows.numel;
    const T* xr = x + (live ? rows.offset(0, row) : 0);
    T* yr = y + (live ? rows.offset(1, row) : 0);
    A m = -INFINITY;
    if (live)
      for (int64_t j = lane; j < n; j += l.G) m = PickNanOp<A, true>{}(m, convert<A>(xr[line.offset(0, j)]));
    m = group_reduce(m, PickNanOp<A, true>{}, l, smem);
    A sum = 0;
    if (live)
      for (int64_t j = lane; j < n; j += l.G) sum += std::exp(convert<A>(xr[line.offset(0, j)]) - m);
    sum = group_reduce(sum, AddOp<A>{}, l, smem);
    if (!live) continue;
    const A log_sum = kLog ? std::log(sum) : A(0);
    for (int64_t j = lane; j < n; j += l.G) {
      const A v = convert<A>(xr[line.offset(0, j)]) - m;
      yr[line.offset(1, j)] = convert<T>(kLog ? v - log_sum : std::exp(v) / sum);
    }
  }
}

template <bool kLog>
Status softmax_impl(Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  const auto* p = std::get_if<SoftmaxParams>(&params);
  EMBER_CHECK(p != nullptr && in.size() == 1 && out.size() == 1, Status::InvalidArgument);
  const TensorView& x = in[0];
  const TensorView& y = out[0];
  EMBER_CHECK(x.dtype == y.dtype, Status::DTypeMismatch);
  EMBER_CHECK(x.rank == y.rank, Status::ShapeMismatch);
  for (int d = 0; d < x.rank; ++d) EMBER_CHECK(x.sizes[d] == y.sizes[d], Status::ShapeMismatch);
  const int dim = p->dim;
  EMBER_CHECK(x.rank == 0 ? (dim == 0 || dim == -1) : (dim >= 0 && dim < x.rank), Status::InvalidArgument);
  return on_dtype<kCudaFloat>(x.dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if (x.numel() == 0) return Status::Ok;
    const TensorView* v[2] = {&x, &y};
    const Dims<2> rows = make_dims<2>(v, [&](int d) { return d != dim; });
    const Dims<2> line = make_dims<2>(v, [&](int d) { return d == dim; });
    const bool rows_contiguous =
        rows.rank > 0 && rows.strides[0][rows.rank - 1] == 1 && line.rank > 0 && line.strides[0][0] != 1;
    const RowLayout l = choose_layout(rows.numel, line.numel, rows_contiguous);
    EMBER_ASSIGN_OR_RETURN(Context * c, Context::get());
    auto* k = &softmax_kernel<T, kLog>;
    EMBER_LAUNCH(k, dim3(row_blocks(rows.numel, l)), dim3(kRowThreads), 0, c->stream(), x.ptr<const T>(),
                 y.ptr<T>(), rows, line, l);
    return Context::check(cudaGetLastError(), kLog ? "log_softmax kernel" : "softmax kernel");
  });
}

// rows: the leading dims (x, y); inner: the normalized dims (x, y, weight, bias).
template <typename T>
__global__ void layer_norm_kernel(const T* x, T* y, const T* w, const T* b, Dims<2> rows, Dims<4> inner,
                                  RowLayout l, double eps) {
  using A = float_acc_t<T>;
  __shared__ A smem[kRowThreads];
  const int lane = l.lane();
  const int64_t n = inner.numel, per_block = l.rows_per_block();
  for (int64_t base = blockIdx.x * per_block; base < rows.numel; base += gridDim.x * per_block) {
    const int64_t row = base + l.group();
    const bool live = row < rows.numel;
    const T* xr = x + (live ? rows.offset(0, row) : 0);
    T* yr = y + (live ? rows.offset(1, row) : 0);
    A sum = 0;
    if (live)
      for (int64_t j = lane; j < n; j += l.G) sum += convert<A>(xr[inner.offset(0, j)]);
    sum = group_reduce(sum, AddOp<A>{}, l, smem);
    const A mean = sum / static_cast<A>(n);
    A m2 = 0;
    if (live) {
      for (int64_t j = lane; j < n; j += l.G) {
        const A d = convert<A>(xr[inner.offset(0, j)]) - mean;
        m2 += d * d;
      }
    }
    m2 = group_reduce(m2, AddOp<A>{}, l, smem);
    if (!live) continue;
    const A rstd = rsqrt_acc(m2 / static_cast<A>(n) + static_cast<A>(eps));
    for (int64_t j = lane; j < n; j += l.G) {
      A v = (convert<A>(xr[inner.offset(0, j)]) - mean) * rstd;
      if (w != nullptr) v *= convert<A>(w[inner.offset(2, j)]);
      if (b != nullptr) v += convert<A>(b[inner.offset(3, j)]);
      yr[inner.offset(1, j)] = convert<T>(v);
    }
  }
}

// `v` (of rank nr, or absent) as a view of x's rank: stride 0 on the leading dims.
TensorView as_trailing(const TensorView& v, const TensorView& x, int nr) {
  TensorView r = x;
  r.data = v.data;
  for (int d = 0; d < x.rank; ++d) r.strides[d] = (v.data != nullptr && d >= x.rank - nr) ? v.strides[d - (x.rank - nr)] : 0;
  return r;
}

bool same_shape(const TensorView& a, const TensorView& b) {
  if (a.rank != b.rank) return false;
  for (int d = 0; d < a.rank; ++d)
    if (a.sizes[d] != b.sizes[d]) return false;
  return true;
}

struct ChannelParams {
  const void* p[4];  // mean, var, weight (or null), bias (or null)
  int64_t stride[4];
};

// y = x * scale[c] + shift[c], scale = weight / sqrt(var + eps), shift = bias - mean * scale;
// element i is (channel, other) with the channel outer (channel_fastest: inner).
template <typename T, typename P>
__global__ void batch_norm_kernel(const T* x, T* y, ChannelParams cp, Dims<2> other, int64_t channels, int64_t xc,
                                  int64_t yc, bool channel_fastest, double eps) {
  using A = float_acc_t<T>;
  const int64_t total = other.numel * channels;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += step) {
    const int64_t c = channel_fastest ? i % channels : i / other.numel;
    const int64_t r = channel_fastest ? i / channels : i % other.numel;
    auto param = [&](int k, A fallback) {
      const P* p = static_cast<const P*>(cp.p[k]);
      return p == nullptr ? fallback : convert<A>(p[c * cp.stride[k]]);
    };
    const A scale = param(2, A(1)) / std::sqrt(param(1, A(1)) + static_cast<A>(eps));
    const A shift = param(3, A(0)) - param(0, A(0)) * scale;
    y[c * yc + other.offset(1, r)] = convert<T>(convert<A>(x[c * xc + other.offset(0, r)]) * scale + shift);
  }
}

}  // namespace

EMBER_CUDA_KERNEL(softmax) { return softmax_impl<false>(in, out, params); }
EMBER_CUDA_KERNEL(log_softmax) { return softmax_impl<true>(in, out, params); }

EMBER_CUDA_KERNEL(layer_norm) {
  const auto* p = std::get_if<NormParams>(&params);
  EMBER_CHECK(p != nullptr && in.size() == 3 && out.size() == 1, Status::InvalidArgument);
  const TensorView& x = in[0];
  const TensorView& y = out[0];
  const int nr = p->normalized_rank;
  EMBER_CHECK(nr >= 1 && nr <= x.rank && same_shape(x, y), Status::ShapeMismatch);
  EMBER_CHECK(y.dtype == x.dtype, Status::DTypeMismatch);
  const int outer_rank = x.rank - nr;
  for (int k = 1; k < 3; ++k) {
    if (in[k].data == nullptr) continue;
    EMBER_CHECK(in[k].dtype == x.dtype && in[k].rank == nr, Status::InvalidArgument);
    for (int d = 0; d < nr; ++d) EMBER_CHECK(in[k].sizes[d] == x.sizes[outer_rank + d], Status::ShapeMismatch);
  }
  return on_dtype<kCudaFloat>(x.dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if (x.numel() == 0) return Status::Ok;
    const TensorView w = as_trailing(in[1], x, nr), b = as_trailing(in[2], x, nr);
    const TensorView* v[4] = {&x, &y, &w, &b};
    const Dims<2> rows = make_dims<2>(v, [&](int d) { return d < outer_rank; });
    const Dims<4> inner = make_dims<4>(v, [&](int d) { return d >= outer_rank; });
    const bool rows_contiguous = rows.rank > 0 && rows.strides[0][rows.rank - 1] == 1 && inner.rank > 0 &&
                                 inner.strides[0][inner.rank - 1] != 1;
    const RowLayout l = choose_layout(rows.numel, inner.numel, rows_contiguous);
    EMBER_ASSIGN_OR_RETURN(Context * c, Context::get());
    auto* k = &layer_norm_kernel<T>;
    EMBER_LAUNCH(k, dim3(row_blocks(rows.numel, l)), dim3(kRowThreads), 0, c->stream(), x.ptr<const T>(),
                 y.ptr<T>(), in[1].ptr<const T>(), in[2].ptr<const T>(), rows, inner, l, p->eps);
    return Context::check(cudaGetLastError(), "layer_norm kernel");
  });
}

EMBER_CUDA_KERNEL(batch_norm) {
  const auto* p = std::get_if<NormParams>(&params);
  EMBER_CHECK(p != nullptr && in.size() == 5 && out.size() == 1, Status::InvalidArgument);
  const TensorView& x = in[0];
  const TensorView& y = out[0];
  EMBER_CHECK(x.rank >= 2 && same_shape(x, y), Status::ShapeMismatch);
  EMBER_CHECK(y.dtype == x.dtype, Status::DTypeMismatch);
  EMBER_CHECK(in[1].data != nullptr && in[2].data != nullptr, Status::InvalidArgument);
  const int64_t channels = x.sizes[1];
  const DType pt = in[1].dtype;
  ChannelParams cp{};
  for (int k = 1; k < 5; ++k) {
    if (in[k].data == nullptr) continue;
    EMBER_CHECK(in[k].rank == 1 && in[k].sizes[0] == channels, Status::ShapeMismatch);
    // The statistics and affine parameters: x's dtype, or float32 (PyTorch's mixed 16-bit form).
    EMBER_CHECK(in[k].dtype == pt && (pt == x.dtype || pt == DType::Float32), Status::DTypeMismatch);
    cp.p[k - 1] = in[k].data;
    cp.stride[k - 1] = in[k].strides[0];
  }
  return on_dtype<kCudaFloat>(x.dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if (x.numel() == 0) return Status::Ok;
    const TensorView* v[2] = {&x, &y};
    const Dims<2> other = make_dims<2>(v, [](int d) { return d != 1; });
    const bool channel_fastest = x.strides[1] == 1 && channels > 1;
    EMBER_ASSIGN_OR_RETURN(Context * c, Context::get());
    auto launch = [&](auto* k) {
      EMBER_LAUNCH(k, dim3(blocks_for(x.numel())), dim3(kBlock), 0, c->stream(), x.ptr<const T>(), y.ptr<T>(), cp,
                   other, channels, x.strides[1], y.strides[1], channel_fastest, p->eps);
      return Context::check(cudaGetLastError(), "batch_norm kernel");
    };
    if (pt == x.dtype) return launch(&batch_norm_kernel<T, T>);
    return launch(&batch_norm_kernel<T, float>);
  });
}

}  // namespace ember::cuda
