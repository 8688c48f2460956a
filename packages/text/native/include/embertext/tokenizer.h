#pragma once
// Tokenizer: the interface every embertext tokenizer implements. Text goes in as UTF-8 bytes
// (std::string_view); invalid UTF-8 throws Utf8Error. A tokenizer is immutable once built, so
// one object may encode from many threads at once.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "embertext/error.h"
#include "embertext/export.h"

namespace embertext {

class EMBERTEXT_API Tokenizer {
 public:
  virtual ~Tokenizer();

  // Token IDs of one text.
  std::vector<int64_t> encode(std::string_view text) const;
  // Token strings of one text (the vocabulary's spelling of each ID).
  std::vector<std::string> tokenize(std::string_view text) const;

  // One result per text, on up to num_threads threads (<= 0: all hardware threads).
  std::vector<std::vector<int64_t>> encode_batch(const std::vector<std::string_view>& texts,
                                                 int num_threads = 0) const;
  std::vector<std::vector<std::string>> tokenize_batch(const std::vector<std::string_view>& texts,
                                                       int num_threads = 0) const;
  // The batch's IDs in one array: text i's are ids[offsets[i] : offsets[i + 1]]
  // (offsets has texts.size() + 1 entries).
  void encode_batch_flat(const std::vector<std::string_view>& texts, int num_threads,
                         std::vector<int32_t>& ids, std::vector<int64_t>& offsets) const;

  // One more than the largest ID.
  virtual int64_t vocab_size() const = 0;
  // The token an ID stands for; ArgumentError for an ID outside the vocabulary.
  virtual std::string id_to_token(int64_t id) const = 0;
  // The ID of a token, if the vocabulary has it.
  virtual std::optional<int64_t> token_to_id(std::string_view token) const = 0;

  // Appends the IDs of text to ids: what every public entry point calls.
  virtual void encode_into(std::string_view text, std::vector<int32_t>& ids) const = 0;
};

// The Unicode version of the character tables the tokenizers were built with.
EMBERTEXT_API const char* unicode_version();

// Throws Utf8Error at the first byte of text that is not valid UTF-8.
EMBERTEXT_API void validate_utf8(std::string_view text);

}  // namespace embertext
