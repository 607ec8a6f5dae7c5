// SPDX-License-Identifier: Apache-2.0
// FrameBuffer: a pool buffer lent to the caller, returned when it goes.
#include "buffer_pool.hpp"

#include "rdmavideo/sender_session.hpp"

namespace rdmavideo {

FrameBuffer::FrameBuffer(FrameBuffer&& other) noexcept { *this = std::move(other); }

FrameBuffer& FrameBuffer::operator=(FrameBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    pool_ = std::move(other.pool_);
    bytes_ = std::exchange(other.bytes_, {});
    index_ = other.index_;
    kind_ = other.kind_;
    sent_to_ = std::exchange(other.sent_to_, 0);
  }
  return *this;
}

FrameBuffer::~FrameBuffer() { reset(); }

Result<void> FrameBuffer::write(std::span<const std::byte> from, size_t offset) const {
  if (!pool_) return make_error(ErrorCode::invalid_argument, "write into an empty FrameBuffer");
  if (offset > bytes_.size() || from.size() > bytes_.size() - offset) {
    return make_error(ErrorCode::invalid_argument, "write of {} bytes at {} into a frame of {}",
                      from.size(), offset, bytes_.size());
  }
  return memory::write(*pool_->region(), pool_->offset(index_) + offset, from);
}

Result<void> FrameBuffer::read(std::span<std::byte> to, size_t offset) const {
  if (!pool_) return make_error(ErrorCode::invalid_argument, "read from an empty FrameBuffer");
  if (offset > bytes_.size() || to.size() > bytes_.size() - offset) {
    return make_error(ErrorCode::invalid_argument, "read of {} bytes at {} from a frame of {}",
                      to.size(), offset, bytes_.size());
  }
  return memory::read(*pool_->region(), pool_->offset(index_) + offset, to);
}

void FrameBuffer::reset() noexcept {
  if (pool_) pool_->set(index_, detail::BufferPool::State::free);
  pool_.reset();
  bytes_ = {};
  sent_to_ = 0;
}

}  // namespace rdmavideo
