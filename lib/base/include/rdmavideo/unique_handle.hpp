// SPDX-License-Identifier: Apache-2.0
// Move-only owner of a value handle (a file descriptor, a CUdeviceptr): the value and a free
// function, called once when the owner dies unless the value is the empty one.
#pragma once

#include <utility>

namespace rdmavideo {

template <typename T, void (*Free)(T) noexcept, T Empty = T{}>
class UniqueHandle {
 public:
  UniqueHandle() = default;
  explicit UniqueHandle(T value) : value_(value) {}
  UniqueHandle(UniqueHandle&& other) noexcept : value_(std::exchange(other.value_, Empty)) {}
  UniqueHandle& operator=(UniqueHandle&& other) noexcept {
    if (this != &other) reset(std::exchange(other.value_, Empty));
    return *this;
  }
  UniqueHandle(const UniqueHandle&) = delete;
  UniqueHandle& operator=(const UniqueHandle&) = delete;
  ~UniqueHandle() { reset(); }

  T get() const { return value_; }
  explicit operator bool() const { return value_ != Empty; }
  T release() { return std::exchange(value_, Empty); }
  void reset(T value = Empty) {
    if (value_ != Empty) Free(value_);
    value_ = value;
  }

 private:
  T value_ = Empty;
};

void close_fd(int fd) noexcept;  // logs a warning naming the fd if close fails
using UniqueFd = UniqueHandle<int, &close_fd, -1>;

}  // namespace rdmavideo
