// torch.nn.init: in-place initializers with PyTorch 1.13's distributions, fan
// computations, gains and error messages. Each runs under NoGradGuard and
// returns its argument. The random ones draw from the default generator the
// way PyTorch's CPU kernels do, so after manual_seed(s) a float32/float64
// tensor gets the values torch.manual_seed(s) would give it.
#pragma once

#include <optional>
#include <string_view>
#include <utility>

#include "runtime/tensor/tensor.h"

namespace ember::nn::init {

// (fan_in, fan_out): size(1) and size(0) times the receptive field (the
// product of the remaining dims). Raises for tensors with fewer than 2 dims.
std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor);
// The recommended gain for a nonlinearity: "linear", "conv1d", "conv2d",
// "conv3d", "conv_transpose1d/2d/3d", "sigmoid" (1), "tanh" (5/3), "relu"
// (sqrt 2), "leaky_relu" (sqrt(2 / (1 + slope^2)), slope = param or 0.01),
// "selu" (3/4).
double calculate_gain(std::string_view nonlinearity, std::optional<double> param = std::nullopt);

// U(a, b): draws as torch.rand then x * (b - a) + a (in float for 16/32-bit floats).
Tensor uniform_(const Tensor& tensor, double a = 0.0, double b = 1.0);
// N(mean, std^2): draws as torch.randn then x * std + mean.
Tensor normal_(const Tensor& tensor, double mean = 0.0, double std = 1.0);
// N(mean, std^2) truncated to [a, b] (PyTorch's inverse-CDF method: uniform, erfinv, clamp).
Tensor trunc_normal_(const Tensor& tensor, double mean = 0.0, double std = 1.0, double a = -2.0,
                     double b = 2.0);
Tensor constant_(const Tensor& tensor, double value);
Tensor zeros_(const Tensor& tensor);
Tensor ones_(const Tensor& tensor);
// The identity for 2-D tensors.
Tensor eye_(const Tensor& tensor);

// U(-b, b) with b = gain * sqrt(6 / (fan_in + fan_out)).
Tensor xavier_uniform_(const Tensor& tensor, double gain = 1.0);
// N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out)).
Tensor xavier_normal_(const Tensor& tensor, double gain = 1.0);
// U(-b, b) with b = gain * sqrt(3 / fan), gain = calculate_gain(nonlinearity, a),
// fan = fan_in or fan_out as `mode` says. Zero-element tensors are left alone.
Tensor kaiming_uniform_(const Tensor& tensor, double a = 0.0, std::string_view mode = "fan_in",
                        std::string_view nonlinearity = "leaky_relu");
// N(0, std^2) with std = gain / sqrt(fan).
Tensor kaiming_normal_(const Tensor& tensor, double a = 0.0, std::string_view mode = "fan_in",
                       std::string_view nonlinearity = "leaky_relu");
// A (semi-)orthogonal matrix (over the tensor viewed as size(0) x rest) from
// the QR decomposition of a standard normal draw, with R's diagonal made
// positive, times gain.
Tensor orthogonal_(const Tensor& tensor, double gain = 1.0);

}  // namespace ember::nn::init
