#include "embertext/bert.h"

#include <algorithm>
#include <memory>

#include "cache.h"
#include "files.h"
#include "string_map.h"
#include "unicode.h"
#include "utf8.h"

namespace embertext {

// Note [BERT pipeline]
// ~~~~~~~~~~~~~~~~~~~~
// Hugging Face's BertNormalizer rewrites the whole text, then BertPreTokenizer splits it:
//   1. clean: drop NUL, U+FFFD and control characters; whitespace becomes ' '
//   2. CJK: put spaces around every CJK ideograph
//   3. strip accents (default: when lower-casing): NFD, then drop Mn characters
//   4. lower-case, one character at a time (no final-sigma rule)
//   5. split at whitespace; every punctuation character is a word of its own
//   6. WordPiece each word: longest vocabulary match first, "##" on non-initial pieces; a word
//      longer than max_input_chars_per_word, or with an unmatchable rest, is one [UNK]
// We do all of it in one pass over the text without building the normalized string. That is
// exact because the characters that end words (whitespace, punctuation, CJK) are NFD starters
// whose class lower-casing keeps (the table generator checks both), so canonical reordering
// never moves a character across a word boundary: each word is normalized on its own.

struct BertTokenizer::Impl {
  BertOptions options;
  bool strip_accents = true;
  std::vector<std::string> vocab;
  StringMap<int32_t> whole;         // every token
  StringMap<int32_t> continuation;  // tokens with the prefix, keyed without it
  size_t max_whole_bytes = 0, max_continuation_bytes = 0;
  int32_t unk_id = -1;
  StringMap<int32_t> never_split;
  size_t never_split_min = SIZE_MAX, never_split_max = 0;
  mutable TokenCache cache{1 << 16};

  void wordpiece(std::string_view word, size_t nchars, std::vector<int32_t>& ids) const;
  void encode(std::string_view text, std::vector<int32_t>& ids) const;
};

namespace {

// The per-word state while a text is scanned.
struct WordBuffer {
  std::u32string chars;  // the word so far: NFD'd and reordered when stripping, not lower-cased
  size_t run_start = 0;  // first character of the trailing run of non-starters
};

}  // namespace

void BertTokenizer::Impl::wordpiece(std::string_view word, size_t nchars, std::vector<int32_t>& ids) const {
  if (nchars > options.max_input_chars_per_word) {
    ids.push_back(unk_id);
    return;
  }
  const uint64_t h = hash_bytes(word);
  if (cache.lookup(word, h, ids)) return;
  const size_t first = ids.size();
  size_t start = 0;
  const size_t n = word.size();
  while (start < n) {
    const bool initial = start == 0;
    const StringMap<int32_t>& map = initial ? whole : continuation;
    size_t end = std::min(n, start + (initial ? max_whole_bytes : max_continuation_bytes));
    while (end < n && (static_cast<unsigned char>(word[end]) & 0xC0) == 0x80) --end;  // a character boundary
    const int32_t* found = nullptr;
    while (end > start) {
      found = map.find(word.substr(start, end - start));
      if (found) break;
      do {
        --end;
      } while (end > start && (static_cast<unsigned char>(word[end]) & 0xC0) == 0x80);
    }
    if (!found) {
      ids.resize(first);
      ids.push_back(unk_id);
      break;
    }
    ids.push_back(*found);
    start = end;
  }
  cache.store(word, h, ids.data() + first, ids.size() - first);
}

void BertTokenizer::Impl::encode(std::string_view text, std::vector<int32_t>& ids) const {
  const bool clean = options.clean_text, cjk = options.handle_chinese_chars, lower = options.lower_case;
  const bool strip = strip_accents;
  thread_local WordBuffer word;
  thread_local std::string bytes;
  word.chars.clear();
  word.run_start = 0;

  // Lower-cases, drops marks, and WordPieces the word collected so far.
  auto flush = [&] {
    if (word.chars.empty()) return;
    bytes.clear();
    size_t nchars = 0;
    for (char32_t c : word.chars) {
      if (c < 0x80) {
        bytes.push_back(static_cast<char>(lower && c >= 'A' && c <= 'Z' ? c + 32 : c));
        ++nchars;
        continue;
      }
      const uint16_t f = unicode::flags(c);
      if (strip && (f & unicode::kMarkNonspacing)) continue;
      if (lower && (f & unicode::kHasLower)) {
        if (c == 0x130) {  // the one character whose lowercase is two: i + combining dot above
          bytes.push_back('i');
          utf8::append(bytes, 0x307);
          nchars += 2;
          continue;
        }
        c = unicode::simple_lower(c);
      }
      utf8::append(bytes, c);
      ++nchars;
    }
    word.chars.clear();
    word.run_start = 0;
    if (!bytes.empty()) wordpiece(bytes, nchars, ids);
  };

  // Adds one normalized (decomposed) character: a word boundary, a punctuation word, or part
  // of the current word.
  auto add = [&](char32_t c, uint16_t f) {
    if (f & unicode::kWhitespace) {
      flush();
      return;
    }
    if (f & unicode::kPunct) {
      flush();
      word.chars.push_back(c);
      flush();
      return;
    }
    if (strip && (f & unicode::kNonstarter)) {
      // Canonical ordering: a non-starter moves before the non-starters of higher class.
      const uint8_t cc = unicode::combining_class(c);
      size_t j = word.chars.size();
      while (j > word.run_start && unicode::combining_class(word.chars[j - 1]) > cc) --j;
      word.chars.insert(word.chars.begin() + static_cast<std::ptrdiff_t>(j), c);
      return;
    }
    word.chars.push_back(c);
    word.run_start = word.chars.size();
  };

  const size_t n = text.size();
  size_t i = 0;
  bool at_raw_word_start = true;
  while (i < n) {
    const auto b = static_cast<unsigned char>(text[i]);
    char32_t cp;
    size_t len = 1;
    if (b < 0x80) {
      cp = b;
    } else {
      len = utf8::decode_or_throw(text, i, cp);
    }
    uint16_t f = unicode::flags(cp);

    if (never_split.size() != 0 && at_raw_word_start && !(f & unicode::kWhitespace)) {
      // A whitespace-delimited word of the raw text listed in never_split is kept verbatim.
      size_t j = i;
      while (j < n) {
        char32_t c2;
        size_t l2 = static_cast<unsigned char>(text[j]) < 0x80 ? (c2 = static_cast<unsigned char>(text[j]), 1)
                                                               : utf8::decode_or_throw(text, j, c2);
        if (unicode::flags(c2) & unicode::kWhitespace) break;
        j += l2;
      }
      const std::string_view raw = text.substr(i, j - i);
      if (raw.size() >= never_split_min && raw.size() <= never_split_max && never_split.find(raw)) {
        flush();
        size_t nchars = 0;
        for (unsigned char c : raw) nchars += (c & 0xC0) != 0x80;
        wordpiece(raw, nchars, ids);
        i = j;
        continue;
      }
    }
    at_raw_word_start = (f & unicode::kWhitespace) != 0;
    i += len;

    if (clean) {
      if (cp == 0 || cp == 0xFFFD || (f & unicode::kControl)) continue;
      if (f & unicode::kWhitespace) {
        flush();
        continue;
      }
    }
    if (cjk && (f & unicode::kCjk)) {
      flush();
      if (strip && (f & unicode::kHasDecomp)) {
        char32_t d[unicode::kMaxDecomposition];
        const int nd = unicode::decompose(cp, d);
        for (int k = 0; k < nd; ++k) add(d[k], unicode::flags(d[k]));
      } else {
        word.chars.push_back(cp);
      }
      flush();
      continue;
    }
    if (strip && (f & unicode::kHasDecomp)) {
      char32_t d[unicode::kMaxDecomposition];
      const int nd = unicode::decompose(cp, d);
      for (int k = 0; k < nd; ++k) add(d[k], unicode::flags(d[k]));
    } else {
      add(cp, f);
    }
  }
  flush();
}

BertTokenizer::BertTokenizer(std::vector<std::string> vocab, BertOptions options)
    : impl_(std::make_shared<Impl>()) {
  Impl& m = *impl_;
  m.options = std::move(options);
  m.strip_accents = m.options.strip_accents.value_or(m.options.lower_case);
  if (vocab.empty()) throw FormatError("the WordPiece vocabulary is empty");
  if (vocab.size() > 0x7FFFFFFF) throw FormatError("the WordPiece vocabulary has more than 2^31 - 1 tokens");
  if (m.options.continuing_subword_prefix.empty())
    throw ArgumentError("continuing_subword_prefix must not be empty");
  const std::string& prefix = m.options.continuing_subword_prefix;
  for (size_t id = 0; id < vocab.size(); ++id) {
    const std::string& token = vocab[id];
    if (token.empty()) throw FormatError("vocabulary token " + std::to_string(id) + " is empty");
    try {
      utf8::validate(token);
    } catch (const Utf8Error& e) {
      throw FormatError("vocabulary token " + std::to_string(id) + " is not valid UTF-8 (" + e.reason() +
                        ")");
    }
    auto [slot, fresh] = m.whole.insert(token, static_cast<int32_t>(id));
    if (!fresh)
      throw FormatError("vocabulary token " + quoted(token) + " appears twice (IDs " + std::to_string(*slot) +
                        " and " + std::to_string(id) + ")");
    m.max_whole_bytes = std::max(m.max_whole_bytes, token.size());
    if (token.size() > prefix.size() && token.compare(0, prefix.size(), prefix) == 0) {
      std::string_view rest = std::string_view(token).substr(prefix.size());
      m.continuation.insert(rest, static_cast<int32_t>(id));
      m.max_continuation_bytes = std::max(m.max_continuation_bytes, rest.size());
    }
  }
  const int32_t* unk = m.whole.find(m.options.unk_token);
  if (!unk) throw FormatError("the vocabulary has no unknown token " + quoted(m.options.unk_token));
  m.unk_id = *unk;
  for (const std::string& token : m.options.never_split) {
    if (token.empty()) throw ArgumentError("never_split tokens must not be empty");
    utf8::validate(token);
    m.never_split.insert(token, 0);
    m.never_split_min = std::min(m.never_split_min, token.size());
    m.never_split_max = std::max(m.never_split_max, token.size());
  }
  m.vocab = std::move(vocab);
}

std::vector<std::string> parse_vocab(std::string_view data, const std::string& name) {
  std::vector<std::string> tokens;
  size_t line_start = 0, line_no = 0, first_empty = 0;
  if (data.size() >= 3 && data.substr(0, 3) == "\xEF\xBB\xBF") line_start = 3;  // a UTF-8 BOM
  while (line_start < data.size()) {
    size_t nl = data.find('\n', line_start);
    if (nl == std::string_view::npos) nl = data.size();
    ++line_no;
    std::string_view line = data.substr(line_start, nl - line_start);
    line_start = nl + 1;
    try {
      utf8::validate(line);
    } catch (const Utf8Error& e) {
      throw FormatError(name + " line " + std::to_string(line_no) + " is not valid UTF-8 (" + e.reason() +
                        " at byte " + std::to_string(e.offset()) + " of the line)");
    }
    // Trailing whitespace (a "\r" from Windows line ends, stray spaces) is not part of a token.
    while (!line.empty()) {
      size_t k = line.size() - 1;
      while (k > 0 && (static_cast<unsigned char>(line[k]) & 0xC0) == 0x80) --k;
      char32_t cp;
      utf8::decode_or_throw(line, k, cp);
      if (!(unicode::flags(cp) & unicode::kWhitespace)) break;
      line = line.substr(0, k);
    }
    if (line.empty()) {
      if (!first_empty) first_empty = line_no;
      continue;
    }
    if (first_empty)
      throw FormatError(name + " line " + std::to_string(first_empty) +
                        " is empty: every line must hold one token");
    tokens.emplace_back(line);
  }
  if (tokens.empty()) throw FormatError(name + " has no tokens");
  return tokens;
}

std::vector<std::string> read_vocab_file(const std::string& path) {
  return parse_vocab(read_file(path, "vocab file"), "vocab file '" + path + "'");
}

BertTokenizer BertTokenizer::from_file(const std::string& vocab_path, BertOptions options) {
  std::vector<std::string> vocab = read_vocab_file(vocab_path);
  try {
    return BertTokenizer(std::move(vocab), std::move(options));
  } catch (const FormatError& e) {
    throw FormatError("vocab file '" + vocab_path + "': " + e.what());
  }
}

BertTokenizer::~BertTokenizer() = default;

int64_t BertTokenizer::vocab_size() const {
  return static_cast<int64_t>(impl_->vocab.size());
}

std::string BertTokenizer::id_to_token(int64_t id) const {
  if (id < 0 || id >= vocab_size())
    throw ArgumentError("token ID " + std::to_string(id) + " is outside the vocabulary [0, " +
                        std::to_string(vocab_size()) + ")");
  return impl_->vocab[static_cast<size_t>(id)];
}

std::optional<int64_t> BertTokenizer::token_to_id(std::string_view token) const {
  const int32_t* id = impl_->whole.find(token);
  if (!id) return std::nullopt;
  return *id;
}

void BertTokenizer::encode_into(std::string_view text, std::vector<int32_t>& ids) const {
  impl_->encode(text, ids);
}

const BertOptions& BertTokenizer::options() const {
  return impl_->options;
}
const std::vector<std::string>& BertTokenizer::vocab() const {
  return impl_->vocab;
}

}  // namespace embertext
