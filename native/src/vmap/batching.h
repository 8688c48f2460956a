#pragma once
// What the generated batching rules are made of (Note [batched tensors] in ember/vmap.h). The
// rules themselves are declared per op in native/ops/declarations.py (BATCHING) and generated
// into autograd_ops.cpp by native/codegen/gen_batching.py.
#include <map>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "ember/autograd.h"
#include "ember/error.h"
#include "ember/generator.h"
#include "ember/ops.h"
#include "ember/vmap.h"

namespace ember::vmap {

// The innermost level among an op's arguments (0: none is batched).
inline int64_t level_of(const Tensor& t) {
  const BatchedInfo* b = batched_info(t);
  return b ? b->level : 0;
}
inline int64_t level_of(const std::optional<Tensor>& t) {
  return t ? level_of(*t) : 0;
}
inline int64_t level_of(const std::vector<Tensor>& ts) {
  int64_t l = 0;
  for (const Tensor& t : ts) l = std::max(l, level_of(t));
  return l;
}
inline int64_t level_of(const std::vector<std::optional<Tensor>>& ts) {
  int64_t l = 0;
  for (const auto& t : ts) l = std::max(l, level_of(t));
  return l;
}
template <class... A>
int64_t max_level(const A&... args) {
  int64_t l = 0;
  ((l = std::max(l, level_of(args))), ...);
  return l;
}

inline bool batched_at(const Tensor& t, int64_t level) {
  const BatchedInfo* b = batched_info(t);
  return b && b->level == level;
}
inline bool batched_at(const std::optional<Tensor>& t, int64_t level) {
  return t && batched_at(*t, level);
}
inline bool batched_at(const std::vector<Tensor>& ts, int64_t level) {
  for (const Tensor& t : ts)
    if (batched_at(t, level)) return true;
  return false;
}
inline bool batched_at(const std::vector<std::optional<Tensor>>& ts, int64_t level) {
  for (const auto& t : ts)
    if (batched_at(t, level)) return true;
  return false;
}

// While a rule computes on values, ops record no graph and no tangent: the logical op already
// did, and its formulas run on batched tensors.
// Random factory ops called by a rule (a fallback's slices) draw plainly.
bool in_rule();
struct RuleDepth {
  RuleDepth();
  ~RuleDepth();
  RuleDepth(const RuleDepth&) = delete;
  RuleDepth& operator=(const RuleDepth&) = delete;
};
struct RuleGuard {
  GradModeGuard grad{false};
  forward_ad::PauseGuard pause;
  RuleDepth depth;
};

// The value with the batch of `level` moved to the front; a tensor not batched there as it is.
Tensor front(const Tensor& t, int64_t level);
// A value with the batch at the front, seen as batched at `level`.
Tensor wrap(const Tensor& physical, int64_t level);
// The batch size of `level` as the arguments carry it (-1 from an argument not batched there).
inline int64_t size_at(const Tensor& t, int64_t level) {
  const BatchedInfo* b = batched_info(t);
  return b && b->level == level ? b->value.size(b->bdim) : -1;
}
inline int64_t size_at(const std::optional<Tensor>& t, int64_t level) {
  return t ? size_at(*t, level) : -1;
}
template <class V>
int64_t size_at(const std::vector<V>& ts, int64_t level) {
  for (const auto& t : ts)
    if (int64_t n = size_at(t, level); n >= 0) return n;
  return -1;
}
template <class... A>
int64_t batch_size(int64_t level, const A&... args) {
  int64_t n = -1;
  ((n = n >= 0 ? n : size_at(args, level)), ...);
  EMBER_CHECK(n >= 0, Error, "[vmap] internal: no argument is batched at level ", level);
  return n;
}
// `dim` of a tensor of logical rank `rank`, as a dimension of its value with the batch in front.
int64_t shift_dim(int64_t dim, int64_t rank, const char* op);
IntList shift_dims(const IntList& dims, int64_t rank, const char* op);
// Reductions: None (or, where `empty_means_all`, an empty list) means every logical dim.
IntList reduce_dims(const std::optional<IntList>& dims, int64_t rank, const char* op);
// Reductions of a 0-dim logical input reduce its value as [B, 1] over dim 1.
Tensor reduction_input(const Tensor& self, int64_t level);
Tensor reduction_result(const Tensor& r, int64_t rank);
// squeeze: the given dims, or every logical dim of size 1, shifted past the batch.
IntList squeeze_dims(const Tensor& self, const std::optional<IntList>& dims, const char* op);
// `first`, then `shape` (view / reshape: the batch size first; permute: dim 0 first).
IntList with_batch(const IntList& shape, int64_t first);
bool same_rank(const std::vector<Tensor>& ts);
// Pointwise: a batched operand as [B, 1, ..., logical sizes] with `rank` dims after the batch,
// so it broadcasts against the others as the logical operands do; an unbatched one as it is.
Tensor aligned(const Tensor& t, int64_t level, int64_t rank);
inline std::optional<Tensor> aligned(const std::optional<Tensor>& t, int64_t level, int64_t rank) {
  if (!t) return std::nullopt;
  return aligned(*t, level, rank);
}
// A pointwise rule gives the logical result dtype unless a batched 0-dim operand meets operands
// of other dtypes (its value has a dim, which would change type promotion).
bool pointwise_promotes_alike(std::initializer_list<const Tensor*> tensors, int64_t level);
// expand / broadcast_to: the value padded to `sizes`' rank, then expanded behind the batch.
Tensor expand_value(const Tensor& t, int64_t level, const IntList& sizes, bool broadcast_to);
// cat / stack: every tensor's value with the batch in front (unbatched ones expanded to it).
std::vector<Tensor> fronts(const std::vector<Tensor>& ts, int64_t level);
// matmul of logical operands a and b (either batched at `level`): vectors become the row / column
// matmul makes of them, the batched value's batch dims are padded so that they broadcast as the
// logical ones do, and the added dims are dropped again. The result's batch is in front.
Tensor matmul_value(const Tensor& a, const Tensor& b, int64_t level);
// repeat / tile of a batched self: the value, with ones for the new leading logical dims after
// the batch, repeated once along the batch.
Tensor repeat_value(const Tensor& self, int64_t level, IntList repeats);

// Refusals with PyTorch's messages.
[[noreturn]] void unbatched_inplace(const char* op);
[[noreturn]] void out_in_vmap(const char* op);
[[noreturn]] void random_in_error_mode();
void check_random_allowed();  // raises in randomness='error' at any active level

// The loop that runs an op without a batching rule: once per batch element, on the slices,
// stacking the results (Note [fallback]).
class Slicer {
 public:
  Slicer(int64_t level, int64_t index) : level_(level), index_(index) {}
  Tensor operator()(const Tensor& t);
  std::optional<Tensor> operator()(const std::optional<Tensor>& t) {
    if (!t) return std::nullopt;
    return (*this)(*t);
  }
  std::vector<Tensor> operator()(const std::vector<Tensor>& ts) {
    std::vector<Tensor> out;
    for (const Tensor& t : ts) out.push_back((*this)(t));
    return out;
  }
  std::vector<std::optional<Tensor>> operator()(const std::vector<std::optional<Tensor>>& ts) {
    std::vector<std::optional<Tensor>> out;
    for (const auto& t : ts) out.push_back((*this)(t));
    return out;
  }
  template <class T>
  const T& operator()(const T& x) {
    return x;
  }

 private:
  int64_t level_, index_;
  std::map<const TensorImpl*, Tensor> slices_;  // one slice per tensor, so out=self stays self
};

void note_fallback(const char* op);
Tensor stack_slices(const char* op, const std::vector<Tensor>& slices, int64_t level);

template <class R>
struct Stacked;
template <>
struct Stacked<Tensor> {
  std::vector<Tensor> parts;
  void add(Tensor r) { parts.push_back(std::move(r)); }
  Tensor finish(const char* op, int64_t level) { return stack_slices(op, parts, level); }
};
template <>
struct Stacked<std::vector<Tensor>> {
  std::vector<std::vector<Tensor>> parts;
  void add(std::vector<Tensor> r) {
    if (!parts.empty())
      EMBER_CHECK(r.size() == parts.front().size(), Error, "vmap: the loop over the batch got ",
                  parts.front().size(), " and ", r.size(), " outputs for different batch elements");
    parts.resize(r.size());
    for (size_t i = 0; i < r.size(); ++i) parts[i].push_back(std::move(r[i]));
  }
  std::vector<Tensor> finish(const char* op, int64_t level) {
    std::vector<Tensor> out;
    for (const auto& p : parts) out.push_back(stack_slices(op, p, level));
    return out;
  }
};
// A tuple of Tensor and Tensor? results (FBGEMM's sparse ops): a Tensor? entry is None in the
// stacked result when every batch element returned None, and an error when only some did.
template <class... T>
struct Stacked<std::tuple<T...>> {
  std::vector<std::vector<Tensor>> parts = std::vector<std::vector<Tensor>>(sizeof...(T));
  std::vector<size_t> nones = std::vector<size_t>(sizeof...(T), 0);
  static void put(std::vector<Tensor>& p, size_t&, const Tensor& x) { p.push_back(x); }
  static void put(std::vector<Tensor>& p, size_t& none, const std::optional<Tensor>& x) {
    if (x.has_value())
      p.push_back(*x);
    else
      ++none;
  }
  void add(std::tuple<T...> r) {
    std::apply(
        [&](auto&... x) {
          size_t i = 0;
          ((put(parts[i], nones[i], x), ++i), ...);
        },
        r);
  }
  std::tuple<T...> finish(const char* op, int64_t level) {
    return finish(op, level, std::index_sequence_for<T...>{});
  }
  template <size_t... I>
  std::tuple<T...> finish([[maybe_unused]] const char* op, [[maybe_unused]] int64_t level,
                          std::index_sequence<I...>) {
    return std::tuple<T...>{finish_one<T>(op, level, I)...};
  }
  template <class U>
  U finish_one(const char* op, int64_t level, size_t i) {
    if constexpr (std::is_same_v<U, std::optional<Tensor>>) {
      if (parts[i].empty()) return std::nullopt;
      EMBER_CHECK(nones[i] == 0, Error, "vmap: the loop over the batch of ", op, " got None for ", nones[i],
                  " batch elements and a tensor for ", parts[i].size(), " in output ", i);
    }
    return stack_slices(op, parts[i], level);
  }
};

// `self` is the tensor an in-place op writes (nullptr otherwise); `generator` is the random op's
// generator (nullptr: not random; the default one when the argument is None).
template <class R, class F>
R fallback(const char* op, int64_t level, const Tensor* self, Generator* generator, int64_t size, F&& call) {
  if (generator) check_random_allowed();
  note_fallback(op);
  if (self)
    EMBER_CHECK(batched_at(*self, level), Error, "vmap: ", op,
                "(self, *extra_args) is not possible "
                "because self is not batched while other arguments are; write the result to a new tensor");
  EMBER_CHECK(size > 0, Error, "vmap: ", op,
              " has no batching rule and runs as a loop over the batch, which "
              "needs at least one batch element");
  const bool same = generator && randomness_of(level) == Randomness::Same;
  const GeneratorState start = same ? generator->state() : GeneratorState();
  Stacked<R> results;
  for (int64_t b = 0; b < size; ++b) {
    if (same) generator->set_state(start);  // each element draws the same numbers
    Slicer s(level, b);
    if (self) {
      call(s);
    } else {
      results.add(call(s));
    }
  }
  if constexpr (std::is_same_v<R, Tensor>) {
    if (self) return *self;
  }
  return results.finish(op, level);
}

// Factory random ops (rand(size), ...): one draw per batch element of every level in
// randomness='different' (the size gains those batch dims), one shared draw for 'same'.
template <class F>
Tensor random_factory(const IntList& size, F&& draw) {
  check_random_allowed();
  std::vector<int64_t> levels;
  IntList full;
  for (int64_t l : active_levels()) {
    if (randomness_of(l) != Randomness::Different) continue;
    levels.push_back(l);
    full.push_back(batch_size_of(l));
  }
  full.insert(full.end(), size.begin(), size.end());
  Tensor out = draw(full);
  for (int64_t l : levels) out = wrap(out, l);  // outermost first: each wrap takes the front dim
  return out;
}

}  // namespace ember::vmap
