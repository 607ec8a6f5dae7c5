// SPDX-License-Identifier: Apache-2.0
#include "rdmavideo/media/raw_output.hpp"

namespace rdmavideo::media {

Result<RawOutput> RawOutput::open(const std::string& path, int abort_fd,
                                  const std::string& setting) {
  auto file = io::OutputFile::open(path, abort_fd, setting);
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
  // Padded rows: the frame laid out packed, then written at once.
  packed_.resize(canonical->frame_bytes);
  std::array<ForeignPlane, kMaxPlanes> planes{};
  for (int p = 0; p < canonical->plane_count; ++p) {
    planes[p] = {packed_.data() + canonical->planes[p].offset, canonical->planes[p].stride};
  }
  copy_planes(format.layout, const_cast<std::byte*>(frame.data()),
              std::span(planes).first(canonical->plane_count), CopyDirection::from_wire);
  return file_.write(packed_);
}

}  // namespace rdmavideo::media
