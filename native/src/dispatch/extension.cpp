// Library (op registration) and loading out-of-tree extensions.
#include <dlfcn.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>
#include <set>
#include <sstream>

#include "ember/error.h"
#include "ember/library.h"
#include "ember/version.h"

namespace ember {
namespace {

struct PendingInit {
  std::string ns;
  void (*init)(Library&);
  std::string built_for;
  std::string file;
};

std::mutex& pending_mutex() {
  static std::mutex m;
  return m;
}
std::vector<PendingInit>& pending() {
  static auto* queue = new std::vector<PendingInit>();
  return *queue;
}

const char* kCompatibilityPage =
    "see the compatibility page (docs/compatibility.md in the Ember repository) and install an "
    "ember and extension pair from one row";

std::pair<int, int> major_minor(const std::string& version, const std::string& what) {
  int major = -1;
  int minor = -1;
  char dot = 0;
  std::istringstream in(version);
  in >> major >> dot >> minor;
  EMBER_CHECK(!in.fail() && dot == '.' && major >= 0 && minor >= 0, ImportError, "[load_library] expected ",
              what, " to record a version such as '0.1.0', but got '", version, "'");
  return {major, minor};
}

}  // namespace

namespace detail {

void queue_library_init(const char* ns, void (*init)(Library&), const char* built_for,
                        const char* file) noexcept {
  try {
    std::lock_guard<std::mutex> lock(pending_mutex());
    pending().push_back({ns, init, built_for, file});
  } catch (...) {
    // Out of memory while the loader runs: the ops stay unregistered and a later lookup
    // reports them missing, which beats terminating inside dlopen.
  }
}

void check_kernel_signature(const Schema& schema, const std::vector<ArgType>& params) {
  const std::string op = schema.qualified_name();
  EMBER_CHECK(params.size() == schema.arguments.size(), ValueError, "[impl] expected the kernel for ", op,
              " to take ", schema.arguments.size(), " parameters, but it takes ", params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    const ArgType& want = schema.arguments[i].type;
    EMBER_CHECK(params[i] == want, ValueError, "[impl] expected parameter ", i, " of the kernel for ", op,
                " to accept ", want.str(), " ('", schema.arguments[i].name, "'), but it accepts ",
                params[i].str());
  }
}

}  // namespace detail

Library::Library(std::string ns, std::string defined_in)
    : ns_(std::move(ns)), defined_in_(std::move(defined_in)) {}

std::string Library::qualify(const std::string& name) const {
  const auto sep = name.find("::");
  if (sep == std::string::npos) return ns_ + "::" + name;
  EMBER_CHECK(name.substr(0, sep) == ns_, ValueError, "[Library] expected ops of namespace '", ns_,
              "', but got '", name, "'");
  return name;
}

Library& Library::def(const std::string& schema_text) {
  const auto paren = schema_text.find('(');
  const std::string head = schema_text.substr(0, paren);
  std::string text = schema_text;
  if (head.find("::") == std::string::npos) {
    text = ns_ + "::" + schema_text.substr(schema_text.find_first_not_of(" \t"));
  } else {
    qualify(head.substr(head.find_first_not_of(" \t")));  // checks the namespace
  }
  OpRegistry::global().def(text, defined_in_);
  return *this;
}

Library& Library::impl_boxed(const std::string& name, DispatchKey key, BoxedKernel kernel) {
  OpRegistry::global().impl(qualify(name), key, std::move(kernel));
  return *this;
}

Library& Library::derivatives(const std::string& name, DerivativeFormulas formulas) {
  const Operator& op = OpRegistry::global().get(qualify(name));
  const auto make_kernel = autograd_hooks().derivative_kernel;  // Note [autograd hooks]
  EMBER_CHECK(make_kernel != nullptr, NotImplementedError, "[", op.qualified_name(),
              "] derivatives need the autograd layer, which is not loaded");
  return impl_boxed(name, DispatchKey::Autograd, make_kernel(op, std::move(formulas)));
}

void check_core_compatible(const std::string& built_for, const std::string& what) {
  const auto [major, minor] = major_minor(built_for, what);
  EMBER_CHECK(major == EMBER_VERSION_MAJOR && minor == EMBER_VERSION_MINOR, ImportError, what,
              " was built for ember ", built_for, ", but ember ", EMBER_VERSION_STRING,
              " is installed; a native extension runs only on the core minor it was built for "
              "(",
              major, ".", minor, ".x): ", kCompatibilityPage,
              ", or rebuild the extension "
              "against the installed ember");
}

std::string extension_built_for(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EMBER_CHECK(in.good(), OSError, "[load_library] expected a readable file, but could not open '", path, "'");
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string marker = EMBER_EXTENSION_MARKER;
  const auto at = bytes.find(marker);
  EMBER_CHECK(at != std::string::npos, ValueError,
              "[load_library] expected an Ember extension "
              "built with EMBER_LIBRARY (it records the core version it was built for), but '",
              path, "' has no build marker");
  const auto start = at + marker.size();
  const auto end = bytes.find('\0', start);
  EMBER_CHECK(end != std::string::npos && end - start <= 32, ValueError,
              "[load_library] expected a terminated build marker, but '", path, "' has a broken one");
  return bytes.substr(start, end - start);
}

void run_pending_library_inits() {
  // An init may define ops, which never calls back here, but guard anyway.
  thread_local bool running = false;
  if (running) return;
  std::vector<PendingInit> work;
  {
    std::lock_guard<std::mutex> lock(pending_mutex());
    work.swap(pending());
  }
  if (work.empty()) return;
  running = true;
  struct Reset {
    bool& flag;
    ~Reset() { flag = false; }
  } reset{running};
  for (const PendingInit& p : work) {
    check_core_compatible(p.built_for, "the ops library '" + p.ns + "' (" + p.file + ")");
    Library lib(p.ns, p.file);
    p.init(lib);
  }
}

void load_library(const std::string& path) {
  static std::mutex load_mutex;
  static std::set<std::string> loaded;
  std::lock_guard<std::mutex> lock(load_mutex);
  if (loaded.count(path)) return;
  // Refuse a mismatched extension before any of its code runs (Note [extension build marker]).
  check_core_compatible(extension_built_for(path), "the extension '" + path + "'");
  run_pending_library_inits();  // keep earlier registrations apart from this library's
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    throw OSError("[load_library] could not load '" + path + "': " + (why ? why : "unknown error"));
  }
  loaded.insert(path);
  run_pending_library_inits();
}

}  // namespace ember
