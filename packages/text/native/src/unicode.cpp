#include "unicode.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

namespace embertext::unicode {
namespace {

// Note [unicode tables]
// ~~~~~~~~~~~~~~~~~~~~~
// unicode_tables.inc holds compact run lists generated from Python's unicodedata (the generator,
// tools/gen_unicode_tables.py, is committed beside it). At load time they are expanded into
// two-stage tables: stage1[cp >> 8] names a 256-entry block, identical blocks are stored once.
//
//     cp = 0x00E9 ─► stage1[0x00] = 3 ─► blocks[3 * 256 + 0xE9] = flags of 'é'
//
// That keeps every lookup at two loads (~60 KB in all) without a 1.1M-entry array.
#include "unicode_tables.inc"

constexpr uint32_t kBlocks = (kMaxCodePoint + 1) >> 8;

template <typename T>
void compress(const std::vector<T>& full, uint16_t* stage1, std::vector<T>& blocks) {
  std::map<std::vector<T>, uint16_t> seen;
  for (uint32_t b = 0; b < kBlocks; ++b) {
    std::vector<T> block(full.begin() + b * 256, full.begin() + (b + 1) * 256);
    auto it = seen.find(block);
    if (it == seen.end()) {
      it = seen.emplace(block, static_cast<uint16_t>(blocks.size() / 256)).first;
      blocks.insert(blocks.end(), block.begin(), block.end());
    }
    stage1[b] = it->second;
  }
}

struct Storage {
  Tables tables;
  std::vector<uint16_t> flag_blocks;
  std::vector<int32_t> lower_blocks;
  std::vector<uint8_t> ccc_blocks;

  Storage() {
    std::vector<uint16_t> flags(kMaxCodePoint + 1, 0);
    const size_t nruns = sizeof(kFlagRuns) / sizeof(kFlagRuns[0]);
    for (size_t i = 0; i < nruns; ++i) {
      uint32_t end = i + 1 < nruns ? kFlagRuns[i + 1][0] : kMaxCodePoint + 1;
      std::fill(flags.begin() + kFlagRuns[i][0], flags.begin() + end, static_cast<uint16_t>(kFlagRuns[i][1]));
    }
    compress(flags, tables.flag_stage1, flag_blocks);

    std::vector<int32_t> lower(kMaxCodePoint + 1, 0);
    for (const auto& pair : kLowerPairs)
      lower[pair[0]] = static_cast<int32_t>(pair[1]) - static_cast<int32_t>(pair[0]);
    compress(lower, tables.lower_stage1, lower_blocks);

    std::vector<uint8_t> ccc(kMaxCodePoint + 1, 0);
    const size_t ncc = sizeof(kCccRuns) / sizeof(kCccRuns[0]);
    for (size_t i = 0; i < ncc; ++i) {
      uint32_t end = i + 1 < ncc ? kCccRuns[i + 1][0] : kMaxCodePoint + 1;
      std::fill(ccc.begin() + kCccRuns[i][0], ccc.begin() + end, static_cast<uint8_t>(kCccRuns[i][1]));
    }
    compress(ccc, tables.ccc_stage1, ccc_blocks);

    tables.flag_blocks = flag_blocks.data();
    tables.lower_blocks = lower_blocks.data();
    tables.ccc_blocks = ccc_blocks.data();
  }
};

const Storage& storage() {
  static const Storage* s = new Storage();  // never destroyed: other statics may still use it
  return *s;
}

constexpr char32_t kHangulFirst = 0xAC00, kHangulLast = 0xD7A3;
constexpr char32_t kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount;

}  // namespace

const Tables& kTables = storage().tables;

int decompose(char32_t cp, char32_t* out) {
  if (cp >= kHangulFirst && cp <= kHangulLast) {
    // Hangul syllables decompose arithmetically into two or three jamo (Unicode ch. 3.12).
    char32_t s = cp - kHangulFirst;
    out[0] = kLBase + s / kNCount;
    out[1] = kVBase + (s % kNCount) / kTCount;
    char32_t t = s % kTCount;
    if (t == 0) return 2;
    out[2] = kTBase + t;
    return 3;
  }
  const auto* begin = std::begin(kDecompIndex);
  const auto* end = std::end(kDecompIndex);
  const auto* it =
      std::lower_bound(begin, end, cp, [](const uint32_t(&row)[3], char32_t c) { return row[0] < c; });
  if (it == end || (*it)[0] != cp) {
    out[0] = cp;
    return 1;
  }
  const uint32_t offset = (*it)[1], length = (*it)[2];
  for (uint32_t i = 0; i < length; ++i) out[i] = kDecompPool[offset + i];
  return static_cast<int>(length);
}

const char* version() {
  return EMBERTEXT_UNICODE_VERSION;
}

}  // namespace embertext::unicode
