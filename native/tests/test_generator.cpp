#include "ember/generator.h"
#include "harness.h"

using namespace ember;

// Known answers from Random123's kat_vectors for philox4x32 with 10 rounds.
EMBER_TEST(philox_matches_random123_known_answers) {
  const Philox4 zero = philox4x32({{0, 0, 0, 0}}, 0, 0);
  CHECK_EQ(zero.v[0], 0x6627e8d5u);
  CHECK_EQ(zero.v[1], 0xe169c58du);
  CHECK_EQ(zero.v[2], 0xbc57ac4cu);
  CHECK_EQ(zero.v[3], 0x9b00dbd8u);
  const Philox4 ones =
      philox4x32({{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}}, 0xffffffffu, 0xffffffffu);
  CHECK_EQ(ones.v[0], 0x408f276du);
  CHECK_EQ(ones.v[1], 0x41c83b0eu);
  CHECK_EQ(ones.v[2], 0xa20bc7c6u);
  CHECK_EQ(ones.v[3], 0x6d5451fdu);
  const Philox4 pi =
      philox4x32({{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}}, 0xa4093822u, 0x299f31d0u);
  CHECK_EQ(pi.v[0], 0xd16cfe09u);
  CHECK_EQ(pi.v[1], 0x94fdccebu);
  CHECK_EQ(pi.v[2], 0x5001e420u);
  CHECK_EQ(pi.v[3], 0x24126ea1u);
}

EMBER_TEST(generator_reserves_disjoint_blocks) {
  Generator g(42, GeneratorKind::Philox);
  const PhiloxState a = g.reserve(10);
  const PhiloxState b = g.reserve(3);
  CHECK_EQ(a.offset, 0u);
  CHECK_EQ(b.offset, 10u);
  CHECK_EQ(g.state().philox.offset, 13u);
  g.manual_seed(7);
  CHECK_EQ(g.initial_seed(), 7u);
  CHECK_EQ(g.state().philox.offset, 0u);
}

// The C++ standard fixes std::mt19937's 10000th output for the default seed 5489.
EMBER_TEST(mt19937_matches_the_standards_known_answer) {
  Mt19937 engine(5489);
  CHECK_EQ(engine(), 3499211612u);
  for (int i = 0; i < 9998; ++i) engine();
  CHECK_EQ(engine(), 4123659995u);
}

EMBER_TEST(mt19937_generator_is_the_default_and_seeds_from_the_low_32_bits) {
  Generator a((uint64_t{1} << 32) + 5489), b(5489);
  CHECK(a.kind() == GeneratorKind::MT19937);
  CHECK_EQ(a.initial_seed(), (uint64_t{1} << 32) + 5489);
  CHECK_EQ(a.random(), 3499211612u);
  CHECK_EQ(b.random64(), (uint64_t{3499211612u} << 32) | 581869302u);
  const GeneratorState saved = a.state();
  const uint32_t next = a.random();
  a.set_state(saved);
  CHECK_EQ(a.random(), next);
}
