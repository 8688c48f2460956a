#include "parallel.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace embertext {

void parallel_for(size_t n, int num_threads, size_t min_items_per_thread,
                  const std::function<void(size_t, size_t)>& fn) {
  if (n == 0) return;
  size_t threads = num_threads > 0 ? static_cast<size_t>(num_threads) : std::thread::hardware_concurrency();
  threads = std::max<size_t>(1, std::min(threads, n / std::max<size_t>(1, min_items_per_thread)));
  if (threads == 1) {
    fn(0, n);
    return;
  }
  // Small chunks handed out in order balance uneven texts; results go to fixed slots, so the
  // output never depends on which thread ran which chunk.
  const size_t chunk = std::max<size_t>(1, n / (threads * 32));
  std::atomic<size_t> next{0};
  std::exception_ptr error;
  std::mutex error_mu;
  std::atomic<bool> failed{false};
  auto work = [&] {
    while (!failed.load(std::memory_order_relaxed)) {
      size_t begin = next.fetch_add(chunk);
      if (begin >= n) return;
      try {
        fn(begin, std::min(n, begin + chunk));
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mu);
        if (!error) error = std::current_exception();
        failed = true;
      }
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  try {
    for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  } catch (...) {
    // Could not start a thread: the threads that did start, and this one, finish the work.
  }
  work();
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace embertext
