// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gst/base/gstpushsrc.h>

G_BEGIN_DECLS
#define GST_TYPE_RDMA_SRC (gst_rdma_src_get_type())
G_DECLARE_FINAL_TYPE(GstRdmaSrc, gst_rdma_src, GST, RDMA_SRC, GstPushSrc)
GST_ELEMENT_REGISTER_DECLARE(rdmasrc);
G_END_DECLS
