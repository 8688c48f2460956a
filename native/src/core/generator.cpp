#include "ember/generator.h"

#include <random>

#include "ember/error.h"

namespace ember {

Philox4 philox4x32(Philox4 counter, uint32_t k0, uint32_t k1) {
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;  // round multipliers
  constexpr uint32_t kKey0 = 0x9E3779B9u, kKey1 = 0xBB67AE85u;  // Weyl key increments
  uint32_t c0 = counter.v[0], c1 = counter.v[1], c2 = counter.v[2], c3 = counter.v[3];
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(kMul0) * c0;
    const uint64_t p1 = static_cast<uint64_t>(kMul1) * c2;
    const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0;
    const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
    c1 = static_cast<uint32_t>(p1);
    c3 = static_cast<uint32_t>(p0);
    c0 = n0;
    c2 = n2;
    k0 += kKey0;
    k1 += kKey1;
  }
  return {{c0, c1, c2, c3}};
}

Mt19937::Mt19937(uint64_t seed) {
  // Knuth's initialisation (Matsumoto & Nishimura's init_genrand) from the seed's low 32 bits.
  state_.seed = seed;
  state_.seeded = true;
  state_.words[0] = static_cast<uint32_t>(seed);
  for (uint32_t j = 1; j < kMtWords; ++j) {
    const uint32_t prev = state_.words[j - 1];
    state_.words[j] = 1812433253u * (prev ^ (prev >> 30)) + j;
  }
  state_.left = 1;
  state_.next = 0;
}

void Mt19937::twist() {
  constexpr int kShift = 397;
  auto mix = [](uint32_t upper, uint32_t lower) {
    const uint32_t y = (upper & 0x80000000u) | (lower & 0x7fffffffu);
    return (y >> 1) ^ ((lower & 1u) ? 0x9908b0dfu : 0u);
  };
  auto& w = state_.words;
  // w[k] = w[(k + 397) % 624] ^ mix(w[k], w[(k + 1) % 624]) for k in order, in three runs so that
  // no index needs a modulo (the words past the wrap were already replaced, as in the one loop)
  int k = 0;
  for (; k < kMtWords - kShift; ++k) w[k] = w[k + kShift] ^ mix(w[k], w[k + 1]);
  for (; k < kMtWords - 1; ++k) w[k] = w[k + kShift - kMtWords] ^ mix(w[k], w[k + 1]);
  w[kMtWords - 1] = w[kShift - 1] ^ mix(w[kMtWords - 1], w[0]);
  state_.left = kMtWords;
  state_.next = 0;
}

Generator::Generator(uint64_t seed, GeneratorKind kind) : kind_(kind), engine_(seed) {
  philox_.seed = seed;
}

void Generator::manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(mutex_);
  philox_ = PhiloxState{seed, 0};
  engine_ = Mt19937(seed);
  next_float_normal_.reset();
  next_double_normal_.reset();
}

uint64_t Generator::seed() {
  std::random_device device;
  const uint64_t s = (static_cast<uint64_t>(device()) << 32) | device();
  manual_seed(s);
  return s;
}

uint64_t Generator::initial_seed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return kind_ == GeneratorKind::Philox ? philox_.seed : engine_.state().seed;
}

GeneratorState Generator::state() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return GeneratorState{kind_, philox_, engine_.state(), next_float_normal_, next_double_normal_};
}

void Generator::set_state(const GeneratorState& state) {
  EMBER_CHECK(state.kind == kind_, Error, "[set_state] expected a state of this generator's kind (",
              kind_ == GeneratorKind::Philox ? "philox" : "mt19937", "), but got one of the other kind");
  Mt19937 engine;
  engine.set_state(state.mt);
  EMBER_CHECK(
      kind_ == GeneratorKind::Philox || engine.valid(), Error,
      "[set_state] expected a valid mt19937 state (seeded, 0 < left <= 624, next <= 624), but got left=",
      state.mt.left, ", next=", state.mt.next);
  std::lock_guard<std::mutex> lock(mutex_);
  philox_ = state.philox;
  engine_ = engine;
  next_float_normal_ = state.next_float_normal;
  next_double_normal_ = state.next_double_normal;
}

PhiloxState Generator::reserve(uint64_t blocks) {
  std::lock_guard<std::mutex> lock(mutex_);
  const PhiloxState used = philox_;
  philox_.offset += blocks;
  return used;
}

Generator& Generator::default_generator() {
  static auto* g = new Generator();  // leaked: used until exit
  return *g;
}

}  // namespace ember
