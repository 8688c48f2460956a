// Autocast's thread-local state and cast cache (Note [autocast] in ember/autocast.h).
#include "ember/autocast.h"

#include <memory>
#include <unordered_map>
#include <utility>

#include "ember/error.h"

namespace ember::autocast {

namespace {

struct State {
  // indexed by slot(): CPU, CUDA; PyTorch's defaults (bfloat16 on CPU, float16 on CUDA)
  bool enabled[2] = {false, false};
  DType dtype[2] = {DType::BFloat16, DType::Float16};
  int64_t nesting = 0;
  bool cache_enabled = true;
  bool excluded = false;
  // source impl -> (the source, weakly: a dead one makes the entry stale; its cast)
  std::unordered_map<const TensorImpl*, std::pair<std::weak_ptr<TensorImpl>, Tensor>> cache;
};

State& state() {
  thread_local State s;
  return s;
}

int slot(DeviceType device) {
  switch (device) {
    case DeviceType::CPU: return 0;
    case DeviceType::CUDA: return 1;
    default: break;
  }
  throw ValueError(std::string("[autocast] expected device type 'cpu' or 'cuda', but got '") +
                   device_type_name(device) + "'");
}

}  // namespace

bool is_enabled(DeviceType device) {
  return state().enabled[slot(device)];
}
void set_enabled(DeviceType device, bool enabled) {
  state().enabled[slot(device)] = enabled;
}
DType get_dtype(DeviceType device) {
  return state().dtype[slot(device)];
}
void set_dtype(DeviceType device, DType dtype) {
  state().dtype[slot(device)] = dtype;
}

int64_t increment_nesting() {
  return ++state().nesting;
}

int64_t decrement_nesting() {
  State& s = state();
  EMBER_CHECK(s.nesting > 0, Error,
              "[autocast_decrement_nesting] expected an open autocast region, but the nesting depth is 0");
  return --s.nesting;
}

bool is_cache_enabled() {
  return state().cache_enabled;
}
void set_cache_enabled(bool enabled) {
  state().cache_enabled = enabled;
}
void clear_cache() {
  state().cache.clear();
}
size_t cache_size() {
  return state().cache.size();
}

bool active() {
  const State& s = state();
  return s.enabled[0] && !s.excluded;
}

bool set_excluded(bool excluded) {
  return std::exchange(state().excluded, excluded);
}

std::optional<Tensor> cache_find(const Tensor& source) {
  auto& cache = state().cache;
  auto it = cache.find(source.impl());
  if (it == cache.end()) return std::nullopt;
  if (it->second.first.expired()) {  // the address was reused by a new tensor
    cache.erase(it);
    return std::nullopt;
  }
  return it->second.second;
}

void cache_insert(const Tensor& source, const Tensor& cast) {
  state().cache[source.impl()] = {source.impl_ptr(), cast};
}

}  // namespace ember::autocast
