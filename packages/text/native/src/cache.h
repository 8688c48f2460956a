#pragma once
// TokenCache: word -> token ids, in two levels. Each thread first looks in its own small cache
// (no lock, no shared cache lines), then in the cache shared by the threads of a batch, which is
// sharded by hash so that threads rarely wait on one lock. Frequent words ("the", ",") all hash
// to a few shards, so without the first level two threads would fight over those shards' locks
// on most words. Both levels are bounded, and a full one stops taking entries (words seen early
// are the frequent ones). Internal to the library.
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include "string_map.h"

namespace embertext {

class TokenCache {
 public:
  static constexpr size_t kMaxKeyBytes = 128;  // longer words are rare; not worth the memory

  explicit TokenCache(size_t capacity) : per_shard_(capacity / kShards + 1), shards_(new Shard[kShards]) {}

  // Appends the cached ids of key to out and returns true, or returns false.
  bool lookup(std::string_view key, uint64_t h, std::vector<int32_t>& out) const {
    if (key.size() > kMaxKeyBytes) return false;
    const Shard& s = shards_[h >> (64 - kShardBits)];
    std::lock_guard<std::mutex> lock(s.mu);
    const Entry* e = s.map.find(key, h);
    if (e == nullptr) return false;
    out.insert(out.end(), s.ids.begin() + e->offset, s.ids.begin() + e->offset + e->length);
    return true;
  }

  void store(std::string_view key, uint64_t h, const int32_t* ids, size_t n) {
    if (key.size() > kMaxKeyBytes) return;
    Shard& s = shards_[h >> (64 - kShardBits)];
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.map.size() >= per_shard_) return;
    auto [entry, fresh] =
        s.map.insert(key, h, Entry{static_cast<uint32_t>(s.ids.size()), static_cast<uint32_t>(n)});
    if (fresh) s.ids.insert(s.ids.end(), ids, ids + n);
    (void)entry;
  }

 private:
  static constexpr int kShardBits = 6;
  static constexpr size_t kShards = size_t{1} << kShardBits;
  struct Entry {
    uint32_t offset = 0;
    uint32_t length = 0;
  };
  struct alignas(64) Shard {
    mutable std::mutex mu;
    StringMap<Entry> map;
    std::vector<int32_t> ids;
  };
  struct Local {
    uint64_t owner = 0;  // the id_ of the cache these entries belong to
    StringMap<Entry> map;
    std::vector<int32_t> ids;
  };

  static void add(StringMap<Entry>& map, std::vector<int32_t>& pool, size_t capacity, std::string_view key,
                  uint64_t h, const int32_t* ids, size_t n) {
    if (map.size() >= capacity) return;
    if (map.insert(key, h, Entry{static_cast<uint32_t>(pool.size()), static_cast<uint32_t>(n)}).second)
      pool.insert(pool.end(), ids, ids + n);
  }

  // This thread's first level, emptied when the thread moves on to another cache. Caches are
  // told apart by an id that is never reused (an address could be).
  Local& local() const {
    thread_local Local mine;
    if (mine.owner != id_) {
      mine = Local{};
      mine.owner = id_;
    }
    return mine;
  }

  static inline std::atomic<uint64_t> next_id_{0};
  uint64_t id_;
  size_t per_shard_;
  std::unique_ptr<Shard[]> shards_;
};

}  // namespace embertext
