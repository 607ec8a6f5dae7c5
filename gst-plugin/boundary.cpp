// SPDX-License-Identifier: Apache-2.0
#include "boundary.hpp"

#include <string>

#include "rdmavideo/caught.hpp"

namespace rdmavideo::gst {
namespace {

GstElement* element_of(gpointer object) {
  if (object == nullptr) return nullptr;
  if (GST_IS_ELEMENT(object)) return GST_ELEMENT(object);
  if (GST_IS_PAD(object)) {
    GstObject* parent = GST_OBJECT_PARENT(object);
    if (parent != nullptr && GST_IS_ELEMENT(parent)) return GST_ELEMENT(parent);
  }
  return nullptr;
}

}  // namespace

void report_exception(gpointer object, const char* what, const std::exception_ptr& error) noexcept {
  try {
    const std::string why = error_of(error, what).message();
    GstElement* element = element_of(object);
    if (element == nullptr) {
      g_critical("rdmavideo: %s", why.c_str());
      return;
    }
    // What GST_ELEMENT_ERROR posts, without a debug category of its own.
    gst_element_message_full(element, GST_MESSAGE_ERROR, GST_LIBRARY_ERROR,
                             GST_LIBRARY_ERROR_FAILED, g_strdup_printf("Could not %s.", what),
                             g_strdup(why.c_str()), __FILE__, GST_FUNCTION, __LINE__);
  } catch (...) {
    g_critical("rdmavideo: %s failed, and so did reporting it", what);
  }
}

}  // namespace rdmavideo::gst
