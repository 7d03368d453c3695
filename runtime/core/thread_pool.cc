#include "runtime/core/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/core/error.h"

namespace ember {
namespace {

thread_local bool in_parallel_region = false;
thread_local int thread_limit = 0;  // 0: none (the pool's size)

class ThreadPool {
 public:
  explicit ThreadPool(int threads) { resize(threads); }
  ~ThreadPool() { stop_workers(); }

  int size() const { return size_; }

  void resize(int threads) {
    std::lock_guard<std::mutex> run_lock(run_mutex_);
    stop_workers();
    size_ = threads;
    stop_ = false;
    for (int i = 0; i + 1 < threads; ++i) workers_.emplace_back([this] { worker_loop(); });
  }

  // Runs task(i) for i in [0, n) across the workers and the caller; returns when all are done.
  void run(int n, const std::function<void(int)>& task) {
    std::lock_guard<std::mutex> run_lock(run_mutex_);  // one parallel region at a time
    {
      std::lock_guard<std::mutex> lock(mutex_);
      task_ = &task;
      num_tasks_ = n;
      next_.store(0);
      pending_ = n;
      ++generation_;
    }
    wake_.notify_all();
    work();
    std::unique_lock<std::mutex> lock(mutex_);
    // Also wait for workers to leave work(), so none can touch the next region's state early.
    done_.wait(lock, [&] { return pending_ == 0 && busy_ == 0; });
    task_ = nullptr;
  }

 private:
  void work() {
    in_parallel_region = true;
    for (;;) {
      const int i = next_.fetch_add(1);
      if (i >= num_tasks_) break;
      (*task_)(i);
      std::lock_guard<std::mutex> lock(mutex_);
      if (--pending_ == 0) done_.notify_all();
    }
    in_parallel_region = false;
  }

  void worker_loop() {
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        ++busy_;
      }
      work();
      std::lock_guard<std::mutex> lock(mutex_);
      if (--busy_ == 0) done_.notify_all();
    }
  }

  void stop_workers() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
    workers_.clear();
  }

  std::mutex run_mutex_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> workers_;
  const std::function<void(int)>* task_ = nullptr;
  int num_tasks_ = 0;
  std::atomic<int> next_{0};
  int pending_ = 0;
  int busy_ = 0;  // workers inside work()
  uint64_t generation_ = 0;
  bool stop_ = false;
  int size_ = 1;
};

ThreadPool& pool() {
  static ThreadPool p(std::max(1u, std::thread::hardware_concurrency()));
  return p;
}

}  // namespace

void set_num_threads(int n) {
  EMBER_CHECK(n >= 1, Status::InvalidArgument, "set_num_threads expects a positive integer, got ", n);
  if (n != pool().size()) pool().resize(n);
}

int get_num_threads() { return thread_limit > 0 ? thread_limit : pool().size(); }

ThreadLimitGuard::ThreadLimitGuard(int n) : previous_(thread_limit) {
  if (n > 0) thread_limit = n;
}

ThreadLimitGuard::~ThreadLimitGuard() { thread_limit = previous_; }

void parallel_for(int64_t begin, int64_t end, int64_t grain,
                  const std::function<void(int64_t, int64_t)>& fn) {
  if (begin >= end) return;
  const int64_t n = end - begin;
  grain = std::max<int64_t>(grain, 1);
  const int threads = in_parallel_region ? 1 : get_num_threads();
  const int64_t chunks = std::min<int64_t>(threads, (n + grain - 1) / grain);
  if (chunks <= 1) {
    fn(begin, end);
    return;
  }
  const int64_t step = (n + chunks - 1) / chunks;
  pool().run(static_cast<int>(chunks), [&](int i) {
    const int64_t b = begin + i * step;
    const int64_t e = std::min(end, b + step);
    if (b < e) fn(b, e);
  });
}

}  // namespace ember
