// ember::Error: what the eager tensor API throws. It carries a Status and a
// PyTorch-like message. Built with -fno-exceptions, raising prints the message
// and aborts instead.
#pragma once

#include <exception>
#include <sstream>
#include <string>
#include <utility>

#include "runtime/core/status.h"

namespace ember {

class Error : public std::exception {
 public:
  Error(Status status, std::string message) : status_(status), message_(std::move(message)) {}
  Status status() const { return status_; }
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  Status status_;
  std::string message_;
};

// Concatenates its arguments with operator<<.
template <typename... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

[[noreturn]] void raise_error(Status status, std::string message);

// The inference path's way to fail (it returns a Status, it does not throw):
// sets *error (when non-null) to the concatenated message and returns `status`.
template <typename... Args>
Status report_error(std::string* error, Status status, const Args&... args) {
  if (error != nullptr) *error = str_cat(args...);
  return status;
}

// Throws `status` with the given message when the result is not Ok.
void raise_if_error(Status status, const char* what);

}  // namespace ember

// EMBER_CHECK(cond, Status::X, "message parts", ...): raises ember::Error when false.
#define EMBER_CHECK(cond, status, ...)                            \
  do {                                                            \
    if (!(cond)) ::ember::raise_error(status, ::ember::str_cat(__VA_ARGS__)); \
  } while (0)
