// ZeroLM and the ARPA back-off n-gram model (parsed here, so scoring needs neither KenLM nor the GIL).
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "lm.h"

namespace emberaudio {

namespace {

class ZeroSession : public LMSession {
 public:
  int start() override { return 0; }
  std::pair<int, float> score(int state, int word) override {
    bool created;
    return {tree_.child(state, word, &created), 0.f};
  }
  std::pair<int, float> finish(int state) override { return score(state, -1); }

 private:
  HistoryTree tree_;
};

// A state's context: the last order-1 model ids of its history (what the next score needs).
class ArpaSession : public LMSession {
 public:
  explicit ArpaSession(const ArpaLM& lm) : lm_(lm) {
    contexts_.push_back({lm.begin_id()});  // sentence start, as KenLM's BeginSentenceWrite
  }
  int start() override { return 0; }
  std::pair<int, float> score(int state, int word) override { return advance(state, word, lm_.lm_id(word)); }
  std::pair<int, float> finish(int state) override { return advance(state, -1, lm_.end_id()); }

 private:
  std::pair<int, float> advance(int state, int word, int lm_word) {
    const float s = lm_.score(contexts_[state], lm_word);
    bool created;
    const int next = tree_.child(state, word, &created);
    if (created) {
      std::vector<int> ctx = contexts_[state];
      ctx.push_back(lm_word);
      const size_t keep = size_t(std::max(lm_.order() - 1, 0));
      if (ctx.size() > keep) ctx.erase(ctx.begin(), ctx.end() - keep);
      contexts_.push_back(std::move(ctx));
    }
    return {next, s};
  }

  const ArpaLM& lm_;
  HistoryTree tree_;
  std::vector<std::vector<int>> contexts_;
};

}  // namespace

std::unique_ptr<LMSession> ZeroLM::session() const {
  return std::make_unique<ZeroSession>();
}

std::unique_ptr<LMSession> ArpaLM::session() const {
  return std::make_unique<ArpaSession>(*this);
}

std::string ArpaLM::key(const int* ids, size_t n) {
  return std::string(reinterpret_cast<const char*>(ids), n * sizeof(int));
}

const ArpaLM::Entry* ArpaLM::find(const int* ids, size_t n) const {
  if (n == 0 || n > ngrams_.size()) return nullptr;
  const auto& table = ngrams_[n - 1];
  auto it = table.find(key(ids, n));
  return it == table.end() ? nullptr : &it->second;
}

ArpaLM::ArpaLM(const std::string& path, const std::vector<std::string>& words) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument("cannot open the ARPA language model file " + path);
  std::string line;
  std::vector<size_t> counts;
  int section = -1;  // -1: before \data\, 0: the counts, n >= 1: the n-grams
  size_t line_no = 0;
  auto fail = [&](const std::string& why) {
    throw std::invalid_argument("ARPA file " + path + ", line " + std::to_string(line_no) + ": " + why);
  };
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    if (line == "\\data\\") {
      section = 0;
      continue;
    }
    if (line == "\\end\\") break;
    if (section < 0) continue;  // text before \data\ is a comment
    if (line.size() > 2 && line[0] == '\\' && line.find("-grams:") != std::string::npos) {
      section = std::atoi(line.c_str() + 1);
      if (section < 1 || size_t(section) > counts.size()) fail("unexpected section " + line);
      continue;
    }
    if (section == 0) {
      if (line.rfind("ngram ", 0) != 0) fail("expected 'ngram N=count'");
      const size_t eq = line.find('=');
      if (eq == std::string::npos) fail("expected 'ngram N=count'");
      const int n = std::atoi(line.c_str() + 6);
      if (n != int(counts.size()) + 1) fail("n-gram orders must be listed 1, 2, ...");
      counts.push_back(std::strtoull(line.c_str() + eq + 1, nullptr, 10));
      ngrams_.emplace_back();
      ngrams_.back().reserve(counts.back());
      continue;
    }
    std::istringstream fields(line);
    float prob;
    if (!(fields >> prob)) fail("expected a log10 probability");
    std::vector<std::string> toks;
    std::string tok;
    while (fields >> tok) toks.push_back(tok);
    float backoff = 0.f;
    if (toks.size() == size_t(section) + 1) {
      backoff = std::strtof(toks.back().c_str(), nullptr);
      toks.pop_back();
    }
    if (toks.size() != size_t(section)) fail("expected " + std::to_string(section) + " words");
    std::vector<int> ids;
    for (const auto& w : toks) {
      auto it = vocab_.find(w);
      if (it == vocab_.end()) {
        if (section != 1) fail("word '" + w + "' has no unigram");
        it = vocab_.emplace(w, int(vocab_.size())).first;
      }
      ids.push_back(it->second);
    }
    ngrams_[section - 1][key(ids.data(), ids.size())] = Entry{prob, backoff};
  }
  if (counts.empty()) throw std::invalid_argument("ARPA file " + path + " has no \\data\\ section");
  order_ = int(counts.size());
  auto id = [&](const char* w) {
    auto it = vocab_.find(w);
    return it == vocab_.end() ? -1 : it->second;
  };
  bos_ = id("<s>");
  eos_ = id("</s>");
  unk_ = id("<unk>");
  if (bos_ < 0 || eos_ < 0) throw std::invalid_argument("ARPA file " + path + " lacks <s> or </s> unigrams");
  if (unk_ >= 0) unk_prob_ = find(&unk_, 1)->prob;
  word_to_lm_.reserve(words.size());
  for (const auto& w : words) {
    auto it = vocab_.find(w);
    word_to_lm_.push_back(it == vocab_.end() ? unk_ : it->second);
  }
}

int ArpaLM::lm_id(int word) const {
  if (word < 0 || size_t(word) >= word_to_lm_.size())
    throw std::out_of_range("language model word index " + std::to_string(word) + " is out of range");
  return word_to_lm_[word];
}

float ArpaLM::score(const std::vector<int>& context, int word) const {
  // The longest n-gram (suffix of the context + word) present, plus the back-off weights of the
  // longer contexts that were not matched.
  std::vector<int> ids(context);
  ids.push_back(word);
  const size_t n = ids.size();
  float backoff = 0.f;
  for (size_t start = 0; start < n; ++start) {
    const size_t len = n - start;
    if (len <= ngrams_.size()) {
      if (const Entry* e = find(ids.data() + start, len)) return e->prob + backoff;
    }
    // Backing off from this context (the n-gram's history) adds that history's weight.
    if (len - 1 <= ngrams_.size() && len > 1) {
      if (const Entry* h = find(ids.data() + start, len - 1)) backoff += h->backoff;
    }
  }
  return unk_prob_ + backoff;  // word < 0: outside the vocabulary of a model without <unk>
}

}  // namespace emberaudio
