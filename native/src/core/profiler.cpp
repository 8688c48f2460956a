#include "ember/profiler.h"

#include <chrono>
#include <mutex>

#include "ember/allocator.h"
#include "ember/error.h"
#include "ember/tensor.h"

namespace ember::profiler {

std::atomic<bool> g_active{false};

namespace {

// One buffer for all threads behind a mutex: only taken while profiling, and op calls are
// far longer than an uncontended lock.
std::mutex g_mutex;
std::vector<Event> g_events;
Options g_options;
std::atomic<bool> g_with_stack{false};  // read before taking g_mutex (see begin)
std::atomic<StackProvider> g_stack_provider{nullptr};
uint64_t g_session = 0;
std::atomic<int64_t> g_next_thread{0};

thread_local int t_depth = 0;
thread_local int64_t t_thread = -1;

int64_t thread_id() {
  if (t_thread < 0) t_thread = g_next_thread.fetch_add(1);
  return t_thread;
}

}  // namespace

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void set_stack_provider(StackProvider provider) {
  g_stack_provider.store(provider);
}

void start(Options options) {
  std::lock_guard<std::mutex> lock(g_mutex);
  EMBER_CHECK(!g_active.load(), Error,
              "[profiler] a profiling session is already running; stop it before starting another");
  g_events.clear();
  g_options = options;
  g_with_stack.store(options.with_stack);
  ++g_session;
  g_active.store(true);
}

std::vector<Event> stop() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_active.store(false);
  ++g_session;  // scopes still open belong to the finished session and record nothing more
  std::vector<Event> out;
  out.swap(g_events);
  return out;
}

RecordScope::RecordScope(const std::string& name, bool user_scope) {
  if (active()) begin(name, {}, user_scope);
}

void RecordScope::begin(const std::string& name, std::initializer_list<const Tensor*> inputs,
                        bool user_scope) {
  Event e;
  e.name = name;
  e.thread = thread_id();
  e.depth = t_depth;
  e.user_scope = user_scope;
  // The provider takes the GIL: doing so while holding g_mutex could deadlock with a thread
  // that holds the GIL and waits for g_mutex.
  const StackProvider provider = g_stack_provider.load();
  if (g_with_stack.load() && provider != nullptr) e.stack = provider();
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_active.load()) return;
  if (g_options.record_shapes) {
    for (const Tensor* t : inputs) {
      if (t != nullptr && t->defined()) {
        const IntList& sizes = t->sizes();
        e.input_shapes.emplace_back(sizes.begin(), sizes.end());
      } else {
        e.input_shapes.emplace_back();
      }
    }
  }
  if (g_options.profile_memory) start_bytes_ = static_cast<int64_t>(cpu_allocated_bytes());
  session_ = g_session;
  slot_ = static_cast<int64_t>(g_events.size());
  ++t_depth;
  e.start_ns = now_ns();  // last, so the bookkeeping above is not charged to the op
  g_events.push_back(std::move(e));
}

void RecordScope::end() {
  const int64_t end = now_ns();
  --t_depth;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (session_ != g_session) return;
  Event& e = g_events[static_cast<size_t>(slot_)];
  e.end_ns = end;
  if (g_options.profile_memory)
    e.allocated_bytes = static_cast<int64_t>(cpu_allocated_bytes()) - start_bytes_;
}

}  // namespace ember::profiler
