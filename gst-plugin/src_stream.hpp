// SPDX-License-Identifier: Apache-2.0
// rdmasrc's stream sink: what the receiving service's connection thread calls for every frame
// and every track's start, samples and end. It stamps each on the stream's time line as it
// arrives (StreamTimeline: one line for picture and sound, a straying source moved back,
// silence where a track says nothing), queues frames and gaps in the pictures for create(),
// copying a frame out of its ring slot where a muxer downstream may wait for sound the sender
// cannot send without a credit, and hands sound to the audio pads, whose threads push it: so
// no pad waits behind another.
#pragma once

#include <gst/gst.h>

#include <memory>

#include "rdmavideo/receiver_service.hpp"
#include "src_audio.hpp"
#include "src_runtime.hpp"

namespace rdmavideo::gst {

/// The sink of the stream `rt` receives; `pads` outlive it (made at start(), removed after
/// the service stopped).
std::unique_ptr<StreamSink> make_stream_sink(GstElement* element, SrcRuntime& rt,
                                             SrcAudioPads& pads);

}  // namespace rdmavideo::gst
