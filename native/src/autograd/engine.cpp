// The autograd engine: nodes, saved variables, grad mode, leaf accumulation and backward
// (interface and overview in ember/autograd.h; docs/dev/autograd.md).
#include <algorithm>
#include <atomic>
#include <map>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "ember/autograd.h"
#include "ember/error.h"
#include "ember/ops.h"
#include "ember/vmap.h"

namespace ember {

namespace {
std::atomic<uint64_t> next_sequence_nr{0};
thread_local bool grad_enabled = true;

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

// The sink of a leaf: adds each gradient that reaches it into leaf.grad.
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(Tensor leaf) : leaf_(std::move(leaf)) {
    input_meta.clear();
    output_meta.push_back(meta_of(leaf_));
  }
  std::string name() const override { return "AccumulateGrad"; }
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override {
    Tensor g = grads.at(0);
    if (!g.defined()) return {};
    // Without create_graph the stored gradient is plain data: a fresh buffer the user may modify.
    AutogradMeta& m = autograd::meta(leaf_);
    for (const auto& [id, hook] :
         std::vector<std::pair<uint64_t, std::function<Tensor(const Tensor&)>>>(m.leaf_hooks)) {
      Tensor replaced = hook(g);
      if (replaced.defined()) g = replaced;
    }
    if (!GradMode::is_enabled()) g = g.clone();
    m.grad = m.grad.defined() ? autograd::add(m.grad, g, Scalar(int64_t(1)), std::nullopt) : g;
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

}  // namespace

// ---- nodes --------------------------------------------------------------------------------

Node::Node() : sequence_nr(next_sequence_nr++) {}

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

SavedVariable::SavedVariable(const Tensor& t, bool is_output)
    : is_output_(is_output), was_defined_(t.defined()) {
  if (!t.defined()) return;
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
}

Tensor SavedVariable::unpack(const std::shared_ptr<Node>& owner) const {
  if (!was_defined_) return Tensor();
  EMBER_CHECK(
      !released_, Error,
      "[backward] Trying to backward through the graph a second time (or directly access saved tensors "
      "after they have already been freed). Saved intermediate values of the graph are freed when you call "
      ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph "
      "a second time or if you need to access saved tensors after calling backward.");
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
  released_ = was_defined_;
}

// ---- grad mode ----------------------------------------------------------------------------

bool GradMode::is_enabled() {
  return grad_enabled;
}
void GradMode::set_enabled(bool enabled) {
  grad_enabled = enabled;
}

namespace autograd {

bool requires_grad(const Tensor& t) {
  return t.defined() && t.impl()->requires_grad;
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
  return t.defined() && t.impl()->autograd_meta ? t.impl()->autograd_meta->grad_fn : nullptr;
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
  if (!GradMode::is_enabled()) return false;
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
    bool shares = false;
    for (const Tensor& in : inputs) {
      if (!in.defined()) continue;
      if (in.is_same(out)) out = shallow_alias(out);  // never overwrite an input's own history
      shares = shares || in.storage() == out.storage();
    }
    AutogradMeta& m = meta(out);
    m.grad_fn = node;
    m.output_nr = static_cast<uint32_t>(i);
    m.is_view = shares;
    out.impl()->requires_grad = true;
    node->output_meta[i] = meta_of(out);
  }
}

void check_inplace(const char* op, const Tensor& self) {
  if (!GradMode::is_enabled() || !requires_grad(self)) return;
  EMBER_CHECK(!is_leaf(self), Error, "[", op,
              "] a leaf Variable that requires grad is being used in an in-place operation.");
  EMBER_CHECK(!self.impl()->autograd_meta->is_view, NotImplementedError, "[", op,
              "] in-place operations on a view of a tensor that requires grad are not supported yet; "
              "apply the op out of place (or clone() the view first)");
}

void rebase_history(const Tensor& self, const std::shared_ptr<Node>& node) {
  AutogradMeta& m = meta(self);
  m.grad_fn = node;
  m.output_nr = 0;
  self.impl()->requires_grad = true;
  node->output_meta = {meta_of(self)};
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
  if (is_complex(g.dtype()) && !is_complex(want.dtype)) g = autograd::real(g);
  if (g.dtype() != want.dtype) g = autograd::to_dtype(g, want.dtype, false);
  return g;
}

Tensor zeros_for(const InputMeta& m) {
  if (!is_differentiable_dtype(m.dtype)) return Tensor();
  return ember::zeros(m.sizes, m.dtype, m.device);
}

}  // namespace

std::vector<Tensor> run_backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grad_roots,
                                 bool keep_graph, bool create_graph, const std::vector<Tensor>& inputs,
                                 bool accumulate) {
  EMBER_CHECK(roots.size() == grad_roots.size(), Error, "[backward] got ", roots.size(), " tensors and ",
              grad_roots.size(), " gradients");
  std::vector<Edge> root_edges;
  for (size_t i = 0; i < roots.size(); ++i) {
    EMBER_CHECK(requires_grad(roots[i]), Error, "[backward] element ", i,
                " of tensors does not require grad and does not have a grad_fn");
    root_edges.push_back(gradient_edge(roots[i]));
  }
  // Where the gradients asked for are captured: (node, input number) -> positions in `inputs`.
  std::map<std::pair<Node*, uint32_t>, std::vector<size_t>> captures;
  std::vector<Edge> input_edges;
  for (size_t i = 0; i < inputs.size(); ++i) {
    EMBER_CHECK(requires_grad(inputs[i]), Error,
                "[grad] One of the differentiated Tensors does not require grad");
    input_edges.push_back(gradient_edge(inputs[i]));
    captures[{input_edges.back().fn.get(), input_edges.back().input_nr}].push_back(i);
  }
  // Count incoming edges and find a topological order (iteratively: graphs can be long chains).
  std::unordered_map<Node*, int> deps;
  std::unordered_map<Node*, std::shared_ptr<Node>> alive;
  std::vector<Node*> order;
  std::vector<Node*> stack;
  for (const Edge& e : root_edges) {
    if (alive.emplace(e.fn.get(), e.fn).second) stack.push_back(e.fn.get());
  }
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    order.push_back(n);
    for (const Edge& e : n->next_edges) {
      if (!e.fn) continue;
      ++deps[e.fn.get()];
      if (alive.emplace(e.fn.get(), e.fn).second) stack.push_back(e.fn.get());
    }
  }
  // With `inputs`, only nodes from which a captured edge is reachable need to run.
  std::unordered_set<Node*> needed;
  if (inputs.empty()) {
    needed.insert(order.begin(), order.end());
  } else {
    std::unordered_map<Node*, int> remaining = deps;
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
    for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
      Node* n = *it;
      bool need = false;
      for (uint32_t k = 0; k < n->output_meta.size() && !need; ++k) need = captures.count({n, k}) > 0;
      for (const Edge& e : n->next_edges) need = need || (e.fn && needed.count(e.fn.get()));
      if (need) needed.insert(n);
    }
  }

  std::unordered_map<Node*, std::vector<Tensor>> buffers;
  auto add_to_buffer = [&](Node* n, uint32_t nr, const Tensor& g) {
    std::vector<Tensor>& buf = buffers[n];
    if (buf.size() < n->output_meta.size()) buf.resize(n->output_meta.size());
    Tensor& slot = buf.at(nr);
    slot = slot.defined() ? autograd::add(slot, g, Scalar(int64_t(1)), std::nullopt) : g;
  };
  auto later_first = [](Node* a, Node* b) { return a->sequence_nr < b->sequence_nr; };
  std::priority_queue<Node*, std::vector<Node*>, decltype(later_first)> queue(later_first);
  std::vector<Tensor> captured(inputs.size());
  {
    GradModeGuard mode(create_graph);
    for (size_t i = 0; i < roots.size(); ++i) {
      Tensor g = grad_roots[i];
      EMBER_CHECK(g.sizes() == roots[i].sizes(), Error, "[backward] Mismatch in shape: grad_output[", i,
                  "] has a shape of ", dims_text(g.sizes()), " and output[", i, "] has a shape of ",
                  dims_text(roots[i].sizes()), ".");
      if (g.dtype() != roots[i].dtype()) g = autograd::to_dtype(g, roots[i].dtype(), false);
      add_to_buffer(root_edges[i].fn.get(), root_edges[i].input_nr, g);
    }
  }
  for (const auto& [n, _] : buffers) {
    if (deps[n] == 0) queue.push(n);
  }
  while (!queue.empty()) {
    Node* n = queue.top();
    queue.pop();
    std::vector<Tensor> grads = std::move(buffers[n]);
    buffers.erase(n);
    grads.resize(n->output_meta.size());
    for (size_t k = 0; k < grads.size(); ++k) {
      if (!grads[k].defined()) grads[k] = zeros_for(n->output_meta[k]);
      auto c = captures.find({n, static_cast<uint32_t>(k)});
      if (c != captures.end()) {
        for (size_t pos : c->second) captured[pos] = grads[k];
      }
    }
    for (const Node::Hook& hook : std::vector<Node::Hook>(n->pre_hooks)) {  // a hook may remove hooks
      if (hook.nr < grads.size() && grads[hook.nr].defined()) {
        Tensor replaced = hook.fn(grads[hook.nr]);
        if (replaced.defined()) grads[hook.nr] = replaced;
      }
    }
    for (auto& [nr, hook] : n->retain_hooks) {
      if (nr < grads.size() && grads[nr].defined()) hook(grads[nr]);
    }
    const bool is_sink = dynamic_cast<AccumulateGrad*>(n) != nullptr;
    if (!needed.count(n) || (is_sink && !accumulate)) continue;
    std::vector<Tensor> outs;
    {
      GradModeGuard mode(create_graph);
      outs = n->apply(std::move(grads));
      EMBER_CHECK(is_sink || outs.size() == n->next_edges.size(), Error, "[backward] ", n->name(),
                  " returned ", outs.size(), " gradients, expected ", n->next_edges.size());
      for (size_t i = 0; i < outs.size(); ++i) {
        const Edge& e = n->next_edges[i];
        if (!e.fn) continue;
        if (outs[i].defined()) add_to_buffer(e.fn.get(), e.input_nr, conform(*n, i, outs[i]));
      }
    }
    for (const Edge& e : n->next_edges) {
      if (e.fn && --deps[e.fn.get()] == 0 && needed.count(e.fn.get()) && buffers.count(e.fn.get()))
        queue.push(e.fn.get());
    }
    if (!keep_graph) n->release_variables();
  }
  return captured;
}

}  // namespace autograd
}  // namespace ember
