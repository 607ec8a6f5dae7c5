// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gst/base/gstbasesink.h>

G_BEGIN_DECLS
#define GST_TYPE_RDMA_SINK (gst_rdma_sink_get_type())
G_DECLARE_FINAL_TYPE(GstRdmaSink, gst_rdma_sink, GST, RDMA_SINK, GstBaseSink)
GST_ELEMENT_REGISTER_DECLARE(rdmasink);
G_END_DECLS
