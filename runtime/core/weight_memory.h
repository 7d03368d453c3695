// Memory for the long-lived buffers that kernels stream through on every run:
// pre-packed GEMM weights, Winograd-transformed weights, int8 panels.
//
// A kernel reads such a buffer from start to end once per run, and with
// models larger than the last-level cache it comes from DRAM. On 4 KiB pages
// every page is a TLB miss, and the hardware prefetchers stop at each page
// boundary; measured on ResNet-18 (Xeon, one thread): 27.3 ms with its packed
// weights on 4 KiB pages, 25.3 ms in these buffers. So on Linux these buffers come from
// 2 MiB-aligned mappings advised for transparent huge pages (MADV_HUGEPAGE;
// the kernel falls back to 4 KiB pages where it has none free, or where THP is
// "never"). Buffers of under kWeightChunk / 2 bytes are carved from shared
// chunks of kWeightChunk bytes, so that many small weights share huge pages; a
// chunk is unmapped when its last buffer goes. Elsewhere: aligned new.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ember {

constexpr size_t kWeightChunk = size_t{2} << 20;  // one x86-64 huge page
constexpr size_t kWeightAlign = 64;               // every buffer's alignment

// A zero-filled buffer of `bytes` (move-only). Empty when bytes is 0; a
// failed allocation raises std::bad_alloc, as std::vector does.
class WeightBuffer {
 public:
  WeightBuffer() = default;
  explicit WeightBuffer(size_t bytes);
  ~WeightBuffer();
  WeightBuffer(WeightBuffer&& other) noexcept;
  WeightBuffer& operator=(WeightBuffer&& other) noexcept;
  WeightBuffer(const WeightBuffer&) = delete;
  WeightBuffer& operator=(const WeightBuffer&) = delete;

  void* data() { return data_; }
  const void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  bool empty() const { return bytes_ == 0; }
  template <typename T>
  T* as() {
    return static_cast<T*>(data_);
  }
  template <typename T>
  const T* as() const {
    return static_cast<const T*>(data_);
  }
  // Whether the buffer lies in memory advised for huge pages (tests).
  bool huge_page_advised() const { return kind_ != Kind::Heap && kind_ != Kind::None; }

 private:
  enum class Kind : uint8_t { None, Heap, Chunked, Mapped };
  void release();

  void* data_ = nullptr;
  size_t bytes_ = 0;
  size_t mapped_ = 0;  // Kind::Mapped: the mapping's length
  Kind kind_ = Kind::None;
};

}  // namespace ember
