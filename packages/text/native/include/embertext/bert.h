#pragma once
// BertTokenizer: BERT's basic tokenizer (text cleanup, CJK splitting, accent stripping,
// lower-casing, punctuation splitting) followed by WordPiece, giving the same IDs as Hugging
// Face tokenizers' BertNormalizer + BertPreTokenizer + WordPiece for one vocab.txt.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "embertext/tokenizer.h"

namespace embertext {

struct BertOptions {
  bool lower_case = true;
  std::optional<bool> strip_accents;  // unset: strip accents when lower-casing
  bool clean_text = true;             // drop control characters, map whitespace to ' '
  bool handle_chinese_chars = true;   // every CJK ideograph is a word of its own
  // Whitespace-delimited words kept verbatim (no cleanup, lower-casing or punctuation split).
  std::vector<std::string> never_split;
  std::string unk_token = "[UNK]";
  std::string continuing_subword_prefix = "##";
  size_t max_input_chars_per_word = 100;  // longer words become unk_token
};

class EMBERTEXT_API BertTokenizer final : public Tokenizer {
 public:
  // vocab[i] is the token with ID i. FormatError for an empty vocab, an empty or duplicate
  // token, a token with whitespace in it, or a vocab without unk_token.
  explicit BertTokenizer(std::vector<std::string> vocab, BertOptions options = {});
  // One token per line (vocab.txt); trailing whitespace of each line is ignored.
  static BertTokenizer from_file(const std::string& vocab_path, BertOptions options = {});
  ~BertTokenizer() override;

  int64_t vocab_size() const override;
  std::string id_to_token(int64_t id) const override;
  std::optional<int64_t> token_to_id(std::string_view token) const override;
  void encode_into(std::string_view text, std::vector<int32_t>& ids) const override;

  const BertOptions& options() const;
  const std::vector<std::string>& vocab() const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

// Reads a vocab.txt into its token list (FormatError/FileError on bad input).
EMBERTEXT_API std::vector<std::string> read_vocab_file(const std::string& path);
// The same for the file's contents; `name` is what error messages call it.
EMBERTEXT_API std::vector<std::string> parse_vocab(std::string_view data,
                                                   const std::string& name = "vocab.txt");

}  // namespace embertext
