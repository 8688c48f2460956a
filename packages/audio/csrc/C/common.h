// Helpers shared by emberaudio._C's sources: a batch-parallel loop over std::thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace emberaudio {

// Runs fn(i) for i in [0, n) on up to hardware_concurrency threads; batch items are
// independent, so each thread takes a strided share. The first exception is rethrown.
template <typename Fn>
void parallel_for(int64_t n, Fn&& fn) {
  const int64_t hw = std::max<int64_t>(1, std::thread::hardware_concurrency());
  const int64_t workers = std::min<int64_t>(n, hw);
  if (workers <= 1) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::exception_ptr error;
  std::mutex error_mutex;
  std::vector<std::thread> threads;
  threads.reserve(workers);
  for (int64_t w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      try {
        for (int64_t i = w; i < n; i += workers) fn(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace emberaudio
