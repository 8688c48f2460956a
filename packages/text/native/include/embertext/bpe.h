#pragma once
// Byte-level BPE tokenizers: GPT2BPETokenizer (GPT-2's regex pre-tokenizer, byte-to-unicode
// alphabet, merges by rank; the same IDs as Hugging Face tokenizers' ByteLevel + BPE) and
// CLIPTokenizer (CLIP's pre-tokenizer, lower-cased text, "</w>" marking each word's end).
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "embertext/tokenizer.h"

namespace embertext {

using Encoder = std::vector<std::pair<std::string, int64_t>>;     // token -> ID (encoder.json)
using Merges = std::vector<std::pair<std::string, std::string>>;  // in rank order (vocab.bpe)

// Reads encoder.json: one JSON object mapping tokens to non-negative integer IDs.
EMBERTEXT_API Encoder read_encoder_json(const std::string& path);
EMBERTEXT_API Encoder parse_encoder_json(std::string_view json, const std::string& name = "encoder.json");
// Reads vocab.bpe / merges.txt: an optional "#version" first line, then one "left right" pair
// per line. At most max_merges pairs are read when it is set.
EMBERTEXT_API Merges read_merges_file(const std::string& path,
                                      std::optional<size_t> max_merges = std::nullopt);
EMBERTEXT_API Merges parse_merges(std::string_view text, const std::string& name = "vocab.bpe",
                                  std::optional<size_t> max_merges = std::nullopt);

// The GPT-2 byte alphabet: the printable character standing for each byte value.
EMBERTEXT_API const std::vector<std::string>& byte_to_unicode();

class EMBERTEXT_API GPT2BPETokenizer final : public Tokenizer {
 public:
  // FormatError when a merge's parts or result are not in the encoder, an ID repeats, or one of
  // the 256 byte symbols is missing.
  GPT2BPETokenizer(const Encoder& encoder, const Merges& merges);
  static GPT2BPETokenizer from_files(const std::string& encoder_json_path, const std::string& vocab_bpe_path);
  ~GPT2BPETokenizer() override;

  // Registers tokens matched verbatim in the text (leftmost, longest first) and never split; a
  // token new to the vocabulary gets the next free ID. Returns how many were new.
  size_t add_special_tokens(const std::vector<std::string>& tokens);
  std::vector<std::string> special_tokens() const;

  // The text the IDs stand for; bytes that are not valid UTF-8 become U+FFFD.
  std::string decode(const std::vector<int64_t>& ids) const;

  int64_t vocab_size() const override;
  std::string id_to_token(int64_t id) const override;
  std::optional<int64_t> token_to_id(std::string_view token) const override;
  void encode_into(std::string_view text, std::vector<int32_t>& ids) const override;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

class EMBERTEXT_API CLIPTokenizer final : public Tokenizer {
 public:
  // Without an encoder, the vocabulary is built as CLIP's: the 256 byte symbols, the same with
  // "</w>", one token per merge, then <|startoftext|> and <|endoftext|>. With one, only the
  // first encoder.size() - 514 merges are used.
  CLIPTokenizer(const Merges& merges, const std::optional<Encoder>& encoder = std::nullopt);
  static CLIPTokenizer from_files(const std::string& merges_path,
                                  const std::optional<std::string>& encoder_json_path = std::nullopt,
                                  std::optional<size_t> num_merges = std::nullopt);
  ~CLIPTokenizer() override;

  std::string decode(const std::vector<int64_t>& ids) const;

  int64_t vocab_size() const override;
  std::string id_to_token(int64_t id) const override;
  std::optional<int64_t> token_to_id(std::string_view token) const override;
  void encode_into(std::string_view text, std::vector<int32_t>& ids) const override;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace embertext
