#pragma once
// Reverse-mode autograd (docs/dev/autograd.md).
//
// A differentiable op called on tensors that require grad records a Node holding what its
// backward needs (SavedVariables, sizes, scalars). Its next_edges point at the nodes that made
// its inputs (an Edge is (node, input number)); a leaf's edge points at its AccumulateGrad sink.
// backward() counts each node's incoming edges from the roots, then runs nodes from a ready queue
// once every incoming gradient has been summed into the node's input buffer.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "ember/export.h"
#include "ember/tensor.h"

namespace ember {

class Node;

struct Edge {
  std::shared_ptr<Node> fn;
  uint32_t input_nr = 0;
  bool valid() const { return fn != nullptr; }
};

// Per-tensor autograd state (TensorImpl::autograd_meta; absent for tensors that never took part).
// Note [view creation]: PyTorch's CreationMeta. A view made under no_grad, one of the several
// views one op returns (split, chunk, unbind, tensor_split), or a view a custom Function returned
// cannot get a correct history from an in-place write: CopySlices would track what no_grad hid,
// leave the sibling views' nodes stale, or bypass the custom backward. So while autograd tracks
// its base, writing such a view in place, or using it after its base or another view of it was
// written, raises PyTorch's RuntimeError. A view of a view inherits its kind (Default gives way).
enum class ViewCreation : uint8_t { Default, NoGrad, MultiOutput, CustomFunction };

struct EMBER_API AutogradMeta {
  Tensor grad;
  std::shared_ptr<Node> grad_fn;  // null for leaves
  uint32_t output_nr = 0;
  std::weak_ptr<Node> grad_accumulator;  // a leaf's AccumulateGrad, created on first use
  bool retains_grad = false;
  // Note [in-place on views]: a tensor sharing memory with the input of the op that made it
  // keeps that memory's base (the first tensor of the chain of views) and the version at which
  // its grad_fn was set. Writing the view in place rebases the base onto a CopySlices node; a
  // view whose version moved on (its memory was written through another alias) gets its grad_fn
  // regenerated as as_strided of the base when asked for it, or by replaying the view ops that
  // made it (view_fn) when it was made with view replay on (Note [view replay]).
  Tensor view_base;
  uint32_t view_version = 0;
  std::function<Tensor(const Tensor&)> view_fn;
  ViewCreation view_creation = ViewCreation::Default;  // Note [view creation]
  // register_post_accumulate_grad_hook: run after a leaf's .grad was updated.
  std::vector<std::function<void()>> post_accumulate_hooks;
  // A leaf's register_hook hooks (by id): run on each gradient before it is accumulated.
  std::vector<std::pair<uint64_t, std::function<Tensor(const Tensor&)>>> leaf_hooks;
  // Forward mode: the tangent (shared with the copies of this tensor that backward nodes save, so
  // a formula using a saved output sees the tangent set after it was saved).
  std::shared_ptr<struct ForwardGrad> fw;
  // Tensor.grad_dtype (leaves): the dtype the engine casts this leaf's gradients to. Own: the
  // leaf's dtype (the default); Fixed: grad_dtype; Any (grad_dtype = None): no cast at all.
  enum class GradDtype : uint8_t { Own, Fixed, Any };
  GradDtype grad_dtype_policy = GradDtype::Own;
  DType grad_dtype = DType::Float32;  // with Fixed
};

// A tangent, its dual level (stale once that level has exited) and the tensor's version when it
// was set (Note [tangents of views]).
struct ForwardGrad {
  Tensor value;
  uint64_t level = 0;
  uint32_t version = 0;
};

// Shape and dtype of one gradient a node hands on: the engine sums a broadcast gradient back to
// `sizes` and casts it to `dtype` (a real input gets the real part of a complex gradient).
struct InputMeta {
  IntList sizes;
  DType dtype = DType::Float32;
  Device device;
  std::vector<int64_t> vmap_levels;  // the input's batch levels (Note [gradients across vmap levels])
};

class EMBER_API Node : public std::enable_shared_from_this<Node> {
 public:
  Node();
  virtual ~Node();  // releases long chains iteratively (no deep recursion)
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  virtual std::string name() const = 0;
  // grads[i] is the gradient of output i (a zero tensor when that output got none).
  virtual std::vector<Tensor> apply(std::vector<Tensor>&& grads) = 0;
  // Frees saved tensors once backward has used them (unless retain_graph).
  virtual void release_variables() {}

  bool should_compute_output(size_t i) const { return i < next_edges.size() && next_edges[i].valid(); }

  std::vector<Edge> next_edges;
  std::vector<InputMeta> input_meta;   // one per next edge: what the gradient must look like
  std::vector<InputMeta> output_meta;  // one per output: to make zeros for a missing gradient
  uint64_t sequence_nr;                // creation order; later nodes run first when several are ready
  // Tensor.register_hook: called with the gradient of output `nr` before apply; a defined result
  // replaces it. Then the retain_grad() hooks see the final gradient.
  struct Hook {
    uint64_t id;
    uint32_t nr;
    std::function<Tensor(const Tensor&)> fn;
  };
  std::vector<Hook> pre_hooks;
  std::vector<std::pair<uint32_t, std::function<void(const Tensor&)>>> retain_hooks;
  // grad_fn.register_prehook / register_hook (by id). A pre hook sees the gradients of the
  // node's outputs after the tensor hooks; a post hook sees the gradients the node computed for
  // its inputs and those it was given. Either may return replacements (nullopt keeps them).
  using GradList = std::vector<Tensor>;
  std::vector<std::pair<uint64_t, std::function<std::optional<GradList>(const GradList&)>>> node_pre_hooks;
  std::vector<std::pair<uint64_t, std::function<std::optional<GradList>(const GradList&, const GradList&)>>>
      post_hooks;
  // false: an output that received no gradient is handed to apply undefined, not as zeros
  // (a custom Function's ctx.set_materialize_grads(False)).
  bool materialize_grads = true;
  // Anomaly mode: the stack of the forward call that created this node.
  std::string creation_trace;
};

// A saved input or output of an op. Outputs are saved without their grad_fn (which would be a
// cycle through this node) and get it back on unpack. Unpacking checks the version counter.
// torch.autograd.graph.saved_tensors_hooks for every backward node (Note [saved-tensor hooks]):
// while a pair is pushed on this thread, a tensor saved for backward is handed to `pack` and only
// what pack returns is kept; `unpack` turns that back into the tensor when backward reads it.
struct EMBER_API SavedTensorHooks {
  using Packed = std::shared_ptr<void>;
  std::function<Packed(const Tensor&)> pack;
  std::function<Tensor(const Packed&)> unpack;

  static void push(std::shared_ptr<const SavedTensorHooks> hooks);
  static void pop();
  // The innermost pair on this thread, or null (while a hook runs, the pairs pushed before it are hidden).
  static std::shared_ptr<const SavedTensorHooks> current();
};

class EMBER_API SavedVariable {
 public:
  SavedVariable() = default;
  SavedVariable(const Tensor& t, bool is_output);
  Tensor unpack(const std::shared_ptr<Node>& owner) const;
  void reset();
  bool defined() const { return was_defined_; }

 private:
  Tensor data_;
  bool is_output_ = false;
  bool was_defined_ = false;
  bool released_ = false;
  uint32_t saved_version_ = 0;
  uint32_t output_nr_ = 0;
  bool requires_grad_ = false;
  std::shared_ptr<ForwardGrad> fw_;  // a saved output's tangent slot
  // With saved-tensor hooks: the pair, what pack returned and (for a saved input that requires
  // grad) the input's gradient edge, so the unpacked tensor joins the graph where the input did.
  // As in PyTorch, no version is checked then: the hooks decide what backward reads.
  std::shared_ptr<const SavedTensorHooks> hooks_;
  SavedTensorHooks::Packed packed_;
  Edge input_edge_;
};

// Thread-local grad mode (no_grad / enable_grad / set_grad_enabled).
struct EMBER_API GradMode {
  static bool is_enabled();
  static void set_enabled(bool enabled);
};
struct GradModeGuard {
  explicit GradModeGuard(bool enabled) : prev_(GradMode::is_enabled()) { GradMode::set_enabled(enabled); }
  ~GradModeGuard() { GradMode::set_enabled(prev_); }
  GradModeGuard(const GradModeGuard&) = delete;
  GradModeGuard& operator=(const GradModeGuard&) = delete;

 private:
  bool prev_;
};

// torch.autograd.enforce_grad_layout_policy (thread-local, on by default): off, a gradient that
// nothing else holds becomes a leaf's .grad as it is laid out, instead of being copied into the
// leaf's layout (Note [stolen gradient]).
struct EMBER_API GradLayoutPolicy {
  static bool is_enforced();
  static void set_enforced(bool enforced);
};

// A generated op's results, each back at version 0 when it is new (Note [fresh versions]).
inline void rewind_if_new(const Tensor& t) {
  t.rewind_version_if_unshared();
}
inline void rewind_if_new(const std::vector<Tensor>& ts) {
  for (const Tensor& t : ts) t.rewind_version_if_unshared();
}
template <typename R>
R fresh_result(R result) {
  rewind_if_new(result);
  return result;
}
template <typename... T>
std::tuple<T...> fresh_result(std::tuple<T...> results) {
  std::apply([](const T&... r) { (rewind_if_new(r), ...); }, results);
  return results;
}

// Note [view replay]: torch.autograd._force_original_view_tracking (thread-local, off by default).
// A view made while it is on records how to remake it from its base: its chain of view ops
// (record_view_fn, called by the generated wrappers of the view ops). When the view must be
// regenerated (its memory was written in place through another alias, or it was written itself),
// that chain is replayed on the base, so its grad_fn is the last view op's backward
// (TransposeBackward0, ...) rather than AsStridedBackward0, and a view whose dtype differs from
// its base's (view_as_real) can be regenerated at all. A link made with replay off is remade as
// as_strided of the base with its geometry, as PyTorch does.
struct EMBER_API ViewReplay {
  static bool is_enabled();
  static void set_enabled(bool enabled);
};
// Records on `out`, when it is a view of `self`, how to remake it from its base: `fn` applied to
// self remade from that base (Note [view replay]). The list form records output i as fn(...)[i].
EMBER_API void record_view_fn(const Tensor& out, const Tensor& self, std::function<Tensor(const Tensor&)> fn);
EMBER_API void record_view_fns(const std::vector<Tensor>& outs, const Tensor& self,
                               std::function<std::vector<Tensor>(const Tensor&)> fn);

// ember.autograd.set_detect_anomaly (process-wide, as PyTorch's): nodes record the stack of the
// forward call that created them; backward raises when a node returns NaN (check_nan) and names
// that stack in any error a node raises.
struct EMBER_API AnomalyMode {
  static bool is_enabled();
  static bool check_nan();
  static void set_enabled(bool enabled, bool check_nan = true);
  // Where creation stacks come from (the Python bindings install a traceback reader).
  static void set_trace_source(std::function<std::string()> source);
};

namespace autograd {

EMBER_API bool requires_grad(const Tensor& t);
// The dtype a leaf's gradients are cast to (its grad_dtype policy), or none for grad_dtype = None.
EMBER_API std::optional<DType> leaf_grad_dtype(const Tensor& leaf);
// The base whose memory `t` views (undefined when t is not a view).
EMBER_API Tensor view_base(const Tensor& t);
// A new tensor viewing the same memory and version counter, without autograd state.
EMBER_API Tensor alias(const Tensor& t);
EMBER_API AutogradMeta& meta(const Tensor& t);  // created on first use
EMBER_API std::shared_ptr<Node> grad_fn(const Tensor& t);
EMBER_API bool is_leaf(const Tensor& t);
EMBER_API void set_requires_grad(const Tensor& t, bool requires_grad);
// The edge a gradient for `t` flows into: its grad_fn, or its leaf's AccumulateGrad.
EMBER_API Edge gradient_edge(const Tensor& t);

// Used by the generated autograd wrappers (ember::autograd::<op>).
EMBER_API bool any_requires_grad(std::initializer_list<const Tensor*> tensors);
EMBER_API void collect_edges(Node& node, std::initializer_list<const Tensor*> tensors);
// Attaches `node` as the history of `outputs` (an output that is one of the inputs' own impl is
// first replaced by an alias, so the input's history is never overwritten).
EMBER_API void set_history(std::vector<Tensor*> outputs, const std::shared_ptr<Node>& node,
                           const std::vector<Tensor>& inputs);
// Marks outputs that share memory with an input as views of that input's base (ops called while
// nothing requires grad record no node, but a later in-place write must still reach the base).
EMBER_API void note_views(std::initializer_list<Tensor*> outputs,
                          std::initializer_list<const Tensor*> inputs);
EMBER_API void note_views(std::vector<Tensor>& outputs, std::initializer_list<const Tensor*> inputs);
// Marks the views among `outputs` as made by `kind` (Note [view creation]): the outputs of a
// multi-output view op (while grad mode is on) or of a custom Function.
EMBER_API void mark_view_creation(const std::vector<Tensor>& outputs, ViewCreation kind);
// In-place op on `self`: checks it is allowed, then makes `node` self's history (through
// CopySlices on the base when self is a view). `op_requires_grad`: another input of the op
// requires grad (then a view's creation is checked even when its base does not).
EMBER_API void check_inplace(const char* op, const Tensor& self, bool op_requires_grad = false);
EMBER_API void rebase_history(const Tensor& self, const std::shared_ptr<Node>& node);
// Raises (at backward) for a floating output of an op whose derivative is not declared yet.
EMBER_API std::shared_ptr<Node> not_implemented(const char* op);

// Runs backward from `roots` (with gradients `grad_roots`). With `inputs` empty, accumulates
// into leaves' .grad; otherwise returns the gradients flowing into each of `inputs`' edges
// (undefined where none arrives) and, when accumulate is false, leaves .grad untouched.
EMBER_API std::vector<Tensor> run_backward(const std::vector<Tensor>& roots,
                                           const std::vector<Tensor>& grad_roots, bool keep_graph,
                                           bool create_graph, const std::vector<Tensor>& inputs,
                                           bool accumulate);

}  // namespace autograd

// Forward-mode AD (docs/dev/autograd.md, "Forward mode"). Inside a dual level a tensor may carry a
// tangent; every differentiable op called on such tensors computes its result's tangent with the
// op's JVP formula (declared next to its VJP). As in PyTorch, one level is active at a time.
namespace forward_ad {

EMBER_API uint64_t enter_dual_level();           // raises if a level is already active
EMBER_API void exit_dual_level(uint64_t level);  // drops every tangent of that level
// A level is active and this thread is not evaluating a JVP formula (which sees primals only).
EMBER_API bool enabled();
EMBER_API bool any_tangent(std::initializer_list<const Tensor*> tensors);
EMBER_API bool any_tangent(const std::vector<Tensor>& tensors);
EMBER_API Tensor tangent(const Tensor& t);  // undefined when t has none at the active level
EMBER_API Tensor tangent_or_zeros(const Tensor& t);
EMBER_API std::vector<Tensor> tangents_or_zeros(const std::vector<Tensor>& ts);
// Gives `t` the tangent (broadcast to t's shape and cast to its dtype); an undefined one clears it.
// `written_in_place`: an in-place op wrote t, so a view's new tangent also goes into its base's.
EMBER_API void set_tangent(const Tensor& t, const Tensor& tangent, bool written_in_place = false);
// forward_ad.make_dual / unpack_dual: a view of `primal` carrying `tangent`, and the pair back.
EMBER_API Tensor make_dual(const Tensor& primal, const Tensor& tangent);
EMBER_API Tensor primal_view(const Tensor& t);
// Raised when a floating result's op has no JVP formula and an input carries a tangent.
[[noreturn]] EMBER_API void not_implemented(const char* op);

// Sets whether this thread's ops ignore tangents; returns the previous setting.
EMBER_API bool set_paused(bool paused);

// While alive, this thread's ops ignore tangents (JVP formulas are evaluated on primals).
class EMBER_API PauseGuard {
 public:
  PauseGuard();
  ~PauseGuard();
  PauseGuard(const PauseGuard&) = delete;
  PauseGuard& operator=(const PauseGuard&) = delete;

 private:
  bool prev_;
};

}  // namespace forward_ad
}  // namespace ember
