// SPDX-License-Identifier: Apache-2.0
// What both builds of cuda_caps share: which GPU, and what a caps query offers.
#include <atomic>

#include "cuda_caps.hpp"
#include "rdmavideo/memory.hpp"

namespace rdmavideo::gst {

std::optional<memory::MemorySpec> memory_property(GstElement* element, const std::string& memory) {
  auto spec = memory::parse_memory(memory);
  if (!spec) {
    GST_ELEMENT_ERROR(element, RESOURCE, SETTINGS,
                      ("memory=%s is not host, cuda or cuda:N.", memory.c_str()), (nullptr));
  }
  return spec;
}

int cuda_device_of(const std::string& memory) {
  const auto spec = memory::parse_memory(memory);
  return spec && spec->kind == memory::MemoryKind::cuda ? spec->device : 0;
}

int element_cuda_device(gpointer element, const std::string& memory) {
  GST_OBJECT_LOCK(element);
  const int device = cuda_device_of(memory);
  GST_OBJECT_UNLOCK(element);
  return device;
}

std::string cuda_caps_status(int ordinal) {
  const std::string why = cuda_caps_unavailable(ordinal);
  return why.empty() ? "offered on cuda:" + std::to_string(ordinal) : why;
}

GstCaps* offered_caps(GstElement* element, GstCaps* caps, int ordinal) {
  if (!cuda_caps_built()) return caps;
  const std::string why = cuda_caps_unavailable(ordinal);
  if (why.empty()) return caps;
  static std::atomic<bool> said{false};
  if (!said.exchange(true)) GST_INFO_OBJECT(element, "%s", why.c_str());
  return without_cuda_variants(caps);
}

}  // namespace rdmavideo::gst
