// The Autograd kernel of an out-of-tree op with declared derivatives (ember/derivatives.h): it
// runs the backend kernel below autograd, records a node evaluating the declared formulas, and
// gives the output its tangent from the "result" formula. The same steps the generated wrappers
// of built-in ops take (gen_autograd.py), driven by the schema instead of generated code.
#include <algorithm>
#include <cctype>

#include "ember/autograd.h"
#include "ember/derivatives.h"
#include "ember/error.h"
#include "ember/promotion.h"
#include "ember/vmap.h"

namespace ember {

FormulaContext::FormulaContext(const Schema& schema, Stack args, std::vector<Tensor> results,
                               std::vector<Tensor> grads, std::vector<Tensor> tangents)
    : schema_(schema),
      args_(std::move(args)),
      results_(std::move(results)),
      grads_(std::move(grads)),
      tangents_(std::move(tangents)) {}

size_t FormulaContext::position(const std::string& name) const {
  for (size_t i = 0; i < schema_.arguments.size(); ++i) {
    if (schema_.arguments[i].name == name) return i;
  }
  throw ValueError("[" + schema_.qualified_name() + "] a derivative formula asked for argument '" + name +
                   "', which the schema does not have");
}

const Tensor& FormulaContext::grad(size_t output) const {
  EMBER_CHECK(output < grads_.size(), ValueError, "[", schema_.qualified_name(),
              "] grad() is only available to reverse-mode formulas, for outputs 0..", grads_.size());
  return grads_[output];
}

const Tensor& FormulaContext::result(size_t output) const {
  EMBER_CHECK(output < results_.size(), ValueError, "[", schema_.qualified_name(), "] the op has ",
              results_.size(), " outputs, but a formula asked for output ", output);
  return results_[output];
}

const IValue& FormulaContext::arg(const std::string& name) const {
  return args_.at(position(name));
}

Tensor FormulaContext::tensor(const std::string& name) const {
  const IValue& v = arg(name);
  return v.is_none() ? Tensor() : v.get<Tensor>(name.c_str());
}

Tensor FormulaContext::number(const std::string& name) const {
  const IValue& v = arg(name);
  if (v.is<double>()) return wrapped_number(Scalar(v.get<double>("")));
  if (v.is<int64_t>()) return wrapped_number(Scalar(v.get<int64_t>("")));
  return wrapped_number(Scalar(v.get<bool>(name.c_str())));
}

Tensor FormulaContext::tangent(const std::string& name) const {
  const size_t i = position(name);
  EMBER_CHECK(i < tangents_.size(), ValueError, "[", schema_.qualified_name(),
              "] tangent() is only available to the forward-mode formula (\"result\")");
  return tangents_[i];
}

namespace {

// scale_add -> ScaleAddBackward0, as the built-in nodes are named.
std::string node_name(const std::string& op) {
  std::string out;
  bool upper = true;
  for (char ch : op) {
    if (ch == '_') {
      upper = true;
      continue;
    }
    out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(ch))) : ch;
    upper = false;
  }
  return out + "Backward0";
}

Tensor tensor_at(const Stack& args, size_t i) {
  return args[i].is<Tensor>() ? args[i].get<Tensor>("") : Tensor();
}

class CustomOpBackward final : public Node {
 public:
  CustomOpBackward(const Operator& op, std::vector<DerivativeFormula> vjps)
      : op_(op), vjps_(std::move(vjps)) {}
  std::string name() const override { return node_name(op_.schema().name); }

  // Saves every argument (tensors as SavedVariables) and the output; edges follow tensor args.
  void record(const Stack& args, const Tensor& result) {
    args_ = args;
    saved_.resize(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      const Tensor t = tensor_at(args, i);
      if (!t.defined()) continue;
      saved_[i] = SavedVariable(t, false);
      args_[i] = IValue();  // the saved copy stands in for it
      const bool flows = autograd::requires_grad(t);
      next_edges.push_back(flows ? autograd::gradient_edge(t) : Edge{});
      input_meta.push_back(flows ? InputMeta{t.sizes(), t.dtype(), t.device(), vmap::levels_of(t)}
                                 : InputMeta{});
      edge_arg_.push_back(i);
    }
    result_ = SavedVariable(result, true);
  }

  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override {
    const std::shared_ptr<Node> self = shared_from_this();
    Stack args = args_;
    for (size_t i = 0; i < args.size(); ++i) {
      if (saved_[i].defined()) args[i] = saved_[i].unpack(self);
    }
    const FormulaContext context(op_.schema(), std::move(args), {result_.unpack(self)}, std::move(grads), {});
    std::vector<Tensor> out(next_edges.size());
    for (size_t e = 0; e < out.size(); ++e) {
      if (!should_compute_output(e)) continue;
      const size_t arg = edge_arg_[e];
      EMBER_CHECK(vjps_[arg] != nullptr, NotImplementedError, "[", op_.qualified_name(),
                  "] the derivative for '", op_.schema().arguments[arg].name, "' is not implemented");
      out[e] = vjps_[arg](context);
    }
    return out;
  }

  void release_variables() override {
    for (SavedVariable& s : saved_) s.reset();
    result_.reset();
  }

 private:
  const Operator& op_;
  std::vector<DerivativeFormula> vjps_;  // per argument position (null: none declared)
  Stack args_;                           // non-tensor arguments (tensors are in saved_)
  std::vector<SavedVariable> saved_;
  SavedVariable result_;
  std::vector<size_t> edge_arg_;  // the argument position of each next edge
};

}  // namespace

BoxedKernel derivative_kernel(const Operator& op, DerivativeFormulas formulas) {
  const Schema& schema = op.schema();
  const std::string qn = schema.qualified_name();
  EMBER_CHECK(schema.returns.size() == 1 && schema.returns[0].base == BaseType::Tensor &&
                  !schema.returns[0].is_list && !schema.returns[0].is_optional,
              ValueError, "[derivatives] ", qn,
              ": derivatives can be declared for ops returning one Tensor, but the schema returns ",
              schema.str().substr(schema.str().rfind("->") + 3));
  std::vector<DerivativeFormula> vjps(schema.arguments.size());
  DerivativeFormula jvp;
  for (auto& [name, formula] : formulas) {
    EMBER_CHECK(formula != nullptr, ValueError, "[derivatives] ", qn, ": the formula for '", name,
                "' is empty");
    if (name == "result") {
      jvp = std::move(formula);
      continue;
    }
    auto it = std::find_if(schema.arguments.begin(), schema.arguments.end(),
                           [&](const Argument& a) { return a.name == name; });
    EMBER_CHECK(it != schema.arguments.end() && it->type.base == BaseType::Tensor && !it->type.is_list,
                ValueError, "[derivatives] ", qn, " has no Tensor argument named '", name,
                "' (formulas are keyed by Tensor argument names, and \"result\" for the forward-mode one)");
    vjps[it - schema.arguments.begin()] = std::move(formula);
  }
  EMBER_CHECK(jvp != nullptr, ValueError, "[derivatives] ", qn,
              " declares reverse-mode derivatives but no forward-mode one (\"result\")");

  return [&op, vjps, jvp](Stack& stack) {
    const Stack args = stack;
    std::vector<Tensor> tangents(args.size());
    bool any_tangent = false;
    std::optional<Device> device;
    bool needed = false;
    for (size_t i = 0; i < args.size(); ++i) {
      const Tensor t = tensor_at(args, i);
      if (!t.defined()) continue;
      if (!device) device = t.device();
      needed = needed || autograd::any_requires_grad({&t});
      if (forward_ad::any_tangent({&t})) any_tangent = true;
    }
    if (any_tangent) {
      for (size_t i = 0; i < args.size(); ++i) {
        const Tensor t = tensor_at(args, i);
        if (t.defined()) tangents[i] = forward_ad::tangent_or_zeros(t);
      }
    }
    {
      GradModeGuard below_autograd(false);
      forward_ad::PauseGuard no_tangents;
      stack = op.call_key(backend_key(device.value_or(Device()).type), args);
    }
    Tensor result = stack.at(0).get<Tensor>("result");
    if (needed) {
      auto node = std::make_shared<CustomOpBackward>(op, vjps);
      std::vector<Tensor> inputs;
      for (size_t i = 0; i < args.size(); ++i) inputs.push_back(tensor_at(args, i));
      autograd::set_history({&result}, node, inputs);
      node->record(args, result);
    }
    if (any_tangent) {
      forward_ad::PauseGuard primal_only;
      const FormulaContext context(op.schema(), args, {result}, {}, std::move(tangents));
      forward_ad::set_tangent(result, jvp(context));
    }
    stack.at(0) = IValue(result);
  };
}

}  // namespace ember
