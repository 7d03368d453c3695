// A process-wide thread pool: parallel_for splits [begin, end) into chunks of at
// least `grain` iterations and runs them on the pool and the calling thread.
// Nested calls run serially on the calling thread, and so does a region started
// while another thread's region occupies the pool. Workers spin briefly on an
// atomic generation counter after each region (about 1 us round trip on two
// threads), then sleep, so an idle process uses no CPU. An exception thrown by
// a chunk is rethrown to the caller after every chunk has run.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace ember {

// Threads used by parallel work (default: the number of cores). n >= 1.
// set_num_threads resizes the process-wide pool; get_num_threads returns the
// calling thread's limit (ThreadLimitGuard) when one is set, else the pool's size.
void set_num_threads(int n);
int get_num_threads();

// Limits the parallel work started from the calling thread to `n` threads
// (chunks) for its lifetime; n <= 0 leaves the current limit. Other threads
// and the pool's size are unaffected (a per-run thread count).
class ThreadLimitGuard {
 public:
  explicit ThreadLimitGuard(int n);
  ~ThreadLimitGuard();
  ThreadLimitGuard(const ThreadLimitGuard&) = delete;
  ThreadLimitGuard& operator=(const ThreadLimitGuard&) = delete;

 private:
  int previous_;
};

// Calls fn(chunk_begin, chunk_end) over disjoint chunks covering [begin, end).
void parallel_for(int64_t begin, int64_t end, int64_t grain,
                  const std::function<void(int64_t, int64_t)>& fn);

// [0, tasks) in `parts` contiguous ranges of about equal cost (cost(t) >= 0:
// task t's work): part p is [bounds[p], bounds[p + 1]), each boundary at the
// nearer end of the task its share's start falls in.
template <typename Cost>
std::vector<int64_t> ranges_by_cost(int64_t tasks, int64_t parts, const Cost& cost) {
  std::vector<int64_t> bounds(static_cast<size_t>(parts) + 1, tasks);
  bounds[0] = 0;
  int64_t total = 0;
  for (int64_t t = 0; t < tasks; ++t) total += cost(t);
  for (int64_t t = 0, p = 1, before = 0; t < tasks && p < parts; ++t) {
    const int64_t after = before + cost(t);
    for (; p < parts && after * parts >= total * p; ++p) {
      bounds[static_cast<size_t>(p)] = total * p - before * parts < after * parts - total * p ? t : t + 1;
    }
    before = after;
  }
  return bounds;
}

}  // namespace ember
