// ember's blocked SGEMM (kernels/cpu/gemm.h) and OpenBLAS's cblas_sgemm on the
// same row-major square products, single-threaded and on all threads, with
// GFLOP/s as a counter. Run: bazel run -c opt //bench:gemm_bench
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <random>
#include <thread>
#include <vector>

#include "kernels/cpu/gemm.h"
#include "runtime/core/thread_pool.h"

namespace {

struct Operands {
  std::vector<float> a, b, c;
  explicit Operands(int64_t n) : a(n * n), b(n * n), c(n * n) {
    std::mt19937 rng(42);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (float& v : a) v = dist(rng);
    for (float& v : b) v = dist(rng);
  }
};

int all_threads() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

void set_flops(benchmark::State& state, int64_t n) {
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * n * n * n * static_cast<double>(state.iterations()),
                                                 benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

void BM_ember_sgemm(benchmark::State& state) {
  const int64_t n = state.range(0);
  const int threads = state.range(1) != 0 ? all_threads() : 1;
  ember::set_num_threads(threads);
  Operands op(n);
  std::vector<char> ws(ember::cpu::sgemm_workspace(n, n, n, threads));
  for (auto _ : state) {
    ember::cpu::sgemm(n, n, n, {op.a.data(), n, 1}, {op.b.data(), n, 1}, {op.c.data(), n, 1}, false, ws.data(),
                      ws.size(), threads);
    benchmark::DoNotOptimize(op.c.data());
  }
  set_flops(state, n);
  state.SetLabel(ember::cpu::sgemm_kernel_name());
}

void BM_openblas_sgemm(benchmark::State& state) {
  const int64_t n = state.range(0);
  openblas_set_num_threads(state.range(1) != 0 ? all_threads() : 1);
  Operands op(n);
  const int ni = static_cast<int>(n);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, ni, ni, ni, 1.0f, op.a.data(), ni, op.b.data(), ni, 0.0f,
                op.c.data(), ni);
    benchmark::DoNotOptimize(op.c.data());
  }
  set_flops(state, n);
}

// Args: {size, all_threads (0 = one thread)}; ember and OpenBLAS interleaved per size.
void sizes(benchmark::internal::Benchmark* b) {
  for (int threads : {0, 1}) {
    for (int n : {64, 128, 256, 512, 1024}) b->Args({n, threads});
  }
}

}  // namespace

BENCHMARK(BM_ember_sgemm)->Apply(sizes)->ArgNames({"n", "all_threads"})->UseRealTime();
BENCHMARK(BM_openblas_sgemm)->Apply(sizes)->ArgNames({"n", "all_threads"})->UseRealTime();

BENCHMARK_MAIN();
