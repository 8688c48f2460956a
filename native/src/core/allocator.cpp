#include "ember/allocator.h"

#include <array>
#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <vector>

#include "ember/error.h"

namespace ember {
namespace {

// Note [caching CPU allocator]: glibc returns large blocks to the kernel on free, so every
// large output is page-faulted afresh (a 4-5x slowdown on an allocating 16M-element add).
// Blocks of at least kCacheMin bytes are kept on free, per size class, and handed out again;
// the cache holds at most kCacheMax bytes. Small blocks go straight to aligned_alloc/free.
constexpr size_t kCacheMin = size_t(1) << 20;
constexpr size_t kCacheMax = size_t(2) << 30;
constexpr size_t kClassStep = size_t(64) << 10;

class CpuAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes) override {
    if (nbytes < kCacheMin) {
      void* p = raw_alloc(round_up(nbytes == 0 ? 1 : nbytes, kCpuAlignment), nbytes);
      allocated_bytes_ += nbytes;
      return DataPtr(p, [this, nbytes](void* q) {
        allocated_bytes_ -= nbytes;
        std::free(q);
      });
    }
    const size_t size = round_up(nbytes, kClassStep);
    void* p = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = cache_.find(size);
      if (it != cache_.end() && !it->second.empty()) {
        p = it->second.back();
        it->second.pop_back();
        cached_bytes_ -= size;
      }
    }
    if (p == nullptr) p = raw_alloc(size, nbytes);
    allocated_bytes_ += nbytes;
    return DataPtr(p, [this, size, nbytes](void* q) {
      allocated_bytes_ -= nbytes;
      release(q, size);
    });
  }
  size_t allocated_bytes() const { return allocated_bytes_.load(); }

  void empty_cache() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& kv : cache_) {
      for (void* p : kv.second) std::free(p);
    }
    cache_.clear();
    cached_bytes_ = 0;
  }
  size_t cached_bytes() {
    std::lock_guard<std::mutex> lock(mutex_);
    return cached_bytes_;
  }

 private:
  static size_t round_up(size_t n, size_t step) { return (n + step - 1) / step * step; }
  static void* raw_alloc(size_t size, size_t requested) {
    void* p = std::aligned_alloc(kCpuAlignment, size);
    EMBER_CHECK(p != nullptr, Error, "[allocator] expected to allocate ", requested,
                " bytes on cpu, but the system is out of memory");
    return p;
  }
  void release(void* p, size_t size) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (cached_bytes_ + size <= kCacheMax) {
        cache_[size].push_back(p);
        cached_bytes_ += size;
        return;
      }
    }
    std::free(p);
  }

  std::mutex mutex_;
  std::map<size_t, std::vector<void*>> cache_;
  size_t cached_bytes_ = 0;
  std::atomic<size_t> allocated_bytes_{0};  // bytes asked for by live buffers
};

// Leaked: tensors may be freed during static destruction, after a static allocator would be gone.
CpuAllocator& cpu_allocator() {
  static auto* a = new CpuAllocator();
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
  return cpu_allocator().cached_bytes();
}
size_t cpu_allocated_bytes() {
  return cpu_allocator().allocated_bytes();
}

}  // namespace ember
