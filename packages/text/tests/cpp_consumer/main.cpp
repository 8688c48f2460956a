// tokenize <bert|gpt2> <files...>: reads lines from stdin, prints each line's token IDs, then
// encodes all lines again as one batch on two threads and checks both agree.
#include <embertext/embertext.h>

#include <iostream>
#include <memory>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: tokenize bert VOCAB | tokenize gpt2 ENCODER_JSON VOCAB_BPE\n";
    return 2;
  }
  std::unique_ptr<embertext::Tokenizer> tok;
  try {
    const std::string kind = argv[1];
    if (kind == "bert") {
      tok = std::make_unique<embertext::BertTokenizer>(embertext::BertTokenizer::from_file(argv[2]));
    } else if (kind == "gpt2" && argc > 3) {
      tok = std::make_unique<embertext::GPT2BPETokenizer>(
          embertext::GPT2BPETokenizer::from_files(argv[2], argv[3]));
    } else {
      std::cerr << "unknown tokenizer " << kind << "\n";
      return 2;
    }
  } catch (const embertext::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  std::vector<std::string> lines;
  for (std::string line; std::getline(std::cin, line);) lines.push_back(line);
  std::vector<std::string_view> views(lines.begin(), lines.end());
  try {
    const auto batch = tok->encode_batch(views, 2);
    for (size_t i = 0; i < lines.size(); ++i) {
      const std::vector<int64_t> ids = tok->encode(lines[i]);
      if (ids != batch[i]) {
        std::cerr << "batch and single encode differ on line " << i << "\n";
        return 1;
      }
      for (size_t k = 0; k < ids.size(); ++k) std::cout << (k ? " " : "") << ids[k];
      std::cout << "\n";
    }
  } catch (const embertext::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  std::cout << "embertext " << EMBERTEXT_VERSION_STRING << "\n";
  return 0;
}
