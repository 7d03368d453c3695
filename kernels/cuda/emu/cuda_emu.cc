// The host emulation of the CUDA runtime (cuda_emu.h): memory, streams,
// graphs as recorded closures, and launches as fibers.
#include "kernels/cuda/emu/cuda_emu.h"

#include <ucontext.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

thread_local uint3 threadIdx;
thread_local uint3 blockIdx;
thread_local dim3 blockDim;
thread_local dim3 gridDim;

struct CUstream_st {
  bool capturing = false;
  std::vector<std::function<void()>>* capture = nullptr;
};
struct CUgraph_st {
  std::vector<std::function<void()>> steps;
};
struct CUgraphExec_st {
  std::vector<std::function<void()>> steps;
};
struct CUevent_st {
  int unused = 0;
};

namespace ember::cuda_emu {
namespace {

thread_local cudaError_t tls_last_error = cudaSuccess;

cudaError_t fail(cudaError_t e) {
  tls_last_error = e;
  return e;
}

// Device state: the knobs are read once; allocations are counted against the
// emulated memory size.
struct DeviceState {
  std::mutex mu;
  int devices = 1;
  bool no_driver = false;
  size_t memory = size_t{16} << 30;
  size_t used = 0;
  std::map<void*, size_t> allocations;
  int current = 0;
};

DeviceState& state() {
  static DeviceState* s = [] {
    auto* d = new DeviceState;
    if (const char* n = std::getenv("EMBER_CUDA_EMU_DEVICES")) d->devices = std::atoi(n);
    if (const char* n = std::getenv("EMBER_CUDA_EMU_NO_DRIVER")) d->no_driver = std::atoi(n) != 0;
    if (const char* n = std::getenv("EMBER_CUDA_EMU_MEMORY")) d->memory = std::strtoull(n, nullptr, 10);
    return d;
  }();
  return *s;
}

cudaError_t check_device() {
  DeviceState& s = state();
  if (s.no_driver) return fail(cudaErrorInsufficientDriver);
  if (s.devices <= 0) return fail(cudaErrorNoDevice);
  return cudaSuccess;
}

// --- fibers ----------------------------------------------------------------------
constexpr size_t kStackBytes = 64 * 1024;

enum class FiberState : uint8_t { Ready, AtBlockBarrier, AtWarpBarrier, Done };

struct Fiber {
  ucontext_t context;
  FiberState state = FiberState::Ready;
  uint3 index;
};

struct Block {
  ucontext_t scheduler;
  std::vector<Fiber> fibers;
  std::vector<uint64_t> exchange;
  int current = 0;
  const std::function<void()>* body = nullptr;
  std::vector<std::unique_ptr<char[]>> stacks;
  std::vector<unsigned char> dynamic_shared;
};

thread_local Block* tls_block = nullptr;

void fiber_main() {
  Block& b = *tls_block;
  (*b.body)();
  b.fibers[static_cast<size_t>(b.current)].state = FiberState::Done;
  swapcontext(&b.fibers[static_cast<size_t>(b.current)].context, &b.scheduler);
}

void wait_at(FiberState barrier) {
  Block& b = *tls_block;
  Fiber& f = b.fibers[static_cast<size_t>(b.current)];
  f.state = barrier;
  swapcontext(&f.context, &b.scheduler);
}

// Releases the barriers every waiting thread has reached: a warp barrier when
// every live thread of that warp waits at one, the block barrier when every
// live thread waits at it. False when nothing can move (a divergent barrier).
bool release_barriers(Block& b) {
  bool released = false;
  const size_t n = b.fibers.size();
  for (size_t w = 0; w < n; w += 32) {
    bool all = true, any = false;
    for (size_t t = w; t < std::min(n, w + 32); ++t) {
      const FiberState s = b.fibers[t].state;
      if (s == FiberState::Done) continue;
      any = true;
      all = all && s == FiberState::AtWarpBarrier;
    }
    if (any && all) {
      for (size_t t = w; t < std::min(n, w + 32); ++t)
        if (b.fibers[t].state == FiberState::AtWarpBarrier) b.fibers[t].state = FiberState::Ready;
      released = true;
    }
  }
  if (released) return true;
  bool all = true;
  for (const Fiber& f : b.fibers) all = all && (f.state == FiberState::Done || f.state == FiberState::AtBlockBarrier);
  if (!all) return false;
  for (Fiber& f : b.fibers)
    if (f.state == FiberState::AtBlockBarrier) f.state = FiberState::Ready;
  return true;
}

void run_block(Block& b) {
  const size_t n = b.fibers.size();
  for (size_t t = 0; t < n; ++t) {
    Fiber& f = b.fibers[t];
    f.state = FiberState::Ready;
    getcontext(&f.context);
    f.context.uc_stack.ss_sp = b.stacks[t].get();
    f.context.uc_stack.ss_size = kStackBytes;
    f.context.uc_link = nullptr;
    makecontext(&f.context, fiber_main, 0);
  }
  for (;;) {
    bool ran = false;
    for (size_t t = 0; t < n; ++t) {
      if (b.fibers[t].state != FiberState::Ready) continue;
      b.current = static_cast<int>(t);
      threadIdx = b.fibers[t].index;
      swapcontext(&b.scheduler, &b.fibers[t].context);
      ran = true;
    }
    // Counted after the sweep (a local updated across swapcontext could be clobbered).
    if (std::all_of(b.fibers.begin(), b.fibers.end(), [](const Fiber& f) { return f.state == FiberState::Done; }))
      return;
    if (!ran && !release_barriers(b)) {
      std::fprintf(stderr, "cuda_emu: deadlock: threads of block (%u,%u,%u) wait at different barriers\n",
                   blockIdx.x, blockIdx.y, blockIdx.z);
      std::abort();
    }
  }
}

void run_grid(dim3 grid, dim3 block, size_t shared, const std::function<void()>& body) {
  const size_t threads = size_t{block.x} * block.y * block.z;
  Block b;
  b.body = &body;
  b.fibers.resize(threads);
  b.exchange.resize(threads);
  b.dynamic_shared.assign(shared + 16, 0);
  b.stacks.reserve(threads);
  for (size_t t = 0; t < threads; ++t) b.stacks.emplace_back(new char[kStackBytes]);
  size_t t = 0;
  for (unsigned z = 0; z < block.z; ++z)
    for (unsigned y = 0; y < block.y; ++y)
      for (unsigned x = 0; x < block.x; ++x) b.fibers[t++].index = uint3{x, y, z};
  Block* saved = tls_block;
  tls_block = &b;
  gridDim = grid;
  blockDim = block;
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) {
        blockIdx = uint3{x, y, z};
        run_block(b);
      }
  tls_block = saved;
}

}  // namespace

void launch(dim3 grid, dim3 block, size_t dynamic_shared, cudaStream_t stream, std::function<void()> body) {
  const size_t threads = size_t{block.x} * block.y * block.z;
  if (threads == 0 || threads > 1024 || grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.y > 65535 ||
      grid.z > 65535 || dynamic_shared > 227 * 1024) {
    tls_last_error = cudaErrorInvalidValue;  // "invalid configuration argument" on a GPU
    return;
  }
  if (stream != nullptr && stream->capturing) {
    stream->capture->push_back([=] { run_grid(grid, block, dynamic_shared, body); });
    return;
  }
  run_grid(grid, block, dynamic_shared, body);
}

void* dynamic_shared() { return tls_block->dynamic_shared.data(); }
void sync_block() { wait_at(FiberState::AtBlockBarrier); }
void sync_warp() { wait_at(FiberState::AtWarpBarrier); }
int lane_id() { return tls_block->current % 32; }

uint64_t exchange(uint64_t bits, int src_lane) {
  Block& b = *tls_block;
  const int me = b.current;
  b.exchange[static_cast<size_t>(me)] = bits;
  sync_warp();
  const int src = (me / 32) * 32 + src_lane % 32;
  const uint64_t r = src < static_cast<int>(b.exchange.size()) ? b.exchange[static_cast<size_t>(src)] : bits;
  sync_warp();
  return r;
}

}  // namespace ember::cuda_emu

using ember::cuda_emu::check_device;
using ember::cuda_emu::fail;
using ember::cuda_emu::state;

const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInitializationError: return "cudaErrorInitializationError";
    case cudaErrorInsufficientDriver: return "cudaErrorInsufficientDriver";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
  }
  return "cudaErrorUnknown";
}

// The CUDA runtime's own wording.
const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInitializationError: return "initialization error";
    case cudaErrorInsufficientDriver: return "CUDA driver version is insufficient for CUDA runtime version";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
  }
  return "unknown error";
}

cudaError_t cudaGetLastError() {
  const cudaError_t e = ember::cuda_emu::tls_last_error;
  ember::cuda_emu::tls_last_error = cudaSuccess;
  return e;
}
cudaError_t cudaPeekAtLastError() { return ember::cuda_emu::tls_last_error; }

cudaError_t cudaDriverGetVersion(int* version) {
  *version = state().no_driver ? 0 : 13000;
  return cudaSuccess;
}
cudaError_t cudaRuntimeGetVersion(int* version) {
  *version = 13000;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceCount(int* count) {
  *count = 0;
  if (const cudaError_t e = check_device()) return e;
  *count = state().devices;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (const cudaError_t e = check_device()) return e;
  if (device < 0 || device >= state().devices) return fail(cudaErrorInvalidDevice);
  std::memset(prop, 0, sizeof(*prop));
  std::snprintf(prop->name, sizeof(prop->name), "ember CUDA emulator %d", device);
  prop->totalGlobalMem = state().memory;
  prop->major = 9;
  prop->minor = 0;
  prop->multiProcessorCount = 4;
  prop->warpSize = 32;
  prop->maxThreadsPerBlock = 1024;
  prop->sharedMemPerBlock = 48 * 1024;
  prop->memoryPoolsSupported = 1;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) {
  if (const cudaError_t e = check_device()) return e;
  if (device < 0 || device >= state().devices) return fail(cudaErrorInvalidDevice);
  state().current = device;
  return cudaSuccess;
}
cudaError_t cudaGetDevice(int* device) {
  *device = state().current;
  return check_device();
}
cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  if (const cudaError_t e = check_device()) return e;
  std::lock_guard<std::mutex> lock(state().mu);
  *total_bytes = state().memory;
  *free_bytes = state().memory - state().used;
  return cudaSuccess;
}
cudaError_t cudaMalloc(void** ptr, size_t bytes) {
  *ptr = nullptr;
  if (const cudaError_t e = check_device()) return e;
  auto& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (bytes > s.memory - s.used) return fail(cudaErrorMemoryAllocation);
  void* p = std::aligned_alloc(256, (bytes + 255) / 256 * 256 + 256);
  if (p == nullptr) return fail(cudaErrorMemoryAllocation);
  s.used += bytes;
  s.allocations[p] = bytes;
  *ptr = p;
  return cudaSuccess;
}
cudaError_t cudaFree(void* ptr) {
  if (ptr == nullptr) return cudaSuccess;
  auto& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.allocations.find(ptr);
  if (it == s.allocations.end()) return fail(cudaErrorInvalidValue);
  s.used -= it->second;
  s.allocations.erase(it);
  std::free(ptr);
  return cudaSuccess;
}
cudaError_t cudaMallocHost(void** ptr, size_t bytes) {
  if (const cudaError_t e = check_device()) return e;
  *ptr = std::aligned_alloc(256, (bytes + 255) / 256 * 256 + 256);
  return *ptr != nullptr ? cudaSuccess : fail(cudaErrorMemoryAllocation);
}
cudaError_t cudaFreeHost(void* ptr) {
  std::free(ptr);
  return cudaSuccess;
}
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind) {
  if (const cudaError_t e = check_device()) return e;
  if (bytes != 0) std::memmove(dst, src, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t s) {
  if (s != nullptr && s->capturing) {
    s->capture->push_back([=] { std::memmove(dst, src, bytes); });
    return cudaSuccess;
  }
  return cudaMemcpy(dst, src, bytes, kind);
}
cudaError_t cudaMemsetAsync(void* dst, int value, size_t bytes, cudaStream_t s) {
  if (const cudaError_t e = check_device()) return e;
  if (s != nullptr && s->capturing) {
    s->capture->push_back([=] { std::memset(dst, value, bytes); });
    return cudaSuccess;
  }
  std::memset(dst, value, bytes);
  return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned) {
  if (const cudaError_t e = check_device()) return e;
  *s = new CUstream_st;
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t s) {
  delete s;
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  if (s != nullptr && s->capturing) return fail(cudaErrorStreamCaptureUnsupported);
  return check_device();
}
cudaError_t cudaDeviceSynchronize() { return check_device(); }
cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode) {
  if (s == nullptr || s->capturing) return fail(cudaErrorInvalidValue);
  s->capturing = true;
  s->capture = new std::vector<std::function<void()>>;
  return cudaSuccess;
}
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t* graph) {
  if (s == nullptr || !s->capturing) return fail(cudaErrorInvalidValue);
  *graph = new CUgraph_st{std::move(*s->capture)};
  delete s->capture;
  s->capture = nullptr;
  s->capturing = false;
  return cudaSuccess;
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long) {
  *exec = new CUgraphExec_st{graph->steps};
  return cudaSuccess;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s) {
  if (s != nullptr && s->capturing) return fail(cudaErrorStreamCaptureUnsupported);
  for (const auto& step : exec->steps) step();
  return cudaSuccess;
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  delete exec;
  return cudaSuccess;
}
cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  delete graph;
  return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t* e) {
  *e = new CUevent_st;
  return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t e) {
  delete e;
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t) { return cudaSuccess; }
cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t, cudaEvent_t) {
  *ms = 0.0f;
  return cudaSuccess;
}
