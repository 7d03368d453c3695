// The process-wide pool (thread_pool.h). A parallel region is published by
// bumping an atomic generation counter; workers that are spinning see it within
// a few hundred nanoseconds. A worker spins for a bounded time (kSpinNs) after
// its last region, then sleeps on a condition variable, so an idle process
// burns no CPU; the caller takes the mutex and notifies only when some worker
// sleeps.
//
// Work stealing (pthreadpool's scheme): a region's items start as one
// contiguous share per slot, in order. The thread that takes slot s (the
// caller takes 0, workers the next free one as they arrive) runs its share
// from the front; then it takes items from the back of the other shares. A
// share's `left` counter arbitrates: each decrement that finds it positive
// grants one item, the owner's at `front`, a stealer's at --`back`, so no
// item runs twice and none is lost. When the threads keep pace, each runs
// exactly its share, in order, as a static split would (the cache locality of
// the ops before and after); when one is slower (a little core, a busy vCPU,
// a worker still waking up), the others take over its share's end.
//
// Region protocol (all region state is written by the caller while no worker
// is inside a region, i.e. while active_ == 0):
//   caller: write task/shares, joined_ = 1, done_ = 0, open_ = true, ++generation_
//           run slot 0, steal; wait done_ == items; open_ = false; wait active_ == 0
//   worker: see generation_ != seen; ++active_; if open_ and generation_ == seen:
//           take a slot, run its share, steal; --active_
// Sequentially consistent operations on active_, open_ and generation_ make sure
// that a worker either sees the region closed or is waited for by the caller.
#include "runtime/core/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#endif

#include "runtime/core/error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define RT_CPU_RELAX() _mm_pause()
#elif defined(__aarch64__)
#define RT_CPU_RELAX() asm volatile("yield" ::: "memory")
#else
#define RT_CPU_RELAX() std::atomic_signal_fence(std::memory_order_seq_cst)
#endif

#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
#define RT_POOL_EXCEPTIONS 1
#else
#define RT_POOL_EXCEPTIONS 0
#endif

namespace ember {
namespace {

thread_local bool in_parallel_region = false;
thread_local int thread_limit = 0;  // 0: none (the pool's size)
std::atomic<int64_t> steals{0};        // items run from another thread's share
std::atomic<int64_t> worker_lag_ns{0};  // set_worker_lag_for_testing

// How long a worker polls for the next region before it sleeps (the first
// kPureSpinNs with pause instructions only, then yielding its core between
// polls, so that on a busy machine other threads run), and how many pause
// iterations the caller spins for the workers' chunks before it yields too.
constexpr int64_t kSpinNs = 200 * 1000;
constexpr int64_t kPureSpinNs = 20 * 1000;
constexpr int kCallerSpins = 1 << 11;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The CPU the calling thread runs on, or -1.
int current_cpu() {
#if defined(__linux__)
  return sched_getcpu();
#else
  return -1;
#endif
}

// Where a new worker starts. Linux starts a thread on its creator's CPU, and
// on an otherwise idle machine the scheduler took up to 25 ms to move either
// one away (perf sched, 2 vCPUs): meanwhile a 2-thread product took as long as
// on one thread (ember bench of a 1x1 convolution: 0.19 ms in some runs, 0.37
// in others). So worker i starts on the i-th allowed CPU other than the
// caller's and is then given its whole mask back: placed, not pinned, so
// processes that share the machine still balance.
struct Placement {
#if defined(__linux__)
  cpu_set_t allowed;
  int caller_cpu = -1, count = 0;

  static Placement away_from_caller() {
    Placement p;
    CPU_ZERO(&p.allowed);
    if (sched_getaffinity(0, sizeof(p.allowed), &p.allowed) != 0) return p;
    p.caller_cpu = sched_getcpu();
    p.count = CPU_COUNT(&p.allowed);
    return p;
  }

  // Moves the calling worker off `cpu` (onto another allowed CPU the kernel
  // picks), then gives it its whole mask back.
  void step_aside(int cpu) const {
    cpu_set_t others = allowed;
    CPU_CLR(cpu, &others);
    if (CPU_COUNT(&others) == 0) return;
    const pthread_t t = pthread_self();
    if (pthread_setaffinity_np(t, sizeof(others), &others) == 0) pthread_setaffinity_np(t, sizeof(allowed), &allowed);
  }

  // Moves a new worker (queued, not yet running: the caller does it) off the caller's CPU.
  void move(std::thread& worker, int i) const {
    if (caller_cpu < 0 || count < 2) return;
    std::vector<int> others;
    for (int c = 0; c < CPU_SETSIZE && static_cast<int>(others.size()) < count; ++c) {
      if (CPU_ISSET(c, &allowed) && c != caller_cpu) others.push_back(c);
    }
    if (others.empty()) return;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(others[static_cast<size_t>(i) % others.size()], &one);
    const pthread_t t = worker.native_handle();
    if (pthread_setaffinity_np(t, sizeof(one), &one) == 0) pthread_setaffinity_np(t, sizeof(allowed), &allowed);
  }
#else
  int count = 0;
  static Placement away_from_caller() { return {}; }
  void step_aside(int) const {}
  void move(std::thread&, int) const {}
#endif
};

class ThreadPool {
 public:
  explicit ThreadPool(int threads) { resize(threads); }
  ~ThreadPool() { stop_workers(); }

  int size() const { return size_; }

  void resize(int threads) {
    std::lock_guard<std::mutex> run_lock(run_mutex_);
    stop_workers();
    size_ = threads;
    shares_.reset(new Share[static_cast<size_t>(threads)]);
    stop_.store(false);
    place_ = Placement::away_from_caller();
    const Placement& place = place_;
    spread_ = place.count >= threads;
    for (int i = 0; i + 1 < threads; ++i) {
      workers_.emplace_back([this] { worker_loop(); });
      place.move(workers_.back(), i);
    }
  }

  // Runs task(i, slot) for i in [0, items) on up to `slots` threads (the
  // caller and workers, slot < slots), slot s starting on items [bounds[s],
  // bounds[s + 1]) (bounds: slots + 1 ascending values from 0 to items), or
  // without bounds on an equal share; returns when all are done. While
  // another thread's region runs, runs every item inline on slot 0.
  void run(int64_t items, int slots, const int64_t* bounds, const std::function<void(int64_t, int)>& task) {
    std::unique_lock<std::mutex> run_lock(run_mutex_, std::try_to_lock);
    if (slots > size_) bounds = nullptr;  // a limit above the pool's size: equal shares of its threads
    slots = std::min(slots, size_);
    if (!run_lock.owns_lock() || workers_.empty() || slots < 2) {
      run_inline(items, task);
      return;
    }
    task_ = &task;
    slots_ = slots;
    error_ = nullptr;
    for (int p = 0; p < slots; ++p) {
      Share& sh = shares_[static_cast<size_t>(p)];
      const int64_t b = bounds != nullptr ? bounds[p] : items * p / slots;
      const int64_t e = bounds != nullptr ? bounds[p + 1] : items * (p + 1) / slots;
      sh.front = b;
      sh.back.store(e, std::memory_order_relaxed);
      sh.left.store(e - b, std::memory_order_relaxed);
    }
    joined_.store(1, std::memory_order_relaxed);
    done_.store(0, std::memory_order_relaxed);
    open_.store(true);
    caller_cpu_.store(current_cpu(), std::memory_order_relaxed);
    generation_.fetch_add(1);  // publishes the region (seq_cst: ordered before the sleepers_ check)
    if (sleepers_.load() > 0) {
      std::lock_guard<std::mutex> lock(mutex_);
      wake_.notify_all();
    }
    work(0);
    for (int spins = 0; done_.load(std::memory_order_acquire) != items; ++spins) relax(spins);
    open_.store(false);
    for (int spins = 0; active_.load() != 0; ++spins) relax(spins);
    task_ = nullptr;
#if RT_POOL_EXCEPTIONS
    if (error_) {
      std::exception_ptr e = error_;
      error_ = nullptr;
      std::rethrow_exception(e);
    }
#endif
  }

 private:
  // A slot's items: [front, back) not yet claimed, `left` of them (<= 0: none).
  struct alignas(64) Share {
    std::atomic<int64_t> left{0};
    std::atomic<int64_t> back{0};
    int64_t front = 0;  // the owner's next item (only the owner moves it)
  };

  static void relax(int spins) {
    if (spins < kCallerSpins) {
      RT_CPU_RELAX();
    } else {
      std::this_thread::yield();
    }
  }

  static void run_inline(int64_t items, const std::function<void(int64_t, int)>& task) {
    const bool was = in_parallel_region;
    in_parallel_region = true;
    struct Restore {
      bool v;
      ~Restore() { in_parallel_region = v; }
    } restore{was};
    for (int64_t i = 0; i < items; ++i) task(i, 0);
  }

  void run_item(int64_t i, int slot) {
#if RT_POOL_EXCEPTIONS
    try {
      (*task_)(i, slot);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
#else
    (*task_)(i, slot);
#endif
  }

  // Runs slot `slot`'s share from the front, then the other shares' items
  // from their backs, until every share is empty.
  void work(int slot) {
    in_parallel_region = true;
    int64_t ran = 0, stolen = 0;
    const int64_t lag = slot > 0 ? worker_lag_ns.load(std::memory_order_relaxed) : 0;
    Share& own = shares_[static_cast<size_t>(slot)];
    for (; lag_then_take(own, lag); ++ran) run_item(own.front++, slot);
    for (int d = 1; d < slots_; ++d) {
      Share& victim = shares_[static_cast<size_t>((slot + d) % slots_)];
      for (; lag_then_take(victim, lag); ++ran, ++stolen) {
        run_item(victim.back.fetch_sub(1, std::memory_order_relaxed) - 1, slot);
      }
    }
    if (stolen > 0) steals.fetch_add(stolen, std::memory_order_relaxed);
    done_.fetch_add(ran, std::memory_order_release);
    in_parallel_region = false;
  }

  // Claims one of the share's items (false: none left), after `lag_ns` (set_worker_lag_for_testing).
  static bool lag_then_take(Share& share, int64_t lag_ns) {
    if (lag_ns > 0) {
      for (const int64_t until = now_ns() + lag_ns; now_ns() < until;) RT_CPU_RELAX();
    }
    return share.left.fetch_sub(1, std::memory_order_acq_rel) > 0;
  }

  // Waits for a generation other than `seen` (spinning, then sleeping); false on stop.
  bool wait_for_region(uint64_t seen) {
    const int64_t start = now_ns();
    bool yielding = false;
    for (int spins = 0;; ++spins) {
      if (generation_.load(std::memory_order_acquire) != seen) return true;
      if (stop_.load(std::memory_order_relaxed)) return false;
      if (yielding) {
        std::this_thread::yield();
      } else {
        RT_CPU_RELAX();
      }
      if (yielding || (spins & 63) == 63) {
        const int64_t t = now_ns() - start;
        if (t > kSpinNs) break;
        yielding = t > kPureSpinNs;
      }
    }
    std::unique_lock<std::mutex> lock(mutex_);
    sleepers_.fetch_add(1);
    wake_.wait(lock, [&] { return stop_.load() || generation_.load() != seen; });
    sleepers_.fetch_sub(1);
    return !stop_.load();
  }

  void worker_loop() {
    uint64_t seen = generation_.load();
    for (;;) {
      if (!wait_for_region(seen)) return;
      seen = generation_.load();
      // A worker that finds itself on the caller's CPU moves to another. The
      // kernel puts a woken thread on its waker's CPU when it judges that
      // the cheaper (wake-affine), and on an idle 2-vCPU VM took tens of
      // milliseconds to balance them again: meanwhile the two took turns on
      // one CPU, the worker's spin window ran out as it waited for its turn,
      // it slept and was woken onto the caller's CPU again. (Zen 4 VM,
      // `ember bench` of a 1x1 convolution, 2 threads, 300 runs: the median
      // 0.34 ms, the one-thread time, in about half the processes, the worker
      // in 84-128 of 320 regions; after this 0.17-0.18 ms in 10 of 10 processes.)
      const int caller_cpu = caller_cpu_.load(std::memory_order_relaxed);
      if (spread_ && caller_cpu >= 0 && current_cpu() == caller_cpu) place_.step_aside(caller_cpu);
      active_.fetch_add(1);
      if (open_.load() && generation_.load() == seen) {
        const int slot = joined_.fetch_add(1, std::memory_order_relaxed);
        if (slot < slots_) work(slot);
      }
      active_.fetch_sub(1);
    }
  }

  void stop_workers() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_.store(true);
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
    workers_.clear();
  }

  Placement place_;
  bool spread_ = false;  // no more threads than allowed CPUs: each can have its own
  alignas(64) std::atomic<int> caller_cpu_{-1};  // where the current region's caller runs
  std::mutex run_mutex_;  // one parallel region at a time
  std::mutex mutex_;      // sleeping workers and the first exception
  std::condition_variable wake_;
  std::vector<std::thread> workers_;
  const std::function<void(int64_t, int)>* task_ = nullptr;
  std::unique_ptr<Share[]> shares_;  // one per pool thread
  int slots_ = 0;                    // the current region's shares
  std::exception_ptr error_;
  alignas(64) std::atomic<uint64_t> generation_{0};
  std::atomic<bool> open_{false};
  std::atomic<bool> stop_{false};
  std::atomic<int> sleepers_{0};
  alignas(64) std::atomic<int> joined_{0};  // slots taken in the current region
  alignas(64) std::atomic<int64_t> done_{0};   // items run in the current region
  alignas(64) std::atomic<int> active_{0};  // workers inside a region
  int size_ = 1;
};

ThreadPool& pool() {
  static ThreadPool p(std::max(1u, std::thread::hardware_concurrency()));
  return p;
}

}  // namespace

void set_num_threads(int n) {
  EMBER_ENFORCE(n >= 1, Status::InvalidArgument, "set_num_threads expects a positive integer, got ", n);
  if (n != pool().size()) pool().resize(n);
}

int get_num_threads() { return thread_limit > 0 ? thread_limit : pool().size(); }

ThreadLimitGuard::ThreadLimitGuard(int n) : previous_(thread_limit) {
  if (n > 0) thread_limit = n;
}

ThreadLimitGuard::~ThreadLimitGuard() { thread_limit = previous_; }

int64_t parallel_steals() { return steals.load(std::memory_order_relaxed); }

void set_worker_lag_for_testing(int64_t ns) { worker_lag_ns.store(std::max<int64_t>(ns, 0)); }

int parallel_threads(int64_t tasks, int threads) {
  const int64_t t = std::min<int64_t>(std::min(std::max(threads, 1), in_parallel_region ? 1 : get_num_threads()), tasks);
  return static_cast<int>(std::max<int64_t>(t, 1));
}

void parallel_tasks(int64_t tasks, int threads, const std::function<void(int64_t, int)>& fn) {
  if (tasks <= 0) return;
  const int slots = parallel_threads(tasks, threads);
  if (slots <= 1) {
    for (int64_t i = 0; i < tasks; ++i) fn(i, 0);
    return;
  }
  pool().run(tasks, slots, nullptr, fn);
}

void parallel_tasks(const std::vector<int64_t>& bounds, const std::function<void(int64_t, int)>& fn) {
  if (bounds.size() < 2) return;
  const int64_t tasks = bounds.back();
  const int slots = static_cast<int>(bounds.size() - 1);
  if (slots <= 1 || in_parallel_region) {
    for (int64_t i = 0; i < tasks; ++i) fn(i, 0);
    return;
  }
  pool().run(tasks, slots, bounds.data(), fn);
}

void parallel_for(int64_t begin, int64_t end, int64_t grain,
                  const std::function<void(int64_t, int64_t)>& fn) {
  if (begin >= end) return;
  const int64_t n = end - begin;
  grain = std::max<int64_t>(grain, 1);
  const int threads = in_parallel_region ? 1 : get_num_threads();
  const int64_t chunks = std::min<int64_t>(int64_t{threads} * kChunksPerThread, (n + grain - 1) / grain);
  if (threads <= 1 || chunks <= 1) {
    fn(begin, end);
    return;
  }
  pool().run(chunks, static_cast<int>(std::min<int64_t>(threads, chunks)), nullptr,
             [&](int64_t i, int) { fn(begin + n * i / chunks, begin + n * (i + 1) / chunks); });
}

}  // namespace ember
