// Storage: a ref-counted block of device memory. Tensors (and views of them)
// share one Storage; the memory is released when the last one goes away.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "runtime/backend/backend.h"
#include "runtime/tensor/device.h"

namespace ember {

class StorageImpl {
 public:
  // Memory allocated by `backend`, released through it.
  StorageImpl(Backend* backend, Buffer buffer, Device device)
      : backend_(backend), buffer_(buffer), device_(device) {}
  // Memory owned by someone else (from_blob); `deleter` (may be empty) runs at release.
  StorageImpl(void* data, size_t bytes, Device device, std::function<void(void*)> deleter)
      : backend_(nullptr), device_(device), deleter_(std::move(deleter)) {
    buffer_.data = data;
    buffer_.bytes = bytes;
  }
  StorageImpl(const StorageImpl&) = delete;
  StorageImpl& operator=(const StorageImpl&) = delete;
  ~StorageImpl() {
    if (backend_ != nullptr) {
      backend_->release(buffer_);
    } else if (deleter_) {
      deleter_(buffer_.data);
    }
  }

  void* data() const { return buffer_.data; }
  size_t nbytes() const { return buffer_.bytes; }
  const Buffer& buffer() const { return buffer_; }
  Device device() const { return device_; }
  // Bumped by every in-place write (autograd checks saved tensors against it).
  uint64_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }

 private:
  Backend* backend_;
  Buffer buffer_;
  Device device_;
  std::function<void(void*)> deleter_;
  std::atomic<uint64_t> version_{0};
};

using Storage = std::shared_ptr<StorageImpl>;

// Allocates `bytes` on `device` (plus kTensorTailPadding); on failure the
// Status, with the thread's message (error.h). CPU allocations go through the
// calling thread's StorageAllocator when one is installed
// (StorageAllocatorGuard), else to the CPU backend.
Result<Storage> allocate_storage(size_t bytes, Device device);

// A per-thread hook for CPU tensor memory (the executor's memory planner
// records and serves allocations through it). allocate() returns a CPU Storage
// of at least `bytes` with kTensorTailPadding readable bytes after them, or a
// failing Status. While it runs, the hook is uninstalled on this thread:
// allocate_storage() inside it goes to the backend (a heap fallback).
class StorageAllocator {
 public:
  virtual ~StorageAllocator() = default;
  virtual Result<Storage> allocate(size_t bytes) = 0;
};

// " (what went wrong)" from backend.last_error(), or "" when it says nothing.
std::string backend_error_detail(const Backend& backend);

// The calling thread's allocator, or nullptr.
StorageAllocator* current_storage_allocator();

// Installs `allocator` (nullptr: none) on the calling thread for its lifetime,
// then restores the previous one.
class StorageAllocatorGuard {
 public:
  explicit StorageAllocatorGuard(StorageAllocator* allocator);
  ~StorageAllocatorGuard();
  StorageAllocatorGuard(const StorageAllocatorGuard&) = delete;
  StorageAllocatorGuard& operator=(const StorageAllocatorGuard&) = delete;

 private:
  StorageAllocator* previous_;
};

}  // namespace ember
