// A tour of ember's tensor API for PyTorch users: creation, dtype/device/
// shape/stride, views vs copies, from_blob, broadcasting, reductions, and a
// 1-D convolution written with unfold, checked and timed against a loop.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <vector>

#include "runtime/ember.h"

using namespace ember;

namespace {

void section(const char* title) { std::cout << "\n== " << title << " ==\n"; }

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main() {
  section("creation");
  manual_seed(0);
  std::cout << "tensor({{1., 2.}, {3., 4.}}) = " << tensor({{1., 2.}, {3., 4.}}) << "\n";
  std::cout << "arange(6)                   = " << arange(6) << "\n";
  std::cout << "linspace(0, 1, 5)           = " << linspace(0, 1, 5) << "\n";
  std::cout << "eye(3, DType::Int32)        = " << eye(3, std::nullopt, DType::Int32) << "\n";
  std::cout << "manual_seed(0); rand({3})   = " << rand({3}) << "   (torch.manual_seed(0); torch.rand(3) prints the same)\n";

  section("dtype, device, shape and stride");
  Tensor x = zeros({3, 4});
  std::cout << "x = zeros({3, 4}): dtype " << x.dtype() << ", device " << x.device() << ", shape "
            << shape_str(x.sizes()) << ", strides " << shape_str(x.strides()) << "\n";
  std::cout << "x.t(): shape " << shape_str(x.t().sizes()) << ", strides " << shape_str(x.t().strides())
            << ", is_contiguous " << std::boolalpha << x.t().is_contiguous() << "\n";
  std::cout << "x.to(DType::Float16).element_size() = " << x.to(DType::Float16).element_size() << "\n";

  section("view vs reshape on a transposed tensor");
  Tensor a = arange(12).view({3, 4});
  Tensor at = a.t();
  try {
    at.view({12});
  } catch (const Error& e) {
    std::cout << "a.t().view({12}) fails: " << e.what() << "\n";
  }
  Tensor r = at.reshape({12});
  std::cout << "a.t().reshape({12}) = " << r << "\n  (copied: shares storage with a? "
            << (r.storage() == a.storage()) << ")\n";
  std::cout << "a.reshape({2, 6}) shares storage with a? " << (a.reshape({2, 6}).storage() == a.storage())
            << "\n";

  section("from_blob shares memory both ways");
  std::vector<float> buffer = {1, 2, 3, 4, 5, 6};
  Tensor shared = from_blob(buffer.data(), {2, 3});
  shared.mul_(10);
  std::cout << "after shared.mul_(10), buffer = {";
  for (size_t i = 0; i < buffer.size(); ++i) std::cout << (i ? ", " : "") << buffer[i];
  std::cout << "}\n";
  buffer[0] = -1;
  std::cout << "after buffer[0] = -1, shared = " << shared << "\n";

  section("broadcasting");
  Tensor col = arange(3.0).view({3, 1});
  Tensor row = arange(4.0).view({1, 4});
  std::cout << "[3, 1] + [1, 4] =\n" << col + row << "\n";
  std::cout << "int64 [3] * 0.5 = " << arange(3) * 0.5 << "   (promoted to float32)\n";

  section("reductions with keepdim");
  Tensor m = arange(6.0).view({2, 3});
  std::cout << "m = " << m << "\n";
  std::cout << "m.sum({1})                 = " << m.sum({1}) << "\n";
  std::cout << "m.sum({1}, keepdim=true)   = " << m.sum({1}, true) << "\n";
  std::cout << "m.mean({0}, keepdim=true)  = " << m.mean({0}, true) << "\n";
  std::cout << "argmax(m, 1)               = " << argmax(m, 1) << "\n";

  section("1-D convolution of a 10,000-sample signal: unfold vs a loop");
  const int64_t n = 10000, k = 31;
  manual_seed(1);
  Tensor signal = randn({n});
  Tensor kernel = randn({k});
  // Loop version: one window at a time, as a first attempt in PyTorch would be.
  auto start = std::chrono::steady_clock::now();
  Tensor loop_out = empty({n - k + 1});
  for (int64_t i = 0; i + k <= n; ++i) loop_out[i].copy_((signal.narrow(0, i, k) * kernel).sum());
  const double loop_s = seconds_since(start);
  // unfold version: all windows as one [n - k + 1, k] view (no copy), then one matmul.
  start = std::chrono::steady_clock::now();
  Tensor windows = signal.unfold(0, k, 1);
  Tensor unfold_out = matmul(windows, kernel);
  const double unfold_s = seconds_since(start);
  const double max_diff = max(abs(unfold_out - loop_out)).item<double>();
  std::cout << "windows: shape " << shape_str(windows.sizes()) << ", strides " << shape_str(windows.strides())
            << ", shares the signal's storage: " << (windows.storage() == signal.storage()) << "\n";
  std::cout << "outputs agree: " << (max_diff < 1e-4 ? "yes" : "NO") << " (max |difference| = " << max_diff
            << ")\n";
  std::printf("loop: %.2f ms, unfold: %.3f ms -> unfold is %.0fx faster\n", loop_s * 1e3, unfold_s * 1e3,
              loop_s / unfold_s);
  return max_diff < 1e-4 ? 0 : 1;
}
