#include "embertext/tokenizer.h"

#include "parallel.h"
#include "unicode.h"
#include "utf8.h"

namespace embertext {

Error::~Error() = default;
FormatError::~FormatError() = default;
FileError::~FileError() = default;
ArgumentError::~ArgumentError() = default;

Utf8Error::Utf8Error(size_t offset, size_t length, const std::string& reason)
    : Error("invalid UTF-8 at byte " + std::to_string(offset) + ": " + reason),
      offset_(offset),
      length_(length),
      reason_(reason) {}
Utf8Error::~Utf8Error() = default;

void utf8::validate(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    char32_t cp;
    i += decode_or_throw(s, i, cp);
  }
}

Tokenizer::~Tokenizer() = default;

const char* unicode_version() {
  return unicode::version();
}

void validate_utf8(std::string_view text) {
  utf8::validate(text);
}

std::vector<int64_t> Tokenizer::encode(std::string_view text) const {
  std::vector<int32_t> ids;
  encode_into(text, ids);
  return std::vector<int64_t>(ids.begin(), ids.end());
}

std::vector<std::string> Tokenizer::tokenize(std::string_view text) const {
  std::vector<int32_t> ids;
  encode_into(text, ids);
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) tokens.push_back(id_to_token(id));
  return tokens;
}

namespace {
// Below this many texts per thread, starting a thread costs more than it saves.
constexpr size_t kMinTextsPerThread = 8;
}  // namespace

std::vector<std::vector<int64_t>> Tokenizer::encode_batch(const std::vector<std::string_view>& texts,
                                                          int num_threads) const {
  std::vector<std::vector<int64_t>> out(texts.size());
  parallel_for(texts.size(), num_threads, kMinTextsPerThread, [&](size_t begin, size_t end) {
    std::vector<int32_t> ids;
    for (size_t i = begin; i < end; ++i) {
      ids.clear();
      encode_into(texts[i], ids);
      out[i].assign(ids.begin(), ids.end());
    }
  });
  return out;
}

std::vector<std::vector<std::string>> Tokenizer::tokenize_batch(const std::vector<std::string_view>& texts,
                                                                int num_threads) const {
  std::vector<std::vector<std::string>> out(texts.size());
  parallel_for(texts.size(), num_threads, kMinTextsPerThread, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) out[i] = tokenize(texts[i]);
  });
  return out;
}

void Tokenizer::encode_batch_flat(const std::vector<std::string_view>& texts, int num_threads,
                                  std::vector<int32_t>& ids, std::vector<int64_t>& offsets) const {
  // Each text's IDs go to their own vector first (threads cannot share one growing array),
  // then into one array in text order.
  std::vector<std::vector<int32_t>> parts(texts.size());
  parallel_for(texts.size(), num_threads, kMinTextsPerThread, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) encode_into(texts[i], parts[i]);
  });
  offsets.assign(texts.size() + 1, 0);
  for (size_t i = 0; i < parts.size(); ++i)
    offsets[i + 1] = offsets[i] + static_cast<int64_t>(parts[i].size());
  ids.clear();
  ids.reserve(static_cast<size_t>(offsets.back()));
  for (auto& p : parts) ids.insert(ids.end(), p.begin(), p.end());
}

}  // namespace embertext
