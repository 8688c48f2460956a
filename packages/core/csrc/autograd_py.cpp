// Python side of autograd: Tensor.requires_grad / grad / grad_fn / is_leaf / retain_grad,
// graph nodes (grad_fn.name(), next_functions), grad mode, and the engine entry point that
// ember.autograd.backward / grad call (ember/autograd/__init__.py builds the user API on it).
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include "bindings.h"
#include "ember/autocast.h"
#include "ember/autograd.h"
#include "ember/vmap.h"

namespace ember::python {

namespace {

std::string shape_text(const IntList& sizes) {
  std::string text = "[";
  for (size_t i = 0; i < sizes.size(); ++i) text += (i ? ", " : "") + std::to_string(sizes[i]);
  return text + "]";
}

// A Python object kept by C++ (a hook, what a pack hook returned): released with the GIL held.
std::shared_ptr<py::object> share_python(py::object fn) {
  return std::shared_ptr<py::object>(new py::object(std::move(fn)), [](py::object* p) {
    if (Py_IsInitialized()) {
      py::gil_scoped_acquire gil;
      delete p;
    }
  });
}

// What register_hook returns: remove() takes the hook off (the hook's owner may be gone).
struct RemovableHandle {
  std::function<void()> remover;
  void remove() const {
    if (remover) remover();
  }
};

uint64_t next_hook_id() {
  static std::atomic<uint64_t> next{0};
  return next++;
}

// Removes the entry with `id` from the hook list `member` of the node, if the node still lives.
template <typename List>
RemovableHandle node_hook_handle(const std::shared_ptr<Node>& node, List Node::* member, uint64_t id) {
  std::weak_ptr<Node> weak = node;
  return {[weak, member, id] {
    if (auto n = weak.lock()) {
      auto& hooks = (*n).*member;
      hooks.erase(std::remove_if(hooks.begin(), hooks.end(), [id](const auto& h) { return h.first == id; }),
                  hooks.end());
    }
  }};
}

py::tuple grads_to_python(const std::vector<Tensor>& grads) {
  py::list out;
  for (const Tensor& g : grads) out.append(g.defined() ? py::cast(g) : py::none());
  return py::tuple(out);
}

// A node hook's result: None keeps the gradients, else a sequence of as many (Tensor or None).
std::optional<std::vector<Tensor>> grads_from_python(const py::object& result, size_t expected,
                                                     const std::string& hook_name) {
  if (result.is_none()) return std::nullopt;
  const py::sequence seq = result.cast<py::sequence>();
  EMBER_CHECK(seq.size() == expected, Error, "hook '", hook_name,
              "' has returned an incorrect number of values (got ", seq.size(), ", but expected ", expected,
              ")");
  std::vector<Tensor> out;
  for (py::handle r : seq) out.push_back(r.is_none() ? Tensor() : r.cast<Tensor>());
  return out;
}

}  // namespace

// ember.autocast's state (Note [autocast] in ember/autocast.h); ember/amp/autocast_mode.py
// builds the user API on these.
static void bind_autocast(py::module_& m) {
  auto device_type = [](const std::string& name) {
    if (name == "cpu") return DeviceType::CPU;
    if (name == "cuda") return DeviceType::CUDA;
    throw ValueError("[autocast] expected device_type 'cpu' or 'cuda', but got '" + name + "'");
  };
  m.def("_autocast_is_enabled", [=](const std::string& d) { return autocast::is_enabled(device_type(d)); });
  m.def("_autocast_set_enabled",
        [=](const std::string& d, bool enabled) { autocast::set_enabled(device_type(d), enabled); });
  m.def("_autocast_get_dtype",
        [=](const std::string& d) { return dtype_object(autocast::get_dtype(device_type(d))); });
  m.def("_autocast_set_dtype", [=](const std::string& d, py::handle dtype) {
    autocast::set_dtype(device_type(d), dtype_from_object(dtype, "dtype"));
  });
  m.def("_autocast_increment_nesting", &autocast::increment_nesting);
  m.def("_autocast_decrement_nesting", &autocast::decrement_nesting);
  m.def("_autocast_is_cache_enabled", &autocast::is_cache_enabled);
  m.def("_autocast_set_cache_enabled", &autocast::set_cache_enabled);
  m.def("_autocast_clear_cache", &autocast::clear_cache);
  m.def("_autocast_cache_size", &autocast::cache_size);
  m.def("_autocast_active", &autocast::active);
  m.def("_autocast_set_excluded", &autocast::set_excluded);
  // The casts of a Python composite with a policy (ember/_autocast_policy.py), as the generated
  // entry points cast a native op's inputs.
  m.def("_autocast_cast", [](const std::vector<Tensor>& tensors, const std::string& policy) {
    DType to;
    if (policy == "promote") {
      to = autocast::promote_dtype({}, {&tensors});
    } else if (policy == "fp32" || policy == "lower_precision_fp") {
      to = autocast::target_dtype(policy == "fp32" ? autocast::Policy::Fp32
                                                   : autocast::Policy::LowerPrecisionFp);
    } else {
      throw ValueError("[autocast] expected a policy 'lower_precision_fp', 'fp32' or 'promote', but got '" +
                       policy + "'");
    }
    autocast::ExcludeGuard no_autocast;
    return autocast::cast(tensors, to);
  });
}

void bind_autograd(py::module_& m, py::class_<Tensor>& tensor) {
  py::class_<RemovableHandle>(m, "RemovableHandle", "Returned by register_hook; remove() takes the hook off.")
      .def("remove", &RemovableHandle::remove)
      .def("__enter__", [](RemovableHandle& h) { return h; })
      .def("__exit__", [](RemovableHandle& h, py::args) { h.remove(); });
  py::class_<Node, std::shared_ptr<Node>>(m, "Node", "A node of the backward graph (a Tensor's grad_fn).")
      .def("name", &Node::name)
      .def_property_readonly("next_functions",
                             [](const Node& n) {
                               py::list out;
                               for (const Edge& e : n.next_edges) {
                                 out.append(py::make_tuple(e.fn ? py::cast(e.fn) : py::none(), e.input_nr));
                               }
                               return py::tuple(out);
                             })
      .def(
          "register_prehook",
          [](const std::shared_ptr<Node>& node, py::function fn) {
            auto callable = share_python(fn);
            const uint64_t id = next_hook_id();
            node->node_pre_hooks.emplace_back(id, [callable](const Node::GradList& grads) {
              py::gil_scoped_acquire gil;
              py::object r = (*callable)(grads_to_python(grads));
              return grads_from_python(r, grads.size(), py::str(callable->attr("__name__")));
            });
            return node_hook_handle(node, &Node::node_pre_hooks, id);
          },
          py::arg("fn"), "fn(grad_outputs) -> new grad_outputs or None, called before the node runs.")
      .def(
          "register_hook",
          [](const std::shared_ptr<Node>& node, py::function fn) {
            auto callable = share_python(fn);
            const uint64_t id = next_hook_id();
            node->post_hooks.emplace_back(
                id, [callable](const Node::GradList& grad_inputs, const Node::GradList& grad_outputs) {
                  py::gil_scoped_acquire gil;
                  py::object r = (*callable)(grads_to_python(grad_inputs), grads_to_python(grad_outputs));
                  return grads_from_python(r, grad_inputs.size(), py::str(callable->attr("__name__")));
                });
            return node_hook_handle(node, &Node::post_hooks, id);
          },
          py::arg("fn"),
          "fn(grad_inputs, grad_outputs) -> new grad_inputs or None, called after the node ran.")
      .def("__repr__", [](const Node& n) { return "<" + n.name() + ">"; });

  tensor
      .def(py::init([](const Tensor& data) { return autograd::alias(data); }), py::arg("data"),
           "A new tensor sharing data's memory and version counter, without its history (what "
           "nn.Parameter(data) builds on).")
      // Tensor.as_subclass(cls) (ember/_tensor.py): the same tensor, history included, in an object
      // of a subclass.
      .def(py::init([](const Tensor& data, bool share_history) {
             return share_history ? data : autograd::alias(data);
           }),
           py::arg("data"), py::kw_only(), py::arg("_share_history"))
      // The legacy constructors, ember.Tensor(2, 3) / ember.Tensor([1, 2]) / ember.Tensor():
      // ember/_legacy.py reads the arguments as torch.Tensor(...) does.
      .def(py::init([](const py::args& args, const py::kwargs& kwargs) {
        return py::module_::import("ember._legacy").attr("legacy_new")(*args, **kwargs).cast<Tensor>();
      }))
      .def_property(
          "data",
          [](const Tensor& t) {
            // The same memory without history and with a version counter of its own, so writes
            // through .data are invisible to autograd, as in PyTorch.
            Tensor data = autograd::alias(t);
            data.impl()->version_counter = std::make_shared<VersionCounter>();
            data.impl()->version_counter->inference = t.impl()->version_counter->inference;
            return data;
          },
          [](const Tensor& t, const py::object& value) {
            EMBER_CHECK(py::isinstance<Tensor>(value), TypeError,
                        "Variable data has to be a tensor, but got ",
                        py::str(py::type::of(value).attr("__name__")).cast<std::string>());
            const Tensor& v = value.cast<const Tensor&>();
            EMBER_CHECK(v.device() == t.device(), Error, "data set to a tensor on ", v.device().str(),
                        ", but the tensor is on ", t.device().str());
            // x.data = y: x now views y's memory, shape and dtype; x keeps its history, grad and
            // version counter (PyTorch's set_data).
            TensorImpl& dst = *t.impl();
            const TensorImpl& src = *v.impl();
            dst.storage = src.storage;
            dst.sizes = src.sizes;
            dst.strides = src.strides;
            dst.storage_offset = src.storage_offset;
            dst.dtype = src.dtype;
          })
      .def_property(
          "requires_grad", [](const Tensor& t) { return autograd::requires_grad(t); },
          [](const Tensor& t, bool flag) { autograd::set_requires_grad(t, flag); })
      .def(
          "requires_grad_",
          [](py::object self, bool flag) {
            autograd::set_requires_grad(self.cast<Tensor>(), flag);
            return self;
          },
          py::arg("requires_grad") = true)
      .def_property(
          "grad",
          [](const Tensor& t) -> py::object {
            if (!t.impl()->autograd_meta || !t.impl()->autograd_meta->grad.defined()) return py::none();
            return py::cast(t.impl()->autograd_meta->grad);
          },
          [](const Tensor& t, std::optional<Tensor> g) {
            if (g) {
              EMBER_CHECK(g->sizes() == t.sizes(), Error, "[grad] attempting to assign a gradient of size ",
                          shape_text(g->sizes()), " to a tensor of size ", shape_text(t.sizes()),
                          "; the gradient and the tensor must be the same size");
              const std::optional<DType> want = autograd::leaf_grad_dtype(t);
              EMBER_CHECK(!want || g->dtype() == *want, Error,
                          "[grad] attempting to assign a gradient of dtype ", dtype_name(g->dtype()),
                          " to a tensor with grad_dtype ", dtype_name(*want),
                          " (the tensor's dtype unless grad_dtype was set; grad_dtype = None allows any)");
            }
            autograd::meta(t).grad = g.value_or(Tensor());
          })
      .def_property(
          "grad_dtype",
          [](const Tensor& t) -> py::object {
            EMBER_CHECK(autograd::is_leaf(t), Error,
                        "[grad_dtype] grad_dtype can only be accessed on leaf tensors");
            const std::optional<DType> d = autograd::leaf_grad_dtype(t);
            return d ? dtype_object(*d) : py::none();
          },
          [](const Tensor& t, const py::object& value) {
            EMBER_CHECK(autograd::is_leaf(t), Error,
                        "[grad_dtype] grad_dtype can only be set on leaf tensors");
            EMBER_CHECK(value.is_none() || py::isinstance<DType>(value), TypeError,
                        "[grad_dtype] grad_dtype must be an ember.dtype or None, but got ",
                        py::str(py::type::of(value).attr("__name__")).cast<std::string>());
            AutogradMeta& m = autograd::meta(t);
            if (value.is_none()) {
              m.grad_dtype_policy = AutogradMeta::GradDtype::Any;
              return;
            }
            const DType d = value.cast<DType>();
            EMBER_CHECK(!m.grad.defined() || m.grad.dtype() == d, Error,
                        "[grad_dtype] cannot set grad_dtype to ", dtype_name(d),
                        " because there is already a gradient of dtype ", dtype_name(m.grad.dtype()),
                        "; clear it (.grad = None) first");
            m.grad_dtype_policy = AutogradMeta::GradDtype::Fixed;
            m.grad_dtype = d;
          })
      .def_property_readonly("grad_fn",
                             [](const Tensor& t) -> py::object {
                               auto fn = autograd::grad_fn(t);
                               return fn ? py::cast(fn) : py::none();
                             })
      .def_property_readonly("is_leaf", [](const Tensor& t) { return autograd::is_leaf(t); })
      // The tensor a view's memory belongs to (the first non-view in its chain), as PyTorch's
      // _base; None for a tensor that is not a view, detach()'s result included.
      .def_property_readonly("_base",
                             [](const Tensor& t) -> py::object {
                               const Tensor base = autograd::view_base(t);
                               return base.defined() ? py::cast(base) : py::none();
                             })
      .def("_is_view", [](const Tensor& t) { return autograd::view_base(t).defined(); })
      .def_property_readonly(
          "retains_grad",
          [](const Tensor& t) { return t.impl()->autograd_meta && t.impl()->autograd_meta->retains_grad; })
      .def("retain_grad",
           [](const Tensor& t) {
             EMBER_CHECK(autograd::requires_grad(t), Error,
                         "[retain_grad] can't retain_grad on Tensor that has requires_grad=False");
             AutogradMeta& m = autograd::meta(t);
             if (autograd::is_leaf(t) || m.retains_grad) return;
             m.retains_grad = true;
             std::weak_ptr<TensorImpl> weak = t.impl_ptr();
             m.grad_fn->retain_hooks.emplace_back(m.output_nr, [weak](const Tensor& g) {
               auto impl = weak.lock();
               if (!impl) return;
               Tensor self(impl);
               AutogradMeta& meta = autograd::meta(self);
               Tensor value = GradMode::is_enabled() ? g : g.clone();
               meta.grad = meta.grad.defined()
                               ? autograd::add(meta.grad, value, Scalar(int64_t(1)), std::nullopt)
                               : value;
             });
           })
      .def(
          "register_hook",
          [](const Tensor& t, py::function fn) {
            EMBER_CHECK(autograd::requires_grad(t), Error,
                        "[register_hook] cannot register a hook on a tensor that doesn't require gradient");
            const uint64_t id = next_hook_id();
            auto callable = share_python(fn);
            auto hook = [callable](const Tensor& g) {
              py::gil_scoped_acquire gil;
              py::object r = (*callable)(g);
              return r.is_none() ? Tensor() : r.cast<Tensor>();
            };
            if (autograd::is_leaf(t)) {  // kept on the tensor; its AccumulateGrad runs them
              autograd::meta(t).leaf_hooks.emplace_back(id, hook);
              std::weak_ptr<TensorImpl> leaf = t.impl_ptr();
              return RemovableHandle{[leaf, id] {
                if (auto impl = leaf.lock()) {
                  auto& hooks = autograd::meta(Tensor(impl)).leaf_hooks;
                  hooks.erase(std::remove_if(hooks.begin(), hooks.end(),
                                             [id](const auto& h) { return h.first == id; }),
                              hooks.end());
                }
              }};
            }
            const Edge edge = autograd::gradient_edge(t);
            edge.fn->pre_hooks.push_back({id, edge.input_nr, hook});
            std::weak_ptr<Node> node = edge.fn;
            return RemovableHandle{[node, id] {
              if (auto n = node.lock()) {
                auto& hooks = n->pre_hooks;
                hooks.erase(std::remove_if(hooks.begin(), hooks.end(),
                                           [id](const Node::Hook& h) { return h.id == id; }),
                            hooks.end());
              }
            }};
          },
          py::arg("hook"))
      .def(
          "register_post_accumulate_grad_hook",
          [](const Tensor& t, py::function fn) {
            EMBER_CHECK(
                autograd::requires_grad(t) && autograd::is_leaf(t), Error,
                "[register_post_accumulate_grad_hook] post accumulate grad hooks cannot be registered on "
                "non-leaf tensors or tensors that don't require grad");
            auto callable = share_python(fn);
            std::weak_ptr<TensorImpl> weak = t.impl_ptr();
            autograd::meta(t).post_accumulate_hooks.push_back([callable, weak] {
              auto impl = weak.lock();
              if (!impl) return;
              py::gil_scoped_acquire gil;
              (*callable)(Tensor(impl));
            });
          },
          py::arg("hook"))
      .def("detach_", [](py::object self) {
        const Tensor t = self.cast<Tensor>();
        if (t.impl()->autograd_meta) {
          t.impl()->autograd_meta->grad_fn = nullptr;
          t.impl()->autograd_meta->view_base = Tensor();
        }
        t.impl()->requires_grad = false;
        return self;
      });

  tensor.def("is_inference", &Tensor::is_inference);
  m.def("_is_inference_mode_enabled", &InferenceMode::is_enabled);
  m.def(
      "_set_inference_mode",
      [](bool enabled) {
        const bool prev = InferenceMode::is_enabled();
        InferenceMode::set_enabled(enabled);
        return prev;
      },
      py::arg("enabled"), "Switches this thread's inference mode; returns the previous setting.");
  m.def("_is_anomaly_enabled", &AnomalyMode::is_enabled);
  m.def("_is_anomaly_check_nan_enabled", &AnomalyMode::check_nan);
  m.def("_set_anomaly_enabled", &AnomalyMode::set_enabled, py::arg("enabled"), py::arg("check_nan") = true);
  AnomalyMode::set_trace_source([] {
    py::gil_scoped_acquire gil;
    return py::str("")
        .attr("join")(py::module_::import("traceback").attr("format_stack")())
        .cast<std::string>();
  });
  m.def("_is_grad_enabled", &GradMode::is_enabled);
  m.def("_set_grad_enabled", &GradMode::set_enabled, py::arg("mode"));
  // Note [saved-tensor hooks]: what pack returns is kept as a Python object, released with the
  // GIL held; unpack must give a tensor back.
  m.def(
      "_push_saved_tensors_hooks",
      [](py::function pack, py::function unpack) {
        auto pack_fn = share_python(std::move(pack));
        auto unpack_fn = share_python(std::move(unpack));
        auto hooks = std::make_shared<SavedTensorHooks>();
        hooks->pack = [pack_fn](const Tensor& t) -> SavedTensorHooks::Packed {
          py::gil_scoped_acquire gil;
          auto kept = share_python((*pack_fn)(t));
          return std::static_pointer_cast<void>(kept);
        };
        hooks->unpack = [unpack_fn](const SavedTensorHooks::Packed& packed) -> Tensor {
          py::gil_scoped_acquire gil;
          py::object r = (*unpack_fn)(*static_cast<py::object*>(packed.get()));
          EMBER_CHECK(py::isinstance<Tensor>(r), TypeError,
                      "Output of saved tensor unpack_hook expected to be a Tensor but got result of type ",
                      py::str(py::type::of(r).attr("__name__")).cast<std::string>());
          return r.cast<Tensor>();
        };
        SavedTensorHooks::push(std::move(hooks));
      },
      py::arg("pack_hook"), py::arg("unpack_hook"));
  m.def("_pop_saved_tensors_hooks", &SavedTensorHooks::pop);
  m.def("_is_grad_layout_enforcement_enabled", &GradLayoutPolicy::is_enforced);
  m.def("_set_grad_layout_enforcement_enabled", &GradLayoutPolicy::set_enforced, py::arg("enabled"));
  // torch._C's names for the view replay switch (Note [view replay] in ember/autograd.h)
  m.def("_is_view_replay_enabled", &ViewReplay::is_enabled);
  m.def("_set_view_replay_enabled", &ViewReplay::set_enabled, py::arg("enabled"));
  bind_autocast(m);
  m.def(
      "_run_backward",
      [](const std::vector<Tensor>& tensors, const std::vector<Tensor>& grad_tensors, bool keep_graph,
         bool create_graph, const std::vector<Tensor>& inputs, bool accumulate) {
        std::vector<Tensor> grads;
        {
          py::gil_scoped_release no_gil;
          grads = autograd::run_backward(tensors, grad_tensors, keep_graph, create_graph, inputs, accumulate);
        }
        py::list out;  // an input no gradient reached is None
        for (const Tensor& g : grads) out.append(g.defined() ? py::cast(g) : py::none());
        return out;
      },
      py::arg("tensors"), py::arg("grad_tensors"), py::arg("keep_graph"), py::arg("create_graph"),
      py::arg("inputs"), py::arg("accumulate"));

  // forward mode (ember.autograd.forward_ad)
  m.def("_enter_dual_level", &forward_ad::enter_dual_level);
  m.def("_exit_dual_level", &forward_ad::exit_dual_level, py::arg("level"));
  m.def("_make_dual", &forward_ad::make_dual, py::arg("tensor"), py::arg("tangent"));
  m.def("_unpack_dual", [](const Tensor& t) -> py::tuple {
    const Tensor tangent = forward_ad::tangent(t);
    if (!tangent.defined()) return py::make_tuple(t, py::none());
    return py::make_tuple(forward_ad::primal_view(t), tangent);
  });
  m.def("_set_tangent", &forward_ad::set_tangent, py::arg("tensor"), py::arg("tangent"),
        py::arg("written_in_place") = false);
  m.def("_set_forward_ad_paused", &forward_ad::set_paused, py::arg("paused"));

  // vmap (ember/func/_vmap.py builds the transform on these)
  m.def("_vmap_enter_level", [](int64_t batch_size, const std::string& randomness) {
    const vmap::Randomness r = randomness == "error"       ? vmap::Randomness::Error
                               : randomness == "different" ? vmap::Randomness::Different
                               : randomness == "same"      ? vmap::Randomness::Same
                                                           : throw ValueError(
                                                            "[vmap] Only allowed values for "
                                                                 "randomness are 'error', 'different', "
                                                                 "or 'same'. Got " +
                                                            randomness);
    return vmap::enter_level(batch_size, r);
  });
  m.def("_vmap_exit_level", &vmap::exit_level);
  m.def("_vmap_current_level", &vmap::current_level);
  m.def("_add_batch_dim", &vmap::add_batch_dim, py::arg("tensor"), py::arg("bdim"), py::arg("level"));
  m.def("_remove_batch_dim", &vmap::remove_batch_dim, py::arg("tensor"), py::arg("level"),
        py::arg("batch_size"), py::arg("out_dim"));
  m.def("_vmap_info", [](const Tensor& t) -> py::object {
    const BatchedInfo* b = vmap::batched_info(t);
    if (!b) return py::none();
    return py::make_tuple(b->level, b->bdim, b->value);
  });
  m.def("_vmap_take_fallbacks", &vmap::take_new_fallbacks);
}

}  // namespace ember::python

namespace ember::python {
namespace {

// The backward node of a Python ember.autograd.Function: calls the Function's backward (through
// `callback`, holding the GIL) with one gradient per output, and expects one per tensor input.
class PythonNode final : public Node {
 public:
  PythonNode(std::string name, py::object callback)
      : name_(std::move(name)), callback_(new py::object(callback)) {}
  ~PythonNode() override { release_variables(); }
  std::string name() const override { return name_; }
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override {
    py::gil_scoped_acquire gil;
    EMBER_CHECK(
        callback_ != nullptr, Error,
        "[backward] Trying to backward through the graph a second time (or directly access saved tensors "
        "after they have already been freed). Specify retain_graph=True if you need to backward through "
        "the graph a second time.");
    py::list in;
    for (const Tensor& g : grads) in.append(g.defined() ? py::cast(g) : py::none());
    py::object result = (*callback_)(in);
    std::vector<Tensor> out;
    for (py::handle r : result) out.push_back(r.is_none() ? Tensor() : r.cast<Tensor>());
    EMBER_CHECK(out.size() == next_edges.size(), Error, "[", name_, "] backward returned ", out.size(),
                " gradients, but the function has ", next_edges.size(), " tensor inputs");
    return out;
  }
  void release_variables() override {
    if (!callback_) return;
    if (Py_IsInitialized()) {
      py::gil_scoped_acquire gil;
      delete callback_;
    }
    callback_ = nullptr;
  }

 private:
  std::string name_;
  py::object* callback_;  // owned; deleted with the GIL held
};

}  // namespace

void bind_python_function(py::module_& m) {
  // Records a Function call: inputs (tensors, in order), outputs to attach, the dirty (modified in
  // place) inputs among them, and the non-differentiable outputs. Returns the outputs to hand back.
  m.def(
      "_record_function",
      [](const std::string& name, py::object callback, const std::vector<Tensor>& inputs,
         std::vector<Tensor> outputs, const std::vector<bool>& dirty,
         const std::vector<bool>& non_differentiable, bool materialize_grads) {
        auto node = std::make_shared<PythonNode>(name, callback);
        node->materialize_grads = materialize_grads;
        for (const Tensor& t : inputs) {
          const bool flows = autograd::requires_grad(t);
          node->next_edges.push_back(flows ? autograd::gradient_edge(t) : Edge{});
          node->input_meta.push_back(flows ? InputMeta{t.sizes(), t.dtype(), t.device(), vmap::levels_of(t)}
                                           : InputMeta{});
        }
        node->output_meta.assign(outputs.size(), InputMeta{});
        for (size_t i = 0; i < outputs.size(); ++i) {
          Tensor& out = outputs[i];
          if (dirty[i]) {  // modified in place: its history moves onto this node
            autograd::check_inplace(name.c_str(), out, true);
            out.bump_version();
          } else {
            for (const Tensor& in : inputs) {
              if (!in.is_same(out)) continue;
              // an input returned as is: an alias, a view of the input's base (Note [view creation])
              const Tensor base = autograd::view_base(in);
              out = autograd::alias(out);
              AutogradMeta& am = autograd::meta(out);
              am.view_base = base.defined() ? base : in;
              am.view_version = out.version();
            }
          }
          if (non_differentiable[i] || !(is_floating_point(out.dtype()) || is_complex(out.dtype()))) continue;
          AutogradMeta& meta = autograd::meta(out);
          meta.grad_fn = node;
          meta.output_nr = static_cast<uint32_t>(i);
          // a view (or an input returned as is) must not be written in place: Note [view creation]
          if (!dirty[i] && meta.view_base.defined()) meta.view_creation = ViewCreation::CustomFunction;
          out.impl()->requires_grad = true;
          node->output_meta[i] = InputMeta{out.sizes(), out.dtype(), out.device()};
        }
        return outputs;
      },
      py::arg("name"), py::arg("callback"), py::arg("inputs"), py::arg("outputs"), py::arg("dirty"),
      py::arg("non_differentiable"), py::arg("materialize_grads") = true);
}

}  // namespace ember::python
