// PNG decode and encode over libpng; channel conversions for ImageReadMode are done here.

#include <png.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>

#include "codecs.h"

namespace embervision::image {

namespace {

// State shared with libpng's callbacks (Note [setjmp discipline] in jpeg.cpp: the error
// callback records the message and longjmps to the driving function's setjmp).
struct PngIo {
  const uint8_t* data = nullptr;  // decode: the input
  size_t size = 0;
  size_t pos = 0;
  std::vector<uint8_t>* out = nullptr;  // encode: the output
  char message[256] = {};
};

extern "C" void on_png_error(png_structp png, png_const_charp message) {
  auto* io = static_cast<PngIo*>(png_get_error_ptr(png));
  std::snprintf(io->message, sizeof io->message, "%s", message);
  png_longjmp(png, 1);
}

extern "C" void on_png_warning(png_structp, png_const_charp) {}  // nothing is printed

extern "C" void read_from_memory(png_structp png, png_bytep dst, size_t count) {
  auto* io = static_cast<PngIo*>(png_get_io_ptr(png));
  if (count > io->size - io->pos) png_error(png, "Read Error: the PNG data ends early (truncated file)");
  std::memcpy(dst, io->data + io->pos, count);
  io->pos += count;
}

extern "C" void write_to_vector(png_structp png, png_bytep src, size_t count) {
  auto* io = static_cast<PngIo*>(png_get_io_ptr(png));
  const size_t used = io->out->size();
  if (!try_resize(*io->out, used + count)) png_error(png, "out of memory");
  std::memcpy(io->out->data() + used, src, count);
}

extern "C" void flush_nothing(png_structp) {}

bool host_is_little_endian() {
  const uint16_t probe = 1;
  uint8_t first;
  std::memcpy(&first, &probe, 1);
  return first == 1;
}

// Reads the whole image interleaved (palette and tRNS expanded to RGB(A), low bit depths to 8,
// 16-bit samples in host order) into `pixels`; false with io.message on failure.
bool run_decode(PngIo& io, bool read_orientation, Buffer& pixels, int& channels, int& height, int& width,
                bool& wide, int& orientation) {
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &io, on_png_error, on_png_warning);
  if (png == nullptr) {
    std::snprintf(io.message, sizeof io.message, "libpng could not create its read state");
    return false;
  }
  png_infop info = png_create_info_struct(png);
  if (info == nullptr) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    std::snprintf(io.message, sizeof io.message, "libpng could not create its info state");
    return false;
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  png_set_read_fn(png, &io, read_from_memory);
  // A bad CRC in any chunk is an error: a damaged file is refused, not half-read.
  png_set_crc_action(png, PNG_CRC_ERROR_QUIT, PNG_CRC_ERROR_QUIT);
  png_read_info(png, info);
  const png_uint_32 w = png_get_image_width(png, info);
  const png_uint_32 h = png_get_image_height(png, info);
  const int bit_depth = png_get_bit_depth(png, info);
  const int color_type = png_get_color_type(png, info);
  if (color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color_type == PNG_COLOR_TYPE_GRAY && bit_depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (png_get_valid(png, info, PNG_INFO_tRNS)) png_set_tRNS_to_alpha(png);
  if (bit_depth == 16 && host_is_little_endian()) png_set_swap(png);
  const int passes = png_set_interlace_handling(png);
  png_read_update_info(png, info);
  channels = png_get_channels(png, info);
  wide = png_get_bit_depth(png, info) == 16;
  height = static_cast<int>(h);  // libpng caps both at PNG_USER_{WIDTH,HEIGHT}_MAX (1e6)
  width = static_cast<int>(w);
  const size_t row_bytes = png_get_rowbytes(png, info);
  if (h != 0 && row_bytes > static_cast<size_t>(-1) / h) png_error(png, "image too large");
  if (!allocate(pixels, row_bytes * h)) png_error(png, "out of memory");
  for (int pass = 0; pass < passes; ++pass) {
    for (png_uint_32 y = 0; y < h; ++y) png_read_row(png, pixels.data.get() + y * row_bytes, nullptr);
  }
  png_read_end(png, info);  // reads to IEND, checking the remaining chunks' CRCs
  orientation = 1;
#ifdef PNG_eXIf_SUPPORTED  // libpng >= 1.6.31
  png_uint_32 exif_size = 0;
  png_bytep exif = nullptr;
  if (read_orientation && png_get_eXIf_1(png, info, &exif_size, &exif) != 0) {
    orientation = exif_orientation(exif, exif_size);
  }
#else
  (void)read_orientation;
#endif
  png_destroy_read_struct(&png, &info, nullptr);
  return true;
}

// Target channel count for `mode` given the decoded count (1 gray, 2 gray+alpha, 3 RGB, 4 RGBA).
int target_channels(ReadMode mode, int decoded) {
  switch (mode) {
    case ReadMode::Gray: return 1;
    case ReadMode::GrayAlpha: return 2;
    case ReadMode::Rgb: return 3;
    case ReadMode::RgbAlpha: return 4;
    default: return decoded;
  }
}

// Converts interleaved samples of type Src to planar Dst in the target layout. Gray from color is
// the rounded ITU-R 601 luma (299 R + 587 G + 114 B) / 1000, as JPEG's gray and torchvision's
// PNG gray use; gray to color repeats the value; a missing alpha is opaque; a dropped alpha is
// discarded (no compositing), as in torchvision.
template <typename Src, typename Dst>
void convert(const uint8_t* raw, int decoded, Image& out, uint32_t opaque) {
  const Src* in = reinterpret_cast<const Src*>(raw);
  Dst* dst = reinterpret_cast<Dst*>(out.bytes.data.get());
  const size_t plane = static_cast<size_t>(out.height) * out.width;
  const bool in_color = decoded >= 3, in_alpha = decoded == 2 || decoded == 4;
  const int target = out.channels;
  const bool out_color = target >= 3, out_alpha = target == 2 || target == 4;
  for (size_t p = 0; p < plane; ++p) {
    const Src* px = in + p * decoded;
    uint32_t r = px[0], g = px[0], b = px[0];
    if (in_color) {
      g = px[1];
      b = px[2];
    }
    const uint32_t alpha = in_alpha ? px[decoded - 1] : opaque;
    if (out_color) {
      dst[p] = static_cast<Dst>(r);
      dst[plane + p] = static_cast<Dst>(g);
      dst[2 * plane + p] = static_cast<Dst>(b);
    } else {
      const uint64_t luma = in_color ? (299ull * r + 587ull * g + 114ull * b + 500) / 1000 : r;
      dst[p] = static_cast<Dst>(luma);
    }
    if (out_alpha) dst[(target - 1) * plane + p] = static_cast<Dst>(alpha);
  }
}

bool run_encode(PngIo& io, const uint8_t* planes, int channels, int height, int width, int level,
                std::vector<uint8_t>& row) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &io, on_png_error, on_png_warning);
  if (png == nullptr) {
    std::snprintf(io.message, sizeof io.message, "libpng could not create its write state");
    return false;
  }
  png_infop info = png_create_info_struct(png);
  if (info == nullptr) {
    png_destroy_write_struct(&png, nullptr);
    std::snprintf(io.message, sizeof io.message, "libpng could not create its info state");
    return false;
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    return false;
  }
  static constexpr int kColorTypes[5] = {0, PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA,
                                         PNG_COLOR_TYPE_RGB, PNG_COLOR_TYPE_RGB_ALPHA};
  png_set_write_fn(png, &io, write_to_vector, flush_nothing);
  png_set_IHDR(png, info, static_cast<png_uint_32>(width), static_cast<png_uint_32>(height), 8,
               kColorTypes[channels], PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  png_set_compression_level(png, level);
  png_write_info(png, info);
  const size_t plane = static_cast<size_t>(height) * width;
  for (int y = 0; y < height; ++y) {
    for (int c = 0; c < channels; ++c) {
      const uint8_t* src = planes + c * plane + static_cast<size_t>(y) * width;
      for (int x = 0; x < width; ++x) row[static_cast<size_t>(x) * channels + c] = src[x];
    }
    png_write_row(png, row.data());
  }
  png_write_end(png, info);
  png_destroy_write_struct(&png, &info);
  return true;
}

}  // namespace

Image decode_png(const uint8_t* data, size_t size, ReadMode mode, bool read_orientation) {
  PngIo io;
  io.data = data;
  io.size = size;
  if (size < 8 || png_sig_cmp(data, 0, 8) != 0) throw CodecError("decode_png: the data is not a PNG image");
  Buffer pixels;
  int decoded = 0, height = 0, width = 0, orientation = 1;
  bool wide = false;
  if (!run_decode(io, read_orientation, pixels, decoded, height, width, wide, orientation)) {
    throw CodecError(std::string("decode_png: ") + io.message);
  }
  Image out;
  if (!allocate_image(out, target_channels(mode, decoded), height, width, wide)) {
    throw CodecError("decode_png: out of memory for the decoded image");
  }
  out.orientation = orientation;
  if (wide) {
    convert<uint16_t, int32_t>(pixels.data.get(), decoded, out, 65535);
  } else {
    convert<uint8_t, uint8_t>(pixels.data.get(), decoded, out, 255);
  }
  return out;
}

std::vector<uint8_t> encode_png(const uint8_t* planes, int channels, int height, int width,
                                int compression_level) {
  std::vector<uint8_t> out;
  std::vector<uint8_t> row(static_cast<size_t>(width) * channels);
  PngIo io;
  io.out = &out;
  if (!run_encode(io, planes, channels, height, width, compression_level, row)) {
    throw CodecError(std::string("encode_png: ") + io.message);
  }
  return out;
}

}  // namespace embervision::image
