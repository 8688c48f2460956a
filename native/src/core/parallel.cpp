#include "ember/parallel.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

#include "ember/error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace ember {
namespace {

thread_local bool t_in_parallel = false;

// Note [denormal mode in the pool]: flush-to-zero and denormals-are-zero (ember.set_flush_denormal)
// are per-thread CPU state, set on the calling thread. Every chunk of a parallel_for runs with the
// caller's two bits, so a result does not depend on which thread computed which chunk.
#if defined(__x86_64__) || defined(__i386__)
constexpr unsigned kDenormalBits = 0x8040;  // MXCSR's FTZ (bit 15) and DAZ (bit 6)
unsigned denormal_mode() {
  return _mm_getcsr() & kDenormalBits;
}
void adopt_denormal_mode(unsigned mode) {
  const unsigned csr = _mm_getcsr();
  if ((csr & kDenormalBits) != mode) _mm_setcsr((csr & ~kDenormalBits) | mode);
}
#else
unsigned denormal_mode() {
  return 0;
}
void adopt_denormal_mode(unsigned) {}
#endif

// Read once: glibc answers hardware_concurrency() by opening /sys/devices/system/cpu/online, about
// 5 us, and every op asks (parallel_for -> get_num_threads) unless set_num_threads was called.
int default_threads() {
  static const int threads = [] {
    const unsigned hw = std::thread::hardware_concurrency();
    return hw == 0 ? 1 : static_cast<int>(hw);
  }();
  return threads;
}

// A fixed pool; a job is "run task(i) for i in [0, n)", taken from the job's own counter.
//
// Note [pool job lifetime]: every job's counter, completion count and error live in a Job on the
// caller's stack, and a worker registers itself on the job (under the mutex) before touching it.
// run() returns only when every index is done AND no worker is still inside the job. An earlier
// version kept one counter in the pool and reset it per job: a worker leaving job G could take a
// stale index from the reset counter of job G+1, so one chunk ran twice, the completion count
// reached n with a chunk still in flight, and the caller read a half-written output.
//
// Note [pool spinning]: waking a thread blocked on a condition variable takes tens of
// microseconds (longer in a VM) -- as long as a whole 1M-element add. So a worker that finishes a
// job watches for the next one for kSpin before it sleeps, and the caller waits for the last
// chunks by watching the job's counters, as OpenMP runtimes do; ops issued back to back from
// Python then reach workers that are still awake. Sleeping is only the fallback.
class ThreadPool {
 public:
  explicit ThreadPool(int workers) {
    for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { work(); });
  }
  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
      generation_.fetch_add(1);
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
  }
  int size() const { return static_cast<int>(threads_.size()); }

  // Runs task(0..n-1) on the pool and the calling thread; returns when all are done.
  void run(int64_t n, const std::function<void(int64_t)>& task) {
    Job job(task, n);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = &job;
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();  // no system call when every worker is still spinning
    drain(job);
    auto all_done = [&] { return job.done.load(std::memory_order_acquire) == job.count; };
    spin_for(all_done);
    {
      std::unique_lock<std::mutex> lock(mutex_);
      finished_.wait(lock, all_done);  // a worker still busy: sleep until its last chunk is done
      job_ = nullptr;                  // from here no worker can join the job
    }
    // the workers still registered found no index left and are leaving drain()
    while (job.workers.load(std::memory_order_acquire) != 0) std::this_thread::yield();
    if (job.error) std::rethrow_exception(job.error);
  }

 private:
  static constexpr auto kSpin = std::chrono::microseconds(200);

  struct Job {
    Job(const std::function<void(int64_t)>& t, int64_t n) : task(t), count(n) {}
    const std::function<void(int64_t)>& task;
    const int64_t count;
    std::atomic<int64_t> next{0};
    std::atomic<int64_t> done{0};
    std::atomic<int> workers{0};  // pool threads inside drain(*this)
    std::mutex error_mutex;
    std::exception_ptr error;  // the first one, guarded by error_mutex
  };

  // Busy-waits (with the CPU's pause hint) until ready() or for kSpin; says which.
  template <typename Ready>
  static bool spin_for(Ready ready) {
    const auto until = std::chrono::steady_clock::now() + kSpin;
    while (!ready()) {
      if (std::chrono::steady_clock::now() >= until) return false;
      for (int i = 0; i < 64; ++i) pause();
    }
    return true;
  }
  static void pause() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
  }

  void drain(Job& job) {
    for (int64_t i; (i = job.next.fetch_add(1)) < job.count;) {
      try {
        job.task(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(job.error_mutex);
        if (!job.error) job.error = std::current_exception();
      }
      if (job.done.fetch_add(1, std::memory_order_acq_rel) + 1 == job.count) {
        {
          std::lock_guard<std::mutex> lock(mutex_);
        }  // a caller past its check is now waiting
        finished_.notify_all();
      }
    }
  }
  void work() {
    t_in_parallel = true;
    uint64_t seen = 0;
    while (true) {
      spin_for([&] { return generation_.load(std::memory_order_acquire) != seen; });
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return generation_.load(std::memory_order_relaxed) != seen; });
      if (stop_) return;
      seen = generation_.load(std::memory_order_relaxed);
      if (job_ == nullptr) continue;  // that job is already over
      Job& job = *job_;
      job.workers.fetch_add(1, std::memory_order_relaxed);
      lock.unlock();
      drain(job);
      job.workers.fetch_sub(1, std::memory_order_release);
    }
  }

  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable finished_;
  Job* job_ = nullptr;                   // the job now running, guarded by mutex_
  std::atomic<uint64_t> generation_{0};  // bumped (under mutex_) for each job and for stop
  bool stop_ = false;
};

std::mutex g_pool_mutex;  // one parallel region at a time; also guards the pool's replacement
std::atomic<int> g_num_threads{0};
ThreadPool* g_pool = nullptr;  // leaked at exit on purpose: joining threads in a static destructor hangs

// Note [thread pool after fork]: a forked child (a DataLoader worker) has none of the parent's
// pool threads, and deleting the inherited pool would join threads that do not exist. The child
// forgets the pool (leaking its memory) and the pool mutex, which it never held, and builds a
// fresh pool on its first parallel region.
void forget_pool_in_child() {
  g_pool = nullptr;
  new (&g_pool_mutex) std::mutex();
}

[[maybe_unused]] const int g_fork_handler = pthread_atfork(nullptr, nullptr, &forget_pool_in_child);

ThreadPool& pool_for(int threads) {
  if (g_pool == nullptr || g_pool->size() != threads - 1) {
    delete g_pool;
    g_pool = new ThreadPool(threads - 1);
  }
  return *g_pool;
}

}  // namespace

void set_num_threads(int n) {
  EMBER_CHECK(n >= 1, ValueError, "[set_num_threads] expected a positive number of threads, but got ", n);
  g_num_threads.store(n);
}

int get_num_threads() {
  const int n = g_num_threads.load();
  return n > 0 ? n : default_threads();
}

bool in_parallel_region() {
  return t_in_parallel;
}

int64_t num_chunks(int64_t begin, int64_t end, int64_t grain) {
  const int64_t n = end - begin;
  if (n <= 0) return 0;
  grain = std::max<int64_t>(grain, 1);
  return (n + grain - 1) / grain;
}

void parallel_for(int64_t begin, int64_t end, int64_t grain,
                  const std::function<void(int64_t, int64_t)>& fn) {
  if (end <= begin) return;
  grain = std::max<int64_t>(grain, 1);
  const int threads = get_num_threads();
  if (threads == 1 || t_in_parallel || end - begin <= grain) {
    fn(begin, end);
    return;
  }
  const int64_t chunks = num_chunks(begin, end, grain);
  std::lock_guard<std::mutex> lock(g_pool_mutex);
  ThreadPool& pool = pool_for(threads);
  struct Flag {
    Flag() { t_in_parallel = true; }
    ~Flag() { t_in_parallel = false; }
  } flag;
  const unsigned mode = denormal_mode();
  pool.run(chunks, [&](int64_t c) {
    adopt_denormal_mode(mode);  // Note [denormal mode in the pool]
    const int64_t b = begin + c * grain;
    fn(b, std::min(end, b + grain));
  });
}

}  // namespace ember
