// The CPU allocator's lock, measured in C++ (no Python, no GIL): calls of
// get_allocator(cpu)->allocate(n) and its free, beside the same work without the allocator's
// mutex (aligned_alloc + free behind the same DataPtr), on 1 and 2 threads. bench_allocator.py
// prints the result of this against Python-level op loops. Build and run against an installed
// ember (its headers and libember ship in the wheel):
//
//   E=$(python -c "import ember, os; print(os.path.dirname(ember.__file__))")
//   g++ -O2 -std=c++17 -I$E/include allocator_lock.cpp -L$E -lember -Wl,-rpath,$E -lpthread -o lock
//   ./lock
#include <ember/allocator.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

namespace {

std::atomic<uintptr_t> sink{0};  // keeps the pointers observable, so nothing is optimized away

template <class F>
double ns_per_call(F&& call, int threads, long calls) {
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    std::atomic<int> ready{0};
    std::vector<std::thread> pool;
    const auto t0 = std::chrono::steady_clock::now();
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&] {
        ready.fetch_add(1);
        while (ready.load() < threads) {
        }
        for (long i = 0; i < calls; ++i) call();
      });
    }
    for (auto& t : pool) t.join();
    const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, ns / static_cast<double>(calls));
  }
  return best;
}

}  // namespace

int main() {
  using ember::DataPtr;
  ember::Allocator* cpu = ember::get_allocator(ember::DeviceType::CPU);
  std::mutex mutex;
  long counter = 0;
  auto small = [&] {
    DataPtr p = cpu->allocate(64);
    sink.fetch_add(reinterpret_cast<uintptr_t>(p.get()), std::memory_order_relaxed);
  };
  auto cached = [&] {
    DataPtr p = cpu->allocate(size_t(1) << 20);
    sink.fetch_add(reinterpret_cast<uintptr_t>(p.get()), std::memory_order_relaxed);
  };
  auto bare = [&] {  // the small path without the allocator's lock and statistics
    const size_t size = 64, nbytes = 64;
    void* self = &mutex;  // the same three captured words as the allocator's deleter
    DataPtr p(std::aligned_alloc(64, size), [self, nbytes, size](void* q) {
      sink.fetch_add(reinterpret_cast<uintptr_t>(self) + nbytes + size, std::memory_order_relaxed);
      std::free(q);
    });
    sink.fetch_add(reinterpret_cast<uintptr_t>(p.get()), std::memory_order_relaxed);
  };
  auto lock_pair = [&] {  // one uncontended (1 thread) or shared (2 threads) lock + unlock
    std::lock_guard<std::mutex> lock(mutex);
    ++counter;
  };
  const long n = 2000000;
  std::printf("%-44s %12s %12s\n", "ns per call", "1 thread", "2 threads");
  const struct {
    const char* name;
    std::function<void()> fn;
    long calls;
  } rows[] = {{"allocate(64) + free (2 lock pairs)", small, n},
              {"aligned_alloc(64) + free, no lock", bare, n},
              {"allocate(1 MiB) + free, cache hit (4 pairs)", cached, n / 4},
              {"one std::mutex lock + unlock", lock_pair, n}};
  for (const auto& r : rows) {
    std::printf("%-44s %12.1f %12.1f\n", r.name, ns_per_call(r.fn, 1, r.calls),
                ns_per_call(r.fn, 2, r.calls));
  }
  std::printf("(counter %ld, sink %lu)\n", counter, static_cast<unsigned long>(sink.load() & 1));
}
