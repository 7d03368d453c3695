// What the spatial and indexing kernels (conv, pool, index *.cu.cc) share:
// dtype dispatch over a DTypeSet, a strided N-d view for device code, the
// integer index read, and atomic accumulation for the backward kernels.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/cuda/context.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/cuda_rt.h"
#include "kernels/cuda/launch.h"
#include "runtime/backend/backend.h"
#include "runtime/tensor/convert.h"

namespace ember::cuda {

// A TensorView as device code reads it: sizes and element strides.
struct NdView {
  int rank = 0;
  int64_t sizes[kMaxRank] = {};
  int64_t strides[kMaxRank] = {};
};

inline NdView nd_view(const TensorView& v) {
  NdView r;
  r.rank = v.rank;
  for (int d = 0; d < v.rank; ++d) {
    r.sizes[d] = v.sizes[d];
    r.strides[d] = v.strides[d];
  }
  return r;
}

// The multi-index of linear (row-major) position i over sizes[0, rank).
__device__ inline void unravel(int64_t i, const int64_t* sizes, int rank, int64_t* at) {
  for (int d = rank - 1; d >= 0; --d) {
    at[d] = i % sizes[d];
    i /= sizes[d];
  }
}

__device__ inline int64_t offset_at(const NdView& v, const int64_t* at) {
  int64_t off = 0;
  for (int d = 0; d < v.rank; ++d) off += at[d] * v.strides[d];
  return off;
}

// An int32 or int64 index tensor's element at offset `off`.
__device__ inline int64_t read_index(const void* p, bool int64, int64_t off) {
  return int64 ? static_cast<const int64_t*>(p)[off] : static_cast<const int32_t*>(p)[off];
}

// Grid-stride loop bounds of the 1-D launches below.
__device__ inline int64_t thread_index() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ inline int64_t thread_count() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

// *p += v where threads collide (float and double: the hardware's atomics;
// the 16-bit floats accumulate in a float32 copy, see with_accumulator).
template <typename A>
__device__ inline void atomic_accumulate(A* p, A v) {
  static_assert(std::is_same_v<A, float> || std::is_same_v<A, double>, "float32/float64 accumulators only");
  atomicAdd(p, v);
}

// kernel<<<blocks_for(n), kBlock>>>(args...) on the context's stream: the 1-D
// grid-stride launches of these files (nothing for n == 0).
template <typename Kernel, typename... Args>
Status launch_1d(Kernel kernel, int64_t n, const char* what, Args... args) {
  if (n <= 0) return Status::Ok;
  EMBER_ASSIGN_OR_RETURN(Context * c, Context::get());
  EMBER_LAUNCH(kernel, dim3(blocks_for(n)), dim3(kBlock), 0, c->stream(), args...);
  return Context::check(cudaGetLastError(), what);
}

// The workspace of an "output zeroed, accumulated" backward kernel: a
// float32 copy of a 16-bit output (nothing for float32/float64).
inline size_t accumulator_bytes(const TensorView& out) {
  return element_size(out.dtype) == 2 ? (static_cast<size_t>(out.numel()) * sizeof(float) + 255) / 256 * 256 : 0;
}

// Runs body(acc) with the view the kernel accumulates into, of compute_t<T>:
// `out` itself for float32/float64; for the 16-bit floats a dense float32
// copy of it in ctx.scratch (accumulator_bytes), converted back into `out`
// after the body: sums in float32 and rounded once, as PyTorch's CUDA kernels.
template <typename T, typename Body>
Status with_accumulator(const KernelContext& ctx, const TensorView& out, Body&& body) {
  if constexpr (std::is_same_v<compute_t<T>, T>) {
    return body(out);
  } else {
    if (out.numel() == 0) return Status::Ok;
    EMBER_CHECK(ctx.scratch != nullptr && ctx.scratch_bytes >= accumulator_bytes(out), Status::InvalidArgument);
    TensorView acc = out;
    acc.data = ctx.scratch;
    acc.dtype = DType::Float32;
    int64_t step = 1;
    for (int d = out.rank - 1; d >= 0; --d) {
      acc.strides[d] = step;
      step *= out.sizes[d];
    }
    TensorView src = out, dst = acc;
    EMBER_TRY(copy(KernelContext{}, Span<const TensorView>(&src, 1), Span<TensorView>(&dst, 1), OpParams{}));
    EMBER_TRY(body(static_cast<const TensorView&>(acc)));
    src = acc;
    dst = out;
    return copy(KernelContext{}, Span<const TensorView>(&src, 1), Span<TensorView>(&dst, 1), OpParams{});
  }
}

}  // namespace ember::cuda
