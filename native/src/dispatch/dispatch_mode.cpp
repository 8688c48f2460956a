// Dispatch modes' thread state and the hand-off to the handler (Note [dispatch modes] in
// ember/dispatch_mode.h).
#include "ember/dispatch_mode.h"

#include "ember/autocast.h"

namespace ember::dispatch_mode {

namespace {

std::atomic<Handler> handler{nullptr};
thread_local bool active_here = false;
thread_local bool below = false;

}  // namespace

std::atomic<int> threads_with_modes{0};
std::atomic<bool> python_tensors_exist{false};

namespace {
thread_local bool python_dispatch_on = true;
}  // namespace

bool set_python_dispatch_enabled(bool enabled) {
  const bool previous = python_dispatch_on;
  python_dispatch_on = enabled;
  return previous;
}

bool python_dispatch_enabled() {
  return python_dispatch_on;
}

bool python_arguments(const Stack& args) {
  if (!python_tensors_exist.load(std::memory_order_relaxed) || !python_dispatch_on) return false;
  bool found = false;
  for_each_tensor(args, [&](const Tensor& t) { found = found || is_python_tensor(t); });
  return found;
}

void set_handler(Handler h) {
  handler.store(h);
}

bool set_active(bool active) {
  const bool previous = active_here;
  if (active != previous) threads_with_modes.fetch_add(active ? 1 : -1);
  active_here = active;
  return previous;
}

bool active_on_this_thread() {
  return active_here;
}

bool below_autograd() {
  return below;
}

BelowAutogradGuard::BelowAutogradGuard() : previous_(below) {
  below = true;
}
BelowAutogradGuard::~BelowAutogradGuard() {
  below = previous_;
}

Stack dispatch(const Operator& op, Stack args) {
  const Handler h = handler.load();
  EMBER_CHECK(h != nullptr, Error, "[", op.qualified_name(),
              "] a dispatch mode is active but no handler is installed");
  BelowAutogradGuard below_guard;
  autocast::ExcludeGuard no_autocast;
  return h(op, std::move(args));
}

const Operator& registered(const char* qualified_name) {
  const Operator* op = OpRegistry::global().find(qualified_name);
  EMBER_CHECK(op != nullptr, Error, "[", qualified_name, "] a built-in op is missing from the op registry");
  return *op;
}

namespace detail {

IValue box_scalar(const Scalar& s) {
  if (s.is_bool()) return s.to_bool();
  if (s.is_integral()) return s.to_int();
  if (s.is_complex()) return s.to_complex();
  return s.to_double();
}

}  // namespace detail

}  // namespace ember::dispatch_mode
