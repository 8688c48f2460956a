#include "ember/ember.h"
#include "harness.h"

using namespace ember;

namespace {
Tensor scale(const Tensor& x, double alpha) {
  Tensor out = empty_like(x);
  Tensor xc = x.contiguous();
  for (int64_t i = 0; i < x.numel(); ++i) out.data<float>()[i] = xc.data<float>()[i] * alpha;
  return out;
}
std::tuple<Tensor, int64_t> with_count(const Tensor& x) {
  return {x, x.numel()};
}
}  // namespace

EMBER_LIBRARY(regtest, m) {
  m.def("scale(Tensor x, float alpha=2.0) -> Tensor");
  m.impl("scale", DispatchKey::CPU, &scale);
  m.def("with_count(Tensor x) -> (Tensor, int)");
  m.impl("with_count", DispatchKey::CPU, &with_count);
  m.def("cpu_less(Tensor x) -> Tensor");
}

EMBER_TEST(library_blocks_register_on_lookup) {
  const Operator* op = OpRegistry::global().find("regtest::scale");
  CHECK(op != nullptr);
  Tensor x = empty({3});
  for (int i = 0; i < 3; ++i) x.data<float>()[i] = float(i);
  Stack out = op->call({x, 0.5});
  CHECK_EQ(out.size(), 1u);
  CHECK_EQ(out[0].get<Tensor>("r").data<float>()[2], 1.0f);
  Stack two = OpRegistry::global().get("regtest::with_count").call({x});
  CHECK_EQ(two[1].get<int64_t>("n"), 3);
}

EMBER_TEST(calls_are_checked_against_the_schema) {
  const Operator& op = OpRegistry::global().get("regtest::scale");
  CHECK_THROWS(TypeError, op.call({empty({1})}), "expected 2 arguments");
  CHECK_THROWS(TypeError, op.call({empty({1}), int64_t(2)}), "'alpha' to be float, but got int");
  CHECK_THROWS(NotImplementedError, OpRegistry::global().get("regtest::cpu_less").call({empty({1})}),
               "[regtest::cpu_less] not implemented for cpu");
}

EMBER_TEST(registration_errors_are_clear) {
  Library lib("regtest2", "test_registry.cpp");
  lib.def("f(Tensor x, int n) -> Tensor");
  CHECK_THROWS(ValueError, lib.def("f(Tensor x) -> Tensor"), "already defined");
  CHECK_THROWS(ValueError, lib.impl("f", DispatchKey::CPU, &scale),
               "to accept int ('n'), but it accepts float");
  CHECK_THROWS(ValueError, lib.def("other::g() -> ()"), "namespace 'regtest2'");
  CHECK_THROWS(ValueError, lib.impl("missing", DispatchKey::CPU, &scale), "not defined");
  lib.def("h(Tensor x, float alpha) -> Tensor");
  lib.impl("h", DispatchKey::CPU, &scale);
  CHECK_THROWS(ValueError, lib.impl("h", DispatchKey::CPU, &scale), "already registered");
}

EMBER_TEST(core_compatibility_is_one_minor) {
  check_core_compatible(EMBER_VERSION_STRING, "self");
  const std::string next_minor =
      std::to_string(EMBER_VERSION_MAJOR) + "." + std::to_string(EMBER_VERSION_MINOR + 1) + ".0";
  CHECK_THROWS(ImportError, check_core_compatible(next_minor, "ext"), "built for ember " + next_minor);
  CHECK_THROWS(ImportError, check_core_compatible("garbage", "ext"), "such as '0.1.0'");
}

EMBER_TEST(devices_parse_like_torch_device) {
  CHECK_EQ(Device("cuda:1").index, 1);
  CHECK_EQ(Device("cuda").str(), "cuda");
  CHECK_THROWS(Error, Device("gpu"), "expected one of cpu, cuda, mps");
  CHECK_THROWS(Error, Device("cuda:x"), "device index");
  CHECK_THROWS(Error, Device("cuda:-1"), "device index");
  CHECK_THROWS(Error, Device("cpu:1"), "index 0 or none");
}

EMBER_TEST(declared_derivatives_record_and_run) {
  Library lib("regtest3", "test_registry.cpp");
  lib.def("scale(Tensor x, float alpha=2.0) -> Tensor");
  lib.impl("scale", DispatchKey::CPU, &scale);
  lib.derivatives(
      "scale",
      {{"x", [](const FormulaContext& c) { return autograd::mul(c.grad(), c.number("alpha")); }},
       {"result", [](const FormulaContext& c) { return autograd::mul(c.tangent("x"), c.number("alpha")); }}});
  Tensor x = full({3}, Scalar(1.0), DType::Float32);
  autograd::set_requires_grad(x, true);
  const Tensor y = OpRegistry::global().get("regtest3::scale").call({x, 3.0})[0].get<Tensor>("y");
  CHECK_EQ(autograd::grad_fn(y)->name(), std::string("ScaleBackward0"));
  const std::vector<Tensor> g =
      autograd::run_backward({y}, {full({3}, Scalar(1.0), DType::Float32)}, false, false, {x}, false);
  CHECK_EQ(g[0].contiguous().data<float>()[1], 3.0f);
}

EMBER_TEST(derivative_declarations_are_checked) {
  Library lib("regtest4", "test_registry.cpp");
  lib.def("f(Tensor x, float alpha) -> Tensor");
  lib.impl("f", DispatchKey::CPU, &scale);
  const DerivativeFormula id = [](const FormulaContext& c) { return c.grad(); };
  CHECK_THROWS(ValueError, lib.derivatives("f", {{"z", id}, {"result", id}}), "no Tensor argument named 'z'");
  CHECK_THROWS(ValueError, lib.derivatives("f", {{"alpha", id}, {"result", id}}),
               "no Tensor argument named 'alpha'");
  CHECK_THROWS(ValueError, lib.derivatives("f", {{"x", id}}), "no forward-mode one (\"result\")");
  lib.def("g(Tensor x) -> (Tensor, int)");
  CHECK_THROWS(ValueError, lib.derivatives("g", {{"result", id}}), "ops returning one Tensor");
}

EMBER_TEST(ops_without_derivatives_raise_at_backward) {
  Tensor x = full({2}, Scalar(1.0), DType::Float32);
  autograd::set_requires_grad(x, true);
  const Tensor y = OpRegistry::global().get("regtest::scale").call({x, 2.0})[0].get<Tensor>("y");
  CHECK(autograd::requires_grad(y));
  CHECK_THROWS(NotImplementedError,
               autograd::run_backward({y}, {full({2}, Scalar(1.0), DType::Float32)}, false, false, {}, true),
               "the derivative for 'regtest::scale' is not implemented");
  Library lib("regtest5", "test_registry.cpp");
  lib.def("two(Tensor x, Tensor y) -> Tensor");
  lib.impl("two", DispatchKey::CPU, +[](const Tensor& a, const Tensor&) { return a.clone(); });
  lib.derivatives("two", {{"x", [](const FormulaContext& c) { return c.grad(); }},
                          {"result", [](const FormulaContext& c) { return c.tangent("x"); }}});
  Tensor b = full({2}, Scalar(1.0), DType::Float32);
  autograd::set_requires_grad(b, true);
  const Tensor z = OpRegistry::global().get("regtest5::two").call({x, b})[0].get<Tensor>("z");
  CHECK_THROWS(
      NotImplementedError,
      autograd::run_backward({z}, {full({2}, Scalar(1.0), DType::Float32)}, false, false, {b}, false),
      "[regtest5::two] the derivative for 'y' is not implemented");
}
