// What kernels/cuda's sources include for the CUDA runtime: the toolkit's
// headers when built for a GPU (--config=cuda, nvcc), or the host emulation
// (kernels/cuda/emu) for //kernels/cuda:emu, which the tests use here.
#pragma once

#if defined(EMBER_CUDA_EMU)
#include "kernels/cuda/emu/cuda_emu.h"
#else
#include <cuda_runtime.h>
// kernel<<<grid, block, shared, stream>>>(args...), spelled so the emulation can run it.
#define EMBER_LAUNCH(kernel, grid, block, shared, stream, ...) kernel<<<grid, block, shared, stream>>>(__VA_ARGS__)
#define EMBER_DYNAMIC_SHARED(T, name) \
  extern __shared__ unsigned char ember_dynamic_shared_[]; \
  T* name = reinterpret_cast<T*>(ember_dynamic_shared_)
#endif

#include <cstdint>

namespace ember::cuda {

constexpr int kBlock = 256;  // threads per block of the elementwise kernels

// Blocks for n threads of kBlock (at least 1; capped: the kernels loop).
inline unsigned blocks_for(int64_t n, int block = kBlock) {
  const int64_t b = (n + block - 1) / block;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 65535 * 8 ? 65535 * 8 : b));
}

}  // namespace ember::cuda
