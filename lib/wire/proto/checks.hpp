// SPDX-License-Identifier: Apache-2.0
// The checks a receiver makes that need the connection's state, in one place, so every
// transport rejects the same things with the same words (docs/protocol.md §3).
#pragma once

#include <optional>

#include "rdmavideo/protocol.hpp"

namespace rdmavideo::proto {

/// The HelloAck for a Hello, or the reason to refuse it (versions that do not overlap).
Result<HelloAck> answer_hello(const Hello& hello, uint64_t max_frame_bytes, uint32_t credits);

/// A StreamStart against the connection's stream and its last ring epoch (0: none yet) and
/// the receiver's frame limit.
Result<void> check_stream_start(const StreamStart& m, const std::optional<StreamStart>& current,
                                uint32_t last_epoch, uint64_t max_frame_bytes);

/// A FrameWritten against the current stream and ring (the slot's credit is the ring's
/// business: RingCredits::frame_arrived).
Result<void> check_frame_written(const FrameWritten& m, const std::optional<StreamStart>& current,
                                 uint32_t slot_count);

/// What a receiver sends its sender as it closes the connection on `error`: an Error naming
/// the cause when the sender is at fault and still there (`tell_peer` false when the sender
/// itself reported the error), and nothing when the sender is gone.
std::optional<Message> closing_message(const Error& error, bool tell_peer);

}  // namespace rdmavideo::proto
