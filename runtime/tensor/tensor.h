// Tensor: a PyTorch-like handle to storage + offset + sizes + strides (in
// elements) + dtype + device. Copies of a Tensor share the same TensorImpl (as
// torch.Tensor objects do); views share the Storage.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <type_traits>
#include <vector>

#include "runtime/core/error.h"
#include "runtime/core/span.h"
#include "runtime/tensor/device.h"
#include "runtime/tensor/dtype.h"
#include "runtime/tensor/scalar.h"
#include "runtime/tensor/storage.h"
#include "runtime/tensor/tensor_view.h"

namespace ember {

using Shape = std::vector<int64_t>;
using IntArrayRef = Span<const int64_t>;

enum class MemoryFormat : uint8_t { Contiguous, ChannelsLast, Preserve };

// What a creation function makes: dtype (unset: the function's default, as in
// PyTorch) and device. Implicit from a DType or a Device, so that
// `zeros({2}, DType::Int64)` and `ones({2}, Device("cpu"))` read naturally.
struct TensorOptions {
  std::optional<DType> dtype_;
  std::optional<Device> device_;

  TensorOptions() = default;
  TensorOptions(DType t) : dtype_(t) {}  // NOLINT
  TensorOptions(Device d) : device_(d) {}  // NOLINT
  TensorOptions(const char* device) : device_(device) {}  // NOLINT
  TensorOptions dtype(DType t) const {
    TensorOptions o = *this;
    o.dtype_ = t;
    return o;
  }
  TensorOptions device(Device d) const {
    TensorOptions o = *this;
    o.device_ = d;
    return o;
  }
  DType dtype_or(DType fallback) const { return dtype_.value_or(fallback); }
  Device device_or(Device fallback = Device(DeviceType::CPU)) const {
    return device_.value_or(fallback);
  }
};

// Autograd state (runtime/autograd); null for tensors that never needed it.
struct AutogradMeta;
class Node;

struct TensorImpl {
  Storage storage;
  int64_t offset = 0;  // in elements
  Shape sizes;
  Shape strides;  // in elements
  DType dtype = DType::Float32;
  std::shared_ptr<AutogradMeta> autograd;
};

class Tensor {
 public:
  Tensor() = default;  // undefined
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}
  // A tensor over `storage` with the given geometry (checked to fit).
  static Tensor make(Storage storage, DType dtype, IntArrayRef sizes, IntArrayRef strides,
                     int64_t offset = 0);

  bool defined() const { return impl_ != nullptr; }
  TensorImpl* impl() const { return impl_.get(); }
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }

  // --- metadata -------------------------------------------------------------
  const Shape& sizes() const { return ref().sizes; }
  const Shape& shape() const { return ref().sizes; }
  const Shape& strides() const { return ref().strides; }
  int64_t size(int64_t dim) const;
  int64_t stride(int64_t dim) const;
  int64_t dim() const { return static_cast<int64_t>(ref().sizes.size()); }
  int64_t numel() const;
  DType dtype() const { return ref().dtype; }
  Device device() const { return ref().storage->device(); }
  int64_t storage_offset() const { return ref().offset; }
  size_t element_size() const { return ember::element_size(dtype()); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * element_size(); }
  const Storage& storage() const { return ref().storage; }
  bool is_contiguous(MemoryFormat format = MemoryFormat::Contiguous) const;
  // The layout ops should give their outputs (PyTorch's suggest_memory_format).
  MemoryFormat suggest_memory_format() const;
  bool is_floating_point() const { return is_floating(dtype()); }
  // Same storage, offset, sizes and strides.
  bool is_alias_of(const Tensor& other) const { return storage() == other.storage(); }

  void* data_ptr() const;
  template <typename T>
  T* data_ptr() const {
    check_dtype(dtype_of<T>::value);
    return static_cast<T*>(data_ptr());
  }
  // The value of a one-element tensor.
  Scalar item() const;
  template <typename T>
  T item() const {
    return item().to<T>();
  }
  // Copies the elements (in logical row-major order) to a vector of T.
  template <typename T>
  std::vector<T> to_vector() const;

  // What kernels see (raises when the rank exceeds kMaxRank).
  TensorView kernel_view() const;

  // --- views (share storage) ------------------------------------------------
  Tensor view(IntArrayRef sizes) const;
  Tensor reshape(IntArrayRef sizes) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor permute(IntArrayRef dims) const;
  Tensor t() const;
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor expand(IntArrayRef sizes) const;
  Tensor expand_as(const Tensor& other) const { return expand(other.sizes()); }
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor select(int64_t dim, int64_t index) const;
  // t[start:end:step] along dim (Python slicing: negative and out-of-range ends clamp).
  Tensor slice(int64_t dim, std::optional<int64_t> start = std::nullopt,
               std::optional<int64_t> end = std::nullopt, int64_t step = 1) const;
  Tensor unfold(int64_t dim, int64_t size, int64_t step) const;
  Tensor as_strided(IntArrayRef sizes, IntArrayRef strides,
                    std::optional<int64_t> storage_offset = std::nullopt) const;
  Tensor operator[](int64_t index) const { return select(0, index); }
  Tensor detach() const;  // shares storage, drops autograd history

  // --- autograd (runtime/autograd) ------------------------------------------
  bool requires_grad() const;
  // Leaves only: sets whether gradients are accumulated into grad().
  Tensor& requires_grad_(bool requires_grad = true);
  // The accumulated gradient (undefined until a backward reaches this tensor).
  Tensor grad() const;
  void set_grad(const Tensor& grad) const;
  // The node that computed this tensor (null for leaves).
  std::shared_ptr<Node> grad_fn() const;
  bool is_leaf() const;
  // Accumulates d(this)/d(leaf) * gradient into every leaf's grad(). A scalar
  // needs no gradient (it is 1).
  void backward(const Tensor& gradient = Tensor(), bool retain_graph = false) const;
  // Keeps the gradient of a non-leaf in grad() during backward.
  void retain_grad() const;
  bool retains_grad() const;
  Tensor& detach_();
  // Incremented by every in-place change of the underlying storage.
  uint64_t version() const { return storage()->version(); }

  // --- copies and conversions -------------------------------------------------
  Tensor contiguous(MemoryFormat format = MemoryFormat::Contiguous) const;
  Tensor clone(MemoryFormat format = MemoryFormat::Preserve) const;
  Tensor to(DType dtype, bool copy = false) const;
  Tensor to(Device device, bool copy = false) const;
  Tensor to(MemoryFormat format) const { return contiguous(format); }
  // to("cpu"), to("cuda") (torch's t.cpu(), t.cuda()).
  Tensor cpu() const { return to(Device(DeviceType::CPU)); }
  Tensor cuda() const { return to(Device(DeviceType::CUDA)); }

  // --- in-place -----------------------------------------------------------------
  Tensor& copy_(const Tensor& src);  // broadcasting, dtype conversion
  Tensor& fill_(Scalar value);
  Tensor& zero_();
  Tensor& add_(const Tensor& other);
  Tensor& add_(Scalar other);
  Tensor& sub_(const Tensor& other);
  Tensor& sub_(Scalar other);
  Tensor& mul_(const Tensor& other);
  Tensor& mul_(Scalar other);
  Tensor& div_(const Tensor& other);
  Tensor& div_(Scalar other);
  Tensor& clamp_(std::optional<Scalar> min, std::optional<Scalar> max);
  Tensor& relu_();

  // --- ops as methods (the free functions in runtime/ops/ops.h) -----------------
  Tensor matmul(const Tensor& other) const;
  Tensor mm(const Tensor& other) const;
  Tensor sum(std::optional<DType> dtype = std::nullopt) const;
  Tensor sum(IntArrayRef dims, bool keepdim = false, std::optional<DType> dtype = std::nullopt) const;
  Tensor mean(std::optional<DType> dtype = std::nullopt) const;
  Tensor mean(IntArrayRef dims, bool keepdim = false, std::optional<DType> dtype = std::nullopt) const;
  Tensor max() const;
  Tensor min() const;
  Tensor argmax(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  Tensor argmin(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  Tensor abs() const;
  Tensor neg() const;
  Tensor exp() const;
  Tensor log() const;
  Tensor sqrt() const;
  Tensor pow(const Tensor& exponent) const;
  Tensor pow(Scalar exponent) const;
  Tensor softmax(int64_t dim) const;

  void check_dtype(DType expected) const;

 private:
  TensorImpl& ref() const {
    if (impl_ == nullptr) raise_error(Status::InvalidState, "use of an undefined tensor");
    return *impl_;
  }
  std::shared_ptr<TensorImpl> impl_;
};

// The Status-returning cores of the Tensor members above and of the functions
// below that can fail on their arguments (the inference path's form, error.h):
// the member or function is unwrap(core::f(*this, ...)), with the same checks
// and messages.
namespace core {
Result<int64_t> wrap_dim(int64_t dim, int64_t rank);
Result<size_t> storage_bytes(IntArrayRef sizes, IntArrayRef strides, int64_t offset, size_t itemsize);
Result<Tensor> make(Storage storage, DType dtype, IntArrayRef sizes, IntArrayRef strides, int64_t offset = 0);
Status check_dtype(const Tensor& self, DType expected);
Result<Scalar> item(const Tensor& self);
Result<TensorView> kernel_view(const Tensor& self);

Result<Tensor> view(const Tensor& self, IntArrayRef sizes);
Result<Tensor> reshape(const Tensor& self, IntArrayRef sizes);
Result<Tensor> flatten(const Tensor& self, int64_t start_dim = 0, int64_t end_dim = -1);
Result<Tensor> transpose(const Tensor& self, int64_t dim0, int64_t dim1);
Result<Tensor> permute(const Tensor& self, IntArrayRef dims);
Result<Tensor> t(const Tensor& self);
Result<Tensor> squeeze(const Tensor& self, int64_t dim);
Result<Tensor> unsqueeze(const Tensor& self, int64_t dim);
Result<Tensor> expand(const Tensor& self, IntArrayRef sizes);
Result<Tensor> narrow(const Tensor& self, int64_t dim, int64_t start, int64_t length);
Result<Tensor> select(const Tensor& self, int64_t dim, int64_t index);
Result<Tensor> slice(const Tensor& self, int64_t dim, std::optional<int64_t> start = std::nullopt,
                     std::optional<int64_t> end = std::nullopt, int64_t step = 1);
Result<Tensor> unfold(const Tensor& self, int64_t dim, int64_t size, int64_t step);
Result<Tensor> as_strided(const Tensor& self, IntArrayRef sizes, IntArrayRef strides,
                          std::optional<int64_t> storage_offset = std::nullopt);

Result<Tensor> contiguous(const Tensor& self, MemoryFormat format = MemoryFormat::Contiguous);
Result<Tensor> clone(const Tensor& self, MemoryFormat format = MemoryFormat::Preserve);
Result<Tensor> to(const Tensor& self, DType dtype, bool copy = false);
Result<Tensor> to(const Tensor& self, Device device, bool copy = false);

Result<Tensor> empty(IntArrayRef sizes, TensorOptions options = {}, MemoryFormat format = MemoryFormat::Contiguous);
Result<Tensor> empty_strided(IntArrayRef sizes, IntArrayRef strides, TensorOptions options = {});
Result<Tensor> empty_like(const Tensor& t, TensorOptions options = {});
Result<Tensor> zeros(IntArrayRef sizes, TensorOptions options = {});
// The in-place members the cores use: Tensor::add_ (runtime/ops/elementwise.cc), copy_ (copy.cc).
Status add_(Tensor& self, const Tensor& other);
Status copy_(const Tensor& self, const Tensor& src);
Result<Tensor> full(IntArrayRef sizes, Scalar value, TensorOptions options = {});
Result<Tensor> full_like(const Tensor& t, Scalar value, TensorOptions options = {});
Result<Tensor> arange(Scalar start, Scalar end, Scalar step = 1, TensorOptions options = {});
}  // namespace core

// --- creation (runtime/tensor/creation.cc) -----------------------------------

// A tensor that copies `values`; nested initializer lists give the shape. As
// torch.tensor: integers give int64, floating values float32, bools bool,
// unless options say otherwise.
template <typename T>
Tensor tensor(std::initializer_list<T> values, TensorOptions options = {});
template <typename T>
Tensor tensor(std::initializer_list<std::initializer_list<T>> values, TensorOptions options = {});
template <typename T>
Tensor tensor(std::initializer_list<std::initializer_list<std::initializer_list<T>>> values,
              TensorOptions options = {});
// From a flat vector and a shape (dtype from T unless options say otherwise).
template <typename T>
Tensor tensor(const std::vector<T>& values, IntArrayRef sizes, TensorOptions options = {});
// A 0-dim tensor.
Tensor scalar_tensor(Scalar value, TensorOptions options = {});

// Shares `data` (never copies), like torch.from_numpy: writes through either side
// are seen by the other. `deleter` (optional) runs when the last view is gone.
Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, TensorOptions options = {},
                 std::function<void(void*)> deleter = {});
Tensor from_blob(void* data, IntArrayRef sizes, TensorOptions options = {},
                 std::function<void(void*)> deleter = {});

Tensor empty(IntArrayRef sizes, TensorOptions options = {},
             MemoryFormat format = MemoryFormat::Contiguous);
Tensor empty_strided(IntArrayRef sizes, IntArrayRef strides, TensorOptions options = {});
Tensor zeros(IntArrayRef sizes, TensorOptions options = {});
Tensor ones(IntArrayRef sizes, TensorOptions options = {});
Tensor full(IntArrayRef sizes, Scalar value, TensorOptions options = {});
Tensor eye(int64_t n, std::optional<int64_t> m = std::nullopt, TensorOptions options = {});
// arange(end), arange(start, end, step): int64 when all are integers, else float32.
Tensor arange(Scalar end, TensorOptions options = {});
Tensor arange(Scalar start, Scalar end, Scalar step = 1,
              TensorOptions options = {});
Tensor linspace(double start, double end, int64_t steps, TensorOptions options = {});
Tensor rand(IntArrayRef sizes, TensorOptions options = {});
Tensor randn(IntArrayRef sizes, TensorOptions options = {});
Tensor randint(int64_t low, int64_t high, IntArrayRef sizes, TensorOptions options = DType::Int64);

// The *_like forms keep dtype and device unless told otherwise (and, for
// dense inputs, the strides, as memory_format=preserve does).
Tensor empty_like(const Tensor& t, TensorOptions options = {});
Tensor zeros_like(const Tensor& t, TensorOptions options = {});
Tensor ones_like(const Tensor& t, TensorOptions options = {});
Tensor full_like(const Tensor& t, Scalar value, TensorOptions options = {});
Tensor rand_like(const Tensor& t, TensorOptions options = {});
Tensor randn_like(const Tensor& t, TensorOptions options = {});
Tensor randint_like(const Tensor& t, int64_t low, int64_t high,
                    TensorOptions options = {});

// Prints the way PyTorch does: tensor([[1., 2.], ...], dtype=torch.float16).
std::ostream& operator<<(std::ostream& os, const Tensor& t);
std::string to_string(const Tensor& t);

// "[2, 3]" for messages.
std::string shape_str(IntArrayRef sizes);

// The bytes a storage needs for a view (sizes, strides and offset in
// elements of `itemsize` bytes): 0 when it has no elements (offset bytes);
// raises "Storage size calculation overflowed ..." (OutOfRange, as PyTorch)
// when the count does not fit, instead of wrapping around.
size_t storage_bytes(IntArrayRef sizes, IntArrayRef strides, int64_t offset, size_t itemsize);

// Wraps a possibly negative dim into [0, rank); raises PyTorch's IndexError message.
int64_t wrap_dim(int64_t dim, int64_t rank);

namespace detail {
// Copies `count` values of `src_dtype` into a new tensor of that dtype, then
// converts it as `options` say.
Tensor tensor_from_data(const void* data, DType src_dtype, IntArrayRef sizes, TensorOptions options);

// Literal values are held as bool, int64 or double, as Python holds them.
template <typename T>
using literal_t = std::conditional_t<std::is_same_v<T, bool>, bool,
                                     std::conditional_t<std::is_integral_v<T>, int64_t, double>>;

template <typename T>
Tensor tensor_from_literal(const std::vector<literal_t<T>>& flat, IntArrayRef sizes,
                           TensorOptions options) {
  using L = literal_t<T>;
  const DType natural = std::is_same_v<L, bool> ? DType::Bool
                        : std::is_same_v<L, int64_t> ? DType::Int64 : DType::Float64;
  if (!options.dtype_) options.dtype_ = natural == DType::Float64 ? kDefaultFloat : natural;
  if constexpr (std::is_same_v<L, bool>) {
    std::vector<uint8_t> bytes(flat.begin(), flat.end());
    return tensor_from_data(bytes.data(), natural, sizes, options);
  } else {
    return tensor_from_data(flat.data(), natural, sizes, options);
  }
}

void check_ragged(int64_t expected, int64_t got, int dim);
}  // namespace detail

template <typename T>
Tensor tensor(std::initializer_list<T> values, TensorOptions options) {
  std::vector<detail::literal_t<T>> flat(values.begin(), values.end());
  const int64_t n = static_cast<int64_t>(values.size());
  return detail::tensor_from_literal<T>(flat, {n}, options);
}

template <typename T>
Tensor tensor(std::initializer_list<std::initializer_list<T>> values, TensorOptions options) {
  std::vector<detail::literal_t<T>> flat;
  const int64_t rows = static_cast<int64_t>(values.size());
  const int64_t cols = rows ? static_cast<int64_t>(values.begin()->size()) : 0;
  for (const auto& row : values) {
    detail::check_ragged(cols, static_cast<int64_t>(row.size()), 1);
    flat.insert(flat.end(), row.begin(), row.end());
  }
  return detail::tensor_from_literal<T>(flat, {rows, cols}, options);
}

template <typename T>
Tensor tensor(std::initializer_list<std::initializer_list<std::initializer_list<T>>> values,
              TensorOptions options) {
  std::vector<detail::literal_t<T>> flat;
  const int64_t d0 = static_cast<int64_t>(values.size());
  const int64_t d1 = d0 ? static_cast<int64_t>(values.begin()->size()) : 0;
  const int64_t d2 = d1 ? static_cast<int64_t>(values.begin()->begin()->size()) : 0;
  for (const auto& plane : values) {
    detail::check_ragged(d1, static_cast<int64_t>(plane.size()), 1);
    for (const auto& row : plane) {
      detail::check_ragged(d2, static_cast<int64_t>(row.size()), 2);
      flat.insert(flat.end(), row.begin(), row.end());
    }
  }
  return detail::tensor_from_literal<T>(flat, {d0, d1, d2}, options);
}

template <typename T>
Tensor tensor(const std::vector<T>& values, IntArrayRef sizes, TensorOptions options) {
  if (!options.dtype_) options.dtype_ = dtype_of<T>::value;
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  EMBER_ENFORCE(n == static_cast<int64_t>(values.size()), Status::ShapeMismatch, "shape ",
              shape_str(sizes), " is invalid for input of size ", values.size());
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> bytes(values.begin(), values.end());
    return detail::tensor_from_data(bytes.data(), DType::Bool, sizes, options);
  } else {
    return detail::tensor_from_data(values.data(), dtype_of<T>::value, sizes, options);
  }
}

template <typename T>
std::vector<T> Tensor::to_vector() const {
  const Tensor c = to(dtype_of<T>::value).contiguous().to(Device(DeviceType::CPU));
  const T* p = static_cast<const T*>(c.data_ptr());
  return std::vector<T>(p, p + c.numel());
}

}  // namespace ember
