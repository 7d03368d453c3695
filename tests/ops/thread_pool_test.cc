// The thread pool: chunks cover the range exactly once, nested calls run
// serially, the thread count and the per-thread limit hold, exceptions reach
// the caller, concurrent callers and bad counts are handled.
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "tests/harness/testing.h"

using namespace ember;
using ember::testing::check_error;

TEST_CASE("parallel_for covers [begin, end) exactly once") {
  for (int threads : {1, 2, 3}) {
    set_num_threads(threads);
    CHECK(get_num_threads() == threads);
    for (int64_t n : {0, 1, 7, 1000, 100003}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      parallel_for(0, n, 10, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[i].fetch_add(1);
      });
      int64_t bad = 0;
      for (auto& h : hits) bad += h.load() != 1;
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("ranges_by_cost: contiguous ranges of about equal cost, boundaries at the nearer task end") {
  const std::vector<int64_t> c = {8, 8, 8, 6, 6, 6};  // int8 BERT at batch 1: row chunks of 8, 8, 6 tiles
  auto cost = [&](int64_t t) { return c[static_cast<size_t>(t)]; };
  CHECK(ranges_by_cost(6, 2, cost) == std::vector<int64_t>{0, 3, 6});  // 24 | 18 (by counts alike)
  CHECK(ranges_by_cost(6, 3, cost) == std::vector<int64_t>{0, 2, 4, 6});  // 16 | 14 | 12
  const std::vector<int64_t> d = {8, 8, 8, 8, 8, 8, 4, 4, 4};  // counts split 40 | 20, costs 32 | 28
  CHECK(ranges_by_cost(9, 2, [&](int64_t t) { return d[static_cast<size_t>(t)]; }) == std::vector<int64_t>{0, 4, 9});
  CHECK(ranges_by_cost(2, 4, cost) == std::vector<int64_t>{0, 1, 1, 2, 2});  // more parts than tasks: some empty
  CHECK(ranges_by_cost(0, 2, cost) == std::vector<int64_t>{0, 0, 0});
}

TEST_CASE("many back-to-back regions each visit every index once") {
  for (int threads : {2, 4}) {
    set_num_threads(threads);
    std::vector<std::atomic<int>> hits(64);
    int64_t bad = 0;
    for (int round = 0; round < 20000; ++round) {
      const int64_t n = 1 + round % 64;
      parallel_for(0, n, 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[i].fetch_add(1);
      });
      for (int64_t i = 0; i < n; ++i) bad += hits[i].exchange(0) != 1;
    }
    CHECK(bad == 0);
  }
}

TEST_CASE("regions after the workers fell asleep still run on every thread") {
  set_num_threads(2);
  for (int round = 0; round < 3; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // past the spin budget
    std::atomic<int> chunks{0};
    parallel_for(0, 2, 1, [&](int64_t, int64_t) { chunks.fetch_add(1); });
    CHECK(chunks.load() == 2);
  }
}

TEST_CASE("nested parallel_for runs inline and repeated regions reuse the pool") {
  set_num_threads(2);
  std::atomic<int64_t> total{0};
  for (int round = 0; round < 200; ++round) {
    parallel_for(0, 4, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        parallel_for(0, 100, 1, [&](int64_t b2, int64_t e2) { total.fetch_add(e2 - b2); });
      }
    });
  }
  CHECK(total.load() == 200 * 4 * 100);
}

TEST_CASE("ThreadLimitGuard caps the chunks of the calling thread only") {
  set_num_threads(3);
  {
    ThreadLimitGuard one(1);
    CHECK(get_num_threads() == 1);
    std::atomic<int> chunks{0};
    parallel_for(0, 300, 1, [&](int64_t, int64_t) { chunks.fetch_add(1); });
    CHECK(chunks.load() == 1);
    {
      ThreadLimitGuard two(2);
      CHECK(get_num_threads() == 2);
      chunks = 0;
      parallel_for(0, 300, 1, [&](int64_t, int64_t) { chunks.fetch_add(1); });
      CHECK(chunks.load() == 2);
    }
    CHECK(get_num_threads() == 1);
    ThreadLimitGuard keep(0);  // n <= 0 keeps the current limit
    CHECK(get_num_threads() == 1);
  }
  CHECK(get_num_threads() == 3);
  std::atomic<int> chunks{0};
  parallel_for(0, 300, 1, [&](int64_t, int64_t) { chunks.fetch_add(1); });
  CHECK(chunks.load() == 3);
}

TEST_CASE("an exception in a chunk reaches the caller and the pool keeps working") {
  set_num_threads(2);
  for (int64_t thrower : {0, 1}) {
    std::atomic<int> ran{0};
    CHECK_THROWS_AS(parallel_for(0, 2, 1,
                                 [&](int64_t b, int64_t) {
                                   ran.fetch_add(1);
                                   if (b == thrower) throw std::runtime_error("chunk failed");
                                 }),
                    std::runtime_error);
    CHECK(ran.load() == 2);  // the other chunk still ran
  }
  std::atomic<int64_t> sum{0};
  parallel_for(0, 1000, 1, [&](int64_t b, int64_t e) { sum.fetch_add(e - b); });
  CHECK(sum.load() == 1000);
}

TEST_CASE("regions from several threads at once are all complete") {
  set_num_threads(2);
  std::atomic<int64_t> bad{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 3; ++t) {
    callers.emplace_back([&] {
      for (int round = 0; round < 2000; ++round) {
        std::atomic<int64_t> covered{0};
        parallel_for(0, 37, 1, [&](int64_t b, int64_t e) { covered.fetch_add(e - b); });
        bad += covered.load() != 37;
      }
    });
  }
  for (std::thread& t : callers) t.join();
  CHECK(bad.load() == 0);
}

TEST_CASE("set_num_threads rejects non-positive counts") {
  check_error([] { set_num_threads(0); }, "set_num_threads expects a positive integer, got 0");
}
