// Strided elementwise launches for kernels/cuda's sources: N operands of one
// shape (inputs broadcast by stride-0 dims), merged into the fewest dims as
// the reference loops do (kernels/ref/loops.h), one thread per element.
#pragma once

#include <array>
#include <cstdint>

#include "kernels/cuda/context.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/cuda_rt.h"
#include "kernels/ref/loops.h"
#include "runtime/backend/backend.h"

namespace ember::cuda {

// Runs `body(TypeTag<T>)` for a dtype of kTypes; NotSupported for the others
// (checked on the dtype itself: dispatch_dtype passes the storage types as uint8_t).
template <DTypeSet kTypes, typename Body>
Status on_dtype(DType dtype, Body&& body) {
  Status status = Status::NotSupported;
  if ((kTypes & dtype_bit(dtype)) == 0) return status;
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr ((kTypes & dtype_bit(dtype_of<T>::value)) != 0) status = body(tag);
  });
  return status;
}

template <size_t N>
struct Pointers {
  char* p[N];
};

template <size_t N, typename F>
__global__ void strided_kernel(ref::StridedGeometry<N> g, Pointers<N> base, int64_t n, F f) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    char* p[N];
    for (size_t k = 0; k < N; ++k) p[k] = base.p[k];
    int64_t rest = i;
    for (int d = g.rank - 1; d >= 0; --d) {
      const int64_t idx = rest % g.sizes[d];
      rest /= g.sizes[d];
      for (size_t k = 0; k < N; ++k) p[k] += idx * g.strides[k][d];
    }
    f(p);
  }
}

// f(char* p[N]) once per element, p[k] at operand k's element.
template <size_t N, typename F>
Status for_each_element(const std::array<const TensorView*, N>& views, F f, const char* what) {
  const int64_t n = views[0]->numel();
  if (n == 0) return Status::Ok;
  EMBER_ASSIGN_OR_RETURN(Context * c, Context::get());
  const ref::StridedGeometry<N> g = ref::make_geometry<N>(views);
  Pointers<N> base;
  for (size_t k = 0; k < N; ++k) base.p[k] = static_cast<char*>(views[k]->data);
  auto* kernel = &strided_kernel<N, F>;
  EMBER_LAUNCH(kernel, dim3(blocks_for(n)), dim3(kBlock), 0, c->stream(), g, base, n, f);
  return Context::check(cudaGetLastError(), what);
}

// The kernel table's signature, for the definitions in kernels/cuda/*.cu.cc.
#define EMBER_CUDA_KERNEL(name) \
  Status name(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params)

}  // namespace ember::cuda
