// The autograd engine: nodes, saved variables, grad mode, leaf accumulation and backward
// (interface and overview in ember/autograd.h; docs/dev/autograd.md).
#include <algorithm>
#include <atomic>
#include <map>
#include <queue>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "autograd/formulas_select.h"
#include "ember/autograd.h"
#include "ember/dispatch_mode.h"
#include "ember/error.h"
#include "ember/ops.h"
#include "ember/vmap.h"

namespace ember {

namespace {
std::atomic<uint64_t> next_sequence_nr{0};
thread_local bool grad_enabled = true;
thread_local bool grad_layout_enforced = true;
thread_local bool view_replay_enabled = false;  // Note [view replay]

std::string dims_text(const IntList& sizes) {
  std::string shape = "[";
  for (size_t i = 0; i < sizes.size(); ++i) shape += (i ? ", " : "") + std::to_string(sizes[i]);
  return shape + "]";
}

std::string describe(const Tensor& t) {
  return std::string(dtype_name(t.dtype())) + " tensor of shape " + dims_text(t.sizes());
}

// A new TensorImpl viewing the same memory (and version counter), without autograd state.
Tensor shallow_alias(const Tensor& t) {
  auto impl = std::make_shared<TensorImpl>(*t.impl());
  impl->autograd_meta = nullptr;
  impl->requires_grad = false;
  impl->is_wrapped_number = false;
  return Tensor(std::move(impl));
}

bool is_differentiable_dtype(DType d) {
  return is_floating_point(d) || is_complex(d);
}

InputMeta meta_of(const Tensor& t) {
  if (!t.defined()) return {};
  return {t.sizes(), t.dtype(), t.device(), vmap::levels_of(t)};
}

// Every element at its own address and no gap between them, in whatever order of dimensions.
bool non_overlapping_and_dense(const Tensor& t) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size) of the dimensions that matter
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.sizes()[d] == 0) return true;
    if (t.sizes()[d] != 1) dims.emplace_back(t.strides()[d], t.sizes()[d]);
  }
  std::sort(dims.begin(), dims.end());
  int64_t expected = 1;
  for (const auto& [stride, size] : dims) {
    if (stride != expected) return false;
    expected *= size;
  }
  return true;
}

// The sink of a leaf: adds each gradient that reaches it into leaf.grad.
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(Tensor leaf) : leaf_(std::move(leaf)) {
    input_meta.clear();
    output_meta.push_back(meta_of(leaf_));
  }
  std::string name() const override { return "AccumulateGrad"; }
  const Tensor& leaf() const { return leaf_; }
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override {
    Tensor g = std::move(grads.at(0));
    if (!g.defined()) return {};
    // Without create_graph the stored gradient is plain data: a buffer only .grad holds.
    AutogradMeta& m = autograd::meta(leaf_);
    for (const auto& [id, hook] :
         std::vector<std::pair<uint64_t, std::function<Tensor(const Tensor&)>>>(m.leaf_hooks)) {
      Tensor replaced = hook(g);
      if (replaced.defined()) g = replaced;
    }
    if (GradMode::is_enabled()) {
      m.grad = m.grad.defined() ? autograd::add(m.grad, g, Scalar(int64_t(1)), std::nullopt) : g;
    } else if (m.grad.defined()) {
      // in place, as PyTorch accumulates; a Python tensor's subclass does it, and a dispatch mode
      // sees it (Note [Python tensors])
      if (dispatch_mode::is_python_tensor(m.grad) || dispatch_mode::is_python_tensor(g) ||
          dispatch_mode::active()) {
        autograd::add(m.grad, g, Scalar(int64_t(1)), m.grad);
      } else {
        ember::add(m.grad, g, Scalar(int64_t(1)), m.grad);
      }
    } else {
      // Note [stolen gradient]: a contiguous gradient that nothing else holds (this node, its
      // storage unshared) becomes .grad itself, as PyTorch steals it; anything else is copied.
      // Either way .grad is laid out as the leaf is (a channels-last weight, a channels-last grad).
      // With the layout policy off (enforce_grad_layout_policy(False)) any dense, non-overlapping
      // gradient is stolen as it is laid out; an overlapping one (an expanded gradient) never is,
      // since accumulating into it in place would be wrong.
      const MemoryFormat layout =
          g.dim() == leaf_.dim() ? suggest_memory_format(leaf_) : MemoryFormat::Contiguous;
      const bool laid_out =
          GradLayoutPolicy::is_enforced() ? g.is_contiguous(layout) : non_overlapping_and_dense(g);
      // (A view's record of its base is the one other holder allowed: a base only that keeps alive.)
      const AutogradMeta* gm = g.impl()->autograd_meta.get();
      const bool lone_base = gm && gm->view_base.defined() && gm->view_base.impl_ptr().use_count() == 1;
      const bool alone = g.impl_ptr().use_count() == 1 && g.storage() &&
                         g.storage().use_count() == (lone_base ? 2 : 1) && laid_out &&
                         g.storage_offset() == 0 && g.sizes() == leaf_.sizes();
      if (alone) {
        m.grad = g;
      } else if (dispatch_mode::is_python_tensor(g) || dispatch_mode::active()) {
        m.grad = autograd::clone(g);  // its subclass (or a mode) sees the copy (Note [Python tensors])
      } else {
        m.grad = empty(g.sizes(), g.dtype(), g.device(), layout);
        copy_same_shape(m.grad, g);
      }
    }
    for (const auto& hook : std::vector<std::function<void()>>(m.post_accumulate_hooks)) hook();
    return {};
  }

 private:
  Tensor leaf_;
};

class NotImplementedBackward final : public Node {
 public:
  explicit NotImplementedBackward(std::string op) : op_(std::move(op)) {}
  std::string name() const override { return "NotImplemented<" + op_ + ">"; }
  std::vector<Tensor> apply(std::vector<Tensor>&&) override {
    throw NotImplementedError("[" + op_ + "] the derivative for '" + op_ + "' is not implemented");
  }

 private:
  std::string op_;
};

bool shares_memory(const Tensor& a, const Tensor& b) {
  return a.storage() != nullptr && a.storage() == b.storage();
}

// The first tensor of the chain of views `t` belongs to (t itself when it is not a view).
Tensor root_of(const Tensor& t) {
  const auto& m = t.impl()->autograd_meta;
  return m && m->view_base.defined() ? m->view_base : t;
}

// What a view of `t` inherits of how `t` was made (Note [view creation]).
ViewCreation inherited_creation(const Tensor& t) {
  const auto& m = t.impl()->autograd_meta;
  return m && m->view_base.defined() ? m->view_creation : ViewCreation::Default;
}

// Note [in-place on views]: the history of a base after one of its views was written in place.
// The base's gradient passes through unchanged, except on the view's elements, where it becomes
// what the in-place op's backward (`fn`) gives for the view's previous values. Gradients move
// between the base's and the view's layouts through storage positions (as as_strided's do).
class CopySlices final : public Node {
 public:
  CopySlices(const Tensor& base, const Tensor& view, std::shared_ptr<Node> fn)
      : base_sizes_(base.sizes()),
        base_strides_(base.strides()),
        base_offset_(base.storage_offset()),
        view_sizes_(view.sizes()),
        view_strides_(view.strides()),
        view_offset_(view.storage_offset()),
        fn_(std::move(fn)) {
    const bool flows = autograd::requires_grad(base);
    next_edges.push_back(flows ? autograd::gradient_edge(base) : Edge{});
    input_meta.push_back(flows ? meta_of(base) : InputMeta{});
    for (size_t i = 1; i < fn_->next_edges.size(); ++i) {
      next_edges.push_back(fn_->next_edges[i]);
      input_meta.push_back(fn_->input_meta[i]);
    }
  }
  std::string name() const override { return "CopySlices"; }
  void release_variables() override { fn_->release_variables(); }
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;

 private:
  IntList base_sizes_, base_strides_;
  int64_t base_offset_;
  IntList view_sizes_, view_strides_;
  int64_t view_offset_;
  std::shared_ptr<Node> fn_;  // the in-place op's node (its input 0 is the view)
};

// Gives a view whose memory was written through another alias the history "as_strided of the
// base" (Note [in-place on views]), or its recorded view ops replayed on the base (Note [view replay]).
void regenerate_view(const Tensor& view, AutogradMeta& m) {
  m.view_version = view.version();
  const Tensor base = m.view_base;
  if (m.view_fn) {
    GradModeGuard recording(true);
    forward_ad::PauseGuard no_tangents;
    const Tensor fresh = m.view_fn(base);
    EMBER_CHECK(fresh.sizes() == view.sizes() && fresh.strides() == view.strides() &&
                    fresh.storage_offset() == view.storage_offset() && fresh.impl()->autograd_meta,
                Error,
                "[autograd] replaying a view's ops on its base (view replay) did not give the view back");
    m.grad_fn = fresh.impl()->autograd_meta->grad_fn;
    m.output_nr = fresh.impl()->autograd_meta->output_nr;
    view.impl()->requires_grad = true;
    return;
  }
  EMBER_CHECK(
      base.dtype() == view.dtype(), NotImplementedError,
      "[autograd] a view whose dtype differs from its base's (view_as_real, view_as_complex) cannot be "
      "used after its base was modified in place while requiring grad");
  GradModeGuard recording(true);
  forward_ad::PauseGuard no_tangents;
  const Tensor fresh = autograd::as_strided(base, view.sizes(), view.strides(), view.storage_offset());
  m.grad_fn = fresh.impl()->autograd_meta->grad_fn;
  m.output_nr = 0;
  view.impl()->requires_grad = true;
}

// "Output 0 of Split": a node's name without its "Backward<n>" ending, as PyTorch's messages say it.
std::string short_node_name(const Node& fn) {
  std::string name = fn.name();
  size_t end = name.size();
  while (end > 0 && name[end - 1] >= '0' && name[end - 1] <= '9') --end;
  constexpr std::string_view kBackward = "Backward";
  if (end >= kBackward.size() && name.compare(end - kBackward.size(), kBackward.size(), kBackward) == 0)
    name.resize(end - kBackward.size());
  return name;
}

// Raises PyTorch's error when `view` may not be written in place (indirect: its base or a sibling
// was written) because of how it was made (Note [view creation]).
void check_view_creation(const char* op, const Tensor& view, bool indirect) {
  const AutogradMeta* m = view.impl()->autograd_meta.get();
  if (!m || m->view_creation == ViewCreation::Default) return;
  const std::string what = indirect ? "its base or another view of its base has been" : "is being";
  const Node* fn = m->grad_fn.get();
  const std::string output =
      fn ? "Output " + std::to_string(m->output_nr) + " of " + short_node_name(*fn) : "";
  std::string msg;
  if (m->view_creation == ViewCreation::NoGrad || !fn) {
    msg = (fn ? output + " is a view of a view which was created in" : std::string("A view was created in")) +
          " no_grad mode and " + what + " modified inplace with grad mode enabled.";
  } else {
    msg = output + " is a view and " + what + " modified inplace.";
  }
  switch (m->view_creation) {
    case ViewCreation::MultiOutput:
      msg +=
          " This view is the output of a function that returns multiple views. Such functions do not allow "
          "the output views to be modified inplace. You should replace the inplace operation by an "
          "out-of-place one.";
      break;
    case ViewCreation::NoGrad:
      msg +=
          " Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your "
          "code by moving both the view and the inplace either both inside the no_grad block (if you "
          "don't want the inplace to be tracked) or both outside (if you want the inplace to be tracked).";
      break;
    case ViewCreation::CustomFunction:
      msg +=
          " This view was created inside a custom Function (or because an input was returned as-is) and "
          "the autograd logic to handle view+inplace would override the custom backward associated with "
          "the custom Function, leading to incorrect gradients. This behavior is forbidden. You can fix "
          "this by cloning the output of the custom Function.";
      break;
    case ViewCreation::Default: break;
  }
  throw Error("[" + std::string(op ? op : "autograd") + "] " + msg);
}

// Brings a view's history up to date after its memory was written through another alias. For a
// view whose kind forbids that (Note [view creation]) while its base requires grad, nothing is
// remade: asking for the history (`for_history`) raises, and otherwise the answer is false ("not
// remade"), the view then counting as requiring grad, as PyTorch's does.
bool refresh_view(const Tensor& t, bool for_history) {
  const auto& m = t.impl()->autograd_meta;
  if (!m || !m->view_base.defined() || m->view_version == t.version()) return true;
  if (autograd::requires_grad(m->view_base)) {
    if (m->view_creation != ViewCreation::Default) {
      if (!for_history) return false;
      check_view_creation(nullptr, t, /*indirect=*/true);
    }
    regenerate_view(t, *m);
  } else {
    m->view_version = t.version();
  }
  return true;
}

}  // namespace

// ---- nodes --------------------------------------------------------------------------------

namespace {
std::atomic<bool> anomaly_enabled{false};
std::atomic<bool> anomaly_check_nan{true};
std::function<std::string()> anomaly_trace_source;
}  // namespace

bool AnomalyMode::is_enabled() {
  return anomaly_enabled.load();
}
bool AnomalyMode::check_nan() {
  return anomaly_check_nan.load();
}
void AnomalyMode::set_enabled(bool enabled, bool check_nan) {
  anomaly_enabled = enabled;
  anomaly_check_nan = check_nan;
}
void AnomalyMode::set_trace_source(std::function<std::string()> source) {
  anomaly_trace_source = std::move(source);
}

Node::Node() : sequence_nr(next_sequence_nr++) {
  if (anomaly_enabled.load() && anomaly_trace_source) creation_trace = anomaly_trace_source();
}

// Note [iterative node release]: dropping the last reference to the head of a long chain would
// destroy node after node recursively and overflow the stack. The outermost destructor on a
// thread instead collects the next nodes and releases them one at a time.
Node::~Node() {
  thread_local std::vector<std::shared_ptr<Node>>* draining = nullptr;
  std::vector<std::shared_ptr<Node>> next;
  for (Edge& e : next_edges) {
    if (e.fn) next.push_back(std::move(e.fn));
  }
  if (draining) {
    for (auto& n : next) draining->push_back(std::move(n));
    return;
  }
  draining = &next;
  while (!next.empty()) {
    std::shared_ptr<Node> n = std::move(next.back());
    next.pop_back();
    n.reset();  // may push n's own next nodes onto `next`
  }
  draining = nullptr;
}

// ---- saved variables ----------------------------------------------------------------------

// Note [saved-tensor hooks]: the pairs pushed by saved_tensors_hooks, per thread. A hook runs
// with the pairs pushed before it hidden, so the ops it calls save their tensors plainly instead of
// recursing; pairs the hook pushes itself apply (a checkpoint recomputing inside an unpack hook).
namespace {
thread_local std::vector<std::shared_ptr<const SavedTensorHooks>> saved_hooks;
thread_local size_t saved_hooks_floor = 0;  // pairs below this index are hidden

struct InSavedHook {
  InSavedHook() : prev_(saved_hooks_floor) { saved_hooks_floor = saved_hooks.size(); }
  ~InSavedHook() { saved_hooks_floor = prev_; }
  size_t prev_;
};
}  // namespace

void SavedTensorHooks::push(std::shared_ptr<const SavedTensorHooks> hooks) {
  saved_hooks.push_back(std::move(hooks));
}
void SavedTensorHooks::pop() {
  EMBER_CHECK(!saved_hooks.empty(), Error, "[saved_tensors_hooks] no hooks to pop");
  saved_hooks.pop_back();
}
std::shared_ptr<const SavedTensorHooks> SavedTensorHooks::current() {
  return saved_hooks.size() > saved_hooks_floor ? saved_hooks.back() : nullptr;
}

SavedVariable::SavedVariable(const Tensor& t, bool is_output)
    : is_output_(is_output), was_defined_(t.defined()) {
  if (!t.defined()) return;
  EMBER_CHECK(is_output || !t.is_inference() || InferenceMode::is_enabled(), Error,
              "Inference tensors cannot be saved for backward. To work around you can make a clone to get a "
              "normal tensor and use it in autograd.");
  saved_version_ = t.version();
  requires_grad_ = autograd::requires_grad(t);
  if (is_output) {  // the owner node is this output's grad_fn: keep only the data
    output_nr_ = t.impl()->autograd_meta ? t.impl()->autograd_meta->output_nr : 0;
    data_ = shallow_alias(t);
    auto& fw = autograd::meta(t).fw;  // its tangent is set after the node saved it (forward mode)
    if (!fw) fw = std::make_shared<ForwardGrad>();
    fw_ = fw;
  } else {
    data_ = t;
  }
  if (auto hooks = SavedTensorHooks::current()) {
    // The hooks keep what they like instead (an output goes to pack without its history, which
    // would otherwise lead back to this node); a saved input remembers where it joins the graph.
    if (!is_output && requires_grad_) input_edge_ = autograd::gradient_edge(t);
    InSavedHook inside;
    packed_ = hooks->pack(data_);
    hooks_ = std::move(hooks);
    data_ = Tensor();
  }
}

Tensor SavedVariable::unpack(const std::shared_ptr<Node>& owner) const {
  if (!was_defined_) return Tensor();
  EMBER_CHECK(
      !released_, Error,
      "[backward] Trying to backward through the graph a second time (or directly access saved tensors "
      "after they have already been freed). Saved intermediate values of the graph are freed when you call "
      ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph "
      "a second time or if you need to access saved tensors after calling backward.");
  if (hooks_) {
    Tensor data;
    {
      InSavedHook inside;
      data = hooks_->unpack(packed_);
    }
    EMBER_CHECK(data.defined(), TypeError, "[saved_tensors_hooks] the unpack hook returned no tensor");
    // No version check: what the hooks kept is what backward reads (PyTorch checks none either;
    // allow_mutation_on_saved_tensors relies on it).
    Tensor out = shallow_alias(data);  // the saved tensor's place in the graph, on the unpacked data
    AutogradMeta& m = autograd::meta(out);
    if (is_output_) {
      m.fw = fw_;
      if (!requires_grad_) return out;
      m.grad_fn = owner;
      m.output_nr = output_nr_;
    } else {
      if (!input_edge_.valid()) return out;
      m.grad_fn = input_edge_.fn;
      m.output_nr = input_edge_.input_nr;
    }
    out.impl()->requires_grad = true;
    return out;
  }
  EMBER_CHECK(
      data_.version() == saved_version_, Error,
      "[backward] one of the variables needed for gradient computation has been modified by an inplace "
      "operation: [",
      describe(data_), "], saved by ", owner ? owner->name() : std::string("a node"), ", is at version ",
      data_.version(), "; expected version ", saved_version_, " instead.");
  if (!is_output_) return data_;
  Tensor out = shallow_alias(data_);  // give the output its history and tangent back
  AutogradMeta& m = autograd::meta(out);
  m.fw = fw_;
  if (!requires_grad_) return out;
  m.grad_fn = owner;
  m.output_nr = output_nr_;
  out.impl()->requires_grad = true;
  return out;
}

void SavedVariable::reset() {
  data_ = Tensor();
  fw_ = nullptr;
  packed_ = nullptr;
  hooks_ = nullptr;
  input_edge_ = Edge{};
  released_ = was_defined_;
}

// ---- grad mode ----------------------------------------------------------------------------

bool GradMode::is_enabled() {
  return grad_enabled;
}
void GradMode::set_enabled(bool enabled) {
  grad_enabled = enabled;
}

bool GradLayoutPolicy::is_enforced() {
  return grad_layout_enforced;
}
void GradLayoutPolicy::set_enforced(bool enforced) {
  grad_layout_enforced = enforced;
}

bool ViewReplay::is_enabled() {
  return view_replay_enabled;
}
void ViewReplay::set_enabled(bool enabled) {
  view_replay_enabled = enabled;
}

namespace {
// How to remake `self` (a view, or its base) from its base: its recorded chain, else as_strided
// with its geometry, or nothing to do for the base itself.
std::function<Tensor(const Tensor&)> remake_of(const Tensor& self) {
  const AutogradMeta* sm = self.impl()->autograd_meta.get();
  if (!sm || !sm->view_base.defined()) return nullptr;  // self is the base
  if (sm->view_fn) return sm->view_fn;
  return [sizes = self.sizes(), strides = self.strides(), offset = self.storage_offset()](
             const Tensor& base) { return autograd::as_strided(base, sizes, strides, offset); };
}

// The recorded chain, when `out` is a view whose memory `self` shares.
bool records_view_of(const Tensor& out, const Tensor& self) {
  const AutogradMeta* m = out.defined() ? out.impl()->autograd_meta.get() : nullptr;
  return m && m->view_base.defined() && !out.is_same(self) && shares_memory(out, self);
}
}  // namespace

void record_view_fn(const Tensor& out, const Tensor& self, std::function<Tensor(const Tensor&)> fn) {
  if (!records_view_of(out, self)) return;
  auto parent = remake_of(self);
  out.impl()->autograd_meta->view_fn =
      parent ? [parent, fn](const Tensor& base) { return fn(parent(base)); } : std::move(fn);
}

void record_view_fns(const std::vector<Tensor>& outs, const Tensor& self,
                     std::function<std::vector<Tensor>(const Tensor&)> fn) {
  for (size_t i = 0; i < outs.size(); ++i)
    record_view_fn(outs[i], self, [fn, i](const Tensor& view) { return fn(view).at(i); });
}

namespace autograd {

bool requires_grad(const Tensor& t) {
  if (!t.defined()) return false;
  if (!refresh_view(t, /*for_history=*/false)) return true;
  return t.impl()->requires_grad;
}

std::optional<DType> leaf_grad_dtype(const Tensor& leaf) {
  const AutogradMeta* m = leaf.impl()->autograd_meta.get();
  if (!m || m->grad_dtype_policy == AutogradMeta::GradDtype::Own) return leaf.dtype();
  if (m->grad_dtype_policy == AutogradMeta::GradDtype::Fixed) return m->grad_dtype;
  return std::nullopt;
}

Tensor view_base(const Tensor& t) {
  return t.defined() && t.impl()->autograd_meta ? t.impl()->autograd_meta->view_base : Tensor();
}

Tensor alias(const Tensor& t) {
  return shallow_alias(t);
}

AutogradMeta& meta(const Tensor& t) {
  auto& m = t.impl()->autograd_meta;
  if (!m) m = std::make_shared<AutogradMeta>();
  return *m;
}

std::shared_ptr<Node> grad_fn(const Tensor& t) {
  if (!t.defined() || !t.impl()->autograd_meta) return nullptr;
  refresh_view(t, /*for_history=*/true);
  return t.impl()->autograd_meta->grad_fn;
}

bool is_leaf(const Tensor& t) {
  return grad_fn(t) == nullptr;
}

void set_requires_grad(const Tensor& t, bool flag) {
  EMBER_CHECK(
      is_leaf(t), Error,
      "[requires_grad_] you can only change requires_grad flags of leaf variables. If you want to use a "
      "computed variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach().");
  EMBER_CHECK(
      !flag || is_differentiable_dtype(t.dtype()), Error,
      "[requires_grad_] only Tensors of floating point and complex dtype can require gradients, but got ",
      dtype_name(t.dtype()));
  EMBER_CHECK(!flag || !t.is_inference() || InferenceMode::is_enabled(), Error,
              "Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.");
  t.impl()->requires_grad = flag;
  if (flag) meta(t);
}

Edge gradient_edge(const Tensor& t) {
  if (auto fn = grad_fn(t)) return {fn, t.impl()->autograd_meta->output_nr};
  if (!requires_grad(t)) return {};
  AutogradMeta& m = meta(t);
  std::shared_ptr<Node> acc = m.grad_accumulator.lock();
  if (!acc) {
    acc = std::make_shared<AccumulateGrad>(t);
    m.grad_accumulator = acc;
  }
  return {acc, 0};
}

bool any_requires_grad(std::initializer_list<const Tensor*> tensors) {
  if (!GradMode::is_enabled() || dispatch_mode::below_autograd()) return false;
  return std::any_of(tensors.begin(), tensors.end(), [](const Tensor* t) { return t && requires_grad(*t); });
}

void collect_edges(Node& node, std::initializer_list<const Tensor*> tensors) {
  for (const Tensor* t : tensors) {
    const bool flows = t && requires_grad(*t);
    node.next_edges.push_back(flows ? gradient_edge(*t) : Edge{});
    node.input_meta.push_back(flows ? meta_of(*t) : InputMeta{});
  }
}

void set_history(std::vector<Tensor*> outputs, const std::shared_ptr<Node>& node,
                 const std::vector<Tensor>& inputs) {
  node->output_meta.assign(outputs.size(), InputMeta{});
  for (size_t i = 0; i < outputs.size(); ++i) {
    Tensor& out = *outputs[i];
    if (!out.defined() || !is_differentiable_dtype(out.dtype())) continue;
    const Tensor* viewed = nullptr;
    for (const Tensor& in : inputs) {
      if (!in.defined()) continue;
      if (in.is_same(out)) out = shallow_alias(out);  // never overwrite an input's own history
      if (!viewed && shares_memory(in, out)) viewed = &in;
    }
    AutogradMeta& m = meta(out);
    m.grad_fn = node;
    m.output_nr = static_cast<uint32_t>(i);
    m.view_base = viewed ? root_of(*viewed) : Tensor();
    m.view_creation = viewed ? inherited_creation(*viewed) : ViewCreation::Default;
    m.view_version = out.version();
    out.impl()->requires_grad = true;
    node->output_meta[i] = meta_of(out);
  }
}

void note_views(std::initializer_list<Tensor*> outputs, std::initializer_list<const Tensor*> inputs) {
  if (InferenceMode::is_enabled()) return;  // inference tensors never take part in autograd
  for (Tensor* out : outputs) {
    if (!out->defined() || !is_differentiable_dtype(out->dtype())) continue;
    for (const Tensor* in : inputs) {
      if (!in || !in->defined() || in->is_same(*out) || !shares_memory(*in, *out)) continue;
      AutogradMeta& m = meta(*out);
      if (!m.view_base.defined()) {
        m.view_base = root_of(*in);
        m.view_creation = GradMode::is_enabled() ? inherited_creation(*in) : ViewCreation::NoGrad;
      }
      m.view_version = out->version();
      break;
    }
  }
}

void note_views(std::vector<Tensor>& outputs, std::initializer_list<const Tensor*> inputs) {
  for (Tensor& out : outputs) note_views({&out}, inputs);
}

void mark_view_creation(const std::vector<Tensor>& outputs, ViewCreation kind) {
  if (!GradMode::is_enabled()) return;  // made under no_grad: NoGrad already (note_views)
  for (const Tensor& out : outputs) {
    AutogradMeta* m = out.defined() ? out.impl()->autograd_meta.get() : nullptr;
    if (m && m->view_base.defined()) m->view_creation = kind;
  }
}

void check_inplace(const char* op, const Tensor& self, bool op_requires_grad) {
  if (!GradMode::is_enabled()) return;
  const Tensor base = view_base(self);
  const bool tracked_base = base.defined() && requires_grad(base);
  if (base.defined() && (op_requires_grad || tracked_base)) check_view_creation(op, self, /*indirect=*/false);
  if (tracked_base) {
    EMBER_CHECK(!is_leaf(base), Error, "[", op,
                "] a view of a leaf Variable that requires grad is being used in an in-place operation.");
    EMBER_CHECK(base.dtype() == self.dtype(), NotImplementedError, "[", op,
                "] in-place operations on a view whose dtype differs from its base's (view_as_real, "
                "view_as_complex) are not supported when the base requires grad; apply the op out of place");
  }
  if (!requires_grad(self)) return;
  EMBER_CHECK(!is_leaf(self), Error, "[", op,
              "] a leaf Variable that requires grad is being used in an in-place operation.");
}

void rebase_history(const Tensor& self, const std::shared_ptr<Node>& node) {
  AutogradMeta& m = meta(self);
  self.impl()->requires_grad = true;
  if (!m.view_base.defined()) {
    m.grad_fn = node;
    m.output_nr = 0;
    node->output_meta = {meta_of(self)};
    return;
  }
  // Note [in-place on views]: the base's history becomes CopySlices (the op's backward applied to
  // the view's part of the base's gradient), and the view is regenerated from the new base.
  const Tensor base = m.view_base;
  node->output_meta = {meta_of(self)};
  auto copy = std::make_shared<CopySlices>(base, self, node);
  AutogradMeta& bm = meta(base);
  bm.grad_fn = copy;
  bm.output_nr = 0;
  base.impl()->requires_grad = true;
  copy->output_meta = {meta_of(base)};
  regenerate_view(self, m);
}

std::shared_ptr<Node> not_implemented(const char* op) {
  return std::make_shared<NotImplementedBackward>(op);
}

namespace {

// A gradient shaped and typed like the input it is for (PyTorch's validate_outputs).
Tensor conform(const Node& node, size_t i, Tensor g) {
  const InputMeta& want = node.input_meta[i];
  if (g.sizes() != want.sizes) {
    IntList reduce;
    const int64_t lead = g.dim() - static_cast<int64_t>(want.sizes.size());
    bool ok = lead >= 0;
    for (int64_t d = 0; ok && d < g.dim(); ++d) {
      if (d < lead) {
        reduce.push_back(d);
      } else if (want.sizes[d - lead] == 1 && g.sizes()[d] != 1) {
        reduce.push_back(d);
      } else {
        ok = want.sizes[d - lead] == g.sizes()[d];
      }
    }
    EMBER_CHECK(ok, Error, "[backward] Function ", node.name(), " returned an invalid gradient at index ", i,
                " - got ", describe(g), " but expected shape compatible with ", dims_text(want.sizes));
    if (!reduce.empty()) g = autograd::sum(g, reduce, true, std::nullopt);
    g = autograd::reshape(g, want.sizes);
  }
  g = vmap::sum_exited_levels(g, want.vmap_levels);
  // A leaf's gradient goes to its grad_dtype (Tensor.grad_dtype; none: no cast).
  std::optional<DType> dtype = want.dtype;
  if (i < node.next_edges.size()) {
    if (const auto* acc = dynamic_cast<const AccumulateGrad*>(node.next_edges[i].fn.get()))
      dtype = leaf_grad_dtype(acc->leaf());
  }
  if (!dtype) return g;
  if (is_complex(g.dtype()) && !is_complex(*dtype)) g = autograd::real(g);
  if (g.dtype() != *dtype) g = autograd::to_dtype(g, *dtype, false);
  return g;
}

// Anomaly mode: an error raised while a node runs gets the stack of the forward call that
// created the node appended (keeping the error's class).
[[noreturn]] void rethrow_with(const Error& e, const std::string& extra) {
  const std::string message = std::string(e.what()) + extra;
  if (dynamic_cast<const IndexError*>(&e)) throw IndexError(message);
  if (dynamic_cast<const ValueError*>(&e)) throw ValueError(message);
  if (dynamic_cast<const TypeError*>(&e)) throw TypeError(message);
  if (dynamic_cast<const NotImplementedError*>(&e)) throw NotImplementedError(message);
  throw Error(message);
}

// With check_nan: a NaN among the gradients a node returned is an error.
void check_for_nan(const Node& n, const std::vector<Tensor>& outs) {
  for (size_t i = 0; i < outs.size(); ++i) {
    const Tensor& g = outs[i];
    // (read on the CPU; a batched gradient inside vmap has no single value to check)
    if (!g.defined() || !is_differentiable_dtype(g.dtype()) || g.numel() == 0 || vmap::is_batched(g) ||
        g.device().type != DeviceType::CPU)
      continue;
    GradModeGuard plain(false);
    const Tensor has_nan = ember::any(ember::isnan(g));
    EMBER_CHECK(!*static_cast<const bool*>(has_nan.data_ptr()), Error, "Function '", n.name(),
                "' returned nan values in its ", i, "th output.");
  }
}

Tensor zeros_for(const InputMeta& m) {
  if (!is_differentiable_dtype(m.dtype)) return Tensor();
  return ember::zeros(m.sizes, m.dtype, m.device);
}

}  // namespace
}  // namespace autograd

std::vector<Tensor> CopySlices::apply(std::vector<Tensor>&& grads) {
  const Tensor& grad = grads.at(0);
  const Device device = grad.device();
  const Tensor base_at = autograd::storage_positions(base_sizes_, base_strides_, base_offset_, device);
  const Tensor view_at = autograd::storage_positions(view_sizes_, view_strides_, view_offset_, device);
  const int64_t extent = std::max(autograd::storage_extent(base_sizes_, base_strides_, base_offset_),
                                  autograd::storage_extent(view_sizes_, view_strides_, view_offset_));
  Tensor memory = autograd::index_add(autograd::zeros_shaped(IntList{extent}, grad), 0, base_at,
                                      autograd::flat(grad), Scalar(int64_t(1)));
  const Tensor view_grad = autograd::reshape(autograd::index_select(memory, 0, view_at), view_sizes_);
  std::vector<Tensor> res = fn_->apply({view_grad});
  const Tensor old_view_grad = !res.empty() && res[0].defined() ? autograd::conform(*fn_, 0, res[0])
                                                                : autograd::zeros_shaped(view_sizes_, grad);
  memory = autograd::index_copy(memory, 0, view_at, autograd::flat(old_view_grad));
  std::vector<Tensor> out(next_edges.size());
  out[0] = autograd::reshape(autograd::index_select(memory, 0, base_at), base_sizes_);
  for (size_t i = 1; i < out.size() && i < res.size(); ++i) out[i] = res[i];
  return out;
}

namespace autograd {

namespace {

// One backward call's graph and gradients, shared by the steps of run_backward below.
struct GraphTask {
  bool create_graph = false;
  // Where the gradients asked for are captured: (node, input number) -> positions in `inputs`.
  std::map<std::pair<Node*, uint32_t>, std::vector<size_t>> captures;
  std::unordered_map<Node*, int> deps;                     // edges into each node not yet run
  std::unordered_map<Node*, std::shared_ptr<Node>> alive;  // every reachable node, kept alive
  std::vector<Node*> order;                                // reachable nodes, parents first
  std::unordered_set<Node*> needed;                        // the nodes whose apply must run
  std::unordered_map<Node*, std::vector<Tensor>> buffers;  // gradients gathered per node input
  // Sums the engine made itself (fresh tensors no one else holds): later gradients for the same
  // slot are added into them in place when no graph is recorded, so a tensor sliced many times
  // pays one full-size buffer, not one per slice (issue 18).
  std::unordered_set<const TensorImpl*> owned_sums;
};

// The edges backward starts from; a root that needs no gradient is the caller's mistake.
std::vector<Edge> root_edges_of(const std::vector<Tensor>& roots, const std::vector<Tensor>& grad_roots) {
  EMBER_CHECK(roots.size() == grad_roots.size(), Error, "[backward] got ", roots.size(), " tensors and ",
              grad_roots.size(), " gradients");
  std::vector<Edge> root_edges;
  for (size_t i = 0; i < roots.size(); ++i) {
    EMBER_CHECK(requires_grad(roots[i]), Error, "[backward] element ", i,
                " of tensors does not require grad and does not have a grad_fn");
    root_edges.push_back(gradient_edge(roots[i]));
  }
  return root_edges;
}

// autograd.grad's `inputs`: the edge slots whose incoming gradient is captured and returned.
void note_captures(GraphTask& task, const std::vector<Tensor>& inputs) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    EMBER_CHECK(requires_grad(inputs[i]), Error,
                "[grad] One of the differentiated Tensors does not require grad");
    const Edge e = gradient_edge(inputs[i]);
    task.captures[{e.fn.get(), e.input_nr}].push_back(i);
  }
}

// Counts each node's incoming edges, so a node runs once all its gradients are in (iteratively:
// graphs can be long chains).
void count_dependencies(GraphTask& task, const std::vector<Edge>& root_edges) {
  std::vector<Node*> stack;
  for (const Edge& e : root_edges) {
    if (task.alive.emplace(e.fn.get(), e.fn).second) stack.push_back(e.fn.get());
  }
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    task.order.push_back(n);
    for (const Edge& e : n->next_edges) {
      if (!e.fn) continue;
      ++task.deps[e.fn.get()];
      if (task.alive.emplace(e.fn.get(), e.fn).second) stack.push_back(e.fn.get());
    }
  }
}

// With `inputs`, only nodes from which a captured edge is reachable need to run (autograd.grad
// must not accumulate into leaves nor compute gradients no one asked for).
void find_needed(GraphTask& task, const std::vector<Edge>& root_edges, bool all) {
  if (all) {
    task.needed.insert(task.order.begin(), task.order.end());
    return;
  }
  std::unordered_map<Node*, int> remaining = task.deps;
  std::vector<Node*> topo, ready;
  for (const Edge& e : root_edges) {
    if (remaining[e.fn.get()] == 0 && std::find(ready.begin(), ready.end(), e.fn.get()) == ready.end())
      ready.push_back(e.fn.get());
  }
  while (!ready.empty()) {
    Node* n = ready.back();
    ready.pop_back();
    topo.push_back(n);
    for (const Edge& e : n->next_edges) {
      if (e.fn && --remaining[e.fn.get()] == 0) ready.push_back(e.fn.get());
    }
  }
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {  // children before parents
    Node* n = *it;
    bool need = false;
    for (uint32_t k = 0; k < n->output_meta.size() && !need; ++k) need = task.captures.count({n, k}) > 0;
    for (const Edge& e : n->next_edges) need = need || (e.fn && task.needed.count(e.fn.get()));
    if (need) task.needed.insert(n);
  }
}

// Adds gradient `g` into node n's input `nr` (several paths may reach one input).
void add_to_buffer(GraphTask& task, Node* n, uint32_t nr, const Tensor& g) {
  std::vector<Tensor>& buf = task.buffers[n];
  if (buf.size() < n->output_meta.size()) buf.resize(n->output_meta.size());
  Tensor& slot = buf.at(nr);
  if (!slot.defined()) {
    slot = g;
  } else if (!task.create_graph && task.owned_sums.count(slot.impl()) && g.sizes() == slot.sizes() &&
             g.dtype() == slot.dtype() && g.device() == slot.device() && !vmap::is_batched(slot) &&
             !vmap::is_batched(g) && !forward_ad::enabled() && !dispatch_mode::is_python_tensor(slot) &&
             !dispatch_mode::is_python_tensor(g) && !dispatch_mode::active()) {
    // the plain add: no batching rule, no tangent, no subclass, no mode (Note [Python tensors])
    ember::add(slot, g, Scalar(int64_t(1)), slot);
  } else {
    slot = autograd::add(slot, g, Scalar(int64_t(1)), std::nullopt);
    if (!task.create_graph) task.owned_sums.insert(slot.impl());
  }
}

// The given gradients of the roots, checked against and cast to each root (recorded when
// create_graph, so that they are differentiable too).
void seed_roots(GraphTask& task, const std::vector<Tensor>& roots, const std::vector<Tensor>& grad_roots,
                const std::vector<Edge>& root_edges) {
  GradModeGuard mode(task.create_graph);
  for (size_t i = 0; i < roots.size(); ++i) {
    Tensor g = grad_roots[i];
    EMBER_CHECK(g.sizes() == roots[i].sizes(), Error, "[backward] Mismatch in shape: grad_output[", i,
                "] has a shape of ", dims_text(g.sizes()), " and output[", i, "] has a shape of ",
                dims_text(roots[i].sizes()), ".");
    if (g.dtype() != roots[i].dtype()) g = autograd::to_dtype(g, roots[i].dtype(), false);
    add_to_buffer(task, root_edges[i].fn.get(), root_edges[i].input_nr, g);
  }
}

// Takes node n's gathered gradients out of its buffer (zeros for missing ones when the node
// asks) and copies those autograd.grad asked for into `captured`.
std::vector<Tensor> take_gradients(GraphTask& task, Node* n, std::vector<Tensor>& captured) {
  std::vector<Tensor> grads = std::move(task.buffers[n]);
  task.buffers.erase(n);
  for (const Tensor& g : grads) {  // handed on now: no longer the engine's own to add into
    if (g.defined()) task.owned_sums.erase(g.impl());
  }
  grads.resize(n->output_meta.size());
  for (size_t k = 0; k < grads.size(); ++k) {
    if (!grads[k].defined() && n->materialize_grads) grads[k] = zeros_for(n->output_meta[k]);
    auto c = task.captures.find({n, static_cast<uint32_t>(k)});
    if (c != task.captures.end()) {
      for (size_t pos : c->second) captured[pos] = grads[k];
    }
  }
  return grads;
}

// Tensor hooks (register_hook, retain_grad) see a tensor's gradient whether or not its node runs.
void run_tensor_hooks(Node* n, std::vector<Tensor>& grads) {
  for (const Node::Hook& hook : std::vector<Node::Hook>(n->pre_hooks)) {  // a hook may remove hooks
    if (hook.nr < grads.size() && grads[hook.nr].defined()) {
      Tensor replaced = hook.fn(grads[hook.nr]);
      if (replaced.defined()) grads[hook.nr] = replaced;
    }
  }
  for (auto& [nr, hook] : n->retain_hooks) {
    if (nr < grads.size() && grads[nr].defined()) hook(grads[nr]);
  }
}

// Runs node n (with its node hooks) and hands each output gradient, conformed to the input it
// is for, to the next node's buffer; under anomaly mode an error names the forward call.
void apply_node(GraphTask& task, Node* n, std::vector<Tensor>&& grads, bool is_sink) {
  try {
    GradModeGuard mode(task.create_graph);
    for (const auto& [id, hook] : decltype(n->node_pre_hooks)(n->node_pre_hooks)) {
      if (auto replaced = hook(grads)) grads = std::move(*replaced);
    }
    std::vector<Tensor> given;
    if (!n->post_hooks.empty()) given = grads;
    std::vector<Tensor> outs = n->apply(std::move(grads));
    if (anomaly_enabled.load() && AnomalyMode::check_nan()) check_for_nan(*n, outs);
    for (const auto& [id, hook] : decltype(n->post_hooks)(n->post_hooks)) {
      if (auto replaced = hook(outs, given)) outs = std::move(*replaced);
    }
    EMBER_CHECK(is_sink || outs.size() == n->next_edges.size(), Error, "[backward] ", n->name(), " returned ",
                outs.size(), " gradients, expected ", n->next_edges.size());
    for (size_t i = 0; i < outs.size(); ++i) {
      const Edge& e = n->next_edges[i];
      if (!e.fn) continue;
      if (outs[i].defined()) add_to_buffer(task, e.fn.get(), e.input_nr, conform(*n, i, outs[i]));
    }
  } catch (const Error& e) {
    if (!anomaly_enabled.load() || n->creation_trace.empty()) throw;
    rethrow_with(e, "\n\nError detected in " + n->name() +
                        ". Traceback of forward call that caused the error:\n" + n->creation_trace);
  }
}

// Runs the nodes in reverse creation order (latest first: a node runs after every node that
// feeds it), each once all its incoming gradients are in.
void execute(GraphTask& task, bool keep_graph, bool accumulate, std::vector<Tensor>& captured) {
  auto later_first = [](Node* a, Node* b) { return a->sequence_nr < b->sequence_nr; };
  std::priority_queue<Node*, std::vector<Node*>, decltype(later_first)> queue(later_first);
  for (const auto& [n, _] : task.buffers) {
    if (task.deps[n] == 0) queue.push(n);
  }
  while (!queue.empty()) {
    Node* n = queue.top();
    queue.pop();
    if (!task.buffers.count(n)) {
      // Note [nodes without gradients]: every edge into n carried an undefined gradient (or none
      // was produced): n has nothing to compute, but the nodes it feeds still count it among
      // their dependencies. Releasing them here keeps a node fed by n and by live paths from
      // waiting forever -- a double backward through an op with an output that receives no
      // gradient (nll_loss_forward's total_weight) once lost its whole gradient that way.
      for (const Edge& e : n->next_edges) {
        if (e.fn && --task.deps[e.fn.get()] == 0 && task.needed.count(e.fn.get())) queue.push(e.fn.get());
      }
      continue;
    }
    std::vector<Tensor> grads = take_gradients(task, n, captured);
    run_tensor_hooks(n, grads);
    const bool is_sink = dynamic_cast<AccumulateGrad*>(n) != nullptr;
    if (!task.needed.count(n) || (is_sink && !accumulate)) continue;
    apply_node(task, n, std::move(grads), is_sink);
    for (const Edge& e : n->next_edges) {
      if (e.fn && --task.deps[e.fn.get()] == 0 && task.needed.count(e.fn.get())) queue.push(e.fn.get());
    }
    if (!keep_graph) n->release_variables();
  }
}

}  // namespace

std::vector<Tensor> run_backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grad_roots,
                                 bool keep_graph, bool create_graph, const std::vector<Tensor>& inputs,
                                 bool accumulate) {
  const std::vector<Edge> root_edges = root_edges_of(roots, grad_roots);
  GraphTask task;
  task.create_graph = create_graph;
  note_captures(task, inputs);
  count_dependencies(task, root_edges);
  find_needed(task, root_edges, inputs.empty());
  std::vector<Tensor> captured(inputs.size());
  seed_roots(task, roots, grad_roots, root_edges);
  execute(task, keep_graph, accumulate, captured);
  return captured;
}

}  // namespace autograd
}  // namespace ember
