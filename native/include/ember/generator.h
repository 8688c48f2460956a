#pragma once
// Random numbers. A Generator is one of two kinds:
//
// - MT19937 (the default, and what `ember.default_generator` is): the 32-bit Mersenne Twister
//   (Matsumoto & Nishimura, 1998) seeded and consumed as PyTorch's CPU generator is, so a script
//   seeded with `manual_seed(s)` draws the same numbers as under PyTorch (Note [PyTorch-compatible
//   streams] in src/ops/random/random.cpp). Draws are serial: one op holds the generator's lock and
//   takes its numbers one after another, in the order the output's elements lie in memory.
// - Philox (`Generator(kind="philox")`): counter-based Philox4x32-10 (Salmon et al., SC'11).
//   Note [reproducible randomness]: element i of a random op draws from Philox(key = seed,
//   counter = offset + i), so its value depends on (seed, offset, i) only — never on the thread
//   that computes it or on how the work was split. Each op then advances the offset past the
//   counters it used, so the next op draws fresh numbers.
#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>

#include "ember/export.h"

namespace ember {

enum class GeneratorKind : uint8_t { MT19937, Philox };

constexpr uint64_t kDefaultSeed = 67280421310721ull;  // PyTorch's default seed for new generators

struct PhiloxState {
  uint64_t seed = kDefaultSeed;
  uint64_t offset = 0;  // in units of one 128-bit Philox block
};

// The Mersenne Twister's state as PyTorch keeps it: the 64-bit seed it was given (only its low 32
// bits seed the twister), the 624 words, the read position `next` and the count `left` of words
// before the next twist (1 right after seeding: the first draw twists).
constexpr int kMtWords = 624;
struct Mt19937State {
  uint64_t seed = 0;
  int32_t left = 1;
  bool seeded = false;
  uint32_t next = 0;
  std::array<uint32_t, kMtWords> words{};
};

class EMBER_API Mt19937 {
 public:
  explicit Mt19937(uint64_t seed = 5489);
  uint32_t operator()() {
    if (--state_.left == 0) twist();
    uint32_t y = state_.words[state_.next++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
  }
  const Mt19937State& state() const { return state_; }
  void set_state(const Mt19937State& s) { state_ = s; }
  bool valid() const {
    return state_.seeded && state_.left > 0 && state_.left <= kMtWords && state_.next <= kMtWords;
  }

 private:
  void twist();
  Mt19937State state_;
};

// Everything a generator carries, as get_state/set_state and vmap's randomness="same" save it.
struct GeneratorState {
  GeneratorKind kind = GeneratorKind::MT19937;
  PhiloxState philox;
  Mt19937State mt;
  // The second value of a scalar Box-Muller pair, kept for the next normal draw (PyTorch's cache).
  std::optional<float> next_float_normal;
  std::optional<double> next_double_normal;
};

class EMBER_API Generator {
 public:
  explicit Generator(uint64_t seed = kDefaultSeed, GeneratorKind kind = GeneratorKind::MT19937);

  GeneratorKind kind() const { return kind_; }
  void manual_seed(uint64_t seed);
  uint64_t seed();  // re-seeds from a non-deterministic source and returns the seed
  uint64_t initial_seed() const;
  GeneratorState state() const;
  void set_state(const GeneratorState& state);  // kind must match

  // Philox: reserves `blocks` Philox blocks for one op; returns the state to draw them from.
  PhiloxState reserve(uint64_t blocks);

  // MT19937: an op takes the lock for its whole draw, then calls random()/random64() and the
  // normal caches with it held (as PyTorch's CPU kernels do).
  std::unique_lock<std::mutex> lock() const { return std::unique_lock<std::mutex>(mutex_); }
  uint32_t random() { return engine_(); }
  uint64_t random64() {  // two draws, the first one high
    const uint64_t hi = engine_();
    return (hi << 32) | engine_();
  }
  std::optional<double>& next_double_normal() { return next_double_normal_; }
  std::optional<float>& next_float_normal() { return next_float_normal_; }

  static Generator& default_generator();

 private:
  mutable std::mutex mutex_;
  GeneratorKind kind_;
  PhiloxState philox_;
  Mt19937 engine_;
  std::optional<float> next_float_normal_;
  std::optional<double> next_double_normal_;
};

// The four 32-bit outputs of Philox4x32-10 for one counter.
struct Philox4 {
  uint32_t v[4];
};
// Philox4x32-10 of a 128-bit counter and 64-bit key (checked against Random123's known answers).
EMBER_API Philox4 philox4x32(Philox4 counter, uint32_t key0, uint32_t key1);
// The block Ember draws from: counter (offset, 0, 0), key = seed.
inline Philox4 philox(uint64_t seed, uint64_t counter) {
  return philox4x32({{static_cast<uint32_t>(counter), static_cast<uint32_t>(counter >> 32), 0, 0}},
                    static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

}  // namespace ember
