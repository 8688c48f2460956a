#include "embertext/bpe.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cstring>
#include <memory>
#include <queue>

#include "cache.h"
#include "files.h"
#include "string_map.h"
#include "unicode.h"
#include "utf8.h"

namespace embertext {

// ---------------------------------------------------------------------------------------------
// Files

Merges parse_merges(std::string_view text, const std::string& name, std::optional<size_t> max_merges) {
  Merges merges;
  size_t start = 0, line_no = 0, first_empty = 0;
  while (start < text.size() && (!max_merges || merges.size() < *max_merges)) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    ++line_no;
    std::string_view line = text.substr(start, nl - start);
    start = nl + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.rfind("#version", 0) == 0) continue;  // the header GPT-2's and CLIP's files carry
    try {
      utf8::validate(line);
    } catch (const Utf8Error& e) {
      throw FormatError(name + " line " + std::to_string(line_no) + " is not valid UTF-8 (" + e.reason() +
                        ")");
    }
    if (line.empty()) {
      if (!first_empty) first_empty = line_no;
      continue;
    }
    if (first_empty)
      throw FormatError(name + " line " + std::to_string(first_empty) +
                        " is empty: every line must hold one merge");
    const size_t space = line.find(' ');
    if (space == std::string_view::npos || space == 0 || space + 1 == line.size() ||
        line.find(' ', space + 1) != std::string_view::npos)
      throw FormatError(name + " line " + std::to_string(line_no) +
                        ": expected two tokens separated by one space, got " + quoted(line));
    merges.emplace_back(std::string(line.substr(0, space)), std::string(line.substr(space + 1)));
  }
  return merges;
}

Merges read_merges_file(const std::string& path, std::optional<size_t> max_merges) {
  return parse_merges(read_file(path, "merges file"), "merges file '" + path + "'", max_merges);
}

namespace {
// The bytes GPT-2's alphabet keeps as themselves: printable Latin-1 except space and soft hyphen.
bool printable_byte(int b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}
}  // namespace

const std::vector<std::string>& byte_to_unicode() {
  // GPT-2's alphabet: printable bytes stand for themselves, the other 68 for U+0100 onwards,
  // so that no token holds whitespace or control characters.
  static const std::vector<std::string> table = [] {
    std::vector<std::string> t(256);
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      utf8::append(t[b], printable_byte(b) ? static_cast<char32_t>(b) : next++);
    }
    return t;
  }();
  return table;
}

namespace {

// ---------------------------------------------------------------------------------------------
// The BPE engine, shared by GPT-2 and CLIP

// (left ID, right ID) -> rank << 32 | merged ID; open addressing on 64-bit keys.
class PairMap {
 public:
  static constexpr uint64_t kNone = ~uint64_t{0};

  void reserve(size_t n) {
    size_t cap = 16;
    while (cap < n * 2) cap <<= 1;
    keys_.assign(cap, kNone);
    values_.assign(cap, kNone);
    mask_ = cap - 1;
  }

  static uint64_t key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(a) << 32) | static_cast<uint32_t>(b);
  }
  static size_t slot(uint64_t k) { return static_cast<size_t>((k * 0x9E3779B97F4A7C15ull) >> 20); }

  // Sets k's value; a key inserted again takes the new value.
  void assign(uint64_t k, uint64_t v) {
    for (size_t i = slot(k) & mask_;; i = (i + 1) & mask_) {
      if (keys_[i] == kNone || keys_[i] == k) {
        keys_[i] = k;
        values_[i] = v;
        return;
      }
    }
  }

  uint64_t find(int32_t a, int32_t b) const {
    const uint64_t k = key(a, b);
    for (size_t i = slot(k) & mask_;; i = (i + 1) & mask_) {
      if (keys_[i] == k) return values_[i];
      if (keys_[i] == kNone) return kNone;
    }
  }

 private:
  std::vector<uint64_t> keys_, values_;
  size_t mask_ = 0;
};

struct BpeModel {
  std::vector<std::string> tokens;  // by ID; empty where no token has the ID
  StringMap<int32_t> ids;
  PairMap merges;
  std::array<int32_t, 256> byte_id{};
  std::array<int32_t, 256> byte_eow_id{};  // byte symbol + "</w>" (CLIP)
  bool end_of_word = false;

  void add_token(const std::string& token, int64_t id, bool last_wins) {
    if (id < 0 || id > INT32_MAX) throw FormatError("token ID " + std::to_string(id) + " is out of range");
    if (token.empty()) throw FormatError("the vocabulary has an empty token (ID " + std::to_string(id) + ")");
    auto [slot, fresh] = ids.insert(token, static_cast<int32_t>(id));
    if (!fresh) {
      if (!last_wins)
        throw FormatError("token " + quoted(token) + " appears twice (IDs " + std::to_string(*slot) +
                          " and " + std::to_string(id) + ")");
      tokens[static_cast<size_t>(*slot)].clear();
      *slot = static_cast<int32_t>(id);
    }
    if (static_cast<size_t>(id) >= tokens.size()) tokens.resize(static_cast<size_t>(id) + 1);
    if (!tokens[static_cast<size_t>(id)].empty())
      throw FormatError("token ID " + std::to_string(id) + " is used by both " + quoted(tokens[id]) +
                        " and " + quoted(token));
    tokens[static_cast<size_t>(id)] = token;
  }

  int32_t require(const std::string& token, const std::string& why) const {
    const int32_t* id = ids.find(token);
    if (!id) throw FormatError(why + ": token " + quoted(token) + " is not in the vocabulary");
    return *id;
  }

  void set_merges(const Merges& merges) {
    this->merges.reserve(merges.size());
    for (size_t rank = 0; rank < merges.size(); ++rank) {
      const auto& [a, b] = merges[rank];
      const std::string where =
          "merge " + std::to_string(rank + 1) + " (" + quoted(a) + " " + quoted(b) + ")";
      const int32_t ia = require(a, where), ib = require(b, where), merged = require(a + b, where);
      // A repeated pair takes its last rank, as in Hugging Face's and TorchText's dictionaries.
      this->merges.assign(PairMap::key(ia, ib),
                          (static_cast<uint64_t>(rank) << 32) | static_cast<uint32_t>(merged));
    }
  }

  void set_bytes(bool eow) {
    end_of_word = eow;
    const auto& alphabet = byte_to_unicode();
    for (int b = 0; b < 256; ++b) {
      byte_id[b] = require(alphabet[b], "byte-level BPE needs all 256 byte symbols");
      if (eow)
        byte_eow_id[b] = require(alphabet[b] + "</w>", "CLIP's BPE needs all 256 end-of-word byte symbols");
    }
  }

  // Merges the symbols of one word in place: always the pair of lowest rank, leftmost first
  // (Note [merge order]).
  void merge(std::vector<int32_t>& s) const;
  void merge_long(std::vector<int32_t>& s) const;

  std::string token(int64_t id) const {
    if (id < 0 || static_cast<size_t>(id) >= tokens.size() || tokens[static_cast<size_t>(id)].empty())
      throw ArgumentError("token ID " + std::to_string(id) + " is not in the vocabulary");
    return tokens[static_cast<size_t>(id)];
  }
};

// Note [merge order]
// ~~~~~~~~~~~~~~~~~~
// GPT-2's encoder merges every occurrence of the best-ranked pair, left to right, then looks
// again; Hugging Face pops (rank, position) from a heap, one merge at a time. For merges files
// where a token's parts rank before the token's own merges (every trained file) both give the
// same result, and it is what "lowest rank, leftmost" gives one merge at a time: that is the
// rule here. Short words scan the pairs (fast for the usual 2-10 symbols); long ones use a heap
// so a 100 KB run of digits stays O(n log n).
constexpr size_t kLinearMergeLimit = 64;

void BpeModel::merge(std::vector<int32_t>& s) const {
  if (s.size() < 2) return;
  if (s.size() > kLinearMergeLimit) {
    merge_long(s);
    return;
  }
  uint64_t best[kLinearMergeLimit];
  size_t n = s.size();
  for (size_t k = 0; k + 1 < n; ++k) best[k] = merges.find(s[k], s[k + 1]);
  while (n > 1) {
    size_t at = 0;
    uint64_t min = best[0];
    for (size_t k = 1; k + 1 < n; ++k) {
      if (best[k] < min) {
        min = best[k];
        at = k;
      }
    }
    if (min == PairMap::kNone) break;
    s[at] = static_cast<int32_t>(min & 0xFFFFFFFFu);
    for (size_t k = at + 1; k + 1 < n; ++k) s[k] = s[k + 1];
    for (size_t k = at + 1; k + 2 < n; ++k) best[k] = best[k + 1];
    --n;
    if (at > 0) best[at - 1] = merges.find(s[at - 1], s[at]);
    if (at + 1 < n) best[at] = merges.find(s[at], s[at + 1]);
  }
  s.resize(n);
}

void BpeModel::merge_long(std::vector<int32_t>& s) const {
  const size_t n = s.size();
  std::vector<int32_t> prev(n), next(n);  // a doubly linked list over the original positions
  std::vector<bool> alive(n, true);
  for (size_t k = 0; k < n; ++k) {
    prev[k] = static_cast<int32_t>(k) - 1;
    next[k] = k + 1 < n ? static_cast<int32_t>(k + 1) : -1;
  }
  using Entry = std::pair<uint64_t, int32_t>;  // (rank << 32 | merged ID, left position)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap;
  auto push = [&](int32_t left) {
    if (left < 0 || next[left] < 0) return;
    const uint64_t v = merges.find(s[left], s[next[left]]);
    if (v != PairMap::kNone) heap.push({v, left});
  };
  for (size_t k = 0; k + 1 < n; ++k) push(static_cast<int32_t>(k));
  while (!heap.empty()) {
    const auto [v, left] = heap.top();
    heap.pop();
    // Skip entries whose pair has changed since they were pushed.
    if (!alive[left] || next[left] < 0 || merges.find(s[left], s[next[left]]) != v) continue;
    const int32_t right = next[left];
    s[left] = static_cast<int32_t>(v & 0xFFFFFFFFu);
    alive[right] = false;
    next[left] = next[right];
    if (next[right] >= 0) prev[next[right]] = left;
    push(prev[left]);
    push(left);
  }
  size_t out = 0;
  for (int32_t k = 0; k >= 0; k = next[k]) s[out++] = s[k];
  s.resize(out);
}

struct Specials {
  StringMap<int32_t> ids;
  std::vector<std::string> by_length;  // longest first, for leftmost-longest matching
  std::array<bool, 256> first_byte{};

  void add(const std::string& token, int32_t id) {
    if (!ids.insert(token, id).second) return;
    by_length.push_back(token);
    std::stable_sort(by_length.begin(), by_length.end(),
                     [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
    first_byte[static_cast<unsigned char>(token[0])] = true;
  }

  // The special token starting at text[i], if any: its length and ID.
  std::pair<size_t, int32_t> match(std::string_view text, size_t i) const {
    if (!first_byte[static_cast<unsigned char>(text[i])]) return {0, -1};
    for (const std::string& t : by_length) {
      if (text.size() - i >= t.size() && std::memcmp(text.data() + i, t.data(), t.size()) == 0)
        return {t.size(), *ids.find(t)};
    }
    return {0, -1};
  }
};

inline bool is_continuation(char c) {
  return (static_cast<unsigned char>(c) & 0xC0) == 0x80;
}

// Decodes text[i] (validating it); ASCII without a call.
inline size_t char_at(std::string_view text, size_t i, char32_t& cp) {
  const auto b = static_cast<unsigned char>(text[i]);
  if (b < 0x80) {
    cp = b;
    return 1;
  }
  return utf8::decode_or_throw(text, i, cp);
}

enum Class { kSpace, kLetter, kNumber, kOther };

inline Class class_of(char32_t cp) {
  const uint16_t f = unicode::flags(cp);
  if (f & unicode::kWhitespace) return kSpace;
  if (f & unicode::kLetter) return kLetter;
  if (f & unicode::kNumber) return kNumber;
  return kOther;
}

// End of the run of characters of class c starting at text[i].
inline size_t run_end(std::string_view text, size_t i, Class c) {
  while (i < text.size()) {
    char32_t cp;
    const size_t len = char_at(text, i, cp);
    if (class_of(cp) != c) break;
    i += len;
  }
  return i;
}

// The contraction ('s 't 're 've 'm 'll 'd) at text[i] (an apostrophe), or 0.
inline size_t contraction(std::string_view text, size_t i, bool ignore_case) {
  auto at = [&](size_t k) -> char {
    if (i + k >= text.size()) return 0;
    char c = text[i + k];
    return ignore_case && c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c;
  };
  const char a = at(1);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  const char b = at(2);
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

// Note [GPT-2 pre-tokenizer]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// GPT-2 splits text with the regex
//     's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// Its alternatives cover every character, so a match starts where the last one ended; here
// each alternative is the branch of the same name. The lookahead makes a run of whitespace
// before a word give up its last character, which then starts the next match (" word").
template <typename F>
void gpt2_pretokenize(std::string_view text, F&& emit) {
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    char32_t cp;
    const size_t len = char_at(text, i, cp);
    if (cp == '\'') {
      if (size_t c = contraction(text, i, false)) {
        emit(i, i + c);
        i += c;
        continue;
      }
    }
    Class cls = class_of(cp);
    size_t start = i, body = i;
    if (cp == ' ' && i + 1 < n) {
      char32_t next;
      char_at(text, i + 1, next);
      const Class nc = class_of(next);
      if (nc != kSpace) {
        body = i + 1;  // " ?X+": the space joins the run that follows
        cls = nc;
      }
    }
    if (cls != kSpace) {
      const size_t end = run_end(text, body, cls);
      emit(start, end);
      i = end;
      continue;
    }
    const size_t end = run_end(text, i, kSpace);
    if (end == n) {
      emit(i, n);
      i = n;
      continue;
    }
    // \s+(?!\S): all but the run's last character, if that leaves any; else \s+ takes one.
    size_t last = end - 1;
    while (is_continuation(text[last])) --last;
    if (last > i) {
      emit(i, last);
      i = last;
    } else {
      emit(i, end);
      i = end;
    }
    (void)len;
  }
}

// CLIP's regex (case-insensitive): <|startoftext|>|<|endoftext|>|'s|'t|'re|'ve|'m|'ll|'d|
// [\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+ ; whitespace matches nothing and is skipped.
template <typename F>
void clip_pretokenize(std::string_view text, F&& emit) {
  static constexpr std::string_view kSot = "<|startoftext|>", kEot = "<|endoftext|>";
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    char32_t cp;
    const size_t len = char_at(text, i, cp);
    if (cp == '<') {
      if (text.compare(i, kSot.size(), kSot) == 0) {
        emit(i, i + kSot.size(), true);
        i += kSot.size();
        continue;
      }
      if (text.compare(i, kEot.size(), kEot) == 0) {
        emit(i, i + kEot.size(), true);
        i += kEot.size();
        continue;
      }
    }
    if (cp == '\'') {
      if (size_t c = contraction(text, i, true)) {
        emit(i, i + c, false);
        i += c;
        continue;
      }
    }
    const Class cls = class_of(cp);
    if (cls == kSpace) {
      i += len;
    } else if (cls == kNumber) {
      emit(i, i + len, false);
      i += len;
    } else {
      const size_t end = run_end(text, i, cls);
      emit(i, end, false);
      i = end;
    }
  }
}

// Bytes back to text, with U+FFFD for each maximal invalid subpart (as Python's "replace").
std::string bytes_to_text(std::string_view bytes) {
  std::string out;
  size_t i = 0;
  while (i < bytes.size()) {
    char32_t cp;
    const char* reason = nullptr;
    const size_t n = utf8::decode(bytes, i, cp, &reason);
    if (n) {
      out.append(bytes.data() + i, n);
      i += n;
      continue;
    }
    const auto b0 = static_cast<unsigned char>(bytes[i]);
    size_t need = b0 >= 0xC2 && b0 <= 0xDF   ? 2
                  : b0 >= 0xE0 && b0 <= 0xEF ? 3
                  : b0 >= 0xF0 && b0 <= 0xF4 ? 4
                                             : 1;
    size_t k = 1;
    for (; k < need && i + k < bytes.size(); ++k) {
      const auto b = static_cast<unsigned char>(bytes[i + k]);
      unsigned char lo = 0x80, hi = 0xBF;
      if (k == 1) {
        if (b0 == 0xE0) lo = 0xA0;
        if (b0 == 0xED) hi = 0x9F;
        if (b0 == 0xF0) lo = 0x90;
        if (b0 == 0xF4) hi = 0x8F;
      }
      if (b < lo || b > hi) break;
    }
    out += "\xEF\xBF\xBD";
    i += k;
  }
  return out;
}

const std::array<int, 65536>& unicode_to_byte_bmp() {
  static const auto table = [] {
    auto t = std::make_unique<std::array<int, 65536>>();
    t->fill(-1);
    const auto& alphabet = byte_to_unicode();
    for (int b = 0; b < 256; ++b) {
      char32_t cp;
      utf8::decode_or_throw(alphabet[b], 0, cp);
      (*t)[cp] = b;
    }
    return t;
  }();
  return *table;
}

// The bytes a byte-level token's characters stand for; characters outside the alphabet keep
// their own UTF-8.
void append_token_bytes(std::string_view token, std::string& out) {
  const auto& inverse = unicode_to_byte_bmp();
  size_t i = 0;
  while (i < token.size()) {
    char32_t cp;
    const size_t n = utf8::decode_or_throw(token, i, cp);
    if (cp < 65536 && inverse[cp] >= 0) {
      out.push_back(static_cast<char>(inverse[cp]));
    } else {
      out.append(token.data() + i, n);
    }
    i += n;
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// GPT2BPETokenizer

struct GPT2BPETokenizer::Impl {
  BpeModel model;
  Specials specials;
  mutable TokenCache cache{1 << 16};

  void encode_piece(std::string_view text, std::vector<int32_t>& ids) const {
    thread_local std::vector<int32_t> symbols;
    gpt2_pretokenize(text, [&](size_t a, size_t b) {
      const std::string_view word = text.substr(a, b - a);
      const uint64_t h = hash_bytes(word);
      if (cache.lookup(word, h, ids)) return;
      symbols.clear();
      for (unsigned char c : word) symbols.push_back(model.byte_id[c]);
      model.merge(symbols);
      ids.insert(ids.end(), symbols.begin(), symbols.end());
      cache.store(word, h, symbols.data(), symbols.size());
    });
  }
};

GPT2BPETokenizer::GPT2BPETokenizer(const Encoder& encoder, const Merges& merges)
    : impl_(std::make_shared<Impl>()) {
  BpeModel& m = impl_->model;
  for (const auto& [token, id] : encoder) {
    utf8::validate(token);
    m.add_token(token, id, false);
  }
  m.set_bytes(false);
  m.set_merges(merges);
}

GPT2BPETokenizer GPT2BPETokenizer::from_files(const std::string& encoder_json_path,
                                              const std::string& vocab_bpe_path) {
  Encoder encoder = read_encoder_json(encoder_json_path);
  Merges merges = read_merges_file(vocab_bpe_path);
  try {
    return GPT2BPETokenizer(encoder, merges);
  } catch (const FormatError& e) {
    throw FormatError("'" + encoder_json_path + "' with '" + vocab_bpe_path + "': " + e.what());
  }
}

GPT2BPETokenizer::~GPT2BPETokenizer() = default;

size_t GPT2BPETokenizer::add_special_tokens(const std::vector<std::string>& tokens) {
  // Copy on write: encoders that share this state (copies of this object) keep theirs.
  auto next = std::make_shared<Impl>();
  next->model = impl_->model;
  next->specials = impl_->specials;
  size_t added = 0;
  for (const std::string& token : tokens) {
    if (token.empty()) throw ArgumentError("special tokens must not be empty");
    utf8::validate(token);
    const int32_t* known = next->model.ids.find(token);
    int32_t id;
    if (known) {
      id = *known;
    } else {
      id = static_cast<int32_t>(next->model.tokens.size());
      next->model.add_token(token, id, false);
      ++added;
    }
    next->specials.add(token, id);
  }
  impl_ = std::move(next);
  return added;
}

std::vector<std::string> GPT2BPETokenizer::special_tokens() const {
  std::vector<std::string> out;
  impl_->specials.ids.for_each([&](std::string_view t, int32_t) { out.emplace_back(t); });
  std::sort(out.begin(), out.end());
  return out;
}

void GPT2BPETokenizer::encode_into(std::string_view text, std::vector<int32_t>& ids) const {
  const Impl& m = *impl_;
  if (m.specials.ids.size() == 0) {
    m.encode_piece(text, ids);
    return;
  }
  size_t start = 0;
  for (size_t i = 0; i < text.size();) {
    const auto [len, id] = m.specials.match(text, i);
    if (len == 0) {
      ++i;
      continue;
    }
    // A special token's first byte is never a continuation byte, so text[start:i] stays whole
    // characters and is validated as it is encoded.
    m.encode_piece(text.substr(start, i - start), ids);
    ids.push_back(id);
    i += len;
    start = i;
  }
  m.encode_piece(text.substr(start), ids);
}

std::string GPT2BPETokenizer::decode(const std::vector<int64_t>& ids) const {
  std::string bytes;
  for (int64_t id : ids) {
    const std::string token = impl_->model.token(id);
    if (impl_->specials.ids.find(token)) {
      bytes += token;
    } else {
      append_token_bytes(token, bytes);
    }
  }
  return bytes_to_text(bytes);
}

int64_t GPT2BPETokenizer::vocab_size() const {
  return static_cast<int64_t>(impl_->model.tokens.size());
}
std::string GPT2BPETokenizer::id_to_token(int64_t id) const {
  return impl_->model.token(id);
}
std::optional<int64_t> GPT2BPETokenizer::token_to_id(std::string_view token) const {
  const int32_t* id = impl_->model.ids.find(token);
  if (!id) return std::nullopt;
  return *id;
}

// ---------------------------------------------------------------------------------------------
// CLIPTokenizer

struct CLIPTokenizer::Impl {
  BpeModel model;
  int32_t sot = -1, eot = -1;
  mutable TokenCache cache{1 << 16};
};

CLIPTokenizer::CLIPTokenizer(const Merges& merges, const std::optional<Encoder>& encoder)
    : impl_(std::make_shared<Impl>()) {
  BpeModel& m = impl_->model;
  Merges used = merges;
  if (encoder) {
    for (const auto& [token, id] : *encoder) {
      utf8::validate(token);
      m.add_token(token, id, false);
    }
    // CLIP's encoder holds 2 * 256 byte symbols, one token per merge, and 2 special tokens.
    const size_t n = encoder->size() > 514 ? encoder->size() - 514 : 0;
    if (used.size() > n) used.resize(n);
  } else {
    // The byte symbols in CLIP's order: the printable bytes first, then the others.
    const auto& alphabet = byte_to_unicode();
    std::vector<int> order;
    for (int pass = 0; pass < 2; ++pass) {
      for (int b = 0; b < 256; ++b)
        if (printable_byte(b) == (pass == 0)) order.push_back(b);
    }
    int64_t id = 0;
    for (int b : order) m.add_token(alphabet[b], id++, true);
    for (int b : order) m.add_token(alphabet[b] + "</w>", id++, true);
    for (const auto& [a, b] : used) m.add_token(a + b, id++, true);
    m.add_token("<|startoftext|>", id++, true);
    m.add_token("<|endoftext|>", id++, true);
  }
  m.set_bytes(true);
  m.set_merges(used);
  impl_->sot = m.require("<|startoftext|>", "CLIP's vocabulary");
  impl_->eot = m.require("<|endoftext|>", "CLIP's vocabulary");
}

CLIPTokenizer CLIPTokenizer::from_files(const std::string& merges_path,
                                        const std::optional<std::string>& encoder_json_path,
                                        std::optional<size_t> num_merges) {
  std::optional<Encoder> encoder;
  if (encoder_json_path) encoder = read_encoder_json(*encoder_json_path);
  Merges merges = read_merges_file(merges_path, encoder ? std::nullopt : num_merges);
  try {
    return CLIPTokenizer(merges, encoder);
  } catch (const FormatError& e) {
    throw FormatError("'" + merges_path + "': " + e.what());
  }
}

CLIPTokenizer::~CLIPTokenizer() = default;

void CLIPTokenizer::encode_into(std::string_view text, std::vector<int32_t>& ids) const {
  const Impl& m = *impl_;
  // CLIP lower-cases the text first (character by character here).
  thread_local std::string lowered;
  thread_local std::vector<int32_t> symbols;
  lowered.clear();
  for (size_t i = 0; i < text.size();) {
    char32_t cp;
    i += char_at(text, i, cp);
    if (cp >= 'A' && cp <= 'Z') {
      lowered.push_back(static_cast<char>(cp + 32));
    } else if (cp >= 0x80 && (unicode::flags(cp) & unicode::kHasLower)) {
      if (cp == 0x130) {
        lowered.push_back('i');
        utf8::append(lowered, 0x307);
      } else {
        utf8::append(lowered, unicode::simple_lower(cp));
      }
    } else {
      utf8::append(lowered, cp);
    }
  }
  const std::string_view s = lowered;
  clip_pretokenize(s, [&](size_t a, size_t b, bool special) {
    const std::string_view word = s.substr(a, b - a);
    if (special) {
      ids.push_back(word.size() == 15 ? m.sot : m.eot);
      return;
    }
    const uint64_t h = hash_bytes(word);
    if (m.cache.lookup(word, h, ids)) return;
    symbols.clear();
    for (size_t k = 0; k + 1 < word.size(); ++k)
      symbols.push_back(m.model.byte_id[static_cast<unsigned char>(word[k])]);
    symbols.push_back(m.model.byte_eow_id[static_cast<unsigned char>(word.back())]);
    m.model.merge(symbols);
    ids.insert(ids.end(), symbols.begin(), symbols.end());
    m.cache.store(word, h, symbols.data(), symbols.size());
  });
}

std::string CLIPTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::string bytes;
  for (int64_t id : ids) append_token_bytes(impl_->model.token(id), bytes);
  std::string text = bytes_to_text(bytes);
  std::string out;
  for (size_t i = 0; i < text.size();) {
    if (text.compare(i, 4, "</w>") == 0) {
      out += ' ';
      i += 4;
    } else {
      out += text[i++];
    }
  }
  return out;
}

int64_t CLIPTokenizer::vocab_size() const {
  return static_cast<int64_t>(impl_->model.tokens.size());
}
std::string CLIPTokenizer::id_to_token(int64_t id) const {
  return impl_->model.token(id);
}
std::optional<int64_t> CLIPTokenizer::token_to_id(std::string_view token) const {
  const int32_t* id = impl_->model.ids.find(token);
  if (!id) return std::nullopt;
  return *id;
}

}  // namespace embertext
