// Embedding on Vulkan: out[i..., :] = weight[indices[i...], :] for 32-bit
// weights (float32, int32), 16-bit ones (float16, where the device has
// shaderFloat16 and 16-bit storage) and int32/int64 indices of any shape and strides;
// the output is contiguous (the front-end allocates it). The kernel cannot
// fail per element: an index outside [0, V) writes a row of zeros. The
// front-end (runtime/ops/embedding.cc) rejects such indices before dispatch.
#include <string>

#include "kernels/vulkan/dispatch.h"
#include "kernels/vulkan/vk_kernels.h"

namespace ember::vk {
namespace {

constexpr int kDims = 6;

struct EmbeddingPush {
  uint32_t w_first, i_first, y_first;
  uint32_t rows, D, V;
  uint32_t index64;
  uint32_t rank;
  uint32_t w_stride0, w_stride1;
  uint32_t size[kDims], stride[kDims];
};
static_assert(sizeof(EmbeddingPush) == 88, "mirrors the push block of shaders/embedding.comp");

}  // namespace

Status embedding(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams&) {
  if (in.size() != 2 || out.size() != 1) return Status::InvalidArgument;
  const TensorView& weight = in[0];
  const TensorView& indices = in[1];
  const TensorView& y = out[0];
  if (weight.rank != 2 || y.rank != indices.rank + 1 || y.dtype != weight.dtype) return Status::InvalidArgument;
  if (indices.dtype != DType::Int32 && indices.dtype != DType::Int64) return Status::DTypeMismatch;
  const size_t word = element_size(weight.dtype);
  if (word != 4 && word != 2) {
    Context::set_why("embedding on vulkan: 16- and 32-bit weights only");
    return Status::DTypeMismatch;
  }
  if (word == 2 && !float16_supported("embedding")) return Status::NotSupported;
  for (int d = 0; d < indices.rank; ++d) {
    if (y.sizes[d] != indices.sizes[d]) return Status::ShapeMismatch;
  }
  if (y.sizes[indices.rank] != weight.sizes[1]) return Status::ShapeMismatch;
  if (!y.is_contiguous()) {
    Context::set_why("embedding on vulkan writes a contiguous output only");
    return Status::NotSupported;
  }
  if (y.numel() == 0) return Status::Ok;
  if (y.numel() >= (int64_t{1} << 32) || weight.numel() >= (int64_t{1} << 32)) {
    Context::set_why("embedding on vulkan: more than 2^32 elements");
    return Status::NotSupported;
  }
  EmbeddingPush push{};
  // The index dims, size-1 dims dropped, merged where the strides allow.
  int rank = 0;
  int64_t size[kMaxRank] = {}, stride[kMaxRank] = {};
  for (int d = 0; d < indices.rank; ++d) {
    const int64_t n = indices.sizes[d], s = indices.strides[d];
    if (n == 1) continue;
    if (rank > 0 && stride[rank - 1] == s * n) {
      size[rank - 1] *= n;
      stride[rank - 1] = s;
    } else {
      size[rank] = n;
      stride[rank++] = s;
    }
  }
  if (rank > kDims) {
    Context::set_why("embedding on vulkan: the indices' strides leave more than 6 dims that cannot be merged");
    return Status::NotSupported;
  }
  push.rank = static_cast<uint32_t>(rank);
  for (int d = 0; d < rank; ++d) {
    push.size[d] = static_cast<uint32_t>(size[d]);
    push.stride[d] = static_cast<uint32_t>(stride[d]);
  }
  push.rows = static_cast<uint32_t>(indices.numel());
  push.D = static_cast<uint32_t>(weight.sizes[1]);
  push.V = static_cast<uint32_t>(weight.sizes[0]);
  push.index64 = indices.dtype == DType::Int64 ? 1 : 0;
  push.w_stride0 = static_cast<uint32_t>(weight.strides[0]);
  push.w_stride1 = static_cast<uint32_t>(weight.strides[1]);
  Dispatch dsp(word == 2 ? shaders::embedding_16 : shaders::embedding);
  push.w_first = dsp.bind(weight);
  push.i_first = dsp.bind(indices);
  push.y_first = dsp.bind(y);
  const Grid g = grid(y.numel(), 256);
  return dsp.run(push, g.x, g.y, 1, {256});
}

}  // namespace ember::vk

namespace ember::vk {
namespace {

struct EmbeddingBackwardPush {
  uint32_t g_first, i_first, gw_first;
  uint32_t V, D, n;
  uint32_t index64;
  uint32_t rank;
  uint32_t gw_stride0, gw_stride1, g_step;
  uint32_t size[kDims], istride[kDims], gstride[kDims];
};
static_assert(sizeof(EmbeddingBackwardPush) == 116, "mirrors the push block of shaders/embedding_backward_body.glsl");

}  // namespace

// EmbeddingBackward: grad_weight [V, D] (zeroed by the front-end, any
// strides) += grad [*indices.shape, D] rows at their indices, float32 and
// float16, one invocation per grad_weight element looping over the indices
// (shaders/embedding_backward_body.glsl; no atomics: deterministic, in the
// reference's order). The indices are not read back: one outside [0, V) adds
// nowhere (the forward's front-end rejected it).
Status embedding_backward(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams&) {
  if (in.size() != 2 || out.size() != 1) return Status::InvalidArgument;
  const TensorView& grad = in[0];
  const TensorView& indices = in[1];
  const TensorView& gw = out[0];
  if (gw.rank != 2 || grad.rank != indices.rank + 1 || gw.dtype != grad.dtype) return Status::InvalidArgument;
  if (indices.dtype != DType::Int32 && indices.dtype != DType::Int64) return Status::DTypeMismatch;
  for (int d = 0; d < indices.rank; ++d) {
    if (grad.sizes[d] != indices.sizes[d]) return Status::ShapeMismatch;
  }
  if (grad.sizes[indices.rank] != gw.sizes[1]) return Status::ShapeMismatch;
  const bool half = gw.dtype == DType::Float16;
  if (gw.dtype != DType::Float32 && !half) {
    Context::set_why("embedding backward on vulkan: float32 and float16 only");
    return Status::DTypeMismatch;
  }
  if (half && !float16_supported("embedding backward")) return Status::NotSupported;
  if (indices.numel() == 0 || gw.numel() == 0) return Status::Ok;
  if (gw.numel() >= (int64_t{1} << 32) || extent(gw) >= (int64_t{1} << 32) || extent(grad) >= (int64_t{1} << 32) ||
      extent(indices) >= (int64_t{1} << 31)) {
    Context::set_why("embedding backward on vulkan: more than 2^32 elements");
    return Status::NotSupported;
  }
  // The index dims, size-1 dims dropped, merged where both strides allow.
  EmbeddingBackwardPush push{};
  int rank = 0;
  for (int d = 0; d < indices.rank; ++d) {
    const int64_t n = indices.sizes[d], is = indices.strides[d], gs = grad.strides[d];
    if (n == 1) continue;
    if (rank > 0 && push.istride[rank - 1] == is * n && push.gstride[rank - 1] == gs * n) {
      push.size[rank - 1] *= static_cast<uint32_t>(n);
      push.istride[rank - 1] = static_cast<uint32_t>(is);
      push.gstride[rank - 1] = static_cast<uint32_t>(gs);
      continue;
    }
    if (rank == kDims) {
      Context::set_why("embedding backward on vulkan: the strides leave more than 6 dims that cannot be merged");
      return Status::NotSupported;
    }
    push.size[rank] = static_cast<uint32_t>(n);
    push.istride[rank] = static_cast<uint32_t>(is);
    push.gstride[rank++] = static_cast<uint32_t>(gs);
  }
  push.rank = static_cast<uint32_t>(rank);
  push.V = static_cast<uint32_t>(gw.sizes[0]);
  push.D = static_cast<uint32_t>(gw.sizes[1]);
  push.n = static_cast<uint32_t>(indices.numel());
  push.index64 = indices.dtype == DType::Int64 ? 1 : 0;
  push.gw_stride0 = static_cast<uint32_t>(gw.strides[0]);
  push.gw_stride1 = static_cast<uint32_t>(gw.strides[1]);
  push.g_step = static_cast<uint32_t>(grad.strides[indices.rank]);
  Dispatch dsp(half ? shaders::embedding_backward_f16 : shaders::embedding_backward);
  push.g_first = dsp.bind(grad);
  push.i_first = dsp.bind(indices);
  push.gw_first = dsp.bind(gw);
  const Grid g = grid(gw.numel(), 256);
  return dsp.run(push, g.x, g.y, 1, {256});
}

}  // namespace ember::vk
