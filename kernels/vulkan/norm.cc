// Softmax, LogSoftmax, LayerNorm and BatchNorm (inference form) on Vulkan,
// float32 and float16 (where the device has shaderFloat16 and 16-bit
// storage; BatchNorm also takes float32 statistics for float16 x), computed
// in float32 (the reference computes in double). x and y
// take any strides (their dims are merged where both allow, up to 6 left);
// LayerNorm's weight/bias and BatchNorm's per-channel vectors must be
// contiguous (they are parameters, allocated so).
#include <string>

#include "kernels/vulkan/dispatch.h"
#include "kernels/vulkan/vk_kernels.h"

namespace ember::vk {
namespace {

constexpr int kDims = 6;  // merged dims the shaders take

// Dims with two stride sets (x and y), size-1 dims dropped, a dim merged into
// the one before it when both strides step exactly over it.
struct Dims2 {
  int rank = 0;
  int64_t size[kMaxRank] = {}, a[kMaxRank] = {}, b[kMaxRank] = {};
  void add(int64_t n, int64_t sa, int64_t sb) {
    if (n == 1) return;
    if (rank > 0 && a[rank - 1] == sa * n && b[rank - 1] == sb * n) {
      size[rank - 1] *= n;
      a[rank - 1] = sa;
      b[rank - 1] = sb;
      return;
    }
    size[rank] = n;
    a[rank] = sa;
    b[rank++] = sb;
  }
  // Copies into the shader's arrays; false (with why) when there are too many.
  bool put(const char* op, uint32_t* rank_out, uint32_t* sizes, uint32_t* as, uint32_t* bs) const {
    if (rank > kDims) {
      Context::set_why(std::string(op) + " on vulkan: the strides leave more than 6 dims that cannot be merged");
      return false;
    }
    *rank_out = static_cast<uint32_t>(rank);
    for (int d = 0; d < rank; ++d) {
      sizes[d] = static_cast<uint32_t>(size[d]);
      as[d] = static_cast<uint32_t>(a[d]);
      bs[d] = static_cast<uint32_t>(b[d]);
    }
    return true;
  }
};

bool same_shape(const TensorView& a, const TensorView& b) {
  if (a.rank != b.rank) return false;
  for (int d = 0; d < a.rank; ++d) {
    if (a.sizes[d] != b.sizes[d]) return false;
  }
  return true;
}

// Every present view has x's dtype, float32 or float16.
bool same_float(const char* op, const TensorView& x, std::initializer_list<const TensorView*> views) {
  bool ok = x.dtype == DType::Float32 || x.dtype == DType::Float16;
  for (const TensorView* v : views) ok = ok && (v->data == nullptr || v->dtype == x.dtype);
  if (!ok) Context::set_why(std::string(op) + " on vulkan: float32 or float16, one dtype for every tensor");
  return ok;
}

bool too_large(const char* op, int64_t n) {
  if (n < (int64_t{1} << 32)) return false;
  Context::set_why(std::string(op) + " on vulkan: more than 2^32 elements");
  return true;
}

// A 1-D per-channel vector the shaders read contiguously (or absent).
bool dense_vector(const char* op, const TensorView& v) {
  if (v.data == nullptr || v.is_contiguous()) return true;
  Context::set_why(std::string(op) + " on vulkan: weight, bias and running statistics must be contiguous");
  return false;
}

struct SoftmaxPush {
  uint32_t x_first, y_first;
  uint32_t n, xs, ys;
  uint32_t rows;
  uint32_t rank;
  uint32_t log_softmax;
  uint32_t serial;
  uint32_t size[kDims], x_stride[kDims], y_stride[kDims];
};
static_assert(sizeof(SoftmaxPush) == 108, "mirrors the push block of shaders/softmax.comp");

Status softmax_impl(Span<const TensorView> in, Span<TensorView> out, const OpParams& params, bool log) {
  const char* name = log ? "log_softmax" : "softmax";
  const auto* p = std::get_if<SoftmaxParams>(&params);
  if (p == nullptr || in.size() != 1 || out.size() != 1) return Status::InvalidArgument;
  const TensorView& x = in[0];
  const TensorView& y = out[0];
  if (!same_float(name, x, {&y})) return Status::DTypeMismatch;
  const bool half = x.dtype == DType::Float16;
  if (half && !float16_supported(name)) return Status::NotSupported;
  if (!same_shape(x, y)) return Status::ShapeMismatch;
  const int dim = p->dim;
  if (x.rank == 0 ? !(dim == 0 || dim == -1) : !(dim >= 0 && dim < x.rank)) return Status::InvalidArgument;
  if (x.numel() == 0) return Status::Ok;
  if (too_large(name, x.numel())) return Status::NotSupported;
  SoftmaxPush push{};
  push.n = x.rank == 0 ? 1 : static_cast<uint32_t>(x.sizes[dim]);
  push.xs = x.rank == 0 ? 0 : static_cast<uint32_t>(x.strides[dim]);
  push.ys = y.rank == 0 ? 0 : static_cast<uint32_t>(y.strides[dim]);
  push.log_softmax = log ? 1 : 0;
  Dims2 g;
  int64_t rows = 1;
  for (int d = 0; d < x.rank; ++d) {
    if (d == dim) continue;
    g.add(x.sizes[d], x.strides[d], y.strides[d]);
    rows *= x.sizes[d];
  }
  if (!g.put(name, &push.rank, push.size, push.x_stride, push.y_stride)) return Status::NotSupported;
  push.rows = static_cast<uint32_t>(rows);
  // Serial mode (one invocation per row) when the other dims are the
  // contiguous ones (a softmax over NCHW's channels): neighbouring
  // invocations read neighbouring elements.
  const bool serial = g.rank > 0 && g.a[g.rank - 1] == 1 && push.xs != 1 && rows >= 256 && push.n <= 16384;
  push.serial = serial ? 1 : 0;
  Dispatch dsp(half ? shaders::softmax_f16 : shaders::softmax);
  push.x_first = dsp.bind(x);
  push.y_first = dsp.bind(y);
  if (serial) {
    const Grid gr = grid(rows, 64);
    return dsp.run(push, gr.x, gr.y, 1, {64});
  }
  const Grid gr = grid(rows, 1);
  return dsp.run(push, gr.x, gr.y, 1, {reduction_group_size(push.n)});
}

struct LayerNormPush {
  uint32_t x_first, w_first, b_first, y_first;
  uint32_t n, rows;
  uint32_t flags;
  float eps;
  uint32_t rank;
  uint32_t size[kDims], x_stride[kDims], y_stride[kDims];
};
static_assert(sizeof(LayerNormPush) == 108, "mirrors the push block of shaders/layer_norm.comp");

struct BatchNormPush {
  uint32_t x_first, m_first, v_first, w_first, b_first, y_first;
  uint32_t total, channels, inner;
  uint32_t flags;
  float eps;
  uint32_t rank;
  uint32_t size[kDims], x_stride[kDims], y_stride[kDims];
};
static_assert(sizeof(BatchNormPush) == 120, "mirrors the push block of shaders/batch_norm.comp");

}  // namespace

Status softmax(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  return softmax_impl(in, out, params, /*log=*/false);
}

Status log_softmax(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  return softmax_impl(in, out, params, /*log=*/true);
}

Status layer_norm(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  const auto* p = std::get_if<NormParams>(&params);
  if (p == nullptr || in.size() != 3 || out.size() != 1) return Status::InvalidArgument;
  const TensorView& x = in[0];
  const TensorView& w = in[1];
  const TensorView& b = in[2];
  const TensorView& y = out[0];
  const int nr = p->normalized_rank;
  if (nr < 1 || nr > x.rank || !same_shape(x, y)) return Status::ShapeMismatch;
  if (!same_float("layer_norm", x, {&w, &b, &y})) return Status::DTypeMismatch;
  const bool half = x.dtype == DType::Float16;
  if (half && !float16_supported("layer_norm")) return Status::NotSupported;
  int64_t n = 1;
  for (int d = x.rank - nr; d < x.rank; ++d) n *= x.sizes[d];
  for (const TensorView* v : {&w, &b}) {
    if (v->data != nullptr && v->numel() != n) return Status::ShapeMismatch;
    if (!dense_vector("layer_norm", *v)) return Status::NotSupported;
  }
  if (x.numel() == 0) return Status::Ok;
  if (too_large("layer_norm", x.numel())) return Status::NotSupported;
  LayerNormPush push{};
  Dims2 g;
  for (int d = 0; d < x.rank; ++d) g.add(x.sizes[d], x.strides[d], y.strides[d]);
  if (!g.put("layer_norm", &push.rank, push.size, push.x_stride, push.y_stride)) return Status::NotSupported;
  push.n = static_cast<uint32_t>(n);
  push.rows = static_cast<uint32_t>(x.numel() / n);
  push.flags = (w.data != nullptr ? 1u : 0u) | (b.data != nullptr ? 2u : 0u);
  push.eps = static_cast<float>(p->eps);
  Dispatch dsp(half ? shaders::layer_norm_f16 : shaders::layer_norm);
  push.x_first = dsp.bind(x);
  push.w_first = dsp.bind_or(w, x);  // absent: x stands in, never read
  push.b_first = dsp.bind_or(b, x);
  push.y_first = dsp.bind(y);
  const Grid gr = grid(push.rows, 1);
  return dsp.run(push, gr.x, gr.y, 1, {reduction_group_size(n)});
}

Status batch_norm(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  const auto* p = std::get_if<NormParams>(&params);
  if (p == nullptr || in.size() != 5 || out.size() != 1) return Status::InvalidArgument;
  const TensorView& x = in[0];
  const TensorView& y = out[0];
  if (x.rank < 2 || !same_shape(x, y)) return Status::ShapeMismatch;
  if (in[1].data == nullptr || in[2].data == nullptr) return Status::InvalidArgument;
  // The statistics share x's dtype, or are all float32 for float16 x.
  const bool half = x.dtype == DType::Float16;
  const bool mixed = half && in[1].dtype == DType::Float32;
  if (!same_float("batch_norm", x, {&y}) ||
      !same_float("batch_norm", mixed ? in[1] : x, {&in[1], &in[2], &in[3], &in[4]})) {
    return Status::DTypeMismatch;
  }
  if (half && !float16_supported("batch_norm")) return Status::NotSupported;
  const int64_t channels = x.sizes[1];
  for (size_t k = 1; k < 5; ++k) {
    if (in[k].data == nullptr) continue;
    if (in[k].rank != 1 || in[k].sizes[0] != channels) return Status::ShapeMismatch;
    if (!dense_vector("batch_norm", in[k])) return Status::NotSupported;
  }
  if (x.numel() == 0) return Status::Ok;
  if (too_large("batch_norm", x.numel())) return Status::NotSupported;
  BatchNormPush push{};
  Dims2 g;
  for (int d = 0; d < x.rank; ++d) g.add(x.sizes[d], x.strides[d], y.strides[d]);
  if (!g.put("batch_norm", &push.rank, push.size, push.x_stride, push.y_stride)) return Status::NotSupported;
  int64_t inner = 1;
  for (int d = 2; d < x.rank; ++d) inner *= x.sizes[d];
  push.total = static_cast<uint32_t>(x.numel());
  push.channels = static_cast<uint32_t>(channels);
  push.inner = static_cast<uint32_t>(inner);
  push.flags = (in[3].data != nullptr ? 1u : 0u) | (in[4].data != nullptr ? 2u : 0u);
  push.eps = static_cast<float>(p->eps);
  Dispatch dsp(mixed ? shaders::batch_norm_f16_f32 : half ? shaders::batch_norm_f16 : shaders::batch_norm);
  push.x_first = dsp.bind(x);
  push.m_first = dsp.bind(in[1]);
  push.v_first = dsp.bind(in[2]);
  push.w_first = dsp.bind_or(in[3], in[1]);  // absent: the mean stands in, never read
  push.b_first = dsp.bind_or(in[4], in[1]);
  push.y_first = dsp.bind(y);
  const Grid gr = grid(x.numel(), 256);
  return dsp.run(push, gr.x, gr.y, 1, {256});
}

}  // namespace ember::vk
