// ember._C_gloo: Gloo's collectives over raw CPU buffers, for ember.distributed.
//
// Note [gloo binding]: this module is its own extension so that `import ember` never needs
// libgloo; ember.distributed imports it on first use. It knows nothing of ember tensors: the
// Python layer passes data pointers of contiguous CPU tensors it keeps alive until the call
// returns, plus byte or element counts it has checked. Every call releases the GIL, so the
// process group's worker thread runs collectives while Python goes on.
#include <gloo/allgather.h>
#include <gloo/allgatherv.h>
#include <gloo/allreduce.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/gather.h>
#include <gloo/reduce.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/scatter.h>
#include <gloo/transport/tcp/device.h>
#include <pybind11/chrono.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "reduce.h"

namespace py = pybind11;
using std::chrono::milliseconds;

namespace ember::distributed {
namespace {

// Gloo's rendezvous store over a Python store object (ember.distributed.Store: set/get/wait).
// Gloo calls it without the GIL (from connect_full_mesh), so each call takes it.
class PythonStore : public gloo::rendezvous::Store {
 public:
  explicit PythonStore(py::object store) : store_(std::move(store)) {}

  void set(const std::string& key, const std::vector<char>& data) override {
    py::gil_scoped_acquire gil;
    store_.attr("set")(key, py::bytes(data.data(), data.size()));
  }
  std::vector<char> get(const std::string& key) override {
    py::gil_scoped_acquire gil;
    std::string value = py::bytes(store_.attr("get")(key));
    return std::vector<char>(value.begin(), value.end());
  }
  void wait(const std::vector<std::string>& keys) override { wait(keys, kDefaultTimeout); }
  void wait(const std::vector<std::string>& keys, const milliseconds& timeout) override {
    py::gil_scoped_acquire gil;
    store_.attr("wait")(keys, timeout);
  }

 private:
  py::object store_;
};

template <size_t N>
struct Bytes {  // an opaque element of N bytes: Gloo's typed setters only use sizeof(T)
  char b[N];
};

void* as_ptr(uintptr_t address) {
  return reinterpret_cast<void*>(address);
}

// One Gloo context (a full mesh of TCP pairs) for one process group.
class Context {
 public:
  Context(py::object store, int rank, int size, const std::string& hostname, const std::string& iface,
          milliseconds timeout) {
    gloo::transport::tcp::attr attr;
    if (!iface.empty()) {
      attr.iface = iface;
    } else {
      attr.hostname = hostname;
    }
    PythonStore adapter(std::move(store));
    py::gil_scoped_release nogil;
    device_ = gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
    context->setTimeout(timeout);
    context->connectFullMesh(adapter, device_);
    context_ = context;
  }

  int rank() const { return context_->rank; }
  int size() const { return context_->size; }
  // Collectives run one at a time per group (the Python worker thread), so every rank hands out
  // tags in the same order; tags only need to differ between operations in flight.
  uint32_t next_tag() { return tag_++; }

  void allreduce(uintptr_t data, size_t numel, size_t itemsize, const std::string& dtype, int op,
                 milliseconds timeout) {
    ReduceFn fn = reduce_fn(static_cast<ReduceOp>(op), dtype);
    with_itemsize(itemsize, [&](auto elem) {
      using T = decltype(elem);
      gloo::AllreduceOptions opts(context_);
      opts.setOutput(static_cast<T*>(as_ptr(data)), numel);
      opts.setReduceFunction(fn);
      opts.setTag(next_tag());
      opts.setTimeout(timeout);
      py::gil_scoped_release nogil;
      gloo::allreduce(opts);
    });
  }

  // Reduces `data` of every rank into root's `data` (other ranks' buffers are scratch).
  void reduce(uintptr_t data, size_t numel, size_t itemsize, const std::string& dtype, int op, int root,
              milliseconds timeout) {
    ReduceFn fn = reduce_fn(static_cast<ReduceOp>(op), dtype);
    with_itemsize(itemsize, [&](auto elem) {
      using T = decltype(elem);
      gloo::ReduceOptions opts(context_);
      opts.setOutput(static_cast<T*>(as_ptr(data)), numel);
      opts.setReduceFunction(fn);
      opts.setRoot(root);
      opts.setTag(next_tag());
      opts.setTimeout(timeout);
      py::gil_scoped_release nogil;
      gloo::reduce(opts);
    });
  }

  void broadcast(uintptr_t data, size_t nbytes, int root, milliseconds timeout) {
    gloo::BroadcastOptions opts(context_);
    opts.setOutput(static_cast<uint8_t*>(as_ptr(data)), nbytes);
    opts.setRoot(root);
    opts.setTag(next_tag());
    opts.setTimeout(timeout);
    py::gil_scoped_release nogil;
    gloo::broadcast(opts);
  }

  // out holds size() blocks of nbytes, in rank order.
  void allgather(uintptr_t in, uintptr_t out, size_t nbytes, milliseconds timeout) {
    gloo::AllgatherOptions opts(context_);
    opts.setInput(static_cast<uint8_t*>(as_ptr(in)), nbytes);
    opts.setOutput(static_cast<uint8_t*>(as_ptr(out)), nbytes * size());
    opts.setTag(next_tag());
    opts.setTimeout(timeout);
    py::gil_scoped_release nogil;
    gloo::allgather(opts);
  }

  // Rank r contributes counts[r] bytes; out holds them back to back.
  void allgatherv(uintptr_t in, uintptr_t out, std::vector<size_t> counts, milliseconds timeout) {
    gloo::AllgathervOptions opts(context_);
    opts.setInput(static_cast<uint8_t*>(as_ptr(in)), counts.at(rank()));
    opts.setOutput(static_cast<uint8_t*>(as_ptr(out)), std::move(counts));
    opts.setTag(next_tag());
    opts.setTimeout(timeout);
    py::gil_scoped_release nogil;
    gloo::allgatherv(opts);
  }

  // out (root only) holds size() blocks of nbytes, in rank order.
  void gather(uintptr_t in, uintptr_t out, size_t nbytes, int root, milliseconds timeout) {
    gloo::GatherOptions opts(context_);
    opts.setInput(static_cast<uint8_t*>(as_ptr(in)), nbytes);
    if (rank() == root) opts.setOutput(static_cast<uint8_t*>(as_ptr(out)), nbytes * size());
    opts.setRoot(root);
    opts.setTag(next_tag());
    opts.setTimeout(timeout);
    py::gil_scoped_release nogil;
    gloo::gather(opts);
  }

  // ins (root only) are size() buffers of nbytes; rank r receives ins[r] into out.
  void scatter(const std::vector<uintptr_t>& ins, uintptr_t out, size_t nbytes, int root,
               milliseconds timeout) {
    gloo::ScatterOptions opts(context_);
    if (rank() == root) {
      std::vector<uint8_t*> ptrs;
      for (uintptr_t p : ins) ptrs.push_back(static_cast<uint8_t*>(as_ptr(p)));
      opts.setInputs(ptrs, nbytes);
    }
    opts.setOutput(static_cast<uint8_t*>(as_ptr(out)), nbytes);
    opts.setRoot(root);
    opts.setTag(next_tag());
    opts.setTimeout(timeout);
    py::gil_scoped_release nogil;
    gloo::scatter(opts);
  }

  // in sends in_counts[r] bytes to rank r, out receives out_counts[r] bytes from rank r (uneven
  // splits allowed; each pair of ranks must agree on the count between them).
  void alltoallv(uintptr_t in, std::vector<int64_t> in_counts, uintptr_t out, std::vector<int64_t> out_counts,
                 milliseconds timeout) {
    gloo::AlltoallvOptions opts(context_);
    opts.setInput(static_cast<uint8_t*>(as_ptr(in)), std::move(in_counts));
    opts.setOutput(static_cast<uint8_t*>(as_ptr(out)), std::move(out_counts));
    opts.setTag(next_tag());
    opts.setTimeout(timeout);
    py::gil_scoped_release nogil;
    gloo::alltoallv(opts);
  }

  void barrier(milliseconds timeout) {
    gloo::BarrierOptions opts(context_);
    opts.setTag(next_tag());
    opts.setTimeout(timeout);
    py::gil_scoped_release nogil;
    gloo::barrier(opts);
  }

  std::shared_ptr<gloo::Context> gloo_context() const { return context_; }

 private:
  template <class F>
  static void with_itemsize(size_t itemsize, F&& f) {
    switch (itemsize) {
      case 1: return f(Bytes<1>{});
      case 2: return f(Bytes<2>{});
      case 4: return f(Bytes<4>{});
      case 8: return f(Bytes<8>{});
      case 16: return f(Bytes<16>{});
      default: throw std::invalid_argument("unsupported element size " + std::to_string(itemsize));
    }
  }

  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::Context> context_;
  std::atomic<uint32_t> tag_{0};
};

// A point-to-point transfer posted at once (not queued behind collectives, as in PyTorch's
// ProcessGroupGloo): wait() blocks until it has completed or the timeout has passed.
class P2P {
 public:
  P2P(std::shared_ptr<gloo::Context> context, uintptr_t data, size_t nbytes, bool is_send, int peer,
      uint64_t tag)
      : context_(std::move(context)), is_send_(is_send) {
    buffer_ = context_->createUnboundBuffer(as_ptr(data), nbytes);
    // User tags live in slots of their own, away from the collectives' prefixed slots.
    if (is_send) {
      buffer_->send(peer, tag);
    } else if (peer >= 0) {
      buffer_->recv(peer, tag);
    } else {  // any source
      std::vector<int> peers;
      for (int r = 0; r < context_->size; ++r)
        if (r != context_->rank) peers.push_back(r);
      buffer_->recv(peers, tag);
    }
  }

  // Returns the peer's rank.
  int wait(milliseconds timeout) {
    int peer = -1;
    py::gil_scoped_release nogil;
    if (is_send_) {
      buffer_->waitSend(&peer, timeout);
    } else {
      buffer_->waitRecv(&peer, timeout);
    }
    return peer;
  }

 private:
  std::shared_ptr<gloo::Context> context_;
  std::unique_ptr<gloo::transport::UnboundBuffer> buffer_;
  bool is_send_;
};

}  // namespace
}  // namespace ember::distributed

PYBIND11_MODULE(_C_gloo, m) {
  using namespace ember::distributed;
  m.doc() = "Gloo collectives for ember.distributed (Note [gloo binding]).";
  auto gloo_error = py::register_exception<gloo::Exception>(m, "GlooError", PyExc_RuntimeError);
  py::register_exception<gloo::IoException>(m, "GlooIoError", gloo_error);

  py::class_<Context>(m, "Context")
      .def(py::init<py::object, int, int, const std::string&, const std::string&, milliseconds>(),
           py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("hostname"), py::arg("iface"),
           py::arg("timeout"))
      .def_property_readonly("rank", &Context::rank)
      .def_property_readonly("size", &Context::size)
      .def("allreduce", &Context::allreduce)
      .def("reduce", &Context::reduce)
      .def("broadcast", &Context::broadcast)
      .def("allgather", &Context::allgather)
      .def("allgatherv", &Context::allgatherv)
      .def("gather", &Context::gather)
      .def("scatter", &Context::scatter)
      .def("alltoallv", &Context::alltoallv)
      .def("barrier", &Context::barrier)
      .def(
          "send",
          [](Context& c, uintptr_t data, size_t nbytes, int dst, uint64_t tag) {
            return P2P(c.gloo_context(), data, nbytes, true, dst, tag);
          },
          py::arg("data"), py::arg("nbytes"), py::arg("dst"), py::arg("tag"))
      .def(
          "recv",
          [](Context& c, uintptr_t data, size_t nbytes, int src, uint64_t tag) {
            return P2P(c.gloo_context(), data, nbytes, false, src, tag);
          },
          py::arg("data"), py::arg("nbytes"), py::arg("src"), py::arg("tag"));

  py::class_<P2P>(m, "P2P").def("wait", &P2P::wait, py::arg("timeout"));
}
