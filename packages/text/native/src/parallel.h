#pragma once
// The batch driver's threads. Internal to the library.
#include <cstddef>
#include <functional>

namespace embertext {

// Calls fn(begin, end) over chunks of [0, n) on up to num_threads threads, the calling thread
// included (num_threads <= 0 means the hardware's thread count). Threads are started per call
// and joined before it returns, so a forked process (a DataLoader worker) never inherits a pool.
// The first exception thrown by fn is rethrown after every thread has stopped.
void parallel_for(size_t n, int num_threads, size_t min_items_per_thread,
                  const std::function<void(size_t, size_t)>& fn);

}  // namespace embertext
