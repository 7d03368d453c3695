// Errors. The inference path returns Status / Result<T> (status.h, result.h)
// and leaves a message for the calling thread (fail(), error_message()); the
// eager tensor API is thin throwing wrappers over it (unwrap()), raising
// ember::Error, which carries the Status and a PyTorch-like message. Built
// with -fno-exceptions, raising prints the message and aborts instead.
#pragma once

#include <exception>
#include <sstream>
#include <string>
#include <utility>

#include "runtime/core/result.h"
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

// The calling thread's message for the last failure returned with one (empty
// after a failure without a message: its Status says it).
const std::string& error_message();
void set_error_message(std::string message);
// What to report for failure `status`: the thread's message, or the status'
// name when the failure left none.
std::string failure_message(Status status);

// A failure with a message: sets the thread's error message to the
// concatenated parts and returns `status` (EMBER_CHECK's failing branch).
template <typename A, typename... Args>
Status fail(Status status, const A& first, const Args&... rest) {
  set_error_message(str_cat(first, rest...));
  return status;
}

// The throwing side: the value, or ember::Error with the Status and the
// thread's error message (the status' name when there is none).
void unwrap(Status status);
template <typename T>
T unwrap(Result<T>&& r) {
  if (!r.ok()) unwrap(r.status());
  return std::move(r.get());
}

// The inference path's way to fail (it returns a Status, it does not throw):
// sets *error (when non-null) to the concatenated message and returns `status`.
template <typename... Args>
Status report_error(std::string* error, Status status, const Args&... args) {
  if (error != nullptr) *error = str_cat(args...);
  return status;
}

}  // namespace ember

// EMBER_ENFORCE(cond, Status::X, "message parts", ...): raises ember::Error when false.
#define EMBER_ENFORCE(cond, status, ...)                            \
  do {                                                            \
    if (!(cond)) ::ember::raise_error(status, ::ember::str_cat(__VA_ARGS__)); \
  } while (0)
