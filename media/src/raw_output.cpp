// SPDX-License-Identifier: Apache-2.0
#include "rdmavideo/media/raw_output.hpp"

namespace rdmavideo::media {

Result<RawOutput> RawOutput::open(const std::string& path, int abort_fd) {
  auto file = io::OutputFile::open(path, abort_fd);
  if (!file) return Unexpected(file.error());
  return RawOutput(std::move(*file));
}

Result<void> RawOutput::write(const proto::StreamStart& format, std::span<const std::byte> frame) {
  auto canonical = canonical_layout(format.pixel_format, format.width, format.height);
  if (!canonical) return Unexpected(canonical.error());
  bool packed = canonical->frame_bytes == format.layout.frame_bytes;
  for (int p = 0; packed && p < canonical->plane_count; ++p) {
    packed = canonical->planes[p].offset == format.layout.planes[p].offset &&
             canonical->planes[p].stride == format.layout.planes[p].stride;
  }
  if (packed) return file_.write(frame);
  for (int p = 0; p < format.layout.plane_count; ++p) {
    const Plane& plane = format.layout.planes[p];
    const uint32_t row_bytes = canonical->planes[p].stride;
    for (uint32_t row = 0; row < plane.rows; ++row) {
      const auto* src = frame.data() + plane.offset + size_t{row} * plane.stride;
      if (auto ok = file_.write({src, row_bytes}); !ok) return ok;
    }
  }
  return {};
}

}  // namespace rdmavideo::media
