// SPDX-License-Identifier: Apache-2.0
// The memory a sender session lends and takes back: a stream format's buffer pool, the
// wait for memory to come back, and the hold a frame in flight keeps on what it reads.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "rdmavideo/memory.hpp"

namespace rdmavideo {

namespace detail {

// Where the caller waits for memory to come back (a pool buffer, a staging slot, an external
// frame's place): whoever returns it, on whichever thread, notifies.
class Returns {
 public:
  void notify() {
    {
      std::lock_guard lock(mu_);
      ++count_;
    }
    cv_.notify_all();
  }
  // Waits until something returns after `seen` (or `wait` passes); the new count.
  uint64_t wait(uint64_t seen, std::chrono::milliseconds wait) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, wait, [&] { return count_ != seen; });
    return count_;
  }
  uint64_t count() {
    std::lock_guard lock(mu_);
    return count_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t count_ = 0;
};

// The buffers of one stream format: one region, `count` buffers at a page-rounded stride.
// A buffer is free, lent (a FrameBuffer holds it), or in flight (the session holds it until
// no transfer reads it). FrameBuffers release from any thread, so state is under a mutex.
class BufferPool {
 public:
  enum class State : uint8_t { free, lent, in_flight };

  BufferPool(std::shared_ptr<memory::Region> region, uint32_t count, size_t frame_bytes,
             size_t stride, std::shared_ptr<Returns> returns)
      : region_(std::move(region)),
        frame_bytes_(frame_bytes),
        stride_(stride),
        returns_(std::move(returns)),
        states_(count, State::free) {}

  uint32_t count() const { return static_cast<uint32_t>(states_.size()); }
  const std::shared_ptr<memory::Region>& region() const { return region_; }
  size_t offset(uint32_t index) const { return index * stride_; }
  std::span<std::byte> buffer(uint32_t index) const {
    return region_->bytes().subspan(index * stride_, frame_bytes_);
  }

  State state(uint32_t index) {
    std::lock_guard lock(mu_);
    return states_[index];
  }
  // A free buffer (the asked-for one, or any), now lent; nullopt when there is none.
  std::optional<uint32_t> lend(std::optional<uint32_t> index) {
    std::lock_guard lock(mu_);
    for (uint32_t i = 0; i < states_.size(); ++i) {
      if ((!index || *index == i) && states_[i] == State::free) {
        states_[i] = State::lent;
        return i;
      }
    }
    return std::nullopt;
  }
  bool all_lent() {
    std::lock_guard lock(mu_);
    return std::all_of(states_.begin(), states_.end(), [](State s) { return s == State::lent; });
  }
  void set(uint32_t index, State state) {
    {
      std::lock_guard lock(mu_);
      states_[index] = state;
    }
    if (state == State::free) returns_->notify();
  }

 private:
  std::shared_ptr<memory::Region> region_;
  size_t frame_bytes_;
  size_t stride_;
  std::shared_ptr<Returns> returns_;  // told when a buffer is free again
  std::mutex mu_;
  std::vector<State> states_;  // under mu_
};

}  // namespace detail

// What a frame in flight holds until every core that has it says no transfer reads it: a pool
// buffer's return, an external frame's owner, a staging slot. Armed once the frame was
// handed to a destination, so a frame no destination took returns nothing (the buffer stays
// the caller's, or is returned by the caller).
class FrameHold {
 public:
  FrameHold(std::shared_ptr<detail::Returns> returns, std::function<void()> on_done = {},
            std::shared_ptr<const void> keep = nullptr)
      : returns_(std::move(returns)), on_done_(std::move(on_done)), keep_(std::move(keep)) {}
  ~FrameHold() {
    if (armed_ && on_done_) on_done_();
    keep_.reset();
    returns_->notify();
  }
  FrameHold(const FrameHold&) = delete;
  FrameHold& operator=(const FrameHold&) = delete;
  void arm() { armed_ = true; }

 private:
  std::shared_ptr<detail::Returns> returns_;
  std::function<void()> on_done_;
  std::shared_ptr<const void> keep_;
  std::atomic<bool> armed_{false};
};

}  // namespace rdmavideo
