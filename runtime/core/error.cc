#include "runtime/core/error.h"

#include <cstdio>
#include <cstdlib>

#include "runtime/core/check.h"

namespace ember {

void check_failed(const char* file, int line, const char* cond, const char* msg) {
  std::fprintf(stderr, "ember: internal check failed at %s:%d: %s (%s)\n", file, line, cond, msg);
  std::abort();
}

void raise_error(Status status, std::string message) {
#if defined(__cpp_exceptions)
  throw Error(status, std::move(message));
#else
  std::fprintf(stderr, "ember: %s: %s\n", std::string(status_name(status)).c_str(), message.c_str());
  std::abort();
#endif
}

void raise_if_error(Status status, const char* what) {
  if (status != Status::Ok) {
    raise_error(status, str_cat(what, " failed: ", status_name(status)));
  }
}

}  // namespace ember
