// The executor's memory planner: records the tensor allocations of a run with
// their lifetimes, packs them into one arena (greedy by size, as TFLite's
// ArenaPlanner), and serves the same sequence of allocations from that arena
// in later runs. Both allocators plug into allocate_storage() through the
// per-thread hook of runtime/tensor/storage.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/tensor/storage.h"

namespace ember {

constexpr size_t kArenaAlignment = 64;

// One allocation of a recorded run. Times are a logical event counter (every
// allocation and every release is one event); alive at the end of the run:
// free_time == kAliveAtEnd.
struct AllocationRecord {
  static constexpr int64_t kAliveAtEnd = std::numeric_limits<int64_t>::max();
  size_t bytes = 0;
  int64_t alloc_time = 0;
  int64_t free_time = kAliveAtEnd;
};

struct ArenaPlan {
  std::vector<size_t> offsets;  // per allocation, multiples of the alignment
  std::vector<size_t> bytes;    // per allocation, the requested size
  size_t arena_bytes = 0;       // the end of the highest block
  size_t naive_bytes = 0;       // the sum of the aligned sizes (no reuse)
};

// Places the blocks biggest first (ties: earlier allocation first), each at the
// lowest aligned offset where it overlaps no already placed block whose
// lifetime intersects its own ([alloc_time, free_time)).
ArenaPlan plan_arena(const std::vector<AllocationRecord>& records, size_t alignment = kArenaAlignment);

// Serves CPU allocations from the backend and records their sizes and lifetimes.
// Releases after finish() are not recorded (those storages live to the end).
class RecordingAllocator : public StorageAllocator {
 public:
  RecordingAllocator();
  Result<Storage> allocate(size_t bytes) override;
  // Stops recording and returns the records in allocation order.
  std::vector<AllocationRecord> finish();

 private:
  struct State {
    std::mutex mutex;
    bool active = true;
    int64_t clock = 0;
    std::vector<AllocationRecord> records;
  };
  std::shared_ptr<State> state_;
};

// The largest arena ArenaMemory asks for (2^47 bytes: x86-64 and aarch64
// user space); a larger plan is never allocated.
constexpr size_t kMaxArenaBytes = size_t{1} << 47;

// One block of memory holding a plan's allocations (plus tail padding).
// data() is null when the block could not be allocated.
class ArenaMemory {
 public:
  explicit ArenaMemory(size_t bytes);
  ~ArenaMemory();
  ArenaMemory(const ArenaMemory&) = delete;
  ArenaMemory& operator=(const ArenaMemory&) = delete;
  std::byte* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  std::byte* data_ = nullptr;
  size_t size_ = 0;
};

// Hands out the i-th allocation of a run at the i-th planned offset. The
// storages keep the arena alive (they may outlive the context). An allocation
// whose size differs from the plan, or one past its end, goes to the heap and
// so do all later ones of the run (the sequence no longer matches the plan's
// lifetimes): heap_fallbacks() counts them.
class ArenaAllocator : public StorageAllocator {
 public:
  ArenaAllocator(std::shared_ptr<ArenaMemory> memory, const ArenaPlan& plan);
  Result<Storage> allocate(size_t bytes) override;
  int heap_fallbacks() const { return fallbacks_; }
  // The run made exactly the planned allocations.
  bool matched() const { return fallbacks_ == 0 && next_ == plan_->offsets.size(); }

 private:
  std::shared_ptr<ArenaMemory> memory_;
  const ArenaPlan* plan_;
  size_t next_ = 0;
  int fallbacks_ = 0;
};

// Refuses an allocation of more than `limit` bytes (ember::Error,
// OutOfMemory, naming both: RunOptions::max_tensor_bytes); passes the others
// to `inner`.
class CappedAllocator : public StorageAllocator {
 public:
  CappedAllocator(StorageAllocator* inner, size_t limit) : inner_(inner), limit_(limit) {}
  Result<Storage> allocate(size_t bytes) override;

 private:
  StorageAllocator* inner_;
  size_t limit_;
};

}  // namespace ember
