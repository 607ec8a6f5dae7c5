// SPDX-License-Identifier: Apache-2.0
// FrameLease: a received frame, still in the ring slot the sender wrote it into.
//
// The lease is move-only. While it lives, the slot is the holder's: the sender holds no
// credit for it and cannot overwrite it. Dropping the lease (or release()) returns the slot's
// credit to the sender. A lease may be moved to and dropped on any thread. It shares
// ownership of the ring's memory (and its registration with the NIC) and of the stream's
// format, so it stays valid after the connection is gone; releasing it then returns nothing.
//
// format() is the same object for every frame of one ring epoch, so a sink sees a format
// change as a different format pointer (or ring epoch) without comparing fields.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <utility>

#include "rdmavideo/memory.hpp"
#include "rdmavideo/protocol.hpp"

namespace rdmavideo {

namespace detail {
// What a lease returns its slot to: the receiving connection's credit state.
class SlotOwner {
 public:
  virtual ~SlotOwner() = default;
  virtual void release_slot(uint32_t ring_epoch, uint32_t slot) noexcept = 0;
};
}  // namespace detail

class FrameLease {
 public:
  FrameLease() = default;
  FrameLease(std::shared_ptr<detail::SlotOwner> owner, std::shared_ptr<const void> memory,
             std::shared_ptr<const proto::StreamStart> format, memory::MemoryKind kind,
             std::span<std::byte> data, const proto::FrameWritten& info, uint64_t latency_ns,
             std::shared_ptr<const memory::Region> gpu_region = nullptr)
      : owner_(std::move(owner)),
        memory_(std::move(memory)),
        format_(std::move(format)),
        gpu_region_(std::move(gpu_region)),
        data_(data),
        info_(info),
        latency_ns_(latency_ns),
        kind_(kind) {}
  FrameLease(FrameLease&& other) noexcept { *this = std::move(other); }
  FrameLease& operator=(FrameLease&& other) noexcept {
    if (this != &other) {
      release();
      owner_ = std::move(other.owner_);
      memory_ = std::move(other.memory_);
      format_ = std::move(other.format_);
      gpu_region_ = std::move(other.gpu_region_);
      data_ = std::exchange(other.data_, {});
      info_ = other.info_;
      latency_ns_ = other.latency_ns_;
      kind_ = other.kind_;
    }
    return *this;
  }
  FrameLease(const FrameLease&) = delete;
  FrameLease& operator=(const FrameLease&) = delete;
  ~FrameLease() { release(); }

  explicit operator bool() const { return owner_ != nullptr; }
  /// The frame's bytes, exactly StreamStart.frame_bytes, in the stream's layout.
  std::span<const std::byte> data() const { return data_; }
  std::span<std::byte> mutable_data() const { return data_; }
  const proto::FrameWritten& info() const { return info_; }
  const proto::StreamStart& format() const { return *format_; }
  const std::shared_ptr<const proto::StreamStart>& shared_format() const { return format_; }
  /// Where data() is: host memory the CPU reads, or a GPU's (device addresses; read it with
  /// to_host(), or hand it to CUDA).
  memory::MemoryKind memory_kind() const { return kind_; }
  /// The frame in host memory: this lease itself where it is there already; for a frame in
  /// GPU memory, copied(). This lease is empty afterwards.
  Result<FrameLease> to_host() &&;
  /// The frame copied (or downloaded) into new host memory the returned lease owns, and its
  /// slot given back at once: for a consumer that must hold frames longer than the ring
  /// lets it. This lease is empty afterwards.
  Result<FrameLease> copied() &&;
  /// Whether the lease holds a ring slot (a copy holds none).
  bool holds_slot() const;
  /// The GPU data() is on; nullptr for a frame in host memory.
  std::shared_ptr<cuda::Device> cuda_device() const;
  /// Arrival minus FrameWritten.sent_ns (meaningful between same-clock hosts only); 0 when
  /// the sender's clock is ahead.
  uint64_t latency_ns() const { return latency_ns_; }

  /// Returns the slot now; the lease is empty afterwards.
  void release() noexcept {
    if (owner_) owner_->release_slot(info_.ring_epoch, info_.slot);
    owner_.reset();
    memory_.reset();
    format_.reset();
    gpu_region_.reset();
    data_ = {};
  }

 private:
  std::shared_ptr<detail::SlotOwner> owner_;
  std::shared_ptr<const void> memory_;  // the ring's memory and registration
  std::shared_ptr<const proto::StreamStart> format_;
  std::shared_ptr<const memory::Region> gpu_region_;  // GPU memory: the region data_ is in
  std::span<std::byte> data_;
  proto::FrameWritten info_{};
  uint64_t latency_ns_ = 0;
  memory::MemoryKind kind_ = memory::MemoryKind::host;
};

}  // namespace rdmavideo
