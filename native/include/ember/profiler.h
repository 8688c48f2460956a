#pragma once
// The op profiler behind ember.profiler. While it runs, every op call and every user scope
// (ember.profiler.record_function) becomes an Event: name, start and end, nesting depth, thread,
// and on request the input shapes and the net CPU bytes allocated meanwhile. Built-in ops are
// recorded at their generated ember::autograd::<op> entry point, extension ops in
// Operator::call. When the profiler is off a scope costs one relaxed atomic load.
#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "ember/export.h"

namespace ember {
class Tensor;
}

namespace ember::profiler {

struct Event {
  std::string name;
  int64_t start_ns = 0;
  int64_t end_ns = -1;  // -1: still open when the profiler stopped
  int64_t thread = 0;   // a small id per thread, in order of first appearance
  int depth = 0;        // scopes open on the same thread around this one
  bool user_scope = false;
  std::vector<std::vector<int64_t>> input_shapes;  // per tensor input, [] for a 0-dim or absent one
  int64_t allocated_bytes = 0;                     // net CPU bytes allocated during the scope
  std::vector<std::string> stack;                  // caller frames, innermost first (with_stack)
};

struct Options {
  bool record_shapes = false;
  bool profile_memory = false;
  bool with_stack = false;
};

// with_stack needs the caller's (Python) stack, which libember cannot see: the Python module
// installs the function that captures it.
using StackProvider = std::vector<std::string> (*)();
EMBER_API void set_stack_provider(StackProvider provider);

EMBER_API extern std::atomic<bool> g_active;
inline bool active() {
  return g_active.load(std::memory_order_relaxed);
}

EMBER_API void start(Options options);  // RuntimeError if a session is already running
EMBER_API std::vector<Event> stop();    // ends the session and returns its events in start order
EMBER_API int64_t now_ns();             // the clock events are stamped with (steady, nanoseconds)

class EMBER_API RecordScope {
 public:
  RecordScope(const char* name, std::initializer_list<const Tensor*> inputs) {
    if (active()) begin(name, inputs, false);
  }
  explicit RecordScope(const std::string& name, bool user_scope = true);
  ~RecordScope() {
    if (slot_ >= 0) end();
  }
  RecordScope(const RecordScope&) = delete;
  RecordScope& operator=(const RecordScope&) = delete;

 private:
  void begin(const std::string& name, std::initializer_list<const Tensor*> inputs, bool user_scope);
  void end();
  int64_t slot_ = -1;     // index of this scope's event in the session's buffer
  uint64_t session_ = 0;  // the session it was opened in: a scope outliving it records nothing
  int64_t start_bytes_ = 0;
};

}  // namespace ember::profiler
