#pragma once
// StringMap: an open-addressing hash map from byte strings to small values, looked up by
// string_view without allocating. Keys live in one arena string. Internal to the library.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace embertext {

inline uint64_t hash_bytes(std::string_view s) {
  // A multiply-xorshift hash over 8-byte words: fast for the short keys tokenizers use.
  constexpr uint64_t k1 = 0x9E3779B97F4A7C15ull, k2 = 0xBF58476D1CE4E5B9ull;
  const char* p = s.data();
  size_t n = s.size();
  uint64_t h = k1 ^ (n * k2);
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ (w * k1)) * k2;
    h ^= h >> 31;
    p += 8;
    n -= 8;
  }
  uint64_t w = 0;
  std::memcpy(&w, p, n);
  h = (h ^ (w * k1)) * k2;
  h ^= h >> 29;
  h *= k1;
  h ^= h >> 32;
  return h;
}

template <typename V>
class StringMap {
 public:
  StringMap() { rehash(16); }

  size_t size() const { return size_; }

  // The value for key, or nullptr.
  const V* find(std::string_view key, uint64_t h) const {
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.length == kEmpty) return nullptr;
      if (s.hash == h && s.length == key.size() &&
          std::memcmp(arena_.data() + s.offset, key.data(), key.size()) == 0)
        return &s.value;
    }
  }
  const V* find(std::string_view key) const { return find(key, hash_bytes(key)); }

  // Inserts key -> value unless key is present; returns the stored value and whether it was new.
  std::pair<V*, bool> insert(std::string_view key, uint64_t h, const V& value) {
    if ((size_ + 1) * 4 > slots_.size() * 3) rehash(slots_.size() * 2);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.length == kEmpty) {
        s.hash = h;
        s.offset = arena_.size();
        s.length = static_cast<uint32_t>(key.size());
        s.value = value;
        arena_.append(key.data(), key.size());
        ++size_;
        return {&s.value, true};
      }
      if (s.hash == h && s.length == key.size() &&
          std::memcmp(arena_.data() + s.offset, key.data(), key.size()) == 0)
        return {&s.value, false};
    }
  }
  std::pair<V*, bool> insert(std::string_view key, const V& value) {
    return insert(key, hash_bytes(key), value);
  }

  size_t arena_bytes() const { return arena_.size(); }

  template <typename F>
  void for_each(F&& f) const {
    for (const Slot& s : slots_)
      if (s.length != kEmpty) f(std::string_view(arena_.data() + s.offset, s.length), s.value);
  }

 private:
  static constexpr uint32_t kEmpty = 0xFFFFFFFFu;
  struct Slot {
    uint64_t hash = 0;
    size_t offset = 0;
    uint32_t length = kEmpty;
    V value{};
  };

  void rehash(size_t n) {
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.assign(n, Slot{});
    mask_ = n - 1;
    for (const Slot& s : old) {
      if (s.length == kEmpty) continue;
      size_t i = s.hash & mask_;
      while (slots_[i].length != kEmpty) i = (i + 1) & mask_;
      slots_[i] = s;
    }
  }

  std::vector<Slot> slots_;
  std::string arena_;
  size_t size_ = 0;
  size_t mask_ = 0;
};

}  // namespace embertext
