#pragma once
// Derivatives of out-of-tree ops, declared as built-in ops declare theirs (DERIVATIVES in
// native/ops/declarations.py): one formula per differentiable Tensor argument, giving its
// vector-Jacobian product from `grad`, and one for "result", giving the output's tangent from
// the arguments' tangents. A formula is a C++ callable written with the ember::autograd:: ops,
// so it records a graph too and create_graph=True works.
//
//   m.derivatives("scale_add", {
//       {"x", [](const ember::FormulaContext& c) { return c.grad(); }},
//       {"y", [](const ember::FormulaContext& c) {
//          return ember::autograd::mul(c.grad(), c.number("alpha")); }},
//       {"result", [](const ember::FormulaContext& c) { ... c.tangent("x") ... }},
//   });
//
// The op's inputs and outputs are saved for backward (version-checked as built-in ops' are). A
// Tensor argument without a formula raises NotImplementedError when a gradient is needed for it.
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "ember/export.h"
#include "ember/ivalue.h"
#include "ember/op_registry.h"
#include "ember/tensor.h"

namespace ember {

// What a formula sees: the op's arguments by schema name, its outputs, and the gradient of each
// output (reverse mode) or each Tensor argument's tangent (forward mode).
class EMBER_API FormulaContext {
 public:
  FormulaContext(const Schema& schema, Stack args, std::vector<Tensor> results, std::vector<Tensor> grads,
                 std::vector<Tensor> tangents);

  const Tensor& grad(size_t output = 0) const;    // zeros when that output received none
  const Tensor& result(size_t output = 0) const;  // the op's output
  Tensor tensor(const std::string& name) const;   // a Tensor argument (undefined when None)
  Tensor number(const std::string& name) const;   // a number argument, as a 0-dim wrapped number
  const IValue& arg(const std::string& name) const;
  Tensor tangent(const std::string& name) const;  // forward mode: zeros when it has none

 private:
  size_t position(const std::string& name) const;
  const Schema& schema_;
  Stack args_;
  std::vector<Tensor> results_, grads_, tangents_;
};

// DerivativeFormula(s) are declared in ember/op_registry.h, which Library::derivatives takes.

// The Autograd-key kernel of `op` for these formulas (Library::derivatives registers it).
// ValueError when a name is not a Tensor argument or "result", or "result" is missing.
EMBER_API BoxedKernel derivative_kernel(const Operator& op, DerivativeFormulas formulas);

}  // namespace ember
