#pragma once
// Character properties and mappings the tokenizers need, from the generated table
// (Note [unicode tables] in unicode.cpp). Internal to the library.
#include <cstdint>
#include <string>

namespace embertext::unicode {

// Flag bits; tools/gen_unicode_tables.py defines the same values.
enum : uint16_t {
  kLetter = 1u << 0,          // category L*
  kNumber = 1u << 1,          // category N*
  kWhitespace = 1u << 2,      // White_Space
  kPunct = 1u << 3,           // category P*, or ASCII punctuation/symbols (BERT's rule)
  kControl = 1u << 4,         // Cc Cf Co Cs, except \t \n \r
  kMarkNonspacing = 1u << 5,  // Mn
  kCjk = 1u << 6,             // CJK ideographs BERT splits into single characters
  kHasLower = 1u << 7,        // lowercase mapping differs
  kHasDecomp = 1u << 8,       // canonical decomposition differs
  kNonstarter = 1u << 9,      // canonical combining class != 0
};

constexpr char32_t kMaxCodePoint = 0x10FFFF;

struct Tables {
  uint16_t flag_stage1[(kMaxCodePoint + 1) >> 8];
  uint16_t* flag_blocks;  // 256 flags per block
  uint16_t lower_stage1[(kMaxCodePoint + 1) >> 8];
  int32_t* lower_blocks;  // 256 deltas (lower - cp) per block
  uint16_t ccc_stage1[(kMaxCodePoint + 1) >> 8];
  uint8_t* ccc_blocks;  // 256 combining classes per block
};

extern const Tables& kTables;

inline uint16_t flags(char32_t cp) {
  return kTables.flag_blocks[(static_cast<uint32_t>(kTables.flag_stage1[cp >> 8]) << 8) | (cp & 0xFF)];
}

// The simple (one character) lowercase; U+0130 is the one character whose full lowercase is two
// characters, and append_lower handles it.
inline char32_t simple_lower(char32_t cp) {
  return static_cast<char32_t>(
      static_cast<int32_t>(cp) +
      kTables.lower_blocks[(static_cast<uint32_t>(kTables.lower_stage1[cp >> 8]) << 8) | (cp & 0xFF)]);
}

inline uint8_t combining_class(char32_t cp) {
  return kTables.ccc_blocks[(static_cast<uint32_t>(kTables.ccc_stage1[cp >> 8]) << 8) | (cp & 0xFF)];
}

// Writes the full canonical decomposition of cp (at most kMaxDecomposition code points) into out
// and returns its length; returns 1 with out[0] = cp when cp does not decompose.
constexpr int kMaxDecomposition = 8;
int decompose(char32_t cp, char32_t* out);

// The Unicode version the table was generated from.
const char* version();

}  // namespace embertext::unicode
