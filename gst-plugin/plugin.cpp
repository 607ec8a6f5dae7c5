// SPDX-License-Identifier: Apache-2.0
// The rdmavideo GStreamer plugin: rdmasink and rdmasrc, thin adapters over librdmavideo.
//
//   gst-launch-1.0 videotestsrc ! video/x-raw,format=NV12,width=1280,height=720 ! rdmasink
//   port=5000 gst-launch-1.0 rdmasrc port=5000 ! videoconvert ! autovideosink
#include <gst/gst.h>

#include "common.hpp"
#include "rdmasink.hpp"
#include "rdmasrc.hpp"
#include "slot_memory.hpp"

GST_DEBUG_CATEGORY_STATIC(rdmavideo_library_debug);

static gboolean plugin_init(GstPlugin* plugin) {
  GST_DEBUG_CATEGORY_INIT(rdmavideo_library_debug, "rdmavideo", 0,
                          "librdmavideo: transports, protocol, ring");
  rdmavideo::gst::forward_library_log(rdmavideo_library_debug);
  rdmavideo::gst::register_slot_allocator();
  gboolean ok = GST_ELEMENT_REGISTER(rdmasink, plugin);
  ok &= GST_ELEMENT_REGISTER(rdmasrc, plugin);
  return ok;
}

#define PACKAGE "rdmavideo"
GST_PLUGIN_DEFINE(GST_VERSION_MAJOR, GST_VERSION_MINOR, rdmavideo,
                  "Raw video over RDMA verbs or TCP with the rdmavideo protocol", plugin_init,
                  RDMAVIDEO_VERSION, "Apache-2.0", "rdmavideo", "rdmavideo")
