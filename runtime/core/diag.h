// Diag and Expected<T>: what host-side tools (the converter, the `ember` CLI)
// return from functions that can fail; only a CLI main turns them into exit
// codes. (The runtime's kernels and executor return Status / Result.)
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "runtime/core/check.h"
#include "runtime/core/status.h"

namespace ember {

// A Status and the message that explains it (empty when Ok).
struct [[nodiscard]] Diag {
  Status status = Status::Ok;
  std::string message;

  static Diag success() { return {}; }
  bool ok() const { return status == Status::Ok; }
};

// A value or the Diag that says why there is none.
template <typename T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : value_(std::move(value)) {}  // NOLINT
  Expected(Diag diag) : diag_(std::move(diag)) {   // NOLINT
    if (diag_.ok()) diag_ = {Status::Internal, "Expected built from a success Diag"};
  }
  bool ok() const { return value_.has_value(); }
  const Diag& diag() const { return diag_; }
  T& get() {
    EMBER_ASSERT(ok(), "Expected::get() on an error");
    return *value_;
  }
  T* operator->() { return &get(); }
  T& operator*() { return get(); }

 private:
  std::optional<T> value_;
  Diag diag_;
};

}  // namespace ember
