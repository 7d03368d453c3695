// Span<T>: a non-owning view of a contiguous array (std::span is C++20).
#pragma once

#include <cstddef>
#include <initializer_list>
#include <type_traits>
#include <vector>

namespace ember {

template <typename T>
class Span {
 public:
  constexpr Span() = default;
  constexpr Span(T* data, size_t size) : data_(data), size_(size) {}
  template <size_t N>
  constexpr Span(T (&array)[N]) : data_(array), size_(N) {}  // NOLINT
  template <typename U, typename = std::enable_if_t<std::is_const_v<T> &&
                                                    std::is_same_v<std::remove_const_t<T>, U>>>
  Span(const std::vector<U>& v) : data_(v.data()), size_(v.size()) {}  // NOLINT
  Span(std::vector<std::remove_const_t<T>>& v) : data_(v.data()), size_(v.size()) {}  // NOLINT
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
  // Valid for the full expression only: for passing `{1, 2}` as an argument.
  Span(std::initializer_list<std::remove_const_t<T>> list)  // NOLINT
      : data_(list.begin()), size_(list.size()) {}
#pragma GCC diagnostic pop

  constexpr T* data() const { return data_; }
  constexpr size_t size() const { return size_; }
  constexpr bool empty() const { return size_ == 0; }
  constexpr T& operator[](size_t i) const { return data_[i]; }
  constexpr T* begin() const { return data_; }
  constexpr T* end() const { return data_ + size_; }

 private:
  T* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace ember
