// Result<T>: a value or a non-Ok Status (ExecuTorch semantics: building a
// Result from Status::Ok is a bug and becomes Status::Internal).
#pragma once

#include <new>
#include <type_traits>
#include <utility>

#include "runtime/core/check.h"
#include "runtime/core/status.h"

namespace ember {

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(Status status) : status_(status == Status::Ok ? Status::Internal : status) {}  // NOLINT
  Result(T&& value) : status_(Status::Ok) { new (&storage_) T(std::move(value)); }       // NOLINT
  Result(const T& value) : status_(Status::Ok) { new (&storage_) T(value); }             // NOLINT
  Result(Result&& other) noexcept : status_(other.status_) {
    if (ok()) new (&storage_) T(std::move(*other.ptr()));
  }
  Result(const Result&) = delete;
  Result& operator=(const Result&) = delete;
  Result& operator=(Result&&) = delete;
  ~Result() {
    if (ok()) ptr()->~T();
  }

  bool ok() const { return status_ == Status::Ok; }
  Status status() const { return status_; }

  T& get() {
    EMBER_ASSERT(ok(), "Result::get() on an error");
    return *ptr();
  }
  const T& get() const {
    EMBER_ASSERT(ok(), "Result::get() on an error");
    return *ptr();
  }
  T* operator->() { return &get(); }
  T& operator*() { return get(); }

 private:
  T* ptr() { return std::launder(reinterpret_cast<T*>(&storage_)); }
  const T* ptr() const { return std::launder(reinterpret_cast<const T*>(&storage_)); }

  Status status_;
  std::aligned_storage_t<sizeof(T), alignof(T)> storage_;
};

template <typename T>
Status status_of(const Result<T>& r) {
  return r.status();
}

}  // namespace ember

#define EMBER_CONCAT_INNER_(a, b) a##b
#define EMBER_CONCAT_(a, b) EMBER_CONCAT_INNER_(a, b)

// EMBER_ASSIGN_OR_RETURN(auto x, make_x()): declares x from a Result or returns its Status.
#define EMBER_ASSIGN_OR_RETURN(decl, expr) \
  EMBER_ASSIGN_OR_RETURN_IMPL_(EMBER_CONCAT_(ember_result_, __COUNTER__), decl, expr)
#define EMBER_ASSIGN_OR_RETURN_IMPL_(tmp, decl, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return tmp.status();              \
  decl = std::move(tmp.get())
