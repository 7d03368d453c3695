// Round trip of a parallel region: the time parallel_for takes to hand one
// chunk to each pool thread and return, for an empty body and for a tiny one.
// Then a region whose workers run at half speed, split statically and with
// work stealing.
//   bazel run //bench/threads:thread_bench -- [threads=2] [regions=20000] [repeats=15]
// Prints min / median over `repeats` batches of `regions` back-to-back regions
// (µs per region). On a shared machine only the minimum means much.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
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

  // A region of equal items (each `item_us` of spinning, 16 a thread) where
  // every thread but the caller runs at half speed (its items spin twice as
  // long), as a little core or a busy vCPU: one task a thread (a static
  // split: the region waits for the slow threads' halves) against 16 (work
  // stealing: the caller takes the ends of their shares). The ideal with
  // one full-speed and threads - 1 half-speed threads: items / (1 + (threads - 1) / 2) items' time.
  const int64_t item_ns = 20 * 1000, per_thread = 16;
  auto spin = [](int64_t ns) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(ns);
    while (std::chrono::steady_clock::now() < until) {
    }
  };
  const int items = threads * static_cast<int>(per_thread);
  const double ideal_us = items * item_ns / 1e3 / (1.0 + (threads - 1) / 2.0);
  std::printf("\nworkers at half speed, %d items of %lld us (ideal %.0f us, one thread %.0f us):\n", items,
              static_cast<long long>(item_ns / 1000), ideal_us, items * item_ns / 1e3);
  const std::thread::id main_id = std::this_thread::get_id();
  auto slow_item = [&](int64_t n) {
    const bool slow = std::this_thread::get_id() != main_id;
    for (int64_t i = 0; i < n; ++i) spin(slow ? 2 * item_ns : item_ns);
  };
  report("one task a thread (static split)", 200, repeats, [&] {
    ember::parallel_tasks(threads, threads, [&](int64_t, int) { slow_item(per_thread); });
  });
  report("16 tasks a thread (work stealing)", 200, repeats, [&] {
    ember::parallel_tasks(items, threads, [&](int64_t, int) { slow_item(1); });
  });
  return 0;
}
