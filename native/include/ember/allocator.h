#pragma once
// One allocator interface for every device. The CPU allocator returns 64-byte aligned memory;
// a device backend (the CUDA caching allocator) registers its own with set_allocator().
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "ember/device.h"
#include "ember/export.h"

namespace ember {

// Owning pointer to a buffer together with the function that releases it.
using DataPtr = std::unique_ptr<void, std::function<void(void*)>>;

class EMBER_API Allocator {
 public:
  virtual ~Allocator() = default;
  virtual DataPtr allocate(size_t nbytes) = 0;
};

constexpr size_t kCpuAlignment = 64;

EMBER_API Allocator* get_allocator(DeviceType type);  // NotImplementedError if none registered
EMBER_API void set_allocator(DeviceType type, Allocator* allocator);
// The CPU allocator's cache of large blocks (Note [caching CPU allocator]).
EMBER_API void cpu_empty_cache();
EMBER_API size_t cpu_cached_bytes();
// Bytes held by live CPU tensors' buffers (as requested; not counting the cache).
EMBER_API size_t cpu_allocated_bytes();
// The most bytes the cache keeps (default: EMBER_CPU_CACHE_LIMIT, else 1/32 of physical memory,
// at most 1 GiB); lowering it releases cached blocks at once. 0 turns caching off.
EMBER_API void cpu_set_cache_limit(size_t bytes);
EMBER_API size_t cpu_cache_limit();

struct CpuMemoryStats {
  size_t allocated = 0, allocated_peak = 0;  // live buffers, bytes as requested
  size_t reserved = 0, reserved_peak = 0;    // held from the system: live blocks (rounded) + cache
  size_t cached = 0;                         // free blocks kept for reuse
  size_t cache_limit = 0;
  uint64_t cache_hits = 0, cache_misses = 0;  // large allocations served from the cache or not
  uint64_t alloc_retries = 0;                 // failed system allocations retried after emptying the cache
  uint64_t cache_evictions = 0;               // cached blocks freed to stay under the limit
};
EMBER_API CpuMemoryStats cpu_memory_stats();
EMBER_API void cpu_reset_peak_memory_stats();

}  // namespace ember
