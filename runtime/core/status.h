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

// Evaluates a Status expression and returns it from the caller if not Ok.
#define RT_RETURN_IF_ERROR(expr)                          \
  do {                                                    \
    ::ember::Status rt_status_ = (expr);                  \
    if (rt_status_ != ::ember::Status::Ok) return rt_status_; \
  } while (0)

// Returns `status` from the caller when `cond` is false.
#define RT_CHECK_OR_RETURN(cond, status) \
  do {                                   \
    if (!(cond)) return (status);        \
  } while (0)
