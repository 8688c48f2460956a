// Language models for the CTC beam-search decoder.
//
// Hypotheses carry an LM state as an integer id. As in flashlight, two hypotheses share an LM state
// only when they share the word history that led to it: each decoding run keeps its own tree of
// states (a Session), so one LM can serve many batch items on many threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace emberaudio {

// One decoding run's LM states: ids into a history tree, scored by the model behind it.
class LMSession {
 public:
  virtual ~LMSession() = default;
  virtual int start() = 0;                                       // the sentence-start state
  virtual std::pair<int, float> score(int state, int word) = 0;  // next state, score of `word`
  virtual std::pair<int, float> finish(int state) = 0;           // end-of-sentence state and score
};

class LanguageModel {
 public:
  virtual ~LanguageModel() = default;
  virtual std::unique_ptr<LMSession> session() const = 0;
  // Whether sessions call into Python (then decoding keeps the GIL and runs one item at a time).
  virtual bool needs_gil() const { return false; }
};

// The children of each state, keyed by the word scored from it (-1: sentence end).
class HistoryTree {
 public:
  HistoryTree() { children_.emplace_back(); }
  // The child of `state` for `word`; `created` tells whether it is new.
  int child(int state, int word, bool* created) {
    auto& map = children_[state];
    auto it = map.find(word);
    if (it != map.end()) {
      *created = false;
      return it->second;
    }
    const int id = int(children_.size());
    map.emplace(word, id);  // before emplace_back: `map` may move with the vector
    children_.emplace_back();
    *created = true;
    return id;
  }
  size_t size() const { return children_.size(); }

 private:
  std::vector<std::unordered_map<int, int>> children_;
};

// No language model: every score is 0, states only record the history.
class ZeroLM : public LanguageModel {
 public:
  std::unique_ptr<LMSession> session() const override;
};

// A back-off n-gram model read from an ARPA file; scores are log10 probabilities, as KenLM's.
class ArpaLM : public LanguageModel {
 public:
  // `words`: the decoder's word list (index = the decoder's word id), mapped to the model's
  // vocabulary; words the model lacks score as <unk>.
  ArpaLM(const std::string& path, const std::vector<std::string>& words);
  std::unique_ptr<LMSession> session() const override;

  int order() const { return order_; }
  int begin_id() const { return bos_; }
  int end_id() const { return eos_; }
  int lm_id(int word) const;  // the model's id of the decoder's word `word` (<unk> if absent)
  // log10 p(word | context) with back-off; context holds model ids, oldest first.
  float score(const std::vector<int>& context, int word) const;

 private:
  struct Entry {
    float prob = 0.f, backoff = 0.f;
  };
  static std::string key(const int* ids, size_t n);
  const Entry* find(const int* ids, size_t n) const;

  int order_ = 0;
  int bos_ = -1, eos_ = -1, unk_ = -1;
  float unk_prob_ = -100.f;  // KenLM's substitute when the file has no <unk>
  std::unordered_map<std::string, int> vocab_;
  std::vector<std::unordered_map<std::string, Entry>> ngrams_;  // [n - 1]: the n-grams
  std::vector<int> word_to_lm_;
};

}  // namespace emberaudio
