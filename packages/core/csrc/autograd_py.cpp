// Python side of autograd: Tensor.requires_grad / grad / grad_fn / is_leaf / retain_grad,
// graph nodes (grad_fn.name(), next_functions), grad mode, and the engine entry point that
// ember.autograd.backward / grad call (ember/autograd/__init__.py builds the user API on it).
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include "bindings.h"
#include "ember/autograd.h"
#include "ember/vmap.h"

namespace ember::python {

namespace {

// A Python callable kept by C++ (hooks): released with the GIL held.
std::shared_ptr<py::object> share_python(py::function fn) {
  return std::shared_ptr<py::object>(new py::object(std::move(fn)), [](py::object* p) {
    if (Py_IsInitialized()) {
      py::gil_scoped_acquire gil;
      delete p;
    }
  });
}

struct RemovableHandle {
  std::weak_ptr<Node> node;        // a non-leaf's hook sits on its grad_fn
  std::weak_ptr<TensorImpl> leaf;  // a leaf's on the tensor
  uint64_t id;
  void remove() const {
    if (auto n = node.lock()) {
      auto& hooks = n->pre_hooks;
      hooks.erase(
          std::remove_if(hooks.begin(), hooks.end(), [this](const Node::Hook& h) { return h.id == id; }),
          hooks.end());
    }
    if (auto impl = leaf.lock()) {
      auto& hooks = autograd::meta(Tensor(impl)).leaf_hooks;
      hooks.erase(std::remove_if(hooks.begin(), hooks.end(), [this](const auto& h) { return h.first == id; }),
                  hooks.end());
    }
  }
};

}  // namespace

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
      .def("__repr__", [](const Node& n) { return "<" + n.name() + ">"; });

  tensor
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
              EMBER_CHECK(g->sizes() == t.sizes() && g->dtype() == t.dtype(), Error,
                          "[grad] assigned grad has data of a different size or type than the tensor");
            }
            autograd::meta(t).grad = g.value_or(Tensor());
          })
      .def_property_readonly("grad_fn",
                             [](const Tensor& t) -> py::object {
                               auto fn = autograd::grad_fn(t);
                               return fn ? py::cast(fn) : py::none();
                             })
      .def_property_readonly("is_leaf", [](const Tensor& t) { return autograd::is_leaf(t); })
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
            static std::atomic<uint64_t> next_id{0};
            const uint64_t id = next_id++;
            auto callable = share_python(fn);
            auto hook = [callable](const Tensor& g) {
              py::gil_scoped_acquire gil;
              py::object r = (*callable)(g);
              return r.is_none() ? Tensor() : r.cast<Tensor>();
            };
            if (autograd::is_leaf(t)) {  // kept on the tensor; its AccumulateGrad runs them
              autograd::meta(t).leaf_hooks.emplace_back(id, hook);
              return RemovableHandle{{}, t.impl_ptr(), id};
            }
            const Edge edge = autograd::gradient_edge(t);
            edge.fn->pre_hooks.push_back({id, edge.input_nr, hook});
            return RemovableHandle{edge.fn, {}, id};
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
          t.impl()->autograd_meta->is_view = false;
        }
        t.impl()->requires_grad = false;
        return self;
      });

  m.def("_is_grad_enabled", &GradMode::is_enabled);
  m.def("_set_grad_enabled", &GradMode::set_enabled, py::arg("mode"));
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
  m.def("_set_tangent", &forward_ad::set_tangent, py::arg("tensor"), py::arg("tangent"));
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
  m.def("_record_function", [](const std::string& name, py::object callback,
                               const std::vector<Tensor>& inputs, std::vector<Tensor> outputs,
                               const std::vector<bool>& dirty, const std::vector<bool>& non_differentiable) {
    auto node = std::make_shared<PythonNode>(name, callback);
    for (const Tensor& t : inputs) {
      const bool flows = autograd::requires_grad(t);
      node->next_edges.push_back(flows ? autograd::gradient_edge(t) : Edge{});
      node->input_meta.push_back(flows ? InputMeta{t.sizes(), t.dtype(), t.device()} : InputMeta{});
    }
    node->output_meta.assign(outputs.size(), InputMeta{});
    for (size_t i = 0; i < outputs.size(); ++i) {
      Tensor& out = outputs[i];
      if (dirty[i]) {  // modified in place: its history moves onto this node
        autograd::check_inplace(name.c_str(), out);
        out.bump_version();
      } else {
        for (const Tensor& in : inputs) {
          if (in.is_same(out)) out = autograd::alias(out);  // an input returned as is
        }
      }
      if (non_differentiable[i] || !(is_floating_point(out.dtype()) || is_complex(out.dtype()))) continue;
      AutogradMeta& meta = autograd::meta(out);
      meta.grad_fn = node;
      meta.output_nr = static_cast<uint32_t>(i);
      out.impl()->requires_grad = true;
      node->output_meta[i] = InputMeta{out.sizes(), out.dtype(), out.device()};
    }
    return outputs;
  });
}

}  // namespace ember::python
