// EMBER_ASSERT: aborts on a broken internal invariant. Never use it for input that
// comes from a file, a user or the hardware: return a Status instead.
#pragma once

namespace ember {
[[noreturn]] void check_failed(const char* file, int line, const char* cond, const char* msg);
}  // namespace ember

#define EMBER_ASSERT(cond, msg)                                      \
  do {                                                           \
    if (!(cond)) ::ember::check_failed(__FILE__, __LINE__, #cond, msg); \
  } while (0)

#ifdef NDEBUG
#define EMBER_DCHECK(cond, msg) \
  do {                       \
  } while (0)
#else
#define EMBER_DCHECK(cond, msg) EMBER_ASSERT(cond, msg)
#endif
