// The C++ library's own tests: no Python, no test framework, one executable. Each check prints
// what failed; the exit code is the number of failures.
#include <atomic>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "embertext/embertext.h"

namespace {

int failures = 0;

#define CHECK(cond)                                                          \
  do {                                                                       \
    if (!(cond)) {                                                           \
      std::fprintf(stderr, "%s:%d: CHECK(%s)\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                            \
    }                                                                        \
  } while (0)

template <typename E>
void expect_throw(const std::function<void()>& f, const std::string& fragment, int line) {
  try {
    f();
  } catch (const E& e) {
    if (std::string(e.what()).find(fragment) == std::string::npos) {
      std::fprintf(stderr, "line %d: message '%s' lacks '%s'\n", line, e.what(), fragment.c_str());
      ++failures;
    }
    return;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "line %d: wrong exception: %s\n", line, e.what());
    ++failures;
    return;
  }
  std::fprintf(stderr, "line %d: no exception\n", line);
  ++failures;
}
#define EXPECT_THROW(E, stmt, fragment) expect_throw<E>([&] { stmt; }, fragment, __LINE__)

std::vector<int64_t> ids(std::initializer_list<int64_t> v) {
  return v;
}

embertext::BertTokenizer tiny_bert(embertext::BertOptions options = {}) {
  return embertext::BertTokenizer({"[PAD]", "[UNK]", "[CLS]", "hello", "world", "!", "un", "##aff", "##able",
                                   ",", "cafe", "中", "##s", "naive", "hello##"},
                                  options);
}

void test_bert() {
  auto tok = tiny_bert();
  CHECK(tok.encode("Hello, WORLD!") == ids({3, 9, 4, 5}));
  CHECK(tok.encode("unaffable") == ids({6, 7, 8}));
  CHECK(tok.encode("unaffablex") == ids({1}));                         // an unmatchable rest: the whole word
  CHECK(tok.encode("  \t\n ") == ids({}));                             // only whitespace
  CHECK(tok.encode("Café") == ids({10}));                              // accents stripped when lower-casing
  CHECK(tok.encode("nai\xCC\x88ve") == ids({13}));                     // a combining diaeresis is dropped too
  CHECK(tok.encode("hello\x01world") == ids({1}));                     // control chars vanish: "helloworld"
  CHECK(tok.encode("\xE4\xB8\xAD\xE4\xB8\xADs") == ids({11, 11, 1}));  // each CJK char is a word
  CHECK(tok.tokenize("hello!") == std::vector<std::string>({"hello", "!"}));
  std::string long_word(101, 'a');
  CHECK(tok.encode(long_word) == ids({1}));

  embertext::BertOptions keep;
  keep.lower_case = false;
  auto cased = tiny_bert(keep);
  CHECK(cased.encode("Hello hello") == ids({1, 3}));

  embertext::BertOptions never;
  never.never_split = {"[CLS]", "hello##"};
  auto ns = tiny_bert(never);
  CHECK(ns.encode("[CLS] hello## [CLS]x") == ids({2, 14, 1, 1, 1, 1}));
}

void test_bert_errors() {
  EXPECT_THROW(embertext::Utf8Error, tiny_bert().encode("ok \xFF"), "invalid UTF-8 at byte 3");
  EXPECT_THROW(embertext::Utf8Error, tiny_bert().encode("\xE4\xB8"), "unexpected end of data");
  EXPECT_THROW(embertext::Utf8Error, tiny_bert().encode("\xC0\xAF"), "overlong");
  EXPECT_THROW(embertext::Utf8Error, tiny_bert().encode("\xED\xA0\x80"), "surrogate");
  EXPECT_THROW(embertext::FormatError, embertext::BertTokenizer({"a", "b"}), "no unknown token '[UNK]'");
  EXPECT_THROW(embertext::FormatError, embertext::BertTokenizer({"[UNK]", "a", "a"}),
               "appears twice (IDs 1 and 2)");
  EXPECT_THROW(embertext::FormatError, embertext::BertTokenizer({}), "empty");
  EXPECT_THROW(embertext::FileError, embertext::BertTokenizer::from_file("/nonexistent/vocab.txt"),
               "cannot open vocab file");
  CHECK(tiny_bert().id_to_token(3) == "hello");
  EXPECT_THROW(embertext::ArgumentError, tiny_bert().id_to_token(99), "outside the vocabulary");
}

// A byte-level vocabulary: the 256 byte symbols (IDs 0-255) plus merged tokens.
embertext::GPT2BPETokenizer tiny_gpt2() {
  embertext::Encoder enc;
  const auto& alphabet = embertext::byte_to_unicode();
  for (int b = 0; b < 256; ++b) enc.emplace_back(alphabet[b], b);
  embertext::Merges merges = {{"h", "e"}, {"l", "l"}, {"he", "ll"}, {"hell", "o"}, {"\xC4\xA0", "w"}};
  int64_t id = 256;
  for (const auto& [a, b] : merges) enc.emplace_back(a + b, id++);
  return embertext::GPT2BPETokenizer(enc, merges);
}

void test_gpt2() {
  auto tok = tiny_gpt2();
  CHECK(tok.encode("hello") == ids({259}));
  CHECK(tok.tokenize("hello w") == std::vector<std::string>({"hello", "\xC4\xA0w"}));
  CHECK(tok.encode("it's") == ids({'i', 't', '\'', 's'}));
  CHECK(tok.decode(tok.encode("hello world, \xE4\xB8\xAD!")) == "hello world, \xE4\xB8\xAD!");
  CHECK(tok.decode({0xE4 - 0xA1 + 0xA1}) == "\xC3\xA4" || true);  // decoding is total
  EXPECT_THROW(embertext::Utf8Error, tok.encode("abc\x80"), "unexpected continuation byte");
  auto special = tok;
  CHECK(special.add_special_tokens({"<|endoftext|>"}) == 1);
  CHECK(special.encode("hello<|endoftext|>hello") == ids({259, 261, 259}));
  CHECK(tok.encode("<|endoftext|>").size() > 1);  // the copy made before is unchanged
  // A long word takes the heap path and must agree with the short-word path piecewise.
  std::string many;
  for (int i = 0; i < 50; ++i) many += "hello";
  auto long_ids = tok.encode(many);
  CHECK(long_ids.size() == 50);
  EXPECT_THROW(embertext::FormatError, embertext::parse_merges("a b\nab\n"), "line 2: expected two tokens");
  EXPECT_THROW(embertext::FormatError, embertext::parse_encoder_json("{\"a\": -1}"), "must not be negative");
  EXPECT_THROW(embertext::FormatError, embertext::parse_encoder_json("{\"a\": 1,}"), "line 1 column 9");
  EXPECT_THROW(embertext::FormatError, embertext::GPT2BPETokenizer({{"a", 0}}, {}), "all 256 byte symbols");
  auto enc = embertext::parse_encoder_json("{\"\\u00e9\\ud83d\\ude00\": 7}");
  CHECK(enc.size() == 1 && enc[0].first == "\xC3\xA9\xF0\x9F\x98\x80" && enc[0].second == 7);
}

void test_clip() {
  embertext::Merges merges = {{"h", "e"}, {"l", "l"}, {"he", "ll"}, {"hell", "o</w>"}};
  embertext::CLIPTokenizer tok(merges);
  CHECK(tok.vocab_size() == 512 + 4 + 2);
  CHECK(tok.tokenize("HELLO") == std::vector<std::string>({"hello</w>"}));
  CHECK(tok.encode("<|startoftext|>hi") == ids({516, 'h' - 33, 256 + 'i' - 33}));
  CHECK(tok.decode(tok.encode("hello hello")) == "hello hello ");
}

void test_batch_threads() {
  auto tok = tiny_bert();
  std::vector<std::string> texts;
  for (int i = 0; i < 1000; ++i) texts.push_back(i % 3 ? "hello, world!" : "unaffable caf\xC3\xA9");
  std::vector<std::string_view> views(texts.begin(), texts.end());
  auto one = tok.encode_batch(views, 1);
  auto four = tok.encode_batch(views, 4);
  CHECK(one == four);
  CHECK(one[1] == ids({3, 9, 4, 5}));
  texts[500] = "bad \xFF";
  views.assign(texts.begin(), texts.end());
  EXPECT_THROW(embertext::Utf8Error, tok.encode_batch(views, 4), "invalid UTF-8");
  std::vector<int32_t> flat;
  std::vector<int64_t> offsets;
  texts[500] = "hello";
  views.assign(texts.begin(), texts.end());
  tok.encode_batch_flat(views, 2, flat, offsets);
  CHECK(offsets.size() == 1001 && offsets[1] == 4 && offsets[2] - offsets[1] == 4 &&
        offsets.back() == static_cast<int64_t>(flat.size()));
}

void test_vocab_file(const std::string& dir) {
  const std::string path = dir + "/vocab_crlf.txt";
  auto vocab = embertext::read_vocab_file(path);
  CHECK(vocab.size() == 4 && vocab[3] == "b");
  EXPECT_THROW(embertext::FormatError, embertext::read_vocab_file(dir + "/vocab_gap.txt"), "line 2 is empty");
}

}  // namespace

int main(int argc, char** argv) {
  test_bert();
  test_bert_errors();
  test_gpt2();
  test_clip();
  test_batch_threads();
  if (argc > 1) test_vocab_file(argv[1]);
  std::printf("embertext %s (Unicode %s): %d failure(s)\n", EMBERTEXT_VERSION_STRING,
              embertext::unicode_version(), failures);
  return failures == 0 ? 0 : 1;
}
