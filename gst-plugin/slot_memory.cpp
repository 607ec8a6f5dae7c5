// SPDX-License-Identifier: Apache-2.0
#include "slot_memory.hpp"

namespace rdmavideo::gst {
namespace {

struct SlotMemory {
  GstMemory memory;
  FrameLease* lease;  // owned by the root memory; null in shares
  std::byte* data;    // the frame's first byte in the slot
  HeldSlots* held;    // the root's count of slots held, if it counts one; null in shares
};

}  // namespace
}  // namespace rdmavideo::gst

// A plain GstAllocator subclass: memories are only made by wrap_lease(), never allocated.
struct GstRdmaSlotAllocator {
  GstAllocator parent;
};
struct GstRdmaSlotAllocatorClass {
  GstAllocatorClass parent_class;
};
G_DEFINE_TYPE(GstRdmaSlotAllocator, gst_rdma_slot_allocator, GST_TYPE_ALLOCATOR)

namespace rdmavideo::gst {
namespace {

gpointer slot_map(GstMemory* memory, gsize, GstMapFlags) {
  // A share's offset is already in memory->offset; GStreamer adds it to what we return.
  return reinterpret_cast<SlotMemory*>(memory)->data;
}

void slot_unmap(GstMemory*) {}

GstMemory* slot_share(GstMemory* memory, gssize offset, gssize size) {
  GstMemory* root = memory->parent ? memory->parent : memory;
  if (size < 0) size = static_cast<gssize>(memory->size) - offset;
  auto* share = g_new0(SlotMemory, 1);
  share->lease = nullptr;
  share->held = nullptr;
  share->data = reinterpret_cast<SlotMemory*>(root)->data;
  gst_memory_init(
      GST_MEMORY_CAST(share),
      static_cast<GstMemoryFlags>(GST_MINI_OBJECT_FLAGS(root) | GST_MINI_OBJECT_FLAG_LOCK_READONLY),
      memory->allocator, root, memory->maxsize, memory->align,
      memory->offset + static_cast<gsize>(offset), static_cast<gsize>(size));
  return GST_MEMORY_CAST(share);
}

void slot_free(GstAllocator*, GstMemory* memory) {
  auto* slot = reinterpret_cast<SlotMemory*>(memory);
  delete slot->lease;  // returns the slot's credit (root memory only)
  if (slot->held) {
    (*slot->held)->fetch_sub(1);
    delete slot->held;
  }
  g_free(slot);
}

GstAllocator* slot_allocator() {
  // gst_allocator_find returns a new reference; this one is held for the process's life.
  static GstAllocator* const allocator = gst_allocator_find(kSlotMemoryType);
  return allocator;
}

}  // namespace

void register_slot_allocator() {
  auto* allocator =
      static_cast<GstAllocator*>(g_object_new(gst_rdma_slot_allocator_get_type(), nullptr));
  gst_object_ref_sink(allocator);
  gst_allocator_register(kSlotMemoryType, allocator);  // takes our reference
}

GstMemory* wrap_lease(FrameLease lease, const HeldSlots& held) {
  const auto data = lease.mutable_data();
  auto* memory = g_new0(SlotMemory, 1);
  memory->data = data.data();
  if (held && lease.holds_slot()) {
    held->fetch_add(1);
    memory->held = new HeldSlots(held);
  }
  memory->lease = new FrameLease(std::move(lease));
  gst_memory_init(GST_MEMORY_CAST(memory), static_cast<GstMemoryFlags>(0), slot_allocator(),
                  nullptr, data.size(), 0, 0, data.size());
  return GST_MEMORY_CAST(memory);
}

bool is_slot_memory(GstMemory* memory) { return gst_memory_is_type(memory, kSlotMemoryType); }

}  // namespace rdmavideo::gst

static void gst_rdma_slot_allocator_class_init(GstRdmaSlotAllocatorClass* klass) {
  auto* allocator_class = GST_ALLOCATOR_CLASS(klass);
  allocator_class->alloc = nullptr;
  allocator_class->free = rdmavideo::gst::slot_free;
}

static void gst_rdma_slot_allocator_init(GstRdmaSlotAllocator* self) {
  auto* allocator = GST_ALLOCATOR_CAST(self);
  allocator->mem_type = rdmavideo::gst::kSlotMemoryType;
  allocator->mem_map = rdmavideo::gst::slot_map;
  allocator->mem_unmap = rdmavideo::gst::slot_unmap;
  allocator->mem_share = rdmavideo::gst::slot_share;
  GST_OBJECT_FLAG_SET(allocator, GST_ALLOCATOR_FLAG_CUSTOM_ALLOC);
}
