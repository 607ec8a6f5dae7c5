// SPDX-License-Identifier: Apache-2.0
// GstMemory over a received frame in its ring slot, so rdmasrc pushes buffers without
// copying out of the ring. The memory owns the slot's FrameLease: when downstream drops the
// last buffer holding it, the lease is dropped and the slot's credit goes back to the
// sender. The lease keeps the ring's memory alive, so a buffer held downstream stays valid
// after rdmasrc has stopped. Shares (sub-buffers) keep the root memory, and so the lease.
// The element counts the ring slots its buffers hold downstream (HeldSlots): a memory over a
// slot adds one while it lives.
//
// register_slot_allocator() runs once in plugin_init(); wrap_lease() may be called from any
// thread after that.
#pragma once

#include <gst/gst.h>

#include <atomic>
#include <cstdint>
#include <memory>

#include "rdmavideo/frame_lease.hpp"

namespace rdmavideo::gst {

inline constexpr const char* kSlotMemoryType = "RdmaVideoSlot";

/// Ring slots held by memories alive downstream; shared with them, so it outlives the element.
using HeldSlots = std::shared_ptr<std::atomic<uint32_t>>;

void register_slot_allocator();
/// A memory of the lease's whole frame. Takes the lease; counts itself in `held` (if given)
/// while it lives when the lease holds a ring slot (not a copy made of one).
GstMemory* wrap_lease(FrameLease lease, const HeldSlots& held = {});
bool is_slot_memory(GstMemory* memory);

}  // namespace rdmavideo::gst
