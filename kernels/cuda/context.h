// The CUDA device ember runs on: opened at first use (driver, device, one
// stream), a caching allocator as PyTorch's (freed blocks are kept for reuse
// on the same stream; empty_cache() returns them), and the error a failed
// call leaves, in words, for the messages above.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_rt.h"
#include "runtime/core/result.h"
#include "runtime/core/status.h"

namespace ember::cuda {

struct DeviceCaps {
  std::string name;
  int index = 0;
  int major = 0, minor = 0;
  int multiprocessors = 0;
  size_t total_memory = 0;
  bool bfloat16 = false;  // sm_80 and newer
};

class Context {
 public:
  // The process-wide context of the selected device, opened on first use.
  // Fails (why() says why: no driver, no device, ...) when it cannot be.
  static Result<Context*> get();
  // Why the last call on this thread failed.
  static const std::string& why();
  static void set_why(std::string message);
  // Every device, as "NAME [sm_XY, N GiB]"; fails without a driver or device.
  static Result<std::vector<std::string>> list_devices();
  // Picks the device get() opens: an index or a case-insensitive substring of
  // its name (also EMBER_CUDA_DEVICE). InvalidState once a device is open.
  static Status select_device(const std::string& spec);
  // Turns a CUDA error into a Status and why() ("<what>: <CUDA's words> (<name>)").
  static Status check(cudaError_t error, const char* what);

  const DeviceCaps& caps() const { return caps_; }
  cudaStream_t stream() const { return stream_; }

  // Device memory from the cache, or from the driver. Out of memory gives
  // PyTorch's message ("CUDA out of memory. Tried to allocate ...").
  Result<void*> allocate(size_t bytes);
  void release(void* ptr);
  size_t memory_allocated();
  size_t memory_reserved();
  // Gives the cached blocks back to the driver (after the stream drains).
  Status empty_cache();
  Status synchronize();

  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

 private:
  Context() = default;
  Status open(int device);

  DeviceCaps caps_;
  cudaStream_t stream_ = nullptr;
  std::mutex mutex_;
  std::map<void*, size_t> live_;                  // pointer -> block size
  std::multimap<size_t, void*> free_;             // block size -> cached block
  size_t allocated_ = 0, reserved_ = 0;
};

// The block size the allocator rounds a request to (512 bytes under 1 MiB,
// 2 MiB multiples above, as PyTorch's small and large pools).
size_t round_block(size_t bytes);
// "2.00 GiB", "20.00 MiB", "512 bytes": sizes as PyTorch's messages print them.
std::string format_bytes(size_t bytes);

}  // namespace ember::cuda
