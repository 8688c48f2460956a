#pragma once
// TokenCache: word -> token ids, shared by the threads of a batch. Sharded so that two threads
// rarely wait on one lock; bounded, and once a shard is full it stops taking entries (words seen
// early are the frequent ones). Internal to the library.
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
  size_t per_shard_;
  std::unique_ptr<Shard[]> shards_;
};

}  // namespace embertext
