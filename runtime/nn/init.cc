// torch.nn.init (PyTorch 1.13). The random fills reproduce PyTorch's CPU
// kernels: uniform_ is rand then fma(x, b - a, a), normal_ is randn then
// fma(x, std, mean) (in double for fewer than 16 elements, where PyTorch draws
// each value in double), both as PyTorch's FMA-compiled kernels round.
#include "runtime/nn/init.h"

#include <cmath>
#include <limits>
#include <vector>

#include "runtime/autograd/grad_mode.h"
#include "runtime/core/error.h"
#include "runtime/ops/ops.h"
#include "runtime/tensor/convert.h"

namespace ember::nn::init {
namespace {

// Writes `values` (same sizes) into `tensor` without recording autograd.
void assign(const Tensor& tensor, const Tensor& values) {
  NoGradGuard no_grad;
  Tensor(tensor).copy_(values);
}

template <typename T>
constexpr bool is_float_v = std::is_floating_point_v<T> || is_reduced_float_v<T>;

// A contiguous tensor of `dtype` holding f(src[i]) for the contiguous `src`.
template <typename F>
Tensor map_float(const Tensor& src, DType dtype, F&& f) {
  const Tensor s = src.contiguous();
  Tensor out = empty(src.sizes(), dtype);
  dispatch_dtype(src.dtype(), [&](auto stag) {
    using S = typename decltype(stag)::type;
    dispatch_dtype(dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (is_float_v<T> && is_float_v<S>) {
        const S* in = static_cast<const S*>(s.data_ptr());
        T* o = static_cast<T*>(out.data_ptr());
        for (int64_t i = 0; i < s.numel(); ++i) o[i] = f(in[i], TypeTag<T>{});
      }
    });
  });
  return out;
}

// erfinv as PyTorch's calc_erfinv: a rational first guess, two Newton steps.
template <typename T>
T calc_erfinv(T y) {
  constexpr T kCentralRange = T(0.7);
  const T a[4] = {T(0.886226899), T(-1.645349621), T(0.914624893), T(-0.140543331)};
  const T b[4] = {T(-2.118377725), T(1.442710462), T(-0.329097515), T(0.012229801)};
  const T c[4] = {T(-1.970840454), T(-1.624906493), T(3.429567803), T(1.641345311)};
  const T d[2] = {T(3.543889200), T(1.637067800)};
  const T y_abs = std::abs(y);
  if (y_abs > T(1)) return std::numeric_limits<T>::quiet_NaN();
  if (y_abs == T(1)) return std::copysign(std::numeric_limits<T>::infinity(), y);
  T x;
  if (y_abs <= kCentralRange) {
    const T z = y * y;
    const T num = (((a[3] * z + a[2]) * z + a[1]) * z + a[0]);
    const T dem = ((((b[3] * z + b[2]) * z + b[1]) * z + b[0]) * z + T(1));
    x = y * num / dem;
  } else {
    const T z = std::sqrt(-std::log((T(1) - y_abs) / T(2)));
    const T num = ((c[3] * z + c[2]) * z + c[1]) * z + c[0];
    const T dem = (d[1] * z + d[0]) * z + T(1);
    x = std::copysign(num, y) / dem;
  }
  const T two_over_sqrt_pi = T(2) / static_cast<T>(std::sqrt(M_PI));
  x = x - (std::erf(x) - y) / (two_over_sqrt_pi * std::exp(-x * x));
  x = x - (std::erf(x) - y) / (two_over_sqrt_pi * std::exp(-x * x));
  return x;
}

bool has_zero_dim(const Tensor& t) {
  for (int64_t s : t.sizes()) {
    if (s == 0) return true;
  }
  return false;
}

int64_t correct_fan(const Tensor& tensor, std::string_view mode) {
  EMBER_ENFORCE(mode == "fan_in" || mode == "fan_out", Status::InvalidArgument, "Mode ", mode,
              " not supported, please use one of ['fan_in', 'fan_out']");
  const auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
  return mode == "fan_in" ? fan_in : fan_out;
}

}  // namespace

std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor) {
  EMBER_ENFORCE(tensor.dim() >= 2, Status::InvalidArgument,
              "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions");
  int64_t receptive = 1;
  for (int64_t d = 2; d < tensor.dim(); ++d) receptive *= tensor.size(d);
  return {tensor.size(1) * receptive, tensor.size(0) * receptive};
}

double calculate_gain(std::string_view nonlinearity, std::optional<double> param) {
  static constexpr std::string_view kLinear[] = {"linear",           "conv1d",           "conv2d",
                                                 "conv3d",           "conv_transpose1d", "conv_transpose2d",
                                                 "conv_transpose3d"};
  for (std::string_view name : kLinear) {
    if (nonlinearity == name) return 1.0;
  }
  if (nonlinearity == "sigmoid") return 1.0;
  if (nonlinearity == "tanh") return 5.0 / 3;
  if (nonlinearity == "relu") return std::sqrt(2.0);
  if (nonlinearity == "leaky_relu") {
    const double slope = param.value_or(0.01);
    return std::sqrt(2.0 / (1 + slope * slope));
  }
  if (nonlinearity == "selu") return 3.0 / 4;
  raise_error(Status::InvalidArgument, str_cat("Unsupported nonlinearity ", nonlinearity));
}

Tensor uniform_(const Tensor& tensor, double a, double b) {
  EMBER_ENFORCE(a <= b, Status::InvalidArgument, "uniform_ expects to return a [from, to) range, but found from=", a,
              " > to=", b);
  if (tensor.numel() == 0) return tensor;
  const Tensor r = rand(tensor.sizes(), tensor.dtype());
  assign(tensor, map_float(r, tensor.dtype(), [&](auto x, auto tag) {
           using T = typename decltype(tag)::type;
           using C = compute_t<T>;
           const C from = static_cast<C>(convert<T>(a)), to = static_cast<C>(convert<T>(b));
           return convert<T>(std::fma(static_cast<C>(x), to - from, from));
         }));
  return tensor;
}

Tensor normal_(const Tensor& tensor, double mean, double std) {
  EMBER_ENFORCE(std >= 0.0, Status::InvalidArgument, "normal expects std >= 0.0, but found std ", std);
  if (tensor.numel() == 0) return tensor;
  if (tensor.numel() < 16) {  // PyTorch draws these one by one in double
    const Tensor r = randn(tensor.sizes(), DType::Float64);
    assign(tensor, map_float(r, tensor.dtype(), [&](auto x, auto tag) {
             using T = typename decltype(tag)::type;
             return convert<T>(std::fma(static_cast<double>(x), std, mean));
           }));
    return tensor;
  }
  const Tensor r = randn(tensor.sizes(), tensor.dtype());
  assign(tensor, map_float(r, tensor.dtype(), [&](auto x, auto tag) {
           using T = typename decltype(tag)::type;
           using C = compute_t<T>;
           return convert<T>(std::fma(static_cast<C>(x), static_cast<C>(std), static_cast<C>(mean)));
         }));
  return tensor;
}

Tensor trunc_normal_(const Tensor& tensor, double mean, double std, double a, double b) {
  auto norm_cdf = [](double x) { return (1.0 + std::erf(x / std::sqrt(2.0))) / 2.0; };
  const double l = norm_cdf((a - mean) / std);
  const double u = norm_cdf((b - mean) / std);
  // PyTorch: uniform_(2l - 1, 2u - 1), erfinv_, mul_(std * sqrt(2)), add_(mean), clamp_(a, b).
  uniform_(tensor, 2 * l - 1, 2 * u - 1);
  if (tensor.numel() == 0) return tensor;
  const double scale = std * std::sqrt(2.0);
  assign(tensor, map_float(tensor, tensor.dtype(), [&](auto x, auto tag) {
           using T = typename decltype(tag)::type;
           using C = compute_t<T>;
           C v = static_cast<C>(convert<T>(calc_erfinv(static_cast<C>(x))));
           v = static_cast<C>(convert<T>(v * static_cast<C>(scale)));
           v = static_cast<C>(convert<T>(v + static_cast<C>(mean)));
           v = std::min(std::max(v, static_cast<C>(convert<T>(a))), static_cast<C>(convert<T>(b)));
           return convert<T>(v);
         }));
  return tensor;
}

Tensor constant_(const Tensor& tensor, double value) {
  NoGradGuard no_grad;
  Tensor(tensor).fill_(value);
  return tensor;
}

Tensor zeros_(const Tensor& tensor) { return constant_(tensor, 0.0); }
Tensor ones_(const Tensor& tensor) { return constant_(tensor, 1.0); }

Tensor eye_(const Tensor& tensor) {
  EMBER_ENFORCE(tensor.dim() == 2, Status::InvalidArgument, "Only tensors with 2 dimensions are supported");
  assign(tensor, eye(tensor.size(0), tensor.size(1), tensor.dtype()));
  return tensor;
}

Tensor xavier_uniform_(const Tensor& tensor, double gain) {
  const auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
  const double std = gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out));
  const double bound = std::sqrt(3.0) * std;
  return uniform_(tensor, -bound, bound);
}

Tensor xavier_normal_(const Tensor& tensor, double gain) {
  const auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
  const double std = gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out));
  return normal_(tensor, 0.0, std);
}

Tensor kaiming_uniform_(const Tensor& tensor, double a, std::string_view mode, std::string_view nonlinearity) {
  if (has_zero_dim(tensor)) return tensor;  // PyTorch warns "Initializing zero-element tensors is a no-op"
  const int64_t fan = correct_fan(tensor, mode);
  const double gain = calculate_gain(nonlinearity, a);
  const double std = gain / std::sqrt(static_cast<double>(fan));
  const double bound = std::sqrt(3.0) * std;
  return uniform_(tensor, -bound, bound);
}

Tensor kaiming_normal_(const Tensor& tensor, double a, std::string_view mode, std::string_view nonlinearity) {
  if (has_zero_dim(tensor)) return tensor;
  const int64_t fan = correct_fan(tensor, mode);
  const double gain = calculate_gain(nonlinearity, a);
  const double std = gain / std::sqrt(static_cast<double>(fan));
  return normal_(tensor, 0.0, std);
}

Tensor orthogonal_(const Tensor& tensor, double gain) {
  EMBER_ENFORCE(tensor.dim() >= 2, Status::InvalidArgument, "Only tensors with 2 or more dimensions are supported");
  if (tensor.numel() == 0) return tensor;
  const int64_t rows = tensor.size(0);
  const int64_t cols = tensor.numel() / rows;
  Tensor flat = empty({rows, cols}, tensor.dtype());
  normal_(flat, 0.0, 1.0);
  // QR of A (m x n, m >= n): A = flat, or flat^T when rows < cols.
  const bool transposed = rows < cols;
  const int64_t m = transposed ? cols : rows, n = transposed ? rows : cols;
  std::vector<double> A = (transposed ? flat.t() : flat).contiguous().to_vector<double>();  // m x n
  // Householder: column k's reflector v (stored below the diagonal plus vk
  // kept apart), H = I - 2 v v^T / (v^T v).
  std::vector<std::vector<double>> vs;
  for (int64_t k = 0; k < n; ++k) {
    std::vector<double> v(static_cast<size_t>(m - k));
    double norm = 0;
    for (int64_t i = k; i < m; ++i) {
      v[i - k] = A[i * n + k];
      norm += v[i - k] * v[i - k];
    }
    norm = std::sqrt(norm);
    const double alpha = v[0] >= 0 ? -norm : norm;
    v[0] -= alpha;
    double vv = 0;
    for (double e : v) vv += e * e;
    if (vv > 0) {
      for (int64_t j = k; j < n; ++j) {
        double dot = 0;
        for (int64_t i = k; i < m; ++i) dot += v[i - k] * A[i * n + j];
        const double f = 2 * dot / vv;
        for (int64_t i = k; i < m; ++i) A[i * n + j] -= f * v[i - k];
      }
    }
    vs.push_back(std::move(v));
  }
  // Q (m x n) = H_0 ... H_{n-1} applied to the first n columns of I.
  std::vector<double> Q(static_cast<size_t>(m * n), 0.0);
  for (int64_t i = 0; i < n; ++i) Q[i * n + i] = 1.0;
  for (int64_t k = n - 1; k >= 0; --k) {
    const std::vector<double>& v = vs[static_cast<size_t>(k)];
    double vv = 0;
    for (double e : v) vv += e * e;
    if (vv == 0) continue;
    for (int64_t j = 0; j < n; ++j) {
      double dot = 0;
      for (int64_t i = k; i < m; ++i) dot += v[i - k] * Q[i * n + j];
      const double f = 2 * dot / vv;
      for (int64_t i = k; i < m; ++i) Q[i * n + j] -= f * v[i - k];
    }
  }
  // Make R's diagonal positive (PyTorch multiplies Q by sign(diag(R))), and scale.
  for (int64_t j = 0; j < n; ++j) {
    const double r = A[j * n + j];
    const double sign = r > 0 ? 1.0 : r < 0 ? -1.0 : 0.0;
    for (int64_t i = 0; i < m; ++i) Q[i * n + j] *= sign * gain;
  }
  Tensor q = ember::tensor(Q, {m, n}, DType::Float64);
  if (transposed) q = q.t();
  assign(tensor, q.to(tensor.dtype()).reshape(tensor.sizes()));
  return tensor;
}

}  // namespace ember::nn::init
