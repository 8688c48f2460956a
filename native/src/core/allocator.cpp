#include "ember/allocator.h"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <list>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "ember/error.h"

namespace ember {
namespace {

// Note [caching CPU allocator]: glibc returns large blocks to the kernel on free, so every
// large output is page-faulted afresh (a 4-5x slowdown on an allocating 16M-element add).
// Blocks of at least kCacheMin bytes are kept on free, per size class (kClassStep steps), and
// handed out again. The cache is bounded: it holds at most limit_ bytes (EMBER_CPU_CACHE_LIMIT,
// else 1/32 of physical memory, at most 1 GiB; ember.cpu.set_cache_limit), and a block freed into
// a full cache evicts the oldest cached blocks first (a loop over the same shapes keeps hitting,
// while 300 one-off sizes cannot pile up). When the system refuses an allocation, the whole
// cache is released and the allocation tried once more. Small blocks go straight to
// aligned_alloc/free.
//
//   cache_: size class -> free blocks          fifo_: every cached block, oldest first
//     1 MiB  -> [p3]                             [(2 MiB, p1), (1 MiB, p3), (2 MiB, p2)]
//     2 MiB  -> [p1, p2]
constexpr size_t kCacheMin = size_t(1) << 20;
// Note [huge pages]: a block of at least kHugeMin bytes is aligned to 2 MiB and marked
// MADV_HUGEPAGE, so transparent huge pages back it where the system allows them ("madvise" or
// "always"). Lookups that read rows at random from a large table (embedding bags, table-batched
// embeddings) otherwise miss the TLB on nearly every row: with 4 KiB pages a 4 GB table spans a
// million pages. The block's tail up to the next 2 MiB is the price (under 7% of kHugeMin).
constexpr size_t kHugeMin = size_t(32) << 20;
constexpr size_t kHugePage = size_t(2) << 20;
constexpr size_t kCacheDefaultMax = size_t(1) << 30;
constexpr size_t kClassStep = size_t(64) << 10;

// "1073741824", "512M", "2G", "64k" (powers of 1024); false when unparsable.
bool parse_bytes(const char* text, size_t* out) {
  const std::string s(text);
  const size_t first = s.find_first_not_of(" \t");
  if (first == std::string::npos || !std::isdigit(static_cast<unsigned char>(s[first]))) return false;
  size_t pos = 0;
  unsigned long long v = 0;
  try {
    v = std::stoull(s, &pos);
  } catch (...) {
    return false;
  }
  std::string unit = s.substr(pos);
  while (!unit.empty() && std::isspace(static_cast<unsigned char>(unit.back()))) unit.pop_back();
  while (!unit.empty() && std::isspace(static_cast<unsigned char>(unit.front()))) unit.erase(0, 1);
  if (!unit.empty() && (unit.back() == 'B' || unit.back() == 'b')) unit.pop_back();
  size_t scale = 1;
  if (unit.size() == 1) {
    switch (std::toupper(static_cast<unsigned char>(unit[0]))) {
      case 'K': scale = size_t(1) << 10; break;
      case 'M': scale = size_t(1) << 20; break;
      case 'G': scale = size_t(1) << 30; break;
      default: return false;
    }
  } else if (!unit.empty()) {
    return false;
  }
  *out = static_cast<size_t>(v) * scale;
  return true;
}

size_t default_cache_limit() {
  size_t bytes = 0;
  if (const char* env = std::getenv("EMBER_CPU_CACHE_LIMIT")) {
    if (parse_bytes(env, &bytes)) return bytes;
  }
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  const size_t physical = pages > 0 && page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page) : 0;
  return physical == 0 ? kCacheDefaultMax : std::min(physical / 32, kCacheDefaultMax);
}

class CpuAllocator final : public Allocator {
 public:
  CpuAllocator() : limit_(default_cache_limit()) {}

  DataPtr allocate(size_t nbytes) override {
    if (nbytes < kCacheMin) {
      const size_t size = round_up(nbytes == 0 ? 1 : nbytes, kCpuAlignment);
      void* p = system_alloc(size, nbytes);
      account(nbytes, size);
      return DataPtr(p, [this, nbytes, size](void* q) {
        unaccount(nbytes, size);
        std::free(q);
      });
    }
    const size_t size = round_up(nbytes, kClassStep);
    void* p = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = cache_.find(size);
      if (it != cache_.end() && !it->second.empty()) {
        auto entry = it->second.back();
        it->second.pop_back();
        if (it->second.empty()) cache_.erase(it);
        p = entry->second;
        fifo_.erase(entry);
        cached_bytes_ -= size;
        ++hits_;
      } else {
        ++misses_;
      }
    }
    if (p == nullptr) p = system_alloc(size, nbytes);
    account(nbytes, size);
    return DataPtr(p, [this, size, nbytes](void* q) {
      unaccount(nbytes, size);
      release(q, size);
    });
  }

  void empty_cache() {
    std::lock_guard<std::mutex> lock(mutex_);
    evict_until(0);
  }
  void set_limit(size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    limit_ = bytes;
    evict_until(limit_);
  }
  CpuMemoryStats stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    CpuMemoryStats s;
    s.allocated = allocated_;
    s.allocated_peak = allocated_peak_;
    s.reserved = in_use_ + cached_bytes_;
    s.reserved_peak = std::max(reserved_peak_, s.reserved);
    s.cached = cached_bytes_;
    s.cache_limit = limit_;
    s.cache_hits = hits_;
    s.cache_misses = misses_;
    s.alloc_retries = retries_;
    s.cache_evictions = evictions_;
    return s;
  }
  void reset_peaks() {
    std::lock_guard<std::mutex> lock(mutex_);
    allocated_peak_ = allocated_;
    reserved_peak_ = in_use_ + cached_bytes_;
  }
  // Note [allocator across fork]: every allocation and free takes mutex_, so a fork while another
  // thread held it (a DataLoader forking its workers while a thread runs an op) would leave the
  // child's copy locked forever, and the child would hang on its first tensor. The fork handlers
  // hold mutex_ across fork(): the forking thread takes it, so no other thread is inside, and
  // parent and child each release their copy.
  void lock_for_fork() { mutex_.lock(); }
  void unlock_after_fork() { mutex_.unlock(); }
  void hold_lock(double seconds) {  // for the test of the above
    std::lock_guard<std::mutex> lock(mutex_);
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  }

 private:
  using Fifo = std::list<std::pair<size_t, void*>>;

  static size_t round_up(size_t n, size_t step) { return (n + step - 1) / step * step; }

  // The system's memory; on failure the cache is given back and the request tried once more.
  void* system_alloc(size_t size, size_t requested) {
    const bool huge = size >= kHugeMin;
    auto attempt = [&] {
      return huge ? std::aligned_alloc(kHugePage, round_up(size, kHugePage))
                  : std::aligned_alloc(kCpuAlignment, size);
    };
    void* p = attempt();
    if (p == nullptr) {
      std::lock_guard<std::mutex> lock(mutex_);
      ++retries_;
      evict_until(0);
    }
    if (p == nullptr) p = attempt();
    EMBER_CHECK(p != nullptr, OutOfMemoryError, "[allocator] expected to allocate ", requested,
                " bytes on cpu, but the system is out of memory");
#ifdef MADV_HUGEPAGE
    if (huge) madvise(p, round_up(size, kHugePage), MADV_HUGEPAGE);  // advice only: failure is harmless
#endif
    return p;
  }
  void account(size_t nbytes, size_t size) {
    std::lock_guard<std::mutex> lock(mutex_);
    allocated_ += nbytes;
    in_use_ += size;
    allocated_peak_ = std::max(allocated_peak_, allocated_);
    reserved_peak_ = std::max(reserved_peak_, in_use_ + cached_bytes_);
  }
  void unaccount(size_t nbytes, size_t size) {
    std::lock_guard<std::mutex> lock(mutex_);
    allocated_ -= nbytes;
    in_use_ -= size;
  }
  // Called with mutex_ held: frees the oldest cached blocks until at most `bytes` stay cached.
  void evict_until(size_t bytes) {
    while (cached_bytes_ > bytes && !fifo_.empty()) {
      const auto [size, p] = fifo_.front();
      auto& blocks = cache_[size];
      blocks.erase(
          std::find_if(blocks.begin(), blocks.end(), [&](Fifo::iterator e) { return e == fifo_.begin(); }));
      if (blocks.empty()) cache_.erase(size);
      fifo_.pop_front();
      cached_bytes_ -= size;
      ++evictions_;
      std::free(p);
    }
  }
  void release(void* p, size_t size) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (size <= limit_) {
        evict_until(limit_ - size);
        fifo_.emplace_back(size, p);
        cache_[size].push_back(std::prev(fifo_.end()));
        cached_bytes_ += size;
        return;
      }
    }
    std::free(p);
  }

  std::mutex mutex_;
  std::map<size_t, std::vector<Fifo::iterator>> cache_;
  Fifo fifo_;
  size_t limit_;
  size_t cached_bytes_ = 0;
  size_t allocated_ = 0, allocated_peak_ = 0;  // bytes asked for by live buffers
  size_t in_use_ = 0, reserved_peak_ = 0;      // bytes of live blocks as allocated (rounded)
  uint64_t hits_ = 0, misses_ = 0, retries_ = 0, evictions_ = 0;
};

// Leaked: tensors may be freed during static destruction, after a static allocator would be gone.
CpuAllocator& cpu_allocator() {
  static auto* a = [] {
    auto* made = new CpuAllocator();
    pthread_atfork([] { cpu_allocator().lock_for_fork(); }, [] { cpu_allocator().unlock_after_fork(); },
                   [] { cpu_allocator().unlock_after_fork(); });  // Note [allocator across fork]
    return made;
  }();
  return *a;
}
std::array<Allocator*, kNumDeviceTypes>& allocators() {
  static std::array<Allocator*, kNumDeviceTypes> table = {&cpu_allocator(), nullptr, nullptr};
  return table;
}

}  // namespace

Allocator* get_allocator(DeviceType type) {
  Allocator* a = allocators()[static_cast<int>(type)];
  EMBER_CHECK(a != nullptr, NotImplementedError, "[allocate] not implemented for ", device_type_name(type),
              " (this build of ember has no ", device_type_name(type), " backend)");
  return a;
}

void set_allocator(DeviceType type, Allocator* allocator) {
  allocators()[static_cast<int>(type)] = allocator;
}

void cpu_empty_cache() {
  cpu_allocator().empty_cache();
}
size_t cpu_cached_bytes() {
  return cpu_allocator().stats().cached;
}
size_t cpu_allocated_bytes() {
  return cpu_allocator().stats().allocated;
}
void cpu_set_cache_limit(size_t bytes) {
  cpu_allocator().set_limit(bytes);
}
size_t cpu_cache_limit() {
  return cpu_allocator().stats().cache_limit;
}
CpuMemoryStats cpu_memory_stats() {
  return cpu_allocator().stats();
}
void cpu_reset_peak_memory_stats() {
  cpu_allocator().reset_peaks();
}
// Holds the CPU allocator's lock for a while: lets a test fork while another thread holds it
// (Note [allocator across fork]). Declared where it is bound, in the Python module.
EMBER_API void cpu_allocator_hold_lock_for_test(double seconds) {
  cpu_allocator().hold_lock(seconds);
}

}  // namespace ember
