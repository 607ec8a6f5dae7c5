// SPDX-License-Identifier: Apache-2.0
// GstMemory over a received frame in its ring slot, so rdmasrc pushes buffers without
// copying out of the ring. The memory owns the slot's FrameLease: when downstream drops the
// last buffer holding it, the lease is dropped and the slot's credit goes back to the
// sender. The lease keeps the ring's memory alive, so a buffer held downstream stays valid
// after rdmasrc has stopped. Shares (sub-buffers) keep the root memory, and so the lease.
//
// register_slot_allocator() runs once in plugin_init(); wrap_lease() may be called from any
// thread after that.
#pragma once

#include <gst/gst.h>

#include "rdmavideo/frame_lease.hpp"

namespace rdmavideo::gst {

inline constexpr const char* kSlotMemoryType = "RdmaVideoSlot";

void register_slot_allocator();
/// A memory of the lease's whole frame. Takes the lease.
GstMemory* wrap_lease(FrameLease lease);
bool is_slot_memory(GstMemory* memory);

}  // namespace rdmavideo::gst
