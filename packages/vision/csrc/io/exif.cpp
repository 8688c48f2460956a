// EXIF orientation: the one tag embervision reads from an EXIF block (JPEG APP1, PNG eXIf).

#include <limits>
#include <new>

#include "codecs.h"

namespace embervision::image {

namespace {

// A TIFF block's integers, in its declared byte order; callers check the bounds first.
struct TiffReader {
  const uint8_t* data;
  bool little_endian;

  uint32_t u16(size_t at) const {
    return little_endian ? data[at] | data[at + 1] << 8 : data[at] << 8 | data[at + 1];
  }
  uint32_t u32(size_t at) const {
    return little_endian ? u16(at) | u16(at + 2) << 16 : u16(at) << 16 | u16(at + 2);
  }
};

constexpr uint32_t kOrientationTag = 0x0112;
constexpr uint32_t kTypeShort = 3;
constexpr size_t kEntrySize = 12;  // tag u16, type u16, count u32, value or offset u32

}  // namespace

int exif_orientation(const uint8_t* tiff, size_t size) {
  // Layout: byte order "II"/"MM", 42, offset of IFD0; IFD0 = entry count u16, then the entries.
  if (tiff == nullptr || size < 8) return 1;
  TiffReader reader{tiff, tiff[0] == 'I'};
  if (!((tiff[0] == 'I' && tiff[1] == 'I') || (tiff[0] == 'M' && tiff[1] == 'M'))) return 1;
  if (reader.u16(2) != 42) return 1;
  const size_t ifd = reader.u32(4);
  if (ifd > size || size - ifd < 2) return 1;
  const size_t entries = reader.u16(ifd);
  for (size_t i = 0; i < entries; ++i) {
    const size_t entry = ifd + 2 + i * kEntrySize;
    if (entry > size || size - entry < kEntrySize) return 1;
    if (reader.u16(entry) != kOrientationTag) continue;
    if (reader.u16(entry + 2) != kTypeShort || reader.u32(entry + 4) != 1) return 1;
    const uint32_t value = reader.u16(entry + 8);  // a SHORT sits in the value field's first bytes
    return value >= 1 && value <= 8 ? static_cast<int>(value) : 1;
  }
  return 1;
}

bool try_resize(std::vector<uint8_t>& buffer, size_t size) noexcept {
  try {
    buffer.resize(size);
    return true;
  } catch (...) {
    return false;
  }
}

bool allocate(Buffer& buffer, size_t size) noexcept {
  buffer.data.reset(new (std::nothrow) uint8_t[size == 0 ? 1 : size]);
  buffer.size = buffer.data ? size : 0;
  return buffer.data != nullptr;
}

bool allocate_image(Image& image, int channels, int height, int width, bool wide) noexcept {
  if (channels <= 0 || height < 0 || width < 0) return false;
  const size_t element = wide ? 4 : 1;
  const size_t limit = std::numeric_limits<size_t>::max() / element;
  size_t count = static_cast<size_t>(channels);
  for (size_t factor : {static_cast<size_t>(height), static_cast<size_t>(width)}) {
    if (factor != 0 && count > limit / factor) return false;
    count *= factor;
  }
  image.channels = channels;
  image.height = height;
  image.width = width;
  image.wide = wide;
  return allocate(image.bytes, count * element);
}

}  // namespace embervision::image
