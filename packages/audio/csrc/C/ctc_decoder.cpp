// CTC beam-search decoding, lexicon-constrained (a trie of spellings, LM look-ahead smeared by MAX)
// or lexicon-free, with no LM, an ARPA n-gram LM or a Python LM (CTCDecoderLM).
//
// The search follows flashlight's LexiconDecoder / LexiconFreeDecoder, which torchaudio's
// ctc_decoder wraps, so that hypotheses and scores match: per frame, each hypothesis proposes
// (1) the next tokens of the spellings it is in (completing words scores them with the LM),
// (2) staying on its token (or silence at a word boundary) and (3) blank; candidates within
// beam_threshold of the best are merged when they share LM state, trie node, token and
// blank-ness (max, or log-add), and the best beam_size are kept.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "common.h"
#include "lm.h"

namespace py = pybind11;

namespace emberaudio {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

struct Options {
  int beam_size = 50;
  int beam_size_token = 0;
  double beam_threshold = 50;
  double lm_weight = 2;
  double word_score = 0;
  double unk_score = kNegInf;
  double sil_score = 0;
  bool log_add = false;
};

// A lexicon trie over token ids; each node knows the words spelled up to it and the best LM
// unigram score reachable below it (the look-ahead added while inside a word).
struct Trie {
  struct Node {
    std::unordered_map<int, int> children;
    std::vector<int> words;
    std::vector<float> scores;
    float max_score = -std::numeric_limits<float>::infinity();
  };
  std::vector<Node> nodes{Node{}};

  void insert(const std::vector<int>& spelling, int word, float score) {
    int node = 0;
    for (int token : spelling) {
      auto it = nodes[node].children.find(token);
      if (it == nodes[node].children.end()) {
        const int id = int(nodes.size());
        nodes[node].children.emplace(token, id);
        nodes.emplace_back();
        node = id;
      } else {
        node = it->second;
      }
    }
    nodes[node].words.push_back(word);
    nodes[node].scores.push_back(score);
  }

  // A node's score: the log-sum of its own words' (homophones), then the max with its children.
  void smear_max(int node = 0) {
    Node& n = nodes[node];
    double best = kNegInf;
    for (float s : n.scores) {
      const double hi = std::max(best, double(s)), lo = std::min(best, double(s));
      best = (lo == kNegInf) ? hi : hi + std::log1p(std::exp(lo - hi));
    }
    for (const auto& kv : n.children) {
      smear_max(kv.second);
      best = std::max(best, double(nodes[kv.second].max_score));
    }
    nodes[node].max_score = float(best);
  }
};

struct Hyp {
  double score;
  int lm_state;
  int lex;     // trie node (lexicon decoding), else 0
  int parent;  // index in the previous frame's beam, -1 for the first
  int token;
  int word;  // word completed on this step, -1 if none
  bool prev_blank;
};

struct Result {
  double score;
  std::vector<int> tokens, words;  // one per frame, with the start and end steps
};

struct Config {
  Options opt;
  std::shared_ptr<const LanguageModel> lm;
  std::shared_ptr<const Trie> trie;  // null: lexicon-free
  int sil, blank, unk, num_tokens;
};

// One utterance's search: the beams of every frame so far and the LM states they use.
class DecodeRun {
 public:
  explicit DecodeRun(const Config& cfg) : cfg_(cfg), session_(cfg.lm->session()) {
    beams_.push_back({Hyp{0.0, session_->start(), 0, -1, cfg.sil, -1, false}});
  }

  void step(const float* emissions, int64_t frames, int64_t n) {
    if (ended_) throw std::runtime_error("decode_step after decode_end: call decode_begin first");
    std::vector<int> order(n);
    const int k = int(std::min<int64_t>(cfg_.opt.beam_size_token, n));
    for (int64_t t = 0; t < frames; ++t) {
      const float* e = emissions + t * n;
      std::iota(order.begin(), order.end(), 0);
      if (k < n)
        std::partial_sort(order.begin(), order.begin() + k, order.end(),
                          [e](int a, int b) { return e[a] > e[b]; });
      reset();
      const auto& prev = beams_.back();
      for (int p = 0; p < int(prev.size()); ++p) {
        if (cfg_.trie)
          expand_lexicon(prev[p], p, e, order, k);
        else
          expand_free(prev[p], p, e, order, k);
      }
      beams_.push_back(store(false));
    }
  }

  void end() {
    if (ended_) throw std::runtime_error("decode_end called twice: call decode_begin first");
    reset();
    const auto& prev = beams_.back();
    // With a lexicon, hypotheses that end inside a word are kept only if none ends on a boundary.
    bool nice_ending = !cfg_.trie;
    if (cfg_.trie)
      for (const Hyp& h : prev) nice_ending = nice_ending || h.lex == 0;
    for (int p = 0; p < int(prev.size()); ++p) {
      const Hyp& h = prev[p];
      if (cfg_.trie && nice_ending && h.lex != 0) continue;
      auto [state, lm_score] = session_->finish(h.lm_state);
      add(h.score + cfg_.opt.lm_weight * lm_score, state, h.lex, p, cfg_.sil, -1, false);
    }
    beams_.push_back(store(true));
    ended_ = true;
  }

  std::vector<Result> results() const {
    std::vector<int> order(beams_.back().size());
    std::iota(order.begin(), order.end(), 0);
    const auto& last = beams_.back();
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return last[a].score > last[b].score; });
    std::vector<Result> out;
    const size_t len = beams_.size();
    for (int i : order) {
      Result r{last[i].score, std::vector<int>(len), std::vector<int>(len)};
      int idx = i;
      for (size_t f = len; f-- > 0;) {
        const Hyp& h = beams_[f][idx];
        r.tokens[f] = h.token;
        r.words[f] = h.word;
        idx = h.parent;
      }
      out.push_back(std::move(r));
    }
    return out;
  }

 private:
  void expand_lexicon(const Hyp& h, int p, const float* e, const std::vector<int>& order, int k) {
    const Trie& trie = *cfg_.trie;
    const Options& o = cfg_.opt;
    const Trie::Node& node = trie.nodes[h.lex];
    const double lex_max = h.lex == 0 ? 0.0 : double(node.max_score);
    // (1) The next token of a spelling.
    for (int r = 0; r < k; ++r) {
      const int c = order[r];
      auto it = node.children.find(c);
      if (it == node.children.end()) continue;
      const Trie::Node& child = trie.nodes[it->second];
      double score = h.score + e[c];
      if (c == cfg_.sil) score += o.sil_score;
      // A new token needs a blank in between when it repeats the last one.
      if ((h.prev_blank || c != h.token) && !child.children.empty())
        add(score + o.lm_weight * (double(child.max_score) - lex_max), h.lm_state, it->second, p, c, -1,
            false);
      for (int word : child.words) {
        // A one-token word must not be emitted again by the same token's repeat.
        if (h.lex == 0 && h.token == c) continue;
        auto [state, lm_score] = session_->score(h.lm_state, word);
        add(score + o.lm_weight * (lm_score - lex_max) + o.word_score, state, 0, p, c, word, false);
      }
      if (child.words.empty() && o.unk_score > kNegInf) {
        auto [state, lm_score] = session_->score(h.lm_state, cfg_.unk);
        add(score + o.lm_weight * (lm_score - lex_max) + o.unk_score, state, 0, p, c, cfg_.unk, false);
      }
    }
    // (2) Stay on the token (a repeat), or on silence between words.
    if (!h.prev_blank || h.lex == 0) {
      const int c = h.lex == 0 ? cfg_.sil : h.token;
      double score = h.score + e[c];
      if (c == cfg_.sil) score += o.sil_score;
      add(score, h.lm_state, h.lex, p, c, -1, false);
    }
    // (3) Blank.
    add(h.score + e[cfg_.blank], h.lm_state, h.lex, p, cfg_.blank, -1, true);
  }

  void expand_free(const Hyp& h, int p, const float* e, const std::vector<int>& order, int k) {
    const Options& o = cfg_.opt;
    for (int r = 0; r < k; ++r) {
      const int c = order[r];
      double score = h.score + e[c];
      if (c == cfg_.sil) score += o.sil_score;
      if (c != cfg_.blank && (c != h.token || h.prev_blank)) {  // a new token: scored by the LM
        auto [state, lm_score] = session_->score(h.lm_state, c);
        add(score + o.lm_weight * lm_score, state, 0, p, c, -1, false);
      } else if (c == cfg_.blank) {
        add(score, h.lm_state, 0, p, c, -1, true);
      } else {  // the same token again, without a blank: the CTC repeat
        add(score, h.lm_state, 0, p, c, -1, false);
      }
    }
  }

  void reset() {
    best_ = kNegInf;
    candidates_.clear();
  }

  void add(double score, int lm_state, int lex, int parent, int token, int word, bool prev_blank) {
    best_ = std::max(best_, score);
    if (score >= best_ - cfg_.opt.beam_threshold)
      candidates_.push_back(Hyp{score, lm_state, lex, parent, token, word, prev_blank});
  }

  // Keeps candidates within the threshold, merges equal states, keeps the best beam_size.
  std::vector<Hyp> store(bool sorted) {
    const double threshold = best_ - cfg_.opt.beam_threshold;
    std::vector<Hyp*> ptrs;
    for (Hyp& c : candidates_)
      if (c.score >= threshold) ptrs.push_back(&c);
    auto same = [](const Hyp* a, const Hyp* b) {
      return a->lm_state == b->lm_state && a->lex == b->lex && a->token == b->token &&
             a->prev_blank == b->prev_blank;
    };
    std::sort(ptrs.begin(), ptrs.end(), [](const Hyp* a, const Hyp* b) {
      if (a->lm_state != b->lm_state) return a->lm_state < b->lm_state;
      if (a->lex != b->lex) return a->lex < b->lex;
      if (a->token != b->token) return a->token < b->token;
      if (a->prev_blank != b->prev_blank) return a->prev_blank < b->prev_blank;
      return a->score > b->score;
    });
    size_t kept = 0;
    for (size_t i = 0; i < ptrs.size(); ++i) {
      if (kept > 0 && same(ptrs[i], ptrs[kept - 1])) {
        // The best member keeps its path; log-add sums the merged paths' probabilities.
        Hyp* m = ptrs[kept - 1];
        if (cfg_.opt.log_add) {
          const double hi = std::max(m->score, ptrs[i]->score), lo = std::min(m->score, ptrs[i]->score);
          m->score = hi + std::log1p(std::exp(lo - hi));
        }
        continue;
      }
      ptrs[kept++] = ptrs[i];
    }
    ptrs.resize(kept);
    const size_t size = std::min<size_t>(kept, size_t(cfg_.opt.beam_size));
    auto by_score = [](const Hyp* a, const Hyp* b) { return a->score > b->score; };
    if (sorted)
      std::partial_sort(ptrs.begin(), ptrs.begin() + size, ptrs.end(), by_score);
    else if (kept > size)
      std::nth_element(ptrs.begin(), ptrs.begin() + size, ptrs.end(), by_score);
    std::vector<Hyp> beam;
    beam.reserve(size);
    for (size_t i = 0; i < size; ++i) beam.push_back(*ptrs[i]);
    return beam;
  }

  const Config& cfg_;
  std::unique_ptr<LMSession> session_;
  std::vector<std::vector<Hyp>> beams_;
  std::vector<Hyp> candidates_;
  double best_ = kNegInf;
  bool ended_ = false;
};

// A CTCDecoderLM written in Python: its states are Python objects, told apart by identity.
class PythonLM : public LanguageModel {
 public:
  explicit PythonLM(py::object lm) : lm_(std::move(lm)) {}
  bool needs_gil() const override { return true; }
  std::unique_ptr<LMSession> session() const override { return std::make_unique<Session>(lm_); }

 private:
  class Session : public LMSession {
   public:
    explicit Session(py::object lm) : lm_(std::move(lm)) {}
    int start() override { return intern(lm_.attr("start")(false)); }
    std::pair<int, float> score(int state, int word) override {
      return unpack(lm_.attr("score")(states_[state], word), "score");
    }
    std::pair<int, float> finish(int state) override {
      return unpack(lm_.attr("finish")(states_[state]), "finish");
    }

   private:
    int intern(const py::object& state) {
      auto it = ids_.find(state.ptr());
      if (it != ids_.end()) return it->second;
      const int id = int(states_.size());
      states_.push_back(state);  // holds the object, so its address stays its identity
      ids_.emplace(state.ptr(), id);
      return id;
    }
    std::pair<int, float> unpack(const py::object& out, const char* what) {
      if (!py::isinstance<py::tuple>(out) || py::len(out) != 2)
        throw py::type_error(std::string("CTCDecoderLM.") + what + " must return a (state, score) tuple");
      py::tuple pair = out;
      return {intern(pair[0]), pair[1].cast<float>()};
    }
    py::object lm_;
    std::vector<py::object> states_;
    std::unordered_map<PyObject*, int> ids_;
  };
  py::object lm_;
};

py::list to_python(const std::vector<Result>& results) {
  py::list out;
  for (const Result& r : results) {
    py::array_t<int32_t> tokens(r.tokens.size()), words(r.words.size());
    std::copy(r.tokens.begin(), r.tokens.end(), tokens.mutable_data());
    std::copy(r.words.begin(), r.words.end(), words.mutable_data());
    out.append(py::make_tuple(r.score, tokens, words));
  }
  return out;
}

class Decoder {
 public:
  Decoder(const Options& opt, std::shared_ptr<LanguageModel> lm, py::object lexicon, int sil, int blank,
          int unk, int num_tokens)
      : lm_(std::move(lm)) {
    cfg_.opt = opt;
    cfg_.lm = lm_;
    cfg_.sil = sil;
    cfg_.blank = blank;
    cfg_.unk = unk;
    cfg_.num_tokens = num_tokens;
    if (num_tokens < 1) throw std::invalid_argument("the token set is empty");
    for (int v : {sil, blank})
      if (v < 0 || v >= num_tokens) throw std::invalid_argument("blank and silence must be token indices");
    if (opt.beam_size < 1) throw std::invalid_argument("beam_size must be positive");
    if (opt.beam_size_token < 1) throw std::invalid_argument("beam_size_token must be positive");
    if (!lexicon.is_none()) {
      // lexicon: [(word index, [token indices])]; the trie's look-ahead is the LM's score of each
      // word from the start state.
      auto trie = std::make_shared<Trie>();
      auto session = lm_->session();
      const int start = session->start();
      for (py::handle entry : lexicon) {
        auto pair = entry.cast<std::pair<int, std::vector<int>>>();
        for (int t : pair.second)
          if (t < 0 || t >= num_tokens)
            throw std::invalid_argument("lexicon spelling has an invalid token index");
        if (pair.second.empty()) throw std::invalid_argument("lexicon spelling is empty");
        trie->insert(pair.second, pair.first, session->score(start, pair.first).second);
      }
      trie->smear_max();
      cfg_.trie = trie;
    }
  }

  py::list decode(py::array_t<float, py::array::c_style> emissions,
                  py::array_t<int64_t, py::array::c_style> lengths) {
    if (emissions.ndim() != 3) throw std::invalid_argument("emissions must be 3-D (batch, frames, tokens)");
    const int64_t b = emissions.shape(0), t = emissions.shape(1), n = emissions.shape(2);
    check_tokens(n);
    if (lengths.ndim() != 1 || lengths.shape(0) != b)
      throw std::invalid_argument("lengths must be 1-D with one entry per batch item");
    const int64_t* len = lengths.data();
    for (int64_t i = 0; i < b; ++i)
      if (len[i] < 0 || len[i] > t)
        throw std::invalid_argument("lengths[" + std::to_string(i) + "] = " + std::to_string(len[i]) +
                                    " is outside [0, " + std::to_string(t) + "]");
    const float* data = emissions.data();
    std::vector<std::vector<Result>> results(b);
    auto one = [&](int64_t i) {
      DecodeRun run(cfg_);
      run.step(data + i * t * n, len[i], n);
      run.end();
      results[i] = run.results();
    };
    if (lm_->needs_gil()) {
      for (int64_t i = 0; i < b; ++i) one(i);  // the Python LM runs under the GIL, one item at a time
    } else {
      py::gil_scoped_release release;
      parallel_for(b, one);
    }
    py::list out;
    for (const auto& r : results) out.append(to_python(r));
    return out;
  }

  void decode_begin() { run_ = std::make_unique<DecodeRun>(cfg_); }

  void decode_step(py::array_t<float, py::array::c_style> emissions) {
    if (!run_) throw std::runtime_error("decode_step called before decode_begin");
    if (emissions.ndim() != 2) throw std::invalid_argument("emissions must be 2-D (frames, tokens)");
    check_tokens(emissions.shape(1));
    if (lm_->needs_gil()) {
      run_->step(emissions.data(), emissions.shape(0), emissions.shape(1));
    } else {
      py::gil_scoped_release release;
      run_->step(emissions.data(), emissions.shape(0), emissions.shape(1));
    }
  }

  void decode_end() {
    if (!run_) throw std::runtime_error("decode_end called before decode_begin");
    run_->end();
  }

  py::list final_hypotheses() const {
    if (!run_) throw std::runtime_error("get_final_hypothesis called before decode_begin");
    return to_python(run_->results());
  }

 private:
  void check_tokens(int64_t n) const {
    if (n != cfg_.num_tokens)
      throw std::invalid_argument("emissions have " + std::to_string(n) + " classes, but the decoder has " +
                                  std::to_string(cfg_.num_tokens) + " tokens");
  }

  std::shared_ptr<LanguageModel> lm_;
  Config cfg_;
  std::unique_ptr<DecodeRun> run_;
};

}  // namespace

void register_ctc_decoder(py::module_& m) {
  py::class_<Options>(m, "CTCDecoderOptions")
      .def(py::init<>())
      .def_readwrite("beam_size", &Options::beam_size)
      .def_readwrite("beam_size_token", &Options::beam_size_token)
      .def_readwrite("beam_threshold", &Options::beam_threshold)
      .def_readwrite("lm_weight", &Options::lm_weight)
      .def_readwrite("word_score", &Options::word_score)
      .def_readwrite("unk_score", &Options::unk_score)
      .def_readwrite("sil_score", &Options::sil_score)
      .def_readwrite("log_add", &Options::log_add);
  py::class_<LanguageModel, std::shared_ptr<LanguageModel>>(m, "LanguageModel");
  py::class_<ZeroLM, LanguageModel, std::shared_ptr<ZeroLM>>(m, "ZeroLM").def(py::init<>());
  py::class_<ArpaLM, LanguageModel, std::shared_ptr<ArpaLM>>(m, "ArpaLM")
      .def(py::init<const std::string&, const std::vector<std::string>&>(), py::arg("path"), py::arg("words"))
      .def_property_readonly("order", &ArpaLM::order)
      .def(
          "score_words",
          [](const ArpaLM& lm, const std::vector<int>& words, bool finish) {
            // Scores a word sequence from sentence start (a check of the model against others).
            auto session = lm.session();
            int state = session->start();
            py::list scores;
            for (int w : words) {
              auto [next, s] = session->score(state, w);
              state = next;
              scores.append(s);
            }
            if (finish) scores.append(session->finish(state).second);
            return scores;
          },
          py::arg("words"), py::arg("finish") = true);
  py::class_<PythonLM, LanguageModel, std::shared_ptr<PythonLM>>(m, "PythonLM").def(py::init<py::object>());
  py::class_<Decoder>(m, "CTCBeamDecoder")
      .def(py::init<const Options&, std::shared_ptr<LanguageModel>, py::object, int, int, int, int>(),
           py::arg("options"), py::arg("lm"), py::arg("lexicon"), py::arg("sil"), py::arg("blank"),
           py::arg("unk"), py::arg("num_tokens"))
      .def("decode", &Decoder::decode, py::arg("emissions"), py::arg("lengths"))
      .def("decode_begin", &Decoder::decode_begin)
      .def("decode_step", &Decoder::decode_step, py::arg("emissions"))
      .def("decode_end", &Decoder::decode_end)
      .def("final_hypotheses", &Decoder::final_hypotheses);
}

}  // namespace emberaudio
