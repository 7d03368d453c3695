// Status: the error code every inference-path function returns.
#pragma once

#include <cstdint>
#include <string_view>

namespace ember {

enum class Status : uint8_t {
#define RT_STATUS(name, value, text) name = value,
#include "runtime/core/status.def"
#undef RT_STATUS
};

constexpr std::string_view status_name(Status s) {
  switch (s) {
#define RT_STATUS(name, value, text) \
  case Status::name:                 \
    return #name;
#include "runtime/core/status.def"
#undef RT_STATUS
  }
  return "Unknown";
}

constexpr bool ok(Status s) { return s == Status::Ok; }

}  // namespace ember

// The error macros, one family (EMBER_):
//   EMBER_CHECK(cond, Status::X[, message parts...])  returns the Status (and
//       sets the thread's error message, error.h) from a function returning
//       Status or Result<T> when cond is false: the inference path's check;
//   EMBER_TRY(expr)  returns the Status of a Status or Result<T> expression
//       from the caller when it is not Ok;
//   EMBER_ASSIGN_OR_RETURN(decl, expr)  (result.h) declares decl from a
//       Result<T> or returns its Status;
//   EMBER_ENFORCE(cond, Status::X, message parts...)  (error.h) raises
//       ember::Error: the eager API's throwing layers only;
//   EMBER_ASSERT / EMBER_DCHECK  (check.h) abort on a broken internal
//       invariant, never on input.
namespace ember {

// A failure without a message (what a kernel returns): clears the thread's
// error message, so the caller that reports it says what failed.
Status fail(Status status);

constexpr Status status_of(Status s) { return s; }

}  // namespace ember

#define EMBER_TRY(expr)                                                   \
  do {                                                                    \
    const ::ember::Status ember_status_ = ::ember::status_of(expr);       \
    if (ember_status_ != ::ember::Status::Ok) return ember_status_;       \
  } while (0)

// EMBER_CHECK(cond, status[, message parts...]): the parts are only built on failure.
#define EMBER_CHECK(cond, ...)                  \
  do {                                          \
    if (!(cond)) return ::ember::fail(__VA_ARGS__); \
  } while (0)
