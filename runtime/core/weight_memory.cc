#include "runtime/core/weight_memory.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#define EMBER_WEIGHT_MMAP 1
#else
#define EMBER_WEIGHT_MMAP 0
#endif

namespace ember {
namespace {

size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

#if EMBER_WEIGHT_MMAP
// `len` bytes (a multiple of 4 KiB) at a kWeightChunk-aligned address, zero,
// advised for huge pages; null when the kernel refuses the mapping.
void* map_aligned(size_t len) {
  const size_t span = len + kWeightChunk;
  void* raw = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const uintptr_t begin = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = round_up(begin, kWeightChunk);
  if (aligned > begin) munmap(raw, aligned - begin);
  munmap(reinterpret_cast<void*>(aligned + len), begin + span - (aligned + len));
  madvise(reinterpret_cast<void*>(aligned), len, MADV_HUGEPAGE);  // advice: ignored where THP is off
  return reinterpret_cast<void*>(aligned);
}

// The shared chunks of the small buffers: each chunk's base address, the
// bytes handed out from it, and how many of its buffers are alive. A buffer
// goes to the first chunk with room (first fit: a chunk's tail still serves
// the smaller buffers after a larger one opened the next chunk).
struct Chunk {
  uintptr_t base;
  size_t used, live;
};

struct ChunkPool {
  std::mutex mu;
  std::vector<Chunk> chunks;
};

ChunkPool& pool() {
  static ChunkPool* p = new ChunkPool;  // never destroyed: buffers in static objects may outlive it
  return *p;
}

void* carve(size_t bytes) {
  ChunkPool& p = pool();
  const size_t n = round_up(bytes, kWeightAlign);
  std::lock_guard<std::mutex> lock(p.mu);
  auto it = std::find_if(p.chunks.begin(), p.chunks.end(), [&](const Chunk& c) { return c.used + n <= kWeightChunk; });
  if (it == p.chunks.end()) {
    void* chunk = map_aligned(kWeightChunk);
    if (chunk == nullptr) return nullptr;
    it = p.chunks.insert(p.chunks.end(), Chunk{reinterpret_cast<uintptr_t>(chunk), 0, 0});
  }
  void* out = reinterpret_cast<void*>(it->base + it->used);
  it->used += n;
  ++it->live;
  return out;  // zero: a fresh mapping's, and a chunk's space is never handed out twice
}

void uncarve(void* ptr) {
  ChunkPool& p = pool();
  const uintptr_t base = reinterpret_cast<uintptr_t>(ptr) & ~(kWeightChunk - 1);
  std::lock_guard<std::mutex> lock(p.mu);
  auto it = std::find_if(p.chunks.begin(), p.chunks.end(), [&](const Chunk& c) { return c.base == base; });
  if (it == p.chunks.end() || --it->live > 0) return;
  p.chunks.erase(it);
  munmap(reinterpret_cast<void*>(base), kWeightChunk);
}
#endif

}  // namespace

WeightBuffer::WeightBuffer(size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
#if EMBER_WEIGHT_MMAP
  if (bytes < kWeightChunk / 2) {
    data_ = carve(bytes);
    kind_ = Kind::Chunked;
  } else {
    mapped_ = round_up(bytes, 4096);
    data_ = map_aligned(mapped_);
    kind_ = Kind::Mapped;
  }
  if (data_ != nullptr) return;
#endif
  data_ = ::operator new(bytes, std::align_val_t(kWeightAlign));
  std::memset(data_, 0, bytes);
  kind_ = Kind::Heap;
}

void WeightBuffer::release() {
  switch (kind_) {
    case Kind::None: break;
    case Kind::Heap: ::operator delete(data_, std::align_val_t(kWeightAlign)); break;
#if EMBER_WEIGHT_MMAP
    case Kind::Chunked: uncarve(data_); break;
    case Kind::Mapped: munmap(data_, mapped_); break;
#else
    default: break;
#endif
  }
  data_ = nullptr;
  bytes_ = mapped_ = 0;
  kind_ = Kind::None;
}

WeightBuffer::~WeightBuffer() { release(); }

WeightBuffer::WeightBuffer(WeightBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      mapped_(std::exchange(other.mapped_, 0)),
      kind_(std::exchange(other.kind_, Kind::None)) {}

WeightBuffer& WeightBuffer::operator=(WeightBuffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    mapped_ = std::exchange(other.mapped_, 0);
    kind_ = std::exchange(other.kind_, Kind::None);
  }
  return *this;
}

}  // namespace ember
