// A host emulation of the part of the CUDA runtime ember's CUDA backend uses,
// so that kernels/cuda's kernels, allocator, streams and graphs run and are
// tested on machines without a GPU (//kernels/cuda:emu, the tests' CUDA).
//
// Device memory is host memory. A launch runs its blocks one after another on
// the calling thread; the threads of a block run as fibers (ucontext) that
// switch at __syncthreads() and at the warp primitives, so block-level
// reductions with shared memory and warp shuffles run as written. What it
// cannot show: races between threads (the schedule is one of the legal
// ones), memory-model and occupancy effects, the arithmetic of the GPU's
// intrinsics (expf here is the C library's). The GPU check
// (tools/cuda_device_check.sh) covers those on a real device.
//
// Knobs for tests: EMBER_CUDA_EMU_DEVICES=N (0: "no CUDA-capable device"),
// EMBER_CUDA_EMU_NO_DRIVER=1 (the error a machine without a driver gives),
// EMBER_CUDA_EMU_MEMORY=BYTES (device memory size; allocations past it fail).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cmath>  // glibc declares __expf and __logf, as CUDA has them
#include <cstring>
#include <functional>
#include <tuple>
#include <utility>

// --- the language extensions -----------------------------------------------------
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static thread_local

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct uint3 {
  unsigned x = 0, y = 0, z = 0;
};

extern thread_local uint3 threadIdx;
extern thread_local uint3 blockIdx;
extern thread_local dim3 blockDim;
extern thread_local dim3 gridDim;
constexpr int warpSize = 32;

// --- runtime types ---------------------------------------------------------------
enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInitializationError = 3,
  cudaErrorInsufficientDriver = 35,
  cudaErrorNoDevice = 100,
  cudaErrorInvalidDevice = 101,
  cudaErrorStreamCaptureUnsupported = 900,
  cudaErrorLaunchFailure = 719,
};
enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};
enum cudaStreamCaptureMode {
  cudaStreamCaptureModeGlobal = 0,
  cudaStreamCaptureModeThreadLocal = 1,
  cudaStreamCaptureModeRelaxed = 2,
};
constexpr unsigned cudaStreamNonBlocking = 1;
constexpr unsigned cudaHostAllocDefault = 0;

struct CUstream_st;
using cudaStream_t = CUstream_st*;
struct CUgraph_st;
using cudaGraph_t = CUgraph_st*;
struct CUgraphExec_st;
using cudaGraphExec_t = CUgraphExec_st*;
struct CUevent_st;
using cudaEvent_t = CUevent_st*;

struct cudaDeviceProp {
  char name[256];
  size_t totalGlobalMem;
  int major, minor;
  int multiProcessorCount;
  int warpSize;
  int maxThreadsPerBlock;
  size_t sharedMemPerBlock;
  int memoryPoolsSupported;
};

const char* cudaGetErrorString(cudaError_t e);
const char* cudaGetErrorName(cudaError_t e);
cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();
cudaError_t cudaDriverGetVersion(int* version);
cudaError_t cudaRuntimeGetVersion(int* version);
cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDevice(int* device);
cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes);
cudaError_t cudaMalloc(void** ptr, size_t bytes);
cudaError_t cudaFree(void* ptr);
cudaError_t cudaMallocHost(void** ptr, size_t bytes);
cudaError_t cudaFreeHost(void* ptr);
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t s);
cudaError_t cudaMemsetAsync(void* dst, int value, size_t bytes, cudaStream_t s);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaDeviceSynchronize();
cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t* graph);
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags);
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec);
cudaError_t cudaGraphDestroy(cudaGraph_t graph);
cudaError_t cudaEventCreate(cudaEvent_t* e);
cudaError_t cudaEventDestroy(cudaEvent_t e);
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s);
cudaError_t cudaEventSynchronize(cudaEvent_t e);
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end);

namespace ember::cuda_emu {

// Runs `body` once per thread of every block (see the file comment). Called
// by the launch macro; a stream being captured records the launch instead.
void launch(dim3 grid, dim3 block, size_t dynamic_shared, cudaStream_t stream, std::function<void()> body);
void* dynamic_shared();
void sync_block();
void sync_warp();
// Warp exchange: every live lane of the warp publishes `bits` and reads lane `src`'s.
uint64_t exchange(uint64_t bits, int src_lane);
int lane_id();

template <typename T>
T shfl(T v, int src_lane) {
  static_assert(sizeof(T) <= 8, "shuffle of a value over 8 bytes");
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  bits = exchange(bits, src_lane);
  T r;
  std::memcpy(&r, &bits, sizeof(T));
  return r;
}

}  // namespace ember::cuda_emu

// --- device functions ------------------------------------------------------------
inline void __syncthreads() { ember::cuda_emu::sync_block(); }
inline void __syncwarp(unsigned = 0xffffffffu) { ember::cuda_emu::sync_warp(); }
template <typename T>
T __shfl_sync(unsigned, T v, int src, int width = 32) {
  const int lane = ember::cuda_emu::lane_id();
  return ember::cuda_emu::shfl(v, (lane / width) * width + src % width);
}
template <typename T>
T __shfl_xor_sync(unsigned, T v, int mask, int width = 32) {
  const int lane = ember::cuda_emu::lane_id();
  const int dst = lane ^ mask;
  return ember::cuda_emu::shfl(v, dst / width == lane / width ? dst : lane);
}
template <typename T>
T __shfl_down_sync(unsigned, T v, unsigned delta, int width = 32) {
  const int lane = ember::cuda_emu::lane_id();
  const int src = lane + static_cast<int>(delta);
  return ember::cuda_emu::shfl(v, src / width == lane / width ? src : lane);
}
template <typename T>
T __ldg(const T* p) {
  return *p;
}
// Atomics: blocks and threads never run at the same time here.
template <typename T>
T atomicAdd(T* p, T v) {
  const T old = *p;
  *p = static_cast<T>(old + v);
  return old;
}
template <typename T>
T atomicMax(T* p, T v) {
  const T old = *p;
  if (v > old) *p = v;
  return old;
}
template <typename T>
T atomicCAS(T* p, T compare, T v) {
  const T old = *p;
  if (old == compare) *p = v;
  return old;
}
inline float rsqrtf(float x) { return 1.0f / __builtin_sqrtf(x); }
inline float __fdividef(float a, float b) { return a / b; }
// Round-to-nearest products and sums that are never contracted into an FMA.
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __dadd_rn(double a, double b) { return a + b; }
inline unsigned __float_as_uint(float f) {
  unsigned u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Launch: kernel<<<grid, block, shared, stream>>>(args...) on a GPU.
#define EMBER_LAUNCH(kernel, grid, block, shared, stream, ...) \
  ::ember::cuda_emu::launch(grid, block, shared, stream, [=] { kernel(__VA_ARGS__); })
// extern __shared__ T name[] on a GPU.
#define EMBER_DYNAMIC_SHARED(T, name) T* name = static_cast<T*>(::ember::cuda_emu::dynamic_shared())
