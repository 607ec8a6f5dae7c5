// SPDX-License-Identifier: Apache-2.0
// The checks a receiver makes that need the connection's state, in one place, so every
// transport rejects the same things with the same words (docs/protocol.md §3).
#pragma once

#include <optional>

#include "rdmavideo/protocol.hpp"

namespace rdmavideo::proto {

/// The HelloAck for a Hello, or the reason to refuse it (versions that do not overlap
/// kMinVersion..`max_version`, the highest this receiver offers).
Result<HelloAck> answer_hello(const Hello& hello, uint64_t max_frame_bytes, uint32_t credits,
                              uint16_t max_version = kVersion);

/// An AudioStart against the connection's video stream (none yet: an audio-only connection,
/// refused), how many audio streams it has started (running or ended), whether this one's
/// id is among them, and the negotiated version.
Result<void> check_audio_start(const AudioStart& m, const std::optional<StreamStart>& video,
                               size_t started, bool id_started, uint16_t version);
/// An AudioChunk against its stream's AudioStart (none: an unknown stream): the samples fill
/// the body exactly.
Result<void> check_audio_chunk(const AudioChunk& m, const AudioStart* stream);

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
