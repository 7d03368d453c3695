// The thread pool: chunks and tasks cover the range exactly once, slots are
// the threads', a slow thread's share is stolen from its end, nested calls run
// serially, the thread count and the per-thread limit hold, exceptions reach
// the caller, concurrent callers and bad counts are handled.
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
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

TEST_CASE("parallel_tasks with bounds: each thread starts on its range; a lagging worker's range is taken") {
  set_num_threads(2);
  // The worker waits 30 ms before each item it claims: the caller runs its
  // range 0-1 in order, then the worker's 2-7 from the end.
  const int64_t before = parallel_steals();
  set_worker_lag_for_testing(30 * 1000 * 1000);
  std::vector<int64_t> order[2];
  std::mutex mutex;
  parallel_tasks(std::vector<int64_t>{0, 2, 8}, [&](int64_t t, int slot) {
    std::lock_guard<std::mutex> lock(mutex);
    order[slot].push_back(t);
  });
  set_worker_lag_for_testing(0);
  CHECK(order[0] == std::vector<int64_t>{0, 1, 7, 6, 5, 4, 3, 2});
  CHECK(order[1].empty());
  CHECK(parallel_steals() - before == 6);
  // One range, or none: inline on slot 0.
  std::vector<int64_t> seen;
  parallel_tasks(std::vector<int64_t>{0, 3}, [&](int64_t t, int slot) { seen.push_back(t * 10 + slot); });
  CHECK(seen == std::vector<int64_t>{0, 10, 20});
  parallel_tasks(std::vector<int64_t>{}, [&](int64_t, int) { seen.push_back(-1); });
  CHECK(seen.size() == 3);
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

// The distinct threads that ran parallel_for(0, n, 1) and its chunk count.
std::pair<size_t, int> threads_and_chunks(int64_t n) {
  std::mutex mutex;
  std::set<std::thread::id> ids;
  int chunks = 0;
  parallel_for(0, n, 1, [&](int64_t, int64_t) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));  // long enough for every worker to join
    std::lock_guard<std::mutex> lock(mutex);
    ids.insert(std::this_thread::get_id());
    ++chunks;
  });
  return {ids.size(), chunks};
}

TEST_CASE("ThreadLimitGuard caps the threads of the calling thread only") {
  set_num_threads(3);
  {
    ThreadLimitGuard one(1);
    CHECK(get_num_threads() == 1);
    CHECK(threads_and_chunks(300) == std::make_pair(size_t{1}, 1));
    CHECK(parallel_threads(300, 8) == 1);
    {
      ThreadLimitGuard two(2);
      CHECK(get_num_threads() == 2);
      const auto [threads, chunks] = threads_and_chunks(300);
      CHECK(threads <= 2);
      CHECK(chunks == 2 * kChunksPerThread);
      CHECK(parallel_threads(300, 8) == 2);
    }
    CHECK(get_num_threads() == 1);
    ThreadLimitGuard keep(0);  // n <= 0 keeps the current limit
    CHECK(get_num_threads() == 1);
  }
  CHECK(get_num_threads() == 3);
  const auto [threads, chunks] = threads_and_chunks(300);
  CHECK(threads <= 3);
  CHECK(chunks == 3 * kChunksPerThread);
  CHECK(threads_and_chunks(2).second == 2);  // no more chunks than iterations
  CHECK(parallel_threads(300, 2) == 2);      // the caller's cap
  CHECK(parallel_threads(2, 8) == 2);        // the tasks
  CHECK(parallel_threads(0, 8) == 1);
}

TEST_CASE("parallel_tasks runs each task once, on slots below parallel_threads, one task a slot at a time") {
  for (int threads : {1, 2, 3}) {
    set_num_threads(threads);
    for (int64_t tasks : {0, 1, 5, 64, 1001}) {
      for (int cap : {1, 2, 8}) {
        const int slots = parallel_threads(tasks, cap);
        std::vector<std::atomic<int>> hits(static_cast<size_t>(tasks));
        std::vector<std::atomic<bool>> busy(8);
        std::atomic<int64_t> bad{0};
        parallel_tasks(tasks, cap, [&](int64_t t, int slot) {
          if (slot < 0 || slot >= slots || busy[static_cast<size_t>(slot)].exchange(true)) ++bad;
          hits[static_cast<size_t>(t)].fetch_add(1);
          if (slot >= 0 && slot < slots) busy[static_cast<size_t>(slot)] = false;
        });
        for (auto& h : hits) bad += h.load() != 1;
        CHECK(bad.load() == 0);
      }
    }
  }
}

TEST_CASE("a slow thread's share is taken from its end by the others") {
  set_num_threads(2);
  for (int round = 0; round < 5; ++round) {
    std::mutex mutex;
    std::vector<int64_t> order[2];
    parallel_tasks(8, 2, [&](int64_t t, int slot) {
      if (slot == 1) std::this_thread::sleep_for(std::chrono::milliseconds(30));  // slot 1: a slow core
      std::lock_guard<std::mutex> lock(mutex);
      order[slot].push_back(t);
    });
    // The caller (slot 0) runs its share 0-3 in order, then the slow share's
    // end, last first: 7, 6, 5 (and 4 when the worker had not started it).
    REQUIRE(order[0].size() >= 7);
    CHECK(std::vector<int64_t>(order[0].begin(), order[0].begin() + 7) == std::vector<int64_t>{0, 1, 2, 3, 7, 6, 5});
    CHECK(order[0].size() + order[1].size() == 8);
    if (!order[1].empty()) CHECK(order[1] == std::vector<int64_t>{4});
  }
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
