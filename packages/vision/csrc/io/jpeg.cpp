// JPEG decode and encode over libjpeg-turbo.

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <cstring>

// libjpeg's headers use FILE and size_t without including <cstdio>, so they come after it.
#include <jerror.h>
#include <jpeglib.h>

#include "codecs.h"

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <tmmintrin.h>
#define EMBERVISION_JPEG_SSSE3 1
#endif

namespace embervision::image {

// Note [setjmp discipline]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// libjpeg and libpng report errors through a callback that must not return. Throwing a C++
// exception from it would unwind through the libraries' C frames, which are not built to be
// unwound; so the callback records the library's message and longjmps back to a setjmp in the
// function that drives the library. longjmp skips destructors, so that function and every frame
// it can jump over (the libraries' and our C callbacks) own no object with a destructor: buffers
// are created by the caller before the setjmp and only resized inside (never throwing:
// try_resize), the library state is destroyed in the setjmp branch, and the caller turns the
// failure into a CodecError once no C frame is left.

namespace {

struct ErrorManager {
  jpeg_error_mgr pub;  // first: libjpeg hands our callbacks a jpeg_error_mgr*
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

extern "C" void on_error_exit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

// libjpeg-turbo reports lost data (a truncated file, a broken entropy-coded segment) as a warning
// and fills the rest of the image with gray. embervision refuses such images instead of returning
// them silently damaged; harmless warnings (an unknown JFIF revision, extra bytes between
// segments, a bad ICC chunk) are ignored, and nothing is printed.
extern "C" void on_emit_message(j_common_ptr cinfo, int level) {
  if (level >= 0) return;  // trace messages
  switch (cinfo->err->msg_code) {
    case JWRN_JPEG_EOF:
    case JWRN_HIT_MARKER:
    case JWRN_MUST_RESYNC:
    case JWRN_HUFF_BAD_CODE:
    case JWRN_NOT_SEQUENTIAL:
    case JWRN_BOGUS_PROGRESSION: on_error_exit(cinfo); break;
    default: break;
  }
}

void install(ErrorManager& err) {
  jpeg_std_error(&err.pub);
  err.pub.error_exit = on_error_exit;
  err.pub.emit_message = on_emit_message;
  err.message[0] = '\0';
}

// Note [planar rows]
// ~~~~~~~~~~~~~~~~~~
// libjpeg reads and writes interleaved RGB scanlines; our images are planar. The per-pixel loop
// that splits a scanline into three planes (or merges three planes into one) is not vectorized
// for baseline x86-64: SSE2 has no byte shuffle, so it runs as scalar byte moves and cost about a
// third of a 4:2:0 decode and a fifth of an encode, which made decode_jpeg and encode_jpeg slower
// than Pillow over the same libjpeg-turbo. SSSE3's pshufb does 16 pixels in nine shuffles; that
// path is chosen at run time (every x86-64 CPU since about 2011 has SSSE3), the plain loop stays
// for the other CPUs and for the tail of a row. Both move the same bytes.

void split_rgb_plain(const uint8_t* __restrict__ src, uint8_t* __restrict__ red, uint8_t* __restrict__ green,
                     uint8_t* __restrict__ blue, size_t count) {
  for (size_t x = 0; x < count; ++x) {
    red[x] = src[3 * x];
    green[x] = src[3 * x + 1];
    blue[x] = src[3 * x + 2];
  }
}

void merge_rgb_plain(const uint8_t* __restrict__ red, const uint8_t* __restrict__ green,
                     const uint8_t* __restrict__ blue, uint8_t* __restrict__ dst, size_t count) {
  for (size_t x = 0; x < count; ++x) {
    dst[3 * x] = red[x];
    dst[3 * x + 1] = green[x];
    dst[3 * x + 2] = blue[x];
  }
}

#ifdef EMBERVISION_JPEG_SSSE3
// 16 pixels at a time: 48 interleaved bytes a, b, c. Output byte i of a shuffle takes byte mask[i]
// of its source, or 0 where mask[i] is -1; the three shuffles of a plane are ORed.
__attribute__((target("ssse3"))) void split_rgb_ssse3(const uint8_t* src, uint8_t* red, uint8_t* green,
                                                      uint8_t* blue, size_t count) {
  const __m128i r0 = _mm_setr_epi8(0, 3, 6, 9, 12, 15, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m128i r1 = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, 2, 5, 8, 11, 14, -1, -1, -1, -1, -1);
  const __m128i r2 = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 1, 4, 7, 10, 13);
  const __m128i g0 = _mm_setr_epi8(1, 4, 7, 10, 13, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m128i g1 = _mm_setr_epi8(-1, -1, -1, -1, -1, 0, 3, 6, 9, 12, 15, -1, -1, -1, -1, -1);
  const __m128i g2 = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 2, 5, 8, 11, 14);
  const __m128i b0 = _mm_setr_epi8(2, 5, 8, 11, 14, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m128i b1 = _mm_setr_epi8(-1, -1, -1, -1, -1, 1, 4, 7, 10, 13, -1, -1, -1, -1, -1, -1);
  const __m128i b2 = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 3, 6, 9, 12, 15);
  size_t x = 0;
  for (; x + 16 <= count; x += 16) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 3 * x));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 3 * x + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 3 * x + 32));
    const __m128i r =
        _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(a, r0), _mm_shuffle_epi8(b, r1)), _mm_shuffle_epi8(c, r2));
    const __m128i g =
        _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(a, g0), _mm_shuffle_epi8(b, g1)), _mm_shuffle_epi8(c, g2));
    const __m128i bl =
        _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(a, b0), _mm_shuffle_epi8(b, b1)), _mm_shuffle_epi8(c, b2));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(red + x), r);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(green + x), g);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(blue + x), bl);
  }
  split_rgb_plain(src + 3 * x, red + x, green + x, blue + x, count - x);
}

__attribute__((target("ssse3"))) void merge_rgb_ssse3(const uint8_t* red, const uint8_t* green,
                                                      const uint8_t* blue, uint8_t* dst, size_t count) {
  // Output block k (bytes 16k..16k+15) from the red, green and blue vectors.
  const __m128i a_r = _mm_setr_epi8(0, -1, -1, 1, -1, -1, 2, -1, -1, 3, -1, -1, 4, -1, -1, 5);
  const __m128i a_g = _mm_setr_epi8(-1, 0, -1, -1, 1, -1, -1, 2, -1, -1, 3, -1, -1, 4, -1, -1);
  const __m128i a_b = _mm_setr_epi8(-1, -1, 0, -1, -1, 1, -1, -1, 2, -1, -1, 3, -1, -1, 4, -1);
  const __m128i b_r = _mm_setr_epi8(-1, -1, 6, -1, -1, 7, -1, -1, 8, -1, -1, 9, -1, -1, 10, -1);
  const __m128i b_g = _mm_setr_epi8(5, -1, -1, 6, -1, -1, 7, -1, -1, 8, -1, -1, 9, -1, -1, 10);
  const __m128i b_b = _mm_setr_epi8(-1, 5, -1, -1, 6, -1, -1, 7, -1, -1, 8, -1, -1, 9, -1, -1);
  const __m128i c_r = _mm_setr_epi8(-1, 11, -1, -1, 12, -1, -1, 13, -1, -1, 14, -1, -1, 15, -1, -1);
  const __m128i c_g = _mm_setr_epi8(-1, -1, 11, -1, -1, 12, -1, -1, 13, -1, -1, 14, -1, -1, 15, -1);
  const __m128i c_b = _mm_setr_epi8(10, -1, -1, 11, -1, -1, 12, -1, -1, 13, -1, -1, 14, -1, -1, 15);
  size_t x = 0;
  for (; x + 16 <= count; x += 16) {
    const __m128i r = _mm_loadu_si128(reinterpret_cast<const __m128i*>(red + x));
    const __m128i g = _mm_loadu_si128(reinterpret_cast<const __m128i*>(green + x));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blue + x));
    const __m128i out0 = _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(r, a_r), _mm_shuffle_epi8(g, a_g)),
                                      _mm_shuffle_epi8(b, a_b));
    const __m128i out1 = _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(r, b_r), _mm_shuffle_epi8(g, b_g)),
                                      _mm_shuffle_epi8(b, b_b));
    const __m128i out2 = _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(r, c_r), _mm_shuffle_epi8(g, c_g)),
                                      _mm_shuffle_epi8(b, c_b));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 3 * x), out0);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 3 * x + 16), out1);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 3 * x + 32), out2);
  }
  merge_rgb_plain(red + x, green + x, blue + x, dst + 3 * x, count - x);
}
#endif

using SplitRgb = void (*)(const uint8_t*, uint8_t*, uint8_t*, uint8_t*, size_t);
using MergeRgb = void (*)(const uint8_t*, const uint8_t*, const uint8_t*, uint8_t*, size_t);

bool has_ssse3() noexcept {
#ifdef EMBERVISION_JPEG_SSSE3
  __builtin_cpu_init();
  return __builtin_cpu_supports("ssse3");
#else
  return false;
#endif
}

// Chosen once, at load time (Note [planar rows]).
const bool kUseSsse3 = has_ssse3();

SplitRgb split_rgb() noexcept {
#ifdef EMBERVISION_JPEG_SSSE3
  if (kUseSsse3) return split_rgb_ssse3;
#endif
  return split_rgb_plain;
}

MergeRgb merge_rgb() noexcept {
#ifdef EMBERVISION_JPEG_SSSE3
  if (kUseSsse3) return merge_rgb_ssse3;
#endif
  return merge_rgb_plain;
}

constexpr size_t kRowsPerCall = 16;  // scanlines per libjpeg call
constexpr uint8_t kExifHeader[6] = {'E', 'x', 'i', 'f', 0, 0};

int orientation_of(j_decompress_ptr cinfo) {
  for (jpeg_saved_marker_ptr m = cinfo->marker_list; m != nullptr; m = m->next) {
    if (m->marker == JPEG_APP0 + 1 && m->data_length >= sizeof kExifHeader &&
        std::memcmp(m->data, kExifHeader, sizeof kExifHeader) == 0) {
      return exif_orientation(m->data + sizeof kExifHeader, m->data_length - sizeof kExifHeader);
    }
  }
  return 1;
}

// Fills `out` (planar) and `row` (one interleaved scanline); false with err.message on failure.
bool run_decode(const uint8_t* data, size_t size, ReadMode mode, bool read_orientation, Image& out,
                std::vector<uint8_t>& row, ErrorManager& err) {
  jpeg_decompress_struct cinfo;
  std::memset(&cinfo, 0, sizeof cinfo);
  cinfo.err = &err.pub;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  if (read_orientation) jpeg_save_markers(&cinfo, JPEG_APP0 + 1, 0xffff);
  jpeg_read_header(&cinfo, TRUE);
  // Saved markers live in the image pool, which jpeg_finish_decompress frees.
  out.orientation = read_orientation ? orientation_of(&cinfo) : 1;

  if (cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK) {
    std::snprintf(err.message, sizeof err.message, "CMYK and YCCK JPEG images are not supported");
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  switch (mode) {
    case ReadMode::Unchanged:
      cinfo.out_color_space = cinfo.num_components == 1 ? JCS_GRAYSCALE : JCS_RGB;
      break;
    case ReadMode::Gray: cinfo.out_color_space = JCS_GRAYSCALE; break;
    case ReadMode::Rgb: cinfo.out_color_space = JCS_RGB; break;
    default:
      std::snprintf(err.message, sizeof err.message, "The provided mode is not supported for JPEG files");
      jpeg_destroy_decompress(&cinfo);
      return false;
  }
  jpeg_start_decompress(&cinfo);
  const int channels = cinfo.output_components;
  const int height = static_cast<int>(cinfo.output_height);
  const int width = static_cast<int>(cinfo.output_width);
  // Several scanlines per call: one at a time makes libjpeg copy through its spare-row buffer when
  // chroma is upsampled (4:2:0), which costs about a third of the decode.
  const size_t stride = static_cast<size_t>(width) * channels;
  if (!allocate_image(out, channels, height, width, false) || !try_resize(row, stride * kRowsPerCall)) {
    std::snprintf(err.message, sizeof err.message, "out of memory for a %dx%dx%d JPEG image", channels,
                  height, width);
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  const size_t plane = static_cast<size_t>(height) * width;
  const SplitRgb split = split_rgb();
  JSAMPROW rows[kRowsPerCall];
  for (size_t r = 0; r < kRowsPerCall; ++r) rows[r] = row.data() + r * stride;
  while (cinfo.output_scanline < cinfo.output_height) {
    const size_t y0 = cinfo.output_scanline;
    const size_t got = jpeg_read_scanlines(&cinfo, rows, static_cast<JDIMENSION>(kRowsPerCall));
    for (size_t r = 0; r < got; ++r) {
      const uint8_t* src = rows[r];
      uint8_t* dst = out.bytes.data.get() + (y0 + r) * width;
      if (channels == 3) {  // all three planes in one pass (Note [planar rows])
        split(src, dst, dst + plane, dst + 2 * plane, static_cast<size_t>(width));
      } else {
        std::memcpy(dst, src, static_cast<size_t>(width));
      }
    }
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return true;
}

// A destination manager writing into a std::vector (jpeg_mem_dest's buffer is lost when an error
// interrupts a reallocation).
struct VectorDestination {
  jpeg_destination_mgr pub;  // first: libjpeg hands our callbacks a jpeg_destination_mgr*
  std::vector<uint8_t>* buffer;
};

constexpr size_t kDestinationChunk = 1 << 16;

extern "C" void dest_init(j_compress_ptr cinfo) {
  auto* dest = reinterpret_cast<VectorDestination*>(cinfo->dest);
  if (!try_resize(*dest->buffer, kDestinationChunk)) ERREXIT1(cinfo, JERR_OUT_OF_MEMORY, 0);
  dest->pub.next_output_byte = dest->buffer->data();
  dest->pub.free_in_buffer = dest->buffer->size();
}

// Called when the buffer is full (free_in_buffer == 0): double it.
extern "C" boolean dest_grow(j_compress_ptr cinfo) {
  auto* dest = reinterpret_cast<VectorDestination*>(cinfo->dest);
  const size_t used = dest->buffer->size();
  if (!try_resize(*dest->buffer, 2 * used)) ERREXIT1(cinfo, JERR_OUT_OF_MEMORY, 1);
  dest->pub.next_output_byte = dest->buffer->data() + used;
  dest->pub.free_in_buffer = dest->buffer->size() - used;
  return TRUE;
}

extern "C" void dest_term(j_compress_ptr cinfo) {
  auto* dest = reinterpret_cast<VectorDestination*>(cinfo->dest);
  dest->buffer->resize(dest->buffer->size() - dest->pub.free_in_buffer);  // shrinking never throws
}

bool run_encode(const uint8_t* planes, int channels, int height, int width, int quality,
                std::vector<uint8_t>& out, std::vector<uint8_t>& row, ErrorManager& err) {
  jpeg_compress_struct cinfo;
  std::memset(&cinfo, 0, sizeof cinfo);
  VectorDestination dest;
  std::memset(&dest, 0, sizeof dest);
  dest.buffer = &out;
  dest.pub.init_destination = dest_init;
  dest.pub.empty_output_buffer = dest_grow;
  dest.pub.term_destination = dest_term;
  cinfo.err = &err.pub;
  if (setjmp(err.jump)) {
    jpeg_destroy_compress(&cinfo);
    return false;
  }
  jpeg_create_compress(&cinfo);
  cinfo.dest = &dest.pub;
  cinfo.image_width = static_cast<JDIMENSION>(width);
  cinfo.image_height = static_cast<JDIMENSION>(height);
  cinfo.input_components = channels;
  cinfo.in_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, quality, TRUE);
  jpeg_start_compress(&cinfo, TRUE);
  const size_t plane = static_cast<size_t>(height) * width;
  const size_t stride = static_cast<size_t>(width) * channels;
  const MergeRgb merge = merge_rgb();
  JSAMPROW rows[kRowsPerCall];
  for (size_t r = 0; r < kRowsPerCall; ++r) rows[r] = row.data() + r * stride;
  while (cinfo.next_scanline < cinfo.image_height) {
    const size_t y0 = cinfo.next_scanline;
    const size_t count = std::min<size_t>(kRowsPerCall, cinfo.image_height - y0);
    for (size_t r = 0; r < count; ++r) {
      const uint8_t* src = planes + (y0 + r) * width;
      uint8_t* dst = rows[r];
      if (channels == 3) {  // all three planes in one pass (Note [planar rows])
        merge(src, src + plane, src + 2 * plane, dst, static_cast<size_t>(width));
      } else {
        std::memcpy(dst, src, static_cast<size_t>(width));
      }
    }
    jpeg_write_scanlines(&cinfo, rows, static_cast<JDIMENSION>(count));
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  return true;
}

}  // namespace

Image decode_jpeg(const uint8_t* data, size_t size, ReadMode mode, bool read_orientation) {
  Image out;
  std::vector<uint8_t> row;
  ErrorManager err;
  install(err);
  if (!run_decode(data, size, mode, read_orientation, out, row, err)) {
    throw CodecError(std::string("decode_jpeg: ") + err.message);
  }
  return out;
}

std::vector<uint8_t> encode_jpeg(const uint8_t* planes, int channels, int height, int width, int quality) {
  std::vector<uint8_t> out;
  std::vector<uint8_t> row(static_cast<size_t>(width) * channels * kRowsPerCall);
  ErrorManager err;
  install(err);
  if (!run_encode(planes, channels, height, width, quality, out, row, err)) {
    throw CodecError(std::string("encode_jpeg: ") + err.message);
  }
  return out;
}

}  // namespace embervision::image
