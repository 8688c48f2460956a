// vmap levels, batched tensors and the pieces of batching rules (Note [batched tensors] in
// ember/vmap.h).
#include "ember/vmap.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>

#include "batching.h"
#include "ops/dims.h"

namespace ember::vmap {

namespace {

struct Level {
  int64_t number, batch_size;
  Randomness randomness;
};
// Note [vmap levels]: numbers only grow (process-wide), so a level is never reused: a graph
// recorded under a vmap that has exited still names its own level when backward runs inside a
// later one. An inner vmap always has a larger number than the ones around it.
std::atomic<int64_t> last_level{0};
thread_local std::vector<Level> levels;  // the active ones, outermost first
thread_local int rule_depth = 0;

std::mutex fallback_mutex;
std::set<std::string> fallbacks_seen;
std::vector<std::string> fallbacks_new;

Tensor make_batched(const Tensor& value, int64_t bdim, int64_t level) {
  auto impl = std::make_shared<TensorImpl>();
  const TensorImpl& v = *value.impl();
  impl->storage = v.storage;
  impl->sizes = v.sizes;
  impl->strides = v.strides;
  impl->sizes.erase(impl->sizes.begin() + bdim);
  impl->strides.erase(impl->strides.begin() + bdim);
  impl->storage_offset = v.storage_offset;
  impl->dtype = v.dtype;
  impl->version_counter = v.version_counter;
  impl->batched = std::make_shared<BatchedInfo>(BatchedInfo{value, bdim, level});
  return Tensor(std::move(impl));
}

// Backward of add_batch_dim: the gradient's batch goes back to where the input had it.
struct AddBatchDimBackward final : Node {
  int64_t bdim, level, batch_size;
  std::string name() const override { return "AddBatchDimBackward0"; }
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override {
    return {remove_batch_dim(grads[0], level, batch_size, bdim)};
  }
};

// Backward of remove_batch_dim: the gradient's dimension out_dim is the batch again.
struct RemoveBatchDimBackward final : Node {
  int64_t out_dim, level;
  std::string name() const override { return "RemoveBatchDimBackward0"; }
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override {
    return {add_batch_dim(grads[0], out_dim, level)};
  }
};

}  // namespace

int64_t enter_level(int64_t batch_size, Randomness randomness) {
  EMBER_CHECK(batch_size >= 0, ValueError, "[vmap] expected a batch size >= 0, but got ", batch_size);
  levels.push_back({++last_level, batch_size, randomness});
  return levels.back().number;
}

void exit_level(int64_t level) {
  EMBER_CHECK(!levels.empty() && levels.back().number == level, Error, "[vmap] exiting level ", level,
              " but the innermost level is ", current_level());
  levels.pop_back();
}

int64_t current_level() {
  return levels.empty() ? 0 : levels.back().number;
}

std::vector<int64_t> active_levels() {
  std::vector<int64_t> out;
  for (const Level& l : levels) out.push_back(l.number);
  return out;
}

int64_t batch_size_of(int64_t level) {
  for (const Level& l : levels)
    if (l.number == level) return l.batch_size;
  throw Error("[vmap] level " + std::to_string(level) + " is not active");
}

Randomness randomness_of(int64_t level) {
  for (const Level& l : levels)
    if (l.number == level) return l.randomness;
  return Randomness::Error;  // a level that has exited (backward after vmap returned) draws nothing
}

bool is_batched(const Tensor& t) {
  return t.defined() && t.impl()->batched != nullptr;
}

const BatchedInfo* batched_info(const Tensor& t) {
  return t.defined() ? t.impl()->batched.get() : nullptr;
}

// Note [level order]: a batched tensor's value only holds levels below its own, so an op can
// unwrap the innermost level first. Backward can meet a graph recorded under a vmap that has
// exited while a later (larger) level is active; inserting or extracting a level then goes
// beneath the larger ones.
namespace {

bool contains_level(const Tensor& t, int64_t level) {
  for (const BatchedInfo* b = batched_info(t); b && b->level >= level; b = batched_info(b->value))
    if (b->level == level) return true;
  return false;
}

// t's logical dim d becomes the batch of `level` (no autograd).
Tensor insert_level(const Tensor& t, int64_t d, int64_t level) {
  const BatchedInfo* b = batched_info(t);
  if (!b || b->level < level) return make_batched(t, d, level);
  EMBER_CHECK(b->level != level, Error, "[vmap] the tensor is already batched at level ", level);
  const int64_t dv = d < b->bdim ? d : d + 1;  // d among the value's dims
  Tensor inner = insert_level(b->value, dv, level);
  return make_batched(inner, b->bdim < dv ? b->bdim : b->bdim - 1, b->level);
}

// The batch of `level` (which t contains) becomes t's logical dim `out` (no autograd).
Tensor extract_level(const Tensor& t, int64_t level, int64_t out) {
  const BatchedInfo* b = batched_info(t);
  if (b->level == level) {
    RuleGuard guard;
    return autograd::alias(autograd::movedim(b->value, {b->bdim}, {out}));
  }
  const int64_t out_v = out <= b->bdim ? out : out + 1;
  Tensor inner = extract_level(b->value, level, out_v);
  return make_batched(inner, out <= b->bdim ? b->bdim + 1 : b->bdim, b->level);
}

}  // namespace

Tensor add_batch_dim(const Tensor& physical, int64_t bdim, int64_t level) {
  EMBER_CHECK(physical.defined(), ValueError, "[vmap] expected a defined tensor");
  EMBER_CHECK(physical.dim() > 0, ValueError, "[vmap] can't map over a 0-dim tensor");
  bdim = dims::wrap("vmap", bdim, physical.dim());
  Tensor out = insert_level(physical, bdim, level);
  if (autograd::any_requires_grad({&physical})) {
    auto node = std::make_shared<AddBatchDimBackward>();
    node->bdim = bdim;
    node->level = level;
    node->batch_size = physical.size(bdim);
    autograd::collect_edges(*node, {&physical});
    autograd::set_history({&out}, node, {physical});
  }
  if (forward_ad::any_tangent({&physical})) {
    const Tensor t = forward_ad::tangent(physical);
    forward_ad::PauseGuard pause;
    forward_ad::set_tangent(out, add_batch_dim(t, bdim, level));
  }
  return out;
}

Tensor remove_batch_dim(const Tensor& logical, int64_t level, int64_t batch_size, int64_t out_dim) {
  const int64_t d = dims::wrap("vmap", out_dim, logical.dim() + 1);
  if (!contains_level(logical, level)) {  // the same for every batch element: expanded (a view, as PyTorch)
    IntList sizes = logical.sizes();
    sizes.insert(sizes.begin() + d, batch_size);
    return autograd::expand(autograd::unsqueeze(logical, d), sizes);
  }
  Tensor out = extract_level(logical, level, d);
  if (autograd::any_requires_grad({&logical})) {
    auto node = std::make_shared<RemoveBatchDimBackward>();
    node->out_dim = d;
    node->level = level;
    autograd::collect_edges(*node, {&logical});
    autograd::set_history({&out}, node, {logical});
  }
  if (forward_ad::any_tangent({&logical})) {
    const Tensor t = forward_ad::tangent(logical);
    forward_ad::PauseGuard pause;
    forward_ad::set_tangent(out, remove_batch_dim(t, level, batch_size, d));
  }
  return out;
}

std::vector<int64_t> levels_of(const Tensor& t) {
  std::vector<int64_t> out;
  for (const BatchedInfo* b = batched_info(t); b; b = batched_info(b->value)) out.push_back(b->level);
  return out;
}

Tensor sum_exited_levels(const Tensor& grad, const std::vector<int64_t>& keep) {
  Tensor g = grad;
  for (int64_t level : levels_of(grad)) {
    const bool active =
        std::any_of(levels.begin(), levels.end(), [&](const Level& l) { return l.number == level; });
    if (active || std::find(keep.begin(), keep.end(), level) != keep.end()) continue;
    const BatchedInfo* b = batched_info(g);
    int64_t size = -1;
    for (; b; b = batched_info(b->value))
      if (b->level == level) size = b->value.size(b->bdim);
    g = autograd::sum(remove_batch_dim(g, level, size, 0), IntList{0}, false, std::nullopt);
  }
  return g;
}

std::vector<std::string> take_new_fallbacks() {
  std::lock_guard<std::mutex> lock(fallback_mutex);
  std::vector<std::string> out;
  out.swap(fallbacks_new);
  return out;
}

// ---- pieces of the rules (batching.h) ----

bool in_rule() {
  return rule_depth > 0;
}
RuleDepth::RuleDepth() {
  ++rule_depth;
}
RuleDepth::~RuleDepth() {
  --rule_depth;
}

Tensor front(const Tensor& t, int64_t level) {
  const BatchedInfo* b = batched_info(t);
  if (!b || b->level != level) return t;
  return b->bdim == 0 ? b->value : autograd::movedim(b->value, {b->bdim}, {0});
}

Tensor wrap(const Tensor& physical, int64_t level) {
  return make_batched(physical, 0, level);
}

Tensor reduction_input(const Tensor& self, int64_t level) {
  const Tensor p = front(self, level);
  return self.dim() == 0 ? autograd::unsqueeze(p, 1) : p;
}

Tensor reduction_result(const Tensor& r, int64_t rank) {
  return rank == 0 && r.dim() == 2 ? autograd::squeeze(r, IntList{1}) : r;
}

IntList squeeze_dims(const Tensor& self, const std::optional<IntList>& dims, const char* op) {
  if (dims) return shift_dims(*dims, self.dim(), op);
  IntList out;
  for (int64_t d = 0; d < self.dim(); ++d)
    if (self.sizes()[d] == 1) out.push_back(d + 1);
  return out;
}

IntList with_batch(const IntList& shape, int64_t first) {
  IntList out{first};
  out.insert(out.end(), shape.begin(), shape.end());
  return out;
}

bool same_rank(const std::vector<Tensor>& ts) {
  for (const Tensor& t : ts)
    if (t.dim() != ts.front().dim()) return false;
  return true;
}

int64_t shift_dim(int64_t dim, int64_t rank, const char* op) {
  return dims::wrap(op, dim, rank) + 1;
}

IntList shift_dims(const IntList& dims, int64_t rank, const char* op) {
  IntList out;
  for (int64_t d : dims) out.push_back(shift_dim(d, rank, op));
  return out;
}

IntList reduce_dims(const std::optional<IntList>& dims, int64_t rank, const char* op) {
  if (rank == 0) {
    for (int64_t d : dims.value_or(IntList{})) (void)dims::wrap(op, d, 0);
    return {1};
  }
  if (dims && !dims->empty()) return shift_dims(*dims, rank, op);
  IntList all;
  for (int64_t d = 1; d <= rank; ++d) all.push_back(d);
  return all;
}

Tensor aligned(const Tensor& t, int64_t level, int64_t rank) {
  if (!batched_at(t, level)) return t;
  Tensor p = front(t, level);
  const int64_t missing = rank - t.dim();
  if (missing <= 0) return p;
  IntList sizes = p.sizes();
  sizes.insert(sizes.begin() + 1, missing, 1);
  return autograd::view(p, sizes);
}

bool pointwise_promotes_alike(std::initializer_list<const Tensor*> tensors, int64_t level) {
  bool batched_scalar = false, mixed = false;
  std::optional<DType> first;
  for (const Tensor* t : tensors) {
    // wrapped numbers rank below any tensor and bool below any dtype: neither changes the outcome
    if (!t || !t->defined() || t->impl()->is_wrapped_number || t->dtype() == DType::Bool) continue;
    batched_scalar = batched_scalar || (batched_at(*t, level) && t->dim() == 0);
    if (first && *first != t->dtype()) mixed = true;
    first = t->dtype();
  }
  return !(batched_scalar && mixed);
}

Tensor expand_value(const Tensor& t, int64_t level, const IntList& sizes, bool broadcast_to) {
  const int64_t missing = static_cast<int64_t>(sizes.size()) - t.dim();
  EMBER_CHECK(missing >= 0, Error, "[", broadcast_to ? "broadcast_to" : "expand",
              "] the number of sizes provided (", sizes.size(),
              ") must be greater or equal to the number of "
              "dimensions in the tensor (",
              t.dim(), ")");
  Tensor p = aligned(t, level, static_cast<int64_t>(sizes.size()));
  IntList full = sizes;
  full.insert(full.begin(), p.size(0));
  return broadcast_to ? autograd::broadcast_to(p, full) : autograd::expand(p, full);
}

std::vector<Tensor> fronts(const std::vector<Tensor>& ts, int64_t level) {
  int64_t size = -1;
  for (const Tensor& t : ts)
    if (batched_at(t, level)) size = batched_info(t)->value.size(batched_info(t)->bdim);
  std::vector<Tensor> out;
  for (const Tensor& t : ts) {
    if (batched_at(t, level)) {
      out.push_back(front(t, level));
    } else {
      IntList sizes = t.sizes();
      sizes.insert(sizes.begin(), size);
      out.push_back(autograd::expand(autograd::unsqueeze(t, 0), sizes));
    }
  }
  return out;
}

Tensor matmul_value(const Tensor& a, const Tensor& b, int64_t level) {
  const int64_t rank = std::max<int64_t>({a.dim(), b.dim(), 2});  // logical rank once vectors are matrices
  auto physical = [&](const Tensor& t, int64_t vector_dim) {
    const bool batched = batched_at(t, level);
    Tensor v = batched ? front(t, level) : t;
    if (t.dim() == 1) v = autograd::unsqueeze(v, vector_dim + (batched ? 1 : 0));
    if (batched) {  // [B, 1, ..., sizes]: the logical batch dims line up from the right
      while (v.dim() < rank + 1) v = autograd::unsqueeze(v, 1);
    }
    return v;
  };
  // [B, logical batch dims (rank - 2 of them), m, n]; then the vectors' dims go again
  Tensor r = autograd::matmul(physical(a, 0), physical(b, 1));
  if (b.dim() == 1) r = autograd::squeeze(r, IntList{-1});
  if (a.dim() == 1) r = autograd::squeeze(r, IntList{b.dim() == 1 ? -1 : -2});
  return r;
}

Tensor repeat_value(const Tensor& self, int64_t level, IntList repeats) {
  while (repeats.size() < static_cast<size_t>(self.dim())) repeats.insert(repeats.begin(), 1);  // tile
  const Tensor v = front(self, level);
  IntList shape{v.size(0)};
  shape.insert(shape.end(), repeats.size() - static_cast<size_t>(self.dim()), 1);
  for (int64_t d = 1; d < v.dim(); ++d) shape.push_back(v.size(d));
  repeats.insert(repeats.begin(), 1);
  return autograd::repeat(autograd::reshape(v, shape), repeats);
}

void unbatched_inplace(const char* op) {
  throw Error(std::string("vmap: ") + op +
              "(self, *extra_args) is not possible because self is not batched "
              "while other arguments are (the result would need a batch dimension self does not have); "
              "write the result to a new tensor instead");
}

void out_in_vmap(const char* op) {
  throw NotImplementedError(std::string("[") + op +
                            "] vmap does not support out= arguments; use the result "
                            "the op returns");
}

void random_in_error_mode() {
  throw Error(
      "vmap: called random operation while in randomness error mode. Please either use the 'same' or "
      "'different' randomness flags on vmap or perform the randomness operation out of vmap");
}

void check_random_allowed() {
  for (const Level& l : levels)
    if (l.randomness == Randomness::Error) random_in_error_mode();
}

Tensor Slicer::operator()(const Tensor& t) {
  const BatchedInfo* b = batched_info(t);
  if (!b || b->level != level_) return t;
  auto it = slices_.find(t.impl());
  if (it != slices_.end()) return it->second;
  Tensor s = autograd::select(b->value, b->bdim, index_);
  slices_.emplace(t.impl(), s);
  return s;
}

void note_fallback(const char* op) {
  std::lock_guard<std::mutex> lock(fallback_mutex);
  if (fallbacks_seen.insert(op).second) fallbacks_new.emplace_back(op);
}

// Note [fallback]: an op without a batching rule runs once per batch element and the results are
// stacked. That is always right for ops whose output shape does not depend on the data; when it
// does (nonzero, masked_select, unique) and differs between elements, this raises.
Tensor stack_slices(const char* op, const std::vector<Tensor>& slices, int64_t level) {
  for (const Tensor& s : slices) {
    EMBER_CHECK(s.sizes() == slices.front().sizes(), Error, "vmap: ", op,
                " returned outputs of different shapes for different batch elements (its output shape "
                "depends on the data), which vmap cannot batch");
  }
  return wrap(autograd::stack(slices, 0), level);
}

}  // namespace ember::vmap
