// A process-wide thread pool: parallel_for splits [begin, end) into chunks of at
// least `grain` iterations and runs them on the pool and the calling thread;
// parallel_tasks runs tasks with the slot (thread) each runs on, for
// per-thread scratch. Each thread starts on a contiguous share of the items,
// in order, and one done with its share takes items from the back of the
// others' (work stealing), so a slower core delays a region by at most about
// one item. Nested calls run serially on the calling thread, and so does a
// region started while another thread's region occupies the pool. Workers spin
// briefly on an atomic generation counter after each region (about 1 us round
// trip on two threads), then sleep, so an idle process uses no CPU. An
// exception thrown by an item is rethrown to the caller after every item has
// run.
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

// Chunks a thread's share of parallel_for is cut into: what another thread can
// take from its end.
constexpr int kChunksPerThread = 4;

// Calls fn(chunk_begin, chunk_end) over disjoint chunks covering [begin, end):
// up to kChunksPerThread chunks a thread, each at least `grain` iterations
// (but the only chunk of a shorter range).
void parallel_for(int64_t begin, int64_t end, int64_t grain,
                  const std::function<void(int64_t, int64_t)>& fn);

// The threads parallel_tasks(tasks, threads, ...) runs on: at most `threads`,
// the calling thread's limit (get_num_threads; 1 inside a region) and
// `tasks`; at least 1.
int parallel_threads(int64_t tasks, int threads);

// Calls fn(task, slot) for each task in [0, tasks), on parallel_threads(tasks,
// threads) threads: `slot` in [0, that) names the thread running the task, and
// no two tasks run at once on one slot (index per-thread scratch with it). A
// thread's share is tasks [tasks * s / n, tasks * (s + 1) / n) of the n slots,
// run in order unless another thread takes some of its last ones.
void parallel_tasks(int64_t tasks, int threads, const std::function<void(int64_t, int)>& fn);

// parallel_tasks over [0, bounds.back()) whose thread s starts on the tasks
// [bounds[s], bounds[s + 1]) (ascending bounds from 0, one more than the
// threads: ranges_by_cost's, for tasks of unequal cost). Callers take the
// thread count from parallel_threads.
void parallel_tasks(const std::vector<int64_t>& bounds, const std::function<void(int64_t, int)>& fn);

// Items the process's parallel regions ran on a thread other than the one
// whose share they were in (work stealing), since it started.
int64_t parallel_steals();

// For tests: every pool worker (not a region's caller) waits `ns`
// nanoseconds before it claims each item, as a slow core would, so that the
// callers run the work stealing path. 0 (the default) turns it off.
void set_worker_lag_for_testing(int64_t ns);

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
