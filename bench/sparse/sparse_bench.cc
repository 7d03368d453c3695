// Sparse (packed CSR SpMM, quant/coo.h) vs dense fp32 Linear (ember::linear,
// the SGEMM the executor runs) at 50/80/90/95 % sparsity, batch 1 and 16,
// (K, N) = (768, 3072) and (3072, 768).
//   bazel run -c opt //bench/sparse:sparse_bench -- [--threads N] [--iters N]
// Prints a markdown table: median ms per call, speedup dense/sparse.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "quant/coo.h"
#include "runtime/autograd/grad_mode.h"
#include "runtime/core/thread_pool.h"
#include "runtime/ops/ops.h"

using namespace ember;

namespace {

template <typename F>
double median_ms(F&& fn, int iters) {
  for (int i = 0; i < 3; ++i) fn();
  std::vector<double> t;
  for (int i = 0; i < iters; ++i) {
    const auto s = std::chrono::steady_clock::now();
    fn();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 0, iters = 200;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--threads") == 0) threads = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--iters") == 0) iters = std::atoi(argv[i + 1]);
  }
  if (threads > 0) set_num_threads(threads);
  NoGradGuard no_grad;
  std::mt19937 rng(0);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::printf("threads: %d, median of %d calls\n\n", get_num_threads(), iters);
  std::printf("| K x N | batch | sparsity | dense ms | sparse ms | speedup | max abs diff |\n");
  std::printf("|---|---|---|---|---|---|---|\n");
  std::vector<std::string> same_kernel;
  for (auto [k, n] : {std::pair<int64_t, int64_t>{768, 3072}, {3072, 768}}) {
    {  // The SpMM kernel on a matrix without zeros: what the kernel itself costs.
      std::vector<float> fv(static_cast<size_t>(n * k));
      for (float& x : fv) x = u(rng) + 2.f;
      const sparse::CsrMatrix full = sparse::pack_csr_dense(tensor(fv, {n, k}));
      for (int64_t m : {1, 16}) {
        const Tensor x = randn({m, k});
        const double ms = median_ms([&] { sparse::sparse_linear(x, full); }, iters);
        char line[160];
        std::snprintf(line, sizeof(line), "| %lld x %lld | %lld | 0 %% (every entry stored) | %.4f |",
                      static_cast<long long>(k), static_cast<long long>(n), static_cast<long long>(m), ms);
        same_kernel.push_back(line);
      }
    }
    for (double sparsity : {0.5, 0.8, 0.9, 0.95}) {
      // Random positions zeroed: exactly round(sparsity * numel) zeros.
      std::vector<float> wv(static_cast<size_t>(n * k));
      for (float& x : wv) x = u(rng) + (u(rng) > 0 ? 1.5f : -1.5f);  // never 0
      std::vector<size_t> pos(wv.size());
      for (size_t i = 0; i < pos.size(); ++i) pos[i] = i;
      std::shuffle(pos.begin(), pos.end(), rng);
      const size_t zeros_n = static_cast<size_t>(sparsity * static_cast<double>(wv.size()) + 0.5);
      for (size_t i = 0; i < zeros_n; ++i) wv[pos[i]] = 0.f;
      const Tensor w = tensor(wv, {n, k});
      std::vector<float> bv(static_cast<size_t>(n));
      for (float& x : bv) x = u(rng);
      const Tensor b = tensor(bv, {n});
      const sparse::CooParts coo = sparse::dense_to_coo(w, sparse::coo_index_dtype({n, k}));
      const sparse::CsrMatrix csr = sparse::pack_csr(coo.indices, coo.values, n, k);
      for (int64_t m : {1, 16}) {
        std::vector<float> xv(static_cast<size_t>(m * k));
        for (float& x : xv) x = u(rng);
        const Tensor x = tensor(xv, {m, k});
        Tensor yd, ys;
        const double dense = median_ms([&] { yd = linear(x, w, b); }, iters);
        const double sp = median_ms([&] { ys = sparse::sparse_linear(x, csr, b); }, iters);
        const double diff = max(abs(sub(yd, ys))).item<double>();
        std::printf("| %lld x %lld | %lld | %.0f %% | %.4f | %.4f | %.2fx | %.1e |\n", static_cast<long long>(k),
                    static_cast<long long>(n), static_cast<long long>(m), sparsity * 100, dense, sp, dense / sp, diff);
      }
    }
  }
  std::printf("\nThe SpMM kernel with every entry stored (its cost per nonzero):\n\n");
  std::printf("| K x N | batch | sparsity | SpMM ms |\n|---|---|---|---|\n");
  for (const std::string& l : same_kernel) std::printf("%s\n", l.c_str());
  return 0;
}
