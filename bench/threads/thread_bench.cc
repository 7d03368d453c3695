// Round trip of a parallel region: the time parallel_for takes to hand one
// chunk to each pool thread and return, for an empty body and for a tiny one.
//   bazel run //bench/threads:thread_bench -- [threads=2] [regions=20000] [repeats=15]
// Prints min / median over `repeats` batches of `regions` back-to-back regions
// (µs per region). On a shared machine only the minimum means much.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "runtime/core/thread_pool.h"

namespace {

template <typename F>
void report(const char* what, int regions, int repeats, F body) {
  std::vector<double> us;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < regions; ++i) body();
    const auto t1 = std::chrono::steady_clock::now();
    us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / regions);
  }
  std::sort(us.begin(), us.end());
  std::printf("%-34s min %8.3f us  median %8.3f us\n", what, us.front(), us[us.size() / 2]);
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const int regions = argc > 2 ? std::atoi(argv[2]) : 20000;
  const int repeats = argc > 3 ? std::atoi(argv[3]) : 15;
  if (threads < 1 || regions < 1 || repeats < 1) {
    std::fprintf(stderr, "usage: thread_bench [threads>=1] [regions>=1] [repeats>=1]\n");
    return 2;
  }
  ember::set_num_threads(threads);
  std::printf("threads %d, %d regions per batch, %d batches\n", threads, regions, repeats);
  std::atomic<int64_t> sink{0};
  report("empty parallel_for (n = threads)", regions, repeats,
         [&] { ember::parallel_for(0, threads, 1, [](int64_t, int64_t) {}); });
  // Every chunk waits until all have started: each pool thread must take one
  // (the caller cannot run them all itself), so this is the full hand-off.
  std::atomic<int64_t> arrived{0};
  int64_t target = 0;
  report("round trip, one chunk per thread", regions, repeats, [&] {
    target += threads;
    ember::parallel_for(0, threads, 1, [&](int64_t, int64_t) {
      arrived.fetch_add(1);
      while (arrived.load() < target) {
      }
    });
  });
  report("parallel_for summing 4096 ints", regions, repeats, [&] {
    ember::parallel_for(0, 4096, 1, [&](int64_t b, int64_t e) {
      int64_t s = 0;
      for (int64_t i = b; i < e; ++i) s += i;
      sink.fetch_add(s, std::memory_order_relaxed);
    });
  });
  std::printf("(checksum %lld)\n", static_cast<long long>(sink.load()));
  return 0;
}
