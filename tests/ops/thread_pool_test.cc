// The thread pool: chunks cover the range exactly once, nested calls run
// serially, the thread count is settable, bad counts are rejected.
#include <atomic>
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

TEST_CASE("set_num_threads rejects non-positive counts") {
  check_error([] { set_num_threads(0); }, "set_num_threads expects a positive integer, got 0");
}
