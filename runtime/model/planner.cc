#include "runtime/model/planner.h"

#include <algorithm>
#include <new>
#include <numeric>

#include "runtime/backend/backend.h"
#include "runtime/core/error.h"

namespace ember {
namespace {

size_t align_up(size_t n, size_t alignment) { return (n + alignment - 1) / alignment * alignment; }

Backend* cpu_backend() {
  Backend* backend = get_backend(DeviceType::CPU);
  EMBER_ASSERT(backend != nullptr, "the CPU backend is always built in");
  return backend;
}

Result<Buffer> allocate_cpu(Backend* backend, size_t bytes) {
  Result<Buffer> buffer = backend->allocate(bytes, kArenaAlignment);
  EMBER_CHECK(buffer.ok(), buffer.status(), "failed to allocate ", bytes, " bytes on cpu: ",
              status_name(buffer.status()));
  return buffer;
}

}  // namespace

ArenaPlan plan_arena(const std::vector<AllocationRecord>& records, size_t alignment) {
  ArenaPlan plan;
  const size_t n = records.size();
  plan.offsets.assign(n, 0);
  plan.bytes.resize(n);
  std::vector<size_t> aligned(n);
  for (size_t i = 0; i < n; ++i) {
    plan.bytes[i] = records[i].bytes;
    aligned[i] = align_up(records[i].bytes, alignment);
    plan.naive_bytes += aligned[i];
  }
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return aligned[a] > aligned[b]; });
  const auto overlap_in_time = [&](size_t a, size_t b) {
    return records[a].alloc_time < records[b].free_time && records[b].alloc_time < records[a].free_time;
  };
  std::vector<size_t> placed, live;
  for (size_t i : order) {
    live.clear();
    for (size_t j : placed) {
      if (aligned[j] > 0 && overlap_in_time(i, j)) live.push_back(j);
    }
    std::sort(live.begin(), live.end(), [&](size_t a, size_t b) { return plan.offsets[a] < plan.offsets[b]; });
    size_t offset = 0;
    for (size_t j : live) {  // first gap (by offset) that fits
      if (offset + aligned[i] <= plan.offsets[j]) break;
      offset = std::max(offset, plan.offsets[j] + aligned[j]);
    }
    plan.offsets[i] = offset;
    plan.arena_bytes = std::max(plan.arena_bytes, offset + aligned[i]);
    placed.push_back(i);
  }
  return plan;
}

RecordingAllocator::RecordingAllocator() : state_(std::make_shared<State>()) {}

Result<Storage> RecordingAllocator::allocate(size_t bytes) {
  Backend* backend = cpu_backend();
  EMBER_ASSIGN_OR_RETURN(Buffer buffer, allocate_cpu(backend, bytes));
  size_t index;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    index = state_->records.size();
    AllocationRecord r;
    r.bytes = bytes;
    r.alloc_time = state_->clock++;
    state_->records.push_back(r);
  }
  std::shared_ptr<State> state = state_;
  return Storage(std::make_shared<StorageImpl>(buffer.data, bytes, Device(DeviceType::CPU),
                                               [state, backend, buffer, index](void*) mutable {
                                                 backend->release(buffer);
                                                 std::lock_guard<std::mutex> lock(state->mutex);
                                                 if (state->active) state->records[index].free_time = state->clock++;
                                               }));
}

std::vector<AllocationRecord> RecordingAllocator::finish() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->active = false;
  return state_->records;
}

ArenaMemory::ArenaMemory(size_t bytes) : size_(bytes) {
  // Aligned, with kTensorTailPadding readable bytes after the last block. A
  // block that cannot be had leaves data() null (never std::bad_alloc); more
  // than any address space ember runs in is not asked of the allocator
  // (sanitizers abort on such requests instead of returning null).
  if (bytes > kMaxArenaBytes) return;
  data_ = static_cast<std::byte*>(
      ::operator new(bytes + kTensorTailPadding, std::align_val_t(kArenaAlignment), std::nothrow));
}

ArenaMemory::~ArenaMemory() {
  if (data_ != nullptr) ::operator delete(data_, std::align_val_t(kArenaAlignment));
}

ArenaAllocator::ArenaAllocator(std::shared_ptr<ArenaMemory> memory, const ArenaPlan& plan)
    : memory_(std::move(memory)), plan_(&plan) {}

Result<Storage> ArenaAllocator::allocate(size_t bytes) {
  const size_t i = next_++;
  if (fallbacks_ == 0 && i < plan_->offsets.size() && plan_->bytes[i] == bytes) {
    std::shared_ptr<ArenaMemory> keep = memory_;
    return Storage(std::make_shared<StorageImpl>(memory_->data() + plan_->offsets[i], bytes,
                                                 Device(DeviceType::CPU), [keep](void*) {}));
  }
  ++fallbacks_;
  return allocate_storage(bytes, Device(DeviceType::CPU));  // the hook is off inside allocate()
}

Result<Storage> CappedAllocator::allocate(size_t bytes) {
  EMBER_CHECK(bytes <= limit_, Status::OutOfMemory, "a tensor of ", bytes, " bytes is over RunOptions::max_tensor_bytes (",
              limit_, ")");
  return inner_->allocate(bytes);
}

}  // namespace ember
