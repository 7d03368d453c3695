// The CUDA context: device selection, the stream, the caching allocator.
#include "kernels/cuda/context.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>

#include "runtime/core/error.h"

namespace ember::cuda {
namespace {

thread_local std::string t_why;
std::mutex g_select_mutex;
std::string g_device_spec;
bool g_opened = false;

Status fail_why(Status s, std::string message) {
  t_why = std::move(message);
  return s;
}

// Why no device can be used, in words a user can act on.
Status no_device(cudaError_t e) {
  if (e == cudaErrorInsufficientDriver)
    return fail_why(Status::UnsupportedHardware,
                str_cat("CUDA is not available: no NVIDIA driver is loaded, or it is older than the CUDA ",
                        "runtime ember was built with (", cudaGetErrorString(e), ")"));
  if (e == cudaErrorNoDevice)
    return fail_why(Status::UnsupportedHardware, str_cat("CUDA is not available: ", cudaGetErrorString(e)));
  return fail_why(Status::UnsupportedHardware,
              str_cat("CUDA is not available: ", cudaGetErrorString(e), " (", cudaGetErrorName(e), ")"));
}

Result<int> device_count() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky: clear it
    return no_device(e);
  }
  if (n == 0) return no_device(cudaErrorNoDevice);
  return n;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The device a spec names: an index, or a substring of a device's name.
Result<int> resolve_spec(const std::string& spec, int count) {
  if (spec.empty()) return 0;
  if (std::all_of(spec.begin(), spec.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    const int i = std::atoi(spec.c_str());
    if (i >= count)
      return fail_why(Status::InvalidArgument, str_cat("CUDA device ", spec, ": invalid device ordinal (", count,
                                                   count == 1 ? " device)" : " devices)"));
    return i;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, i) == cudaSuccess && lower(p.name).find(lower(spec)) != std::string::npos)
      return i;
  }
  return fail_why(Status::NotFound, str_cat("no CUDA device matches '", spec, "'"));
}

}  // namespace

const std::string& Context::why() { return t_why; }
void Context::set_why(std::string message) { t_why = std::move(message); }

Status Context::check(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return Status::Ok;
  (void)cudaGetLastError();
  const Status s = error == cudaErrorMemoryAllocation ? Status::OutOfMemory : Status::Internal;
  return fail_why(s, str_cat(what, ": ", cudaGetErrorString(error), " (", cudaGetErrorName(error), ")"));
}

size_t round_block(size_t bytes) {
  constexpr size_t kSmall = size_t{1} << 20, kLarge = size_t{2} << 20;
  if (bytes == 0) bytes = 1;
  if (bytes <= kSmall) return (bytes + 511) / 512 * 512;
  return (bytes + kLarge - 1) / kLarge * kLarge;
}

std::string format_bytes(size_t bytes) {
  char buf[64];
  const double b = static_cast<double>(bytes);
  if (bytes >= (size_t{1} << 30)) std::snprintf(buf, sizeof(buf), "%.2f GiB", b / (1 << 30));
  else if (bytes >= (size_t{1} << 20)) std::snprintf(buf, sizeof(buf), "%.2f MiB", b / (1 << 20));
  else if (bytes >= 1024) std::snprintf(buf, sizeof(buf), "%.2f KiB", b / 1024);
  else std::snprintf(buf, sizeof(buf), "%zu bytes", bytes);
  return buf;
}

Result<std::vector<std::string>> Context::list_devices() {
  EMBER_ASSIGN_OR_RETURN(const int n, device_count());
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) {
    cudaDeviceProp p;
    EMBER_TRY(check(cudaGetDeviceProperties(&p, i), "cudaGetDeviceProperties"));
    names.push_back(str_cat(p.name, " [sm_", p.major, p.minor, ", ", format_bytes(p.totalGlobalMem), "]"));
  }
  return names;
}

Status Context::select_device(const std::string& spec) {
  std::lock_guard<std::mutex> lock(g_select_mutex);
  if (g_opened) return fail_why(Status::InvalidState, "the CUDA device is already open; select it before first use");
  g_device_spec = spec;
  return Status::Ok;
}

Result<Context*> Context::get() {
  // Opened once; a failure is remembered (with its message) and reported again.
  static Context* context = nullptr;
  static Status status = Status::Ok;
  static std::string failure;
  static std::once_flag once;
  std::call_once(once, [] {
    std::string spec;
    {
      std::lock_guard<std::mutex> lock(g_select_mutex);
      g_opened = true;
      spec = g_device_spec;
    }
    if (spec.empty()) {
      if (const char* env = std::getenv("EMBER_CUDA_DEVICE")) spec = env;
    }
    Result<int> n = device_count();
    Result<int> index = n.ok() ? resolve_spec(spec, n.get()) : Result<int>(n.status());
    auto* c = new Context();
    status = index.ok() ? c->open(index.get()) : index.status();
    if (status == Status::Ok) {
      context = c;
    } else {
      failure = why();
      delete c;
    }
  });
  if (context == nullptr) {
    set_why(failure);
    return status;
  }
  return context;
}

Status Context::open(int device) {
  EMBER_TRY(check(cudaSetDevice(device), "cudaSetDevice"));
  cudaDeviceProp p;
  EMBER_TRY(check(cudaGetDeviceProperties(&p, device), "cudaGetDeviceProperties"));
  caps_.name = p.name;
  caps_.index = device;
  caps_.major = p.major;
  caps_.minor = p.minor;
  caps_.multiprocessors = p.multiProcessorCount;
  caps_.total_memory = p.totalGlobalMem;
  caps_.bfloat16 = p.major >= 8;
  return check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
}

Result<void*> Context::allocate(size_t bytes) {
  const size_t block = round_block(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  // The smallest cached block that fits without wasting more than its half.
  auto it = free_.lower_bound(block);
  if (it != free_.end() && it->first <= 2 * block) {
    void* p = it->second;
    live_[p] = it->first;
    allocated_ += it->first;
    free_.erase(it);
    return p;
  }
  void* p = nullptr;
  cudaError_t e = cudaMalloc(&p, block);
  if (e == cudaErrorMemoryAllocation && !free_.empty()) {  // give the cache back, then try again
    (void)cudaGetLastError();
    (void)cudaStreamSynchronize(stream_);
    for (auto& [size, ptr] : free_) {
      (void)cudaFree(ptr);
      reserved_ -= size;
    }
    free_.clear();
    e = cudaMalloc(&p, block);
  }
  if (e == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    size_t free_bytes = 0, total = 0;
    (void)cudaMemGetInfo(&free_bytes, &total);
    return fail_why(Status::OutOfMemory,
                str_cat("CUDA out of memory. Tried to allocate ", format_bytes(bytes), ". GPU ", caps_.index,
                        " has a total capacity of ", format_bytes(total), " of which ", format_bytes(free_bytes),
                        " is free. Of the allocated memory ", format_bytes(allocated_),
                        " is allocated by ember, and ", format_bytes(reserved_ - allocated_),
                        " is reserved by ember but unallocated."));
  }
  EMBER_TRY(check(e, "cudaMalloc"));
  live_[p] = block;
  allocated_ += block;
  reserved_ += block;
  return p;
}

void Context::release(void* ptr) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(ptr);
  if (it == live_.end()) return;
  allocated_ -= it->second;
  free_.emplace(it->second, ptr);  // reused on the same stream: stream order keeps it safe
  live_.erase(it);
}

size_t Context::memory_allocated() {
  std::lock_guard<std::mutex> lock(mutex_);
  return allocated_;
}

size_t Context::memory_reserved() {
  std::lock_guard<std::mutex> lock(mutex_);
  return reserved_;
}

Status Context::empty_cache() {
  EMBER_TRY(synchronize());
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [size, ptr] : free_) {
    EMBER_TRY(check(cudaFree(ptr), "cudaFree"));
    reserved_ -= size;
  }
  free_.clear();
  return Status::Ok;
}

Status Context::synchronize() { return check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }

}  // namespace ember::cuda
