// Creation functions: tensor literals, from_blob, zeros/ones/full/eye,
// arange/linspace and the random ones (PyTorch's draws, see rng.h).
#include <cmath>
#include <cstring>

#include "runtime/core/rng.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/ops.h"
#include "runtime/tensor/convert.h"
#include "runtime/tensor/tensor.h"

namespace ember {

namespace detail {

void check_ragged(int64_t expected, int64_t got, int dim) {
  EMBER_ENFORCE(expected == got, Status::ShapeMismatch, "expected sequence of length ", expected,
              " at dim ", dim, " (got ", got, ")");
}

Tensor tensor_from_data(const void* data, DType src_dtype, IntArrayRef sizes, TensorOptions options) {
  Tensor src = empty(sizes, src_dtype);
  if (src.nbytes() > 0) std::memcpy(src.data_ptr(), data, src.nbytes());
  return src.to(options.dtype_or(src_dtype)).to(options.device_or());
}

}  // namespace detail

Tensor scalar_tensor(Scalar value, TensorOptions options) {
  return full({}, value, options.dtype_ ? options : options.dtype(value.default_dtype()));
}

Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, TensorOptions options,
                 std::function<void(void*)> deleter) {
  EMBER_ENFORCE(sizes.size() == strides.size(), Status::InvalidArgument,
              "from_blob: sizes ", shape_str(sizes), " and strides ", shape_str(strides),
              " have different lengths");
  const DType dtype = options.dtype_or(DType::Float32);
  for (size_t d = 0; d < sizes.size(); ++d) {
    EMBER_ENFORCE(sizes[d] >= 0 && strides[d] >= 0, Status::InvalidArgument,
                "from_blob: negative size or stride in sizes ", shape_str(sizes), ", strides ",
                shape_str(strides));
  }
  const size_t bytes = storage_bytes(sizes, strides, 0, element_size(dtype));
  EMBER_ENFORCE(data != nullptr || bytes == 0, Status::InvalidArgument, "from_blob: data is null");
  Storage storage = std::make_shared<StorageImpl>(data, bytes, options.device_or(), std::move(deleter));
  return Tensor::make(std::move(storage), dtype, sizes, strides, 0);
}

Tensor from_blob(void* data, IntArrayRef sizes, TensorOptions options,
                 std::function<void(void*)> deleter) {
  Shape strides(sizes.size());
  int64_t expected = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    strides[d] = expected;
    expected *= std::max<int64_t>(sizes[d], 1);
  }
  return from_blob(data, sizes, strides, options, std::move(deleter));
}

Result<Tensor> core::zeros(IntArrayRef sizes, TensorOptions options) {
  return core::full(sizes, 0, options.dtype(options.dtype_or(DType::Float32)));
}

Result<Tensor> core::full(IntArrayRef sizes, Scalar value, TensorOptions options) {
  // As torch.full: the dtype follows the fill value unless given.
  EMBER_ASSIGN_OR_RETURN(Tensor t, core::empty(sizes, options.dtype(options.dtype_or(value.default_dtype()))));
  EMBER_TRY(fill_into(t, value));
  return t;
}

Tensor zeros(IntArrayRef sizes, TensorOptions options) { return unwrap(core::zeros(sizes, options)); }
Tensor ones(IntArrayRef sizes, TensorOptions options) { return full(sizes, 1, options.dtype(options.dtype_or(DType::Float32))); }
Tensor full(IntArrayRef sizes, Scalar value, TensorOptions options) { return unwrap(core::full(sizes, value, options)); }

Tensor eye(int64_t n, std::optional<int64_t> m, TensorOptions options) {
  const int64_t cols = m.value_or(n);
  EMBER_ENFORCE(n >= 0, Status::InvalidArgument, "n must be greater or equal to 0, got ", n);
  EMBER_ENFORCE(cols >= 0, Status::InvalidArgument, "m must be greater or equal to 0, got ", cols);
  Tensor t = zeros({n, cols}, options);
  const int64_t diag = std::min(n, cols);
  if (diag > 0) unwrap(fill_into(t.as_strided({diag}, {cols + 1}), 1));
  return t;
}

namespace {
// Fills a new CPU tensor of `dtype` with f(i), then moves it to the device.
template <typename F>
Result<Tensor> generate(IntArrayRef sizes, DType dtype, Device device, F&& f) {
  EMBER_ASSIGN_OR_RETURN(Tensor t, core::empty(sizes, dtype));
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = static_cast<T*>(t.data_ptr());
    const int64_t n = t.numel();
    for (int64_t i = 0; i < n; ++i) p[i] = f(i, tag);
  });
  return core::to(t, device);
}
}  // namespace

Tensor arange(Scalar end, TensorOptions options) { return arange(0, end, 1, options); }

Tensor arange(Scalar start, Scalar end, Scalar step, TensorOptions options) {
  return unwrap(core::arange(start, end, step, options));
}

Result<Tensor> core::arange(Scalar start, Scalar end, Scalar step, TensorOptions options) {
  const bool integral = !start.is_floating() && !end.is_floating() && !step.is_floating();
  const DType dtype = options.dtype_or(integral ? DType::Int64 : kDefaultFloat);
  const double s = start.to_double(), e = end.to_double(), st = step.to_double();
  EMBER_CHECK(st != 0, Status::InvalidArgument, "step must be nonzero");
  EMBER_CHECK(std::isfinite(s) && std::isfinite(e), Status::InvalidArgument,
              "unsupported range: ", s, " -> ", e);
  EMBER_CHECK((st > 0 && e >= s) || (st < 0 && e <= s), Status::InvalidArgument,
              "upper bound and larger bound inconsistent with step sign");
  const int64_t n = static_cast<int64_t>(std::ceil((e - s) / st));
  if (integral && (dtype == DType::Int64 || is_integral(dtype))) {
    const int64_t is = start.to_int(), ist = step.to_int();
    return generate({n}, dtype, options.device_or(), [&](int64_t i, auto tag) {
      using T = typename decltype(tag)::type;
      return convert<T>(is + i * ist);
    });
  }
  return generate({n}, dtype, options.device_or(), [&](int64_t i, auto tag) {
    using T = typename decltype(tag)::type;
    return convert<T>(s + static_cast<double>(i) * st);
  });
}

Tensor linspace(double start, double end, int64_t steps, TensorOptions options) {
  EMBER_ENFORCE(steps >= 0, Status::InvalidArgument, "number of steps must be non-negative");
  const DType dtype = options.dtype_or(kDefaultFloat);
  const int64_t half = steps / 2;
  // As PyTorch: the step is computed in the element type (double for
  // integers); the first half counts up from start, the second down from end.
  return unwrap(generate({steps}, dtype, options.device_or(), [&](int64_t i, auto tag) {
    using T = typename decltype(tag)::type;
    using S = std::conditional_t<std::is_integral_v<T>, double, compute_t<T>>;
    const S s = static_cast<S>(convert<T>(start)), e = static_cast<S>(convert<T>(end));
    const S step = steps > 1 ? (e - s) / static_cast<S>(steps - 1) : S(0);
    // Fused, as PyTorch's kernels compute it on FMA hardware.
    // One step is [start] (step 0 from the start), as PyTorch.
    const S v = i < half || steps == 1 ? std::fma(step, static_cast<S>(i), s)
                         : std::fma(-step, static_cast<S>(steps - i - 1), e);
    return convert<T>(v);
  }));
}

Tensor rand(IntArrayRef sizes, TensorOptions options) {
  const DType dtype = options.dtype_or(kDefaultFloat);
  EMBER_ENFORCE(is_floating(dtype), Status::NotSupported, "\"check_uniform_bounds\" not implemented for '",
              dtype_legacy_name(dtype), "'");
  Generator& g = default_generator();
  std::lock_guard<std::mutex> lock(g.mutex());
  return unwrap(generate(sizes, dtype, options.device_or(), [&](int64_t, auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, double>) {
      return g.uniform_double();
    } else {
      return T(g.uniform_float());
    }
  }));
}

Tensor randn(IntArrayRef sizes, TensorOptions options) {
  const DType dtype = options.dtype_or(kDefaultFloat);
  EMBER_ENFORCE(is_floating(dtype), Status::NotSupported, "\"normal_kernel_cpu\" not implemented for '",
              dtype_legacy_name(dtype), "'");
  Generator& g = default_generator();
  std::lock_guard<std::mutex> lock(g.mutex());
  Tensor t = empty(sizes, dtype);
  const int64_t n = t.numel();
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T> || is_reduced_float_v<T>) {
    T* p = static_cast<T*>(t.data_ptr());
    if (n < 16) {
      // Small tensors: one cached Box-Muller draw per element, in double.
      for (int64_t i = 0; i < n; ++i) p[i] = convert<T>(g.normal_double());
      return;
    }
    // PyTorch's normal_fill: uniforms first, then Box-Muller over blocks of 16
    // (the last, partial block redraws and transforms the final 16 values).
    using C = compute_t<T>;
    auto uniform = [&]() -> C {
      if constexpr (std::is_same_v<T, double>) return g.uniform_double();
      else return static_cast<C>(T(g.uniform_float()));
    };
    std::vector<C> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[i] = uniform();
    auto fill16 = [](C* d) {
      for (int j = 0; j < 8; ++j) {
        const C u1 = 1 - d[j];
        const C u2 = d[j + 8];
        const C radius = std::sqrt(-2 * std::log(u1));
        const C theta = C(2.0 * M_PI) * u2;
        d[j] = radius * std::cos(theta);
        d[j + 8] = radius * std::sin(theta);
      }
    };
    // float32: the vectorized transform PyTorch runs on x86-64 (rng.h), on
    // every platform, so a seed gives the same tensors on a phone and a PC.
    auto transform = [&](C* d) {
      if constexpr (std::is_same_v<T, float>) normal_fill_16(d);
      else fill16(d);
    };
    for (int64_t i = 0; i + 16 <= n; i += 16) transform(v.data() + i);
    if (n % 16 != 0) {
      C* tail = v.data() + n - 16;
      for (int j = 0; j < 16; ++j) tail[j] = uniform();
      transform(tail);
    }
    for (int64_t i = 0; i < n; ++i) p[i] = convert<T>(v[i]);
    }
  });
  return t.to(options.device_or());
}

Tensor randint(int64_t low, int64_t high, IntArrayRef sizes, TensorOptions options) {
  EMBER_ENFORCE(low < high, Status::InvalidArgument,
              "random_ expects 'from' to be less than 'to', but got from=", low, " >= to=", high);
  const DType dtype = options.dtype_or(DType::Int64);
  const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  Generator& g = default_generator();
  std::lock_guard<std::mutex> lock(g.mutex());
  return unwrap(generate(sizes, dtype, options.device_or(), [&](int64_t, auto tag) {
    using T = typename decltype(tag)::type;
    const uint64_t r = range >= (1ull << 32) ? g.random64() % range : g.random() % range;
    return convert<T>(static_cast<int64_t>(r + static_cast<uint64_t>(low)));
  }));
}

namespace {
TensorOptions like(const Tensor& t, TensorOptions options) {
  return TensorOptions(options.dtype_or(t.dtype())).device(options.device_or(t.device()));
}
}  // namespace

Tensor zeros_like(const Tensor& t, TensorOptions options) { return full_like(t, 0, options); }
Tensor ones_like(const Tensor& t, TensorOptions options) { return full_like(t, 1, options); }
Result<Tensor> core::full_like(const Tensor& t, Scalar value, TensorOptions options) {
  EMBER_ASSIGN_OR_RETURN(Tensor out, core::empty_like(t, like(t, options)));
  EMBER_TRY(fill_into(out, value));
  return out;
}

Tensor full_like(const Tensor& t, Scalar value, TensorOptions options) {
  return unwrap(core::full_like(t, value, options));
}
Tensor rand_like(const Tensor& t, TensorOptions options) { return rand(t.sizes(), like(t, options)); }
Tensor randn_like(const Tensor& t, TensorOptions options) { return randn(t.sizes(), like(t, options)); }
Tensor randint_like(const Tensor& t, int64_t low, int64_t high, TensorOptions options) {
  return randint(low, high, t.sizes(), like(t, options));
}

}  // namespace ember
