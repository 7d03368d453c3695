// ember's dynamic int8 Linear (quant/dynamic_linear.h: activation quantization
// + int8 GEMM + fused epilogue, weights prepacked) vs ember's fp32 Linear
// (ember::linear) at M in {1, 16, 128}, (K, N) in {(768, 3072), (3072, 768)}.
// Prints one line per case: "M K N threads fp32_us int8_us" (median of runs).
// Usage: quant_bench [rr] [threads ...]   (default: 1; rr: weights over [-64, 64],
// reduce_range, which AVX2 without VNNI runs on vpmaddubsw)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "kernels/cpu/qgemm.h"
#include "quant/dynamic_linear.h"
#include "quant/qscheme.h"
#include "runtime/core/thread_pool.h"
#include "runtime/ember.h"

using namespace ember;

template <typename F>
double median_us(F&& f) {
  f();  // warm-up
  std::vector<double> t;
  const auto start = std::chrono::steady_clock::now();
  while (t.size() < 7 || (t.size() < 200 && std::chrono::steady_clock::now() - start < std::chrono::milliseconds(400))) {
    const auto a = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int main(int argc, char** argv) {
  std::vector<int> threads;
  const bool rr = argc > 1 && std::string(argv[1]) == "rr";
  for (int i = rr ? 2 : 1; i < argc; ++i) threads.push_back(std::atoi(argv[i]));
  if (threads.empty()) threads.push_back(1);
  std::printf("# int8 kernel: %s\n", cpu::qgemm_kernel_name());
  const int64_t kn[][2] = {{768, 3072}, {3072, 768}};
  for (int th : threads) {
    set_num_threads(th);
    for (const auto& p : kn) {
      const int64_t k = p[0], n = p[1];
      manual_seed(0);
      const Tensor w = randn({n, k}) * 0.05, b = randn({n});
      std::vector<int8_t> q(static_cast<size_t>(n * k));
      std::vector<float> scales(static_cast<size_t>(n));
      quant::quantize_weight_int8(w.data_ptr<float>(), n, k, true, q.data(), scales.data(), rr);
      const quant::PackedLinear packed = quant::pack_linear(q.data(), n, k, scales.data(), true, b.data_ptr<float>());
      for (int64_t m : {1, 16, 128}) {
        const Tensor x = randn({m, k});
        Tensor y = empty({m, n});
        const double f32 = median_us([&] { (void)linear(x, w, b); });
        const double i8 = median_us([&] {
          quant::dynamic_linear(x.data_ptr<float>(), m, k, packed, y.data_ptr<float>(), n, Activation{}, {}, th);
        });
        std::printf("%lld %lld %lld %d %.1f %.1f\n", static_cast<long long>(m), static_cast<long long>(k),
                    static_cast<long long>(n), th, f32, i8);
        std::fflush(stdout);
      }
    }
  }
  return 0;
}
