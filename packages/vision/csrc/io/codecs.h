// embervision._image: JPEG and PNG codecs over libjpeg-turbo and libpng, free of Python.
// Decoders return planar (C, H, W) images; encoders take them. Every failure is a CodecError
// carrying the library's message, never a longjmp or exception through the libraries' C frames
// (Note [setjmp discipline] in jpeg.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace embervision::image {

// torchvision's ImageReadMode values.
enum class ReadMode : int { Unchanged = 0, Gray = 1, GrayAlpha = 2, Rgb = 3, RgbAlpha = 4 };

// Uninitialized heap bytes (operator new[] storage, aligned for any scalar). Never zero-filled:
// the pages of a large image are committed only as rows are decoded, so a file whose header
// claims a huge image and whose data ends early fails without touching that memory.
struct Buffer {
  std::unique_ptr<uint8_t[]> data;
  size_t size = 0;
};

// Gives `buffer` `size` uninitialized bytes; false when the memory cannot be had. Never throws:
// it runs inside setjmp regions (Note [setjmp discipline] in jpeg.cpp).
bool allocate(Buffer& buffer, size_t size) noexcept;

// A decoded image, planar: channel c, row y, column x at element (c * height + y) * width + x.
// Elements are uint8, or int32 (values 0..65535) for 16-bit PNGs, held raw in `bytes`.
struct Image {
  Buffer bytes;
  int channels = 0;
  int height = 0;
  int width = 0;
  bool wide = false;    // int32 elements
  int orientation = 1;  // EXIF orientation (1..8) when it was asked for and found, else 1
};

// Corrupt input or a library failure: becomes a Python RuntimeError.
struct CodecError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

Image decode_jpeg(const uint8_t* data, size_t size, ReadMode mode, bool read_orientation);
// `planes` holds `channels` (1 or 3) uint8 planes of height x width.
std::vector<uint8_t> encode_jpeg(const uint8_t* planes, int channels, int height, int width, int quality);

Image decode_png(const uint8_t* data, size_t size, ReadMode mode, bool read_orientation);
// `planes` holds `channels` (1: gray, 2: gray+alpha, 3: RGB, 4: RGBA) uint8 planes.
std::vector<uint8_t> encode_png(const uint8_t* planes, int channels, int height, int width,
                                int compression_level);

// The Orientation tag (0x0112) of IFD0 in a TIFF-structured EXIF block ("II*\0" or "MM\0*" first),
// or 1 when the block is malformed or has none. Every offset is bounds-checked.
int exif_orientation(const uint8_t* tiff, size_t size);

// Sizes `image` for channels x height x width elements of 1 or 4 bytes; false when the count
// overflows or the memory cannot be had. Never throws: it runs inside setjmp regions.
bool allocate_image(Image& image, int channels, int height, int width, bool wide) noexcept;

// Resizes `buffer`; false when the memory cannot be had. Never throws (as above).
bool try_resize(std::vector<uint8_t>& buffer, size_t size) noexcept;

}  // namespace embervision::image
