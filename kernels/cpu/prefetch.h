// Cache-line prefetches for the CPU kernels: hints, never faults (an address
// past a buffer's end is allowed).
#pragma once

#include <cstdint>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif

namespace ember::cpu {

// The cache line of p into L2 (prefetcht1 on x86), for reading.
inline void prefetch_l2(const void* p) { __builtin_prefetch(p, 0, 2); }

// The lines of [p, p + bytes) into L1, for reading.
inline void prefetch_read(const void* p, int64_t bytes) {
  const uintptr_t first = reinterpret_cast<uintptr_t>(p) & ~uintptr_t{63};
  const uintptr_t end = reinterpret_cast<uintptr_t>(p) + static_cast<uintptr_t>(bytes);
  for (uintptr_t line = first; line < end; line += 64) __builtin_prefetch(reinterpret_cast<const void*>(line), 0, 3);
}

// The lines of [p, p + bytes) into L1, owned for writing: a line another
// core holds is then claimed ahead of the stores (PREFETCHW on x86 where
// CPUID has it, written out: __builtin_prefetch emits it only for builds
// targeting PRFCHW; nothing on an x86 without it).
inline void prefetch_write(const void* p, int64_t bytes) {
  const uintptr_t first = reinterpret_cast<uintptr_t>(p) & ~uintptr_t{63};
  const uintptr_t end = reinterpret_cast<uintptr_t>(p) + static_cast<uintptr_t>(bytes);
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool prfchw = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __get_cpuid(0x80000001u, &a, &b, &c, &d) != 0 && (c & (1u << 8)) != 0;
  }();
  if (!prfchw) return;
  for (uintptr_t line = first; line < end; line += 64) {
    asm volatile("prefetchw %0" ::"m"(*reinterpret_cast<const char*>(line)));
  }
#else
  for (uintptr_t line = first; line < end; line += 64) __builtin_prefetch(reinterpret_cast<const void*>(line), 1, 3);
#endif
}

}  // namespace ember::cpu
