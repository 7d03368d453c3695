// ember's blocked SGEMM (kernels/cpu/gemm.h) and OpenBLAS's cblas_sgemm on the
// same row-major square products, single-threaded and on all threads, with
// GFLOP/s as a counter; and the small-batch Linear products y = x @ W^T (x [M, K],
// W [N, K] row-major) beside cblas_sgemm(NoTrans, Trans) and, for M = 1,
// cblas_sgemv; ember's twice: as the eager API runs them (sgemm, W read where
// it lies) and as the executor does (W packed once at load, sgemm_fused).
// Also x @ W with W row-major (the unpacked axpy path).
// Run: bazel run -c opt //bench:gemm_bench
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <random>
#include <thread>
#include <array>
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

// --- Linear: x [M, K] @ W^T, W [N, K] row-major --------------------------------
struct LinearOperands {
  std::vector<float> x, w, y;
  LinearOperands(int64_t m, int64_t k, int64_t n) : x(m * k), w(n * k), y(m * n) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (float& v : x) v = dist(rng);
    for (float& v : w) v = dist(rng);
  }
};

void set_linear_flops(benchmark::State& state, int64_t m, int64_t k, int64_t n) {
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * m * k * n * static_cast<double>(state.iterations()),
                                                 benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

void BM_ember_linear(benchmark::State& state) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  const int threads = state.range(3) != 0 ? all_threads() : 1;
  ember::set_num_threads(threads);
  LinearOperands op(m, k, n);
  std::vector<char> ws(ember::cpu::sgemm_workspace(m, n, k, threads));
  for (auto _ : state) {
    ember::cpu::sgemm(m, n, k, {op.x.data(), k, 1}, {op.w.data(), 1, k}, {op.y.data(), n, 1}, false, ws.data(),
                      ws.size(), threads);
    benchmark::DoNotOptimize(op.y.data());
  }
  set_linear_flops(state, m, k, n);
  state.SetLabel(ember::cpu::sgemm_kernel_name());
}

// The same product through the blocked kernel with W packed once (as the
// executor packs a constant weight at load): sgemm_fused with no epilogue.
void BM_ember_linear_packed(benchmark::State& state) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  const int threads = state.range(3) != 0 ? all_threads() : 1;
  ember::set_num_threads(threads);
  LinearOperands op(m, k, n);
  const ember::cpu::MatrixRef<const float> w{op.w.data(), 1, k};
  const ember::cpu::PackedOperand packed = ember::cpu::sgemm_pack_b(k, n, w);
  std::vector<char> ws(ember::cpu::sgemm_workspace(m, n, k, threads));
  for (auto _ : state) {
    ember::cpu::sgemm_fused(m, n, k, {{op.x.data(), k, 1}}, {w, &packed}, {op.y.data(), n, 1}, {}, ws.data(),
                            ws.size(), threads);
    benchmark::DoNotOptimize(op.y.data());
  }
  set_linear_flops(state, m, k, n);
  state.SetLabel(ember::cpu::sgemm_kernel_name());
}

// x [M, K] @ W with W [K, N] row-major: sgemm's unpacked axpy path up to 8
// rows (an LSTM's step product on R^T; gemv.h).
void BM_ember_axpy(benchmark::State& state) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  LinearOperands op(m, k, n);
  std::vector<char> ws(ember::cpu::sgemm_workspace(m, n, k, 1));
  for (auto _ : state) {
    ember::cpu::sgemm(m, n, k, {op.x.data(), k, 1}, {op.w.data(), n, 1}, {op.y.data(), n, 1}, false, ws.data(),
                      ws.size(), 1);
    benchmark::DoNotOptimize(op.y.data());
  }
  set_linear_flops(state, m, k, n);
}

void BM_openblas_linear(benchmark::State& state) {
  const int m = static_cast<int>(state.range(0)), k = static_cast<int>(state.range(1)),
            n = static_cast<int>(state.range(2));
  openblas_set_num_threads(state.range(3) != 0 ? all_threads() : 1);
  LinearOperands op(m, k, n);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, op.x.data(), k, op.w.data(), k, 0.0f,
                op.y.data(), n);
    benchmark::DoNotOptimize(op.y.data());
  }
  set_linear_flops(state, m, k, n);
  state.SetLabel("sgemm NoTrans,Trans");
}

void BM_openblas_gemv(benchmark::State& state) {
  const int k = static_cast<int>(state.range(1)), n = static_cast<int>(state.range(2));
  openblas_set_num_threads(state.range(3) != 0 ? all_threads() : 1);
  LinearOperands op(1, k, n);
  for (auto _ : state) {
    cblas_sgemv(CblasRowMajor, CblasNoTrans, n, k, 1.0f, op.w.data(), k, op.x.data(), 1, 0.0f, op.y.data(), 1);
    benchmark::DoNotOptimize(op.y.data());
  }
  set_linear_flops(state, 1, k, n);
  state.SetLabel("sgemv");
}

// Args: {M, K, N, all_threads}: BERT-base's feed-forward shapes.
void linear_shapes(benchmark::internal::Benchmark* b) {
  for (int threads : {0, 1}) {
    for (int m : {1, 4, 8, 16, 32, 64}) {
      b->Args({m, 768, 3072, threads});
      b->Args({m, 3072, 768, threads});
    }
    b->Args({64, 64, 512, threads});    // an LSTM's input projection (hidden 128, 64 steps)
    for (int m : {1, 8}) b->Args({m, 128, 512, threads});  // its per-step product h @ R^T
    b->Args({64, 256, 1024, threads});  // bench/train's wide MLP, batch 64
    b->Args({64, 1024, 1024, threads});
    for (int64_t kn : {384, 1536}) b->Args({1024, 384, kn, threads});  // bench/models' BERT at batch 8: 1024 rows
    for (int64_t kn : {384, 1536}) b->Args({128, 384, kn, threads});   // and at batch 1: 128 rows
    b->Args({128, 1536, 384, threads});
    b->Args({1024, 1536, 384, threads});
    // MobileNetV2's 1x1 convolutions on channels_last activations (positions x C_in x C_out):
    // the 112x112 and 56x56 expansions and projections.
    for (const auto& s : std::vector<std::array<int64_t, 3>>{{12544, 16, 96}, {3136, 24, 144}, {3136, 144, 24},
                                                             {12544, 32, 16}, {784, 192, 32}})
      b->Args({s[0], s[1], s[2], threads});
  }
}
void gemv_shapes(benchmark::internal::Benchmark* b) {
  for (int threads : {0, 1}) {
    b->Args({1, 768, 3072, threads});
    b->Args({1, 3072, 768, threads});
    b->Args({1, 128, 512, threads});
  }
}

// Args: {size, all_threads (0 = one thread)}; ember and OpenBLAS interleaved per size.
void sizes(benchmark::internal::Benchmark* b) {
  for (int threads : {0, 1}) {
    for (int n : {64, 128, 256, 512, 1024, 2048}) b->Args({n, threads});
  }
}

// Attention's two products per head as a BERT at batch 1 runs them (12 heads,
// seq 128, head dim 32, one thread): Q, K and V are [seq, heads, dim] views,
// so scores = Q_h K_h^T reads K_h^T with unit row stride, and out = P_h V_h
// reads V_h rows 384 floats apart. Args: {0: Q K^T, 1: P V}.
struct Heads {
  static constexpr int64_t kHeads = 12, kSeq = 128, kDim = 32, kRow = kHeads * kDim;
  std::vector<float> q, k, p, c;
  Heads() : q(kSeq * kRow), k(kSeq * kRow), p(kHeads * kSeq * kSeq), c(kHeads * kSeq * kSeq) {
    std::mt19937 rng(42);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (auto* v : {&q, &k, &p}) {
      for (float& x : *v) x = dist(rng);
    }
  }
};

void set_head_flops(benchmark::State& state) {
  state.counters["GFLOP/s"] = benchmark::Counter(
      2.0 * Heads::kHeads * Heads::kSeq * Heads::kSeq * Heads::kDim * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

void BM_ember_heads(benchmark::State& state) {
  ember::set_num_threads(1);
  Heads h;
  const int64_t s = Heads::kSeq, d = Heads::kDim, row = Heads::kRow;
  const bool pv = state.range(0) != 0;
  std::vector<char> ws(ember::cpu::sgemm_workspace(s, pv ? d : s, pv ? s : d, 1));
  for (auto _ : state) {
    for (int64_t hd = 0; hd < Heads::kHeads; ++hd) {
      if (pv) {
        ember::cpu::sgemm(s, d, s, {h.p.data() + hd * s * s, s, 1}, {h.k.data() + hd * d, row, 1},
                          {h.c.data() + hd * s * d, d, 1}, false, ws.data(), ws.size(), 1);
      } else {
        ember::cpu::sgemm(s, s, d, {h.q.data() + hd * d, row, 1}, {h.k.data() + hd * d, 1, row},
                          {h.c.data() + hd * s * s, s, 1}, false, ws.data(), ws.size(), 1);
      }
    }
    benchmark::DoNotOptimize(h.c.data());
  }
  set_head_flops(state);
}

void BM_openblas_heads(benchmark::State& state) {
  openblas_set_num_threads(1);
  Heads h;
  const int s = Heads::kSeq, d = Heads::kDim, row = Heads::kRow;
  const bool pv = state.range(0) != 0;
  for (auto _ : state) {
    for (int hd = 0; hd < Heads::kHeads; ++hd) {
      if (pv) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s, d, s, 1.0f, h.p.data() + hd * s * s, s,
                    h.k.data() + hd * d, row, 0.0f, h.c.data() + hd * s * d, d);
      } else {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, s, s, d, 1.0f, h.q.data() + hd * d, row,
                    h.k.data() + hd * d, row, 0.0f, h.c.data() + hd * s * s, s);
      }
    }
    benchmark::DoNotOptimize(h.c.data());
  }
  set_head_flops(state);
}

}  // namespace

BENCHMARK(BM_ember_sgemm)->Apply(sizes)->ArgNames({"n", "all_threads"})->UseRealTime();
BENCHMARK(BM_openblas_sgemm)->Apply(sizes)->ArgNames({"n", "all_threads"})->UseRealTime();

BENCHMARK(BM_ember_linear)->Apply(linear_shapes)->ArgNames({"M", "K", "N", "all_threads"})->UseRealTime();
BENCHMARK(BM_ember_axpy)->Args({1, 128, 512})->Args({4, 128, 512})->Args({8, 128, 512})->ArgNames({"M", "K", "N"})->UseRealTime();
BENCHMARK(BM_ember_linear_packed)->Apply(linear_shapes)->ArgNames({"M", "K", "N", "all_threads"})->UseRealTime();
BENCHMARK(BM_openblas_linear)->Apply(linear_shapes)->ArgNames({"M", "K", "N", "all_threads"})->UseRealTime();
BENCHMARK(BM_openblas_gemv)->Apply(gemv_shapes)->ArgNames({"M", "K", "N", "all_threads"})->UseRealTime();

BENCHMARK(BM_ember_heads)->Arg(0)->Arg(1)->ArgNames({"pv"})->UseRealTime();
BENCHMARK(BM_openblas_heads)->Arg(0)->Arg(1)->ArgNames({"pv"})->UseRealTime();

BENCHMARK_MAIN();
