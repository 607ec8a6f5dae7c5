// SPDX-License-Identifier: Apache-2.0
// Little-endian field readers and writers for the message codec. The reader never reads
// past its span: a read beyond the end marks it failed and returns zero, and the codec
// checks lengths before reading so that never happens for a message it accepts.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rdmavideo::proto {

class WireWriter {
 public:
  explicit WireWriter(std::vector<std::byte>& out) : out_(out) {}

  template <typename T>
  void put(T value) {
    static_assert(std::is_integral_v<T>);
    if constexpr (std::endian::native == std::endian::big && sizeof(T) > 1) {
      value = byteswap(value);
    }
    const auto* p = reinterpret_cast<const std::byte*>(&value);
    out_.insert(out_.end(), p, p + sizeof(T));
  }

  /// A fixed-size text field: the text, then NULs up to `size` (text is at most size - 1).
  void put_fixed_text(std::string_view text, size_t size) {
    const size_t n = std::min(text.size(), size - 1);
    const auto* p = reinterpret_cast<const std::byte*>(text.data());
    out_.insert(out_.end(), p, p + n);
    out_.insert(out_.end(), size - n, std::byte{0});
  }

  void put_bytes(std::string_view text) {
    const auto* p = reinterpret_cast<const std::byte*>(text.data());
    out_.insert(out_.end(), p, p + text.size());
  }

 private:
  template <typename T>
  static T byteswap(T value) {
    T out{};
    auto* src = reinterpret_cast<unsigned char*>(&value);
    auto* dst = reinterpret_cast<unsigned char*>(&out);
    for (size_t i = 0; i < sizeof(T); ++i) dst[i] = src[sizeof(T) - 1 - i];
    return out;
  }

  std::vector<std::byte>& out_;
};

class WireReader {
 public:
  explicit WireReader(std::span<const std::byte> in) : in_(in) {}

  template <typename T>
  T get() {
    static_assert(std::is_integral_v<T>);
    T value{};
    if (pos_ + sizeof(T) > in_.size()) {
      failed_ = true;
      return value;
    }
    std::memcpy(&value, in_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    if constexpr (std::endian::native == std::endian::big && sizeof(T) > 1) {
      T out{};
      auto* src = reinterpret_cast<unsigned char*>(&value);
      auto* dst = reinterpret_cast<unsigned char*>(&out);
      for (size_t i = 0; i < sizeof(T); ++i) dst[i] = src[sizeof(T) - 1 - i];
      value = out;
    }
    return value;
  }

  std::span<const std::byte> get_bytes(size_t n) {
    if (pos_ + n > in_.size()) {
      failed_ = true;
      return {};
    }
    auto out = in_.subspan(pos_, n);
    pos_ += n;
    return out;
  }

  bool failed() const { return failed_; }
  size_t remaining() const { return in_.size() - pos_; }

 private:
  std::span<const std::byte> in_;
  size_t pos_ = 0;
  bool failed_ = false;
};

}  // namespace rdmavideo::proto
