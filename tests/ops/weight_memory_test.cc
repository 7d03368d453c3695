// WeightBuffer (runtime/core/weight_memory.h), the memory of packed weights:
// zero-filled and aligned, small buffers share 2 MiB chunks (first fit), a
// chunk is unmapped with its last buffer, large buffers are 2 MiB-aligned
// mappings, and on Linux both are advised for transparent huge pages.
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "runtime/core/weight_memory.h"
#include "tests/harness/testing.h"

#if defined(__linux__)
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>
#endif

using namespace ember;

namespace {

uintptr_t address(const WeightBuffer& b) { return reinterpret_cast<uintptr_t>(b.data()); }
uintptr_t chunk_of(const WeightBuffer& b) { return address(b) & ~(kWeightChunk - 1); }

bool all_zero(const WeightBuffer& b) {
  const auto* p = b.as<unsigned char>();
  for (size_t i = 0; i < b.bytes(); ++i) {
    if (p[i] != 0) return false;
  }
  return true;
}

#if defined(__linux__)
// Whether the page at `p` is mapped in this process.
bool mapped(uintptr_t p) {
  unsigned char v = 0;
  return mincore(reinterpret_cast<void*>(p), 4096, &v) == 0 || errno != ENOMEM;
}

// The VmFlags line of the /proc/self/smaps entry holding `p` ("" if none).
std::string vm_flags(uintptr_t p) {
  std::ifstream in("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = lo <= p && p < hi;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line;
    }
  }
  return "";
}
#endif

}  // namespace

TEST_CASE("an empty WeightBuffer holds nothing") {
  WeightBuffer b(0);
  CHECK(b.empty());
  CHECK(b.data() == nullptr);
  CHECK(b.bytes() == 0);
  WeightBuffer d;
  CHECK(d.empty());
}

TEST_CASE("WeightBuffers are zero, aligned and writable") {
  for (size_t bytes : {size_t{1}, size_t{100}, size_t{4096}, size_t{300} << 10, kWeightChunk / 2 - 1,
                       kWeightChunk / 2, kWeightChunk, size_t{9} << 20}) {
    CAPTURE(bytes);
    WeightBuffer b(bytes);
    REQUIRE(b.bytes() == bytes);
    CHECK(address(b) % kWeightAlign == 0);
    CHECK(all_zero(b));
    std::memset(b.data(), 0x5a, bytes);
    CHECK(b.as<unsigned char>()[bytes - 1] == 0x5a);
#if defined(__linux__)
    CHECK(b.huge_page_advised());
    if (bytes >= kWeightChunk / 2) CHECK(address(b) % kWeightChunk == 0);  // its own mapping
#endif
  }
}

#if defined(__linux__)
TEST_CASE("small WeightBuffers share chunks, first fit, and a chunk goes with its last buffer") {
  const size_t big = 900 << 10;
  std::vector<WeightBuffer> keep;
  keep.emplace_back(big);
  keep.emplace_back(big);  // the same chunk: 1800 KiB of 2048
  CHECK(chunk_of(keep[1]) == chunk_of(keep[0]));
  CHECK(address(keep[1]) == address(keep[0]) + big);
  keep.emplace_back(big);  // no room: a second chunk
  const uintptr_t first = chunk_of(keep[0]), second = chunk_of(keep[2]);
  CHECK(second != first);
  WeightBuffer small(100 << 10);  // the first chunk's tail still has 248 KiB
  CHECK(chunk_of(small) == first);
  CHECK(address(small) == first + 2 * big);
  keep.clear();
  CHECK(mapped(first));  // `small` is still in it
  CHECK_FALSE(mapped(second));
  small = WeightBuffer();
  CHECK_FALSE(mapped(first));
}

#if defined(__x86_64__)  // qemu-user, which runs the aarch64 suites, accepts madvise without passing it on
TEST_CASE("WeightBuffer memory is advised for huge pages") {
  // A kernel built without transparent huge pages refuses the advice (EINVAL).
  if (!std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled")) return;
  WeightBuffer small(1000), large(size_t{5} << 20);
  for (const WeightBuffer* b : {&small, &large}) {
    const std::string flags = vm_flags(address(*b));
    CAPTURE(flags);
    REQUIRE(!flags.empty());
    CHECK(flags.find(" hg") != std::string::npos);  // MADV_HUGEPAGE
  }
}
#endif  // __x86_64__
#endif  // __linux__

TEST_CASE("WeightBuffer moves its memory") {
  WeightBuffer a(size_t{3} << 20);
  a.as<float>()[7] = 2.5f;
  const void* p = a.data();
  WeightBuffer b(std::move(a));
  CHECK(a.empty());
  CHECK(a.data() == nullptr);
  CHECK(b.data() == p);
  CHECK(b.as<float>()[7] == 2.5f);
  WeightBuffer c(64);
  c = std::move(b);
  CHECK(c.data() == p);
  CHECK(c.bytes() == size_t{3} << 20);
  CHECK(b.empty());
}
