// SPDX-License-Identifier: Apache-2.0
// The fuzz input read as a small program (media_targets.cpp, stream_targets.cpp): values taken
// in order, running out into zeros, so every input is a whole program.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace rdmavideo::fuzz {

class Input {
 public:
  Input(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool empty() const { return at_ >= size_; }
  template <typename T>
  T get() {
    T v{};
    const size_t n = std::min(sizeof(T), size_ - std::min(at_, size_));
    if (n > 0) std::memcpy(&v, data_ + at_, n);
    at_ += sizeof(T);
    return v;
  }
  // A value in lo..hi.
  uint32_t in(uint32_t lo, uint32_t hi) { return lo + get<uint32_t>() % (hi - lo + 1); }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t at_ = 0;
};

}  // namespace rdmavideo::fuzz
