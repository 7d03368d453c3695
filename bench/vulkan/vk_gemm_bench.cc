// Times Vulkan MatMul and Conv2d (kernels/vulkan/{matmul,conv2d}.cc) against
// the CPU kernels on the same shapes and prints a table. Each Vulkan figure
// covers recording `reps` ops, one submit and the wait (no uploads or
// downloads); each CPU figure is the mean of `reps` calls. On lavapipe
// (llvmpipe, a CPU driver) these are tracked, not compared.
//   bazel run -c opt //bench/vulkan:vk_gemm_bench [-- reps]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "kernels/vulkan/context.h"
#include "runtime/ember.h"

using namespace ember;

namespace {

using Clock = std::chrono::steady_clock;


// Builds the inputs once per device and returns the op on them.
struct Bench {
  std::string name;
  double flops;
  std::function<std::function<Tensor()>(const Device&)> setup;
};

Tensor on(const Tensor& t, const Device& d) { return t.to(d); }

std::vector<Bench> benches() {
  std::vector<Bench> out;
  for (int64_t n : {256, 512, 1024}) {
    out.push_back({"matmul " + std::to_string(n) + "^3", 2.0 * n * n * n, [n](const Device& d) {
                     manual_seed(0);
                     const Tensor a = on(randn({n, n}), d), b = on(randn({n, n}), d);
                     return std::function<Tensor()>([=] { return mm(a, b); });
                   }});
  }
  out.push_back({"linear [1,768]x[768,3072]", 2.0 * 768 * 3072, [](const Device& d) {
                   manual_seed(0);
                   const Tensor x = on(randn({1, 768}), d), w = on(randn({3072, 768}), d);
                   return std::function<Tensor()>([=] { return linear(x, w); });
                 }});
  out.push_back({"linear [128,768]x[768,3072]", 2.0 * 128 * 768 * 3072, [](const Device& d) {
                   manual_seed(0);
                   const Tensor x = on(randn({128, 768}), d), w = on(randn({3072, 768}), d);
                   return std::function<Tensor()>([=] { return linear(x, w); });
                 }});
  struct Conv {
    const char* name;
    Shape x, w;
    int64_t stride, pad, groups;
  };
  const Conv convs[] = {
      {"conv resnet18 stem 3->64 7x7 s2 224", {1, 3, 224, 224}, {64, 3, 7, 7}, 2, 3, 1},
      {"conv resnet18 64->64 3x3 56", {1, 64, 56, 56}, {64, 64, 3, 3}, 1, 1, 1},
      {"conv resnet18 128->128 3x3 28", {1, 128, 28, 28}, {128, 128, 3, 3}, 1, 1, 1},
      {"conv mbv2 pointwise 32->192 1x1 56", {1, 32, 56, 56}, {192, 32, 1, 1}, 1, 0, 1},
      {"conv mbv2 depthwise 144 3x3 56", {1, 144, 56, 56}, {144, 1, 3, 3}, 1, 1, 144},
      {"conv mbv2 depthwise 384 3x3 s2 28", {1, 384, 28, 28}, {384, 1, 3, 3}, 2, 1, 384},
  };
  for (const Conv& c : convs) {
    const int64_t oh = (c.x[2] + 2 * c.pad - c.w[2]) / c.stride + 1, ow = (c.x[3] + 2 * c.pad - c.w[3]) / c.stride + 1;
    const double flops = 2.0 * c.w[0] * c.w[1] * c.w[2] * c.w[3] * oh * ow;
    out.push_back({c.name, flops, [c](const Device& d) {
                     manual_seed(0);
                     const Tensor x = on(randn(c.x), d), w = on(randn(c.w), d), b = on(randn({c.w[0]}), d);
                     return std::function<Tensor()>(
                         [=] { return conv2d(x, w, b, {c.stride}, {c.pad}, {1}, c.groups); });
                   }});
  }
  return out;
}

double cpu_ms(const std::function<Tensor()>& op, int reps) {
  op();
  const auto t0 = Clock::now();
  for (int i = 0; i < reps; ++i) op();
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count() / reps;
}

double vk_ms(const std::function<Tensor()>& op, int reps, vk::Context* c) {
  op();  // pipelines compiled, memory allocated
  if (c->flush() != Status::Ok) return -1;
  const auto t0 = Clock::now();
  for (int i = 0; i < reps; ++i) op();
  if (c->flush() != Status::Ok) return -1;
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count() / reps;
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 5;
  Result<vk::Context*> c = vk::Context::get();
  if (!c.ok()) {
    std::fprintf(stderr, "no Vulkan device: %s\n", vk::Context::why().c_str());
    return 1;
  }
  const int threads = get_num_threads();
  std::printf("Vulkan device: %s; CPU threads: %d; %d reps\n", c.get()->caps().device_name.c_str(), threads, reps);
  std::printf("%-38s %12s %8s %12s %8s %12s %8s\n", "case", "cpu 1t ms", "GFLOP/s", "cpu Nt ms", "GFLOP/s",
              "vulkan ms", "GFLOP/s");
  const Device cpu("cpu"), vulkan("vulkan");
  for (const Bench& b : benches()) {
    set_num_threads(1);
    const double t1 = cpu_ms(b.setup(cpu), reps);
    set_num_threads(threads);
    const double tn = cpu_ms(b.setup(cpu), reps);
    const double tv = vk_ms(b.setup(vulkan), reps, c.get());
    std::printf("%-38s %12.3f %8.2f %12.3f %8.2f %12.3f %8.2f\n", b.name.c_str(), t1, b.flops / t1 / 1e6, tn,
                b.flops / tn / 1e6, tv, b.flops / tv / 1e6);
  }
  return 0;
}
