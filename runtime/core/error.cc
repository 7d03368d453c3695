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

namespace {
std::string& thread_message() {
  thread_local std::string message;
  return message;
}
}  // namespace

const std::string& error_message() { return thread_message(); }

void set_error_message(std::string message) { thread_message() = std::move(message); }

Status fail(Status status) {
  thread_message().clear();
  return status;
}

std::string failure_message(Status status) {
  const std::string& m = thread_message();
  return m.empty() ? std::string(status_name(status)) : m;
}

void unwrap(Status status) {
  if (status != Status::Ok) raise_error(status, failure_message(status));
}

}  // namespace ember
