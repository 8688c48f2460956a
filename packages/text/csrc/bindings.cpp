// embertext._C: the tokenizer library (libembertext) bound for Python. The Python classes in
// embertext.transforms wrap these; this module stays a thin layer: text in (str or bytes),
// lists of ints or strings out, the GIL released while the library works.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "embertext/embertext.h"

namespace py = pybind11;
using embertext::Tokenizer;

#ifndef EMBERTEXT_BUILT_FOR_CORE
#error "EMBERTEXT_BUILT_FOR_CORE must name the ember core version this module is built against"
#endif

namespace {

// Texts at least this long are encoded with the GIL released, so other Python threads run.
constexpr size_t kReleaseGilBytes = 4096;

// The UTF-8 bytes of a str (no copy: CPython caches them) or of a bytes object.
std::string_view text_of(py::handle obj) {
  if (PyUnicode_Check(obj.ptr())) {
    Py_ssize_t n = 0;
    const char* p = PyUnicode_AsUTF8AndSize(obj.ptr(), &n);  // UnicodeEncodeError for lone surrogates
    if (p == nullptr) throw py::error_already_set();
    return {p, static_cast<size_t>(n)};
  }
  if (PyBytes_Check(obj.ptr()))
    return {PyBytes_AS_STRING(obj.ptr()), static_cast<size_t>(PyBytes_GET_SIZE(obj.ptr()))};
  throw py::type_error(std::string("expected str or bytes, but got ") + Py_TYPE(obj.ptr())->tp_name);
}

// Raises Python's UnicodeDecodeError for bytes that failed to decode.
[[noreturn]] void raise_decode_error(std::string_view text, const embertext::Utf8Error& e) {
  PyObject* exc = PyUnicodeDecodeError_Create(
      "utf-8", text.data(), static_cast<Py_ssize_t>(text.size()), static_cast<Py_ssize_t>(e.offset()),
      static_cast<Py_ssize_t>(e.offset() + e.length()), e.reason().c_str());
  if (exc != nullptr) {
    PyErr_SetObject(PyExc_UnicodeDecodeError, exc);
    Py_DECREF(exc);
  }
  throw py::error_already_set();
}

// bytes are validated up front so that a bad one is reported with its own object.
void check_bytes(py::handle obj, std::string_view text) {
  if (!PyBytes_Check(obj.ptr())) return;
  try {
    embertext::validate_utf8(text);
  } catch (const embertext::Utf8Error& e) {
    raise_decode_error(text, e);
  }
}

py::list to_list(const int32_t* ids, size_t n) {
  py::list out(n);
  for (size_t i = 0; i < n; ++i) {
    PyObject* v = PyLong_FromLong(ids[i]);
    if (v == nullptr) throw py::error_already_set();
    PyList_SET_ITEM(out.ptr(), static_cast<Py_ssize_t>(i), v);
  }
  return out;
}

std::vector<int32_t> encode_ids(const Tokenizer& tok, py::handle obj) {
  const std::string_view text = text_of(obj);
  check_bytes(obj, text);
  std::vector<int32_t> ids;
  if (text.size() >= kReleaseGilBytes) {
    py::gil_scoped_release release;
    tok.encode_into(text, ids);
  } else {
    tok.encode_into(text, ids);
  }
  return ids;
}

py::list encode(const Tokenizer& tok, py::handle obj) {
  const std::vector<int32_t> ids = encode_ids(tok, obj);
  return to_list(ids.data(), ids.size());
}

py::list tokens_of(const Tokenizer& tok, const int32_t* ids, size_t n) {
  py::list out(n);
  for (size_t i = 0; i < n; ++i) {
    const std::string t = tok.id_to_token(ids[i]);
    PyObject* s = PyUnicode_DecodeUTF8(t.data(), static_cast<Py_ssize_t>(t.size()), "strict");
    if (s == nullptr) throw py::error_already_set();
    PyList_SET_ITEM(out.ptr(), static_cast<Py_ssize_t>(i), s);
  }
  return out;
}

py::list tokenize(const Tokenizer& tok, py::handle obj) {
  const std::vector<int32_t> ids = encode_ids(tok, obj);
  return tokens_of(tok, ids.data(), ids.size());
}

// The batch's IDs and per-text offsets, computed on num_threads threads without the GIL.
struct Batch {
  std::vector<int32_t> ids;
  std::vector<int64_t> offsets;
};

Batch encode_flat(const Tokenizer& tok, py::handle texts, int num_threads) {
  if (PyUnicode_Check(texts.ptr()) || PyBytes_Check(texts.ptr()))
    throw py::type_error("expected a list of texts, but got a single text");
  // The list is copied so that its items stay alive (and in place) while the GIL is released.
  const py::list items(py::reinterpret_borrow<py::object>(texts));
  std::vector<std::string_view> views;
  views.reserve(items.size());
  for (py::handle item : items) {
    views.push_back(text_of(item));
    check_bytes(item, views.back());
  }
  Batch batch;
  {
    py::gil_scoped_release release;
    tok.encode_batch_flat(views, num_threads, batch.ids, batch.offsets);
  }
  return batch;
}

// One Python int per token ID, made on first use and shared by every list of a batch (ints are
// immutable): a batch's millions of IDs then cost no allocations, only reference counts.
class IdInts {
 public:
  explicit IdInts(int64_t vocab_size)
      : ints_(static_cast<size_t>(std::max<int64_t>(vocab_size, 0)), nullptr) {}
  ~IdInts() {
    for (PyObject* o : ints_) Py_XDECREF(o);
  }
  IdInts(const IdInts&) = delete;
  IdInts& operator=(const IdInts&) = delete;

  PyObject* get(int32_t id) {  // a new reference
    PyObject*& slot = ints_[static_cast<size_t>(id)];
    if (slot == nullptr) {
      slot = PyLong_FromLong(id);
      if (slot == nullptr) throw py::error_already_set();
    }
    Py_INCREF(slot);
    return slot;
  }

 private:
  std::vector<PyObject*> ints_;
};

py::list encode_batch(const Tokenizer& tok, py::handle texts, int num_threads) {
  const Batch b = encode_flat(tok, texts, num_threads);
  IdInts ints(tok.vocab_size());
  py::list out(b.offsets.size() - 1);
  for (size_t i = 0; i + 1 < b.offsets.size(); ++i) {
    const auto n = static_cast<size_t>(b.offsets[i + 1] - b.offsets[i]);
    py::list row(n);
    const int32_t* ids = b.ids.data() + b.offsets[i];
    for (size_t k = 0; k < n; ++k) PyList_SET_ITEM(row.ptr(), static_cast<Py_ssize_t>(k), ints.get(ids[k]));
    PyList_SET_ITEM(out.ptr(), static_cast<Py_ssize_t>(i), row.release().ptr());
  }
  return out;
}

py::list tokenize_batch(const Tokenizer& tok, py::handle texts, int num_threads) {
  const Batch b = encode_flat(tok, texts, num_threads);
  py::list out(b.offsets.size() - 1);
  for (size_t i = 0; i + 1 < b.offsets.size(); ++i) {
    py::list row =
        tokens_of(tok, b.ids.data() + b.offsets[i], static_cast<size_t>(b.offsets[i + 1] - b.offsets[i]));
    PyList_SET_ITEM(out.ptr(), static_cast<Py_ssize_t>(i), row.release().ptr());
  }
  return out;
}

// (ids, offsets) as NumPy arrays: text i's IDs are ids[offsets[i]:offsets[i + 1]].
py::tuple encode_batch_arrays(const Tokenizer& tok, py::handle texts, int num_threads) {
  Batch b = encode_flat(tok, texts, num_threads);
  py::array_t<int64_t> ids(static_cast<py::ssize_t>(b.ids.size()));
  auto* out = ids.mutable_data();
  for (size_t i = 0; i < b.ids.size(); ++i) out[i] = b.ids[i];
  py::array_t<int64_t> offsets(static_cast<py::ssize_t>(b.offsets.size()), b.offsets.data());
  return py::make_tuple(ids, offsets);
}

std::string_view bytes_view(const py::bytes& data) {
  return {PyBytes_AS_STRING(data.ptr()), static_cast<size_t>(PyBytes_GET_SIZE(data.ptr()))};
}

template <typename Class>
void def_tokenizer_methods(Class& cls) {
  cls.def("encode", &encode, py::arg("text"), "Token IDs of one text (str or UTF-8 bytes).")
      .def("tokenize", &tokenize, py::arg("text"), "Token strings of one text.")
      .def("encode_batch", &encode_batch, py::arg("texts"), py::arg("num_threads"),
           "Token IDs of each text, on up to num_threads threads (<= 0: all cores).")
      .def("tokenize_batch", &tokenize_batch, py::arg("texts"), py::arg("num_threads"))
      .def("encode_batch_arrays", &encode_batch_arrays, py::arg("texts"), py::arg("num_threads"),
           "(ids, offsets) int64 arrays; text i's IDs are ids[offsets[i]:offsets[i + 1]].")
      .def_property_readonly("vocab_size", &Tokenizer::vocab_size)
      .def("id_to_token", &Tokenizer::id_to_token, py::arg("id"))
      .def("token_to_id", &Tokenizer::token_to_id, py::arg("token"));
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "embertext's C++ tokenizers";
  m.attr("__version__") = EMBERTEXT_VERSION_STRING;
  m.attr("built_for_core") = EMBERTEXT_BUILT_FOR_CORE;
  m.attr("unicode_version") = embertext::unicode_version();

  // Library errors become the Python exceptions users expect; messages pass through unchanged.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const embertext::FileError& e) {
      PyErr_SetString(PyExc_OSError, e.what());
    } catch (const embertext::Error& e) {
      PyErr_SetString(PyExc_ValueError, e.what());  // FormatError, ArgumentError, Utf8Error
    }
  });

  py::class_<Tokenizer> base(m, "Tokenizer");
  def_tokenizer_methods(base);

  m.def(
      "parse_vocab",
      [](const py::bytes& data, const std::string& name) {
        return embertext::parse_vocab(bytes_view(data), name);
      },
      py::arg("data"), py::arg("name"), "The tokens of a vocab.txt's contents, one per line.");
  m.def(
      "parse_encoder_json",
      [](const py::bytes& data, const std::string& name) {
        return embertext::parse_encoder_json(bytes_view(data), name);
      },
      py::arg("data"), py::arg("name"), "encoder.json's (token, id) pairs.");
  m.def(
      "parse_merges",
      [](const py::bytes& data, const std::string& name, std::optional<size_t> max_merges) {
        return embertext::parse_merges(bytes_view(data), name, max_merges);
      },
      py::arg("data"), py::arg("name"), py::arg("max_merges") = py::none(),
      "vocab.bpe's merges in rank order.");
  m.def("byte_to_unicode", &embertext::byte_to_unicode, "GPT-2's byte alphabet, indexed by byte value.");

  py::class_<embertext::BertTokenizer, Tokenizer>(m, "BertTokenizer")
      .def(py::init([](std::vector<std::string> vocab, bool lower_case, std::optional<bool> strip_accents,
                       std::vector<std::string> never_split, std::string unk_token,
                       size_t max_input_chars_per_word, bool clean_text, bool handle_chinese_chars,
                       std::string continuing_subword_prefix) {
             embertext::BertOptions o;
             o.lower_case = lower_case;
             o.strip_accents = strip_accents;
             o.never_split = std::move(never_split);
             o.unk_token = std::move(unk_token);
             o.max_input_chars_per_word = max_input_chars_per_word;
             o.clean_text = clean_text;
             o.handle_chinese_chars = handle_chinese_chars;
             o.continuing_subword_prefix = std::move(continuing_subword_prefix);
             return embertext::BertTokenizer(std::move(vocab), std::move(o));
           }),
           py::arg("vocab"), py::arg("lower_case") = true, py::arg("strip_accents") = py::none(),
           py::arg("never_split") = std::vector<std::string>{}, py::arg("unk_token") = "[UNK]",
           py::arg("max_input_chars_per_word") = 100, py::arg("clean_text") = true,
           py::arg("handle_chinese_chars") = true, py::arg("continuing_subword_prefix") = "##")
      .def_property_readonly("vocab", &embertext::BertTokenizer::vocab);

  py::class_<embertext::GPT2BPETokenizer, Tokenizer>(m, "GPT2BPETokenizer")
      .def(py::init<const embertext::Encoder&, const embertext::Merges&>(), py::arg("encoder"),
           py::arg("merges"))
      .def("add_special_tokens", &embertext::GPT2BPETokenizer::add_special_tokens, py::arg("tokens"))
      .def_property_readonly("special_tokens", &embertext::GPT2BPETokenizer::special_tokens)
      .def("decode", &embertext::GPT2BPETokenizer::decode, py::arg("ids"));

  py::class_<embertext::CLIPTokenizer, Tokenizer>(m, "CLIPTokenizer")
      .def(py::init<const embertext::Merges&, const std::optional<embertext::Encoder>&>(), py::arg("merges"),
           py::arg("encoder") = py::none())
      .def("decode", &embertext::CLIPTokenizer::decode, py::arg("ids"));
}
