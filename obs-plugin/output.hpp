// SPDX-License-Identifier: Apache-2.0
// The libobs output `rdmavideo_output` (OBS_OUTPUT_AV | OBS_OUTPUT_MULTI_TRACK): OBS's raw
// program picture and its selected mix tracks through an ObsSender.
//
// Settings (obs_data): destinations ("host:port", comma-separated for fan-out), transport
// (auto|tcp|verbs), key_file, name, tracks (bit i: mix track i + 1; default track 1),
// reconnect. They are read at each start, so settings changed while it runs (the dialog,
// obs-websocket's SetOutputSettings) take effect at the next start.
//
// start() returns at once: connecting runs on a thread of its own, which begins OBS's data
// capture once every destination is up (or, with reconnect, at once), and otherwise stops the
// output with OBS_OUTPUT_CONNECT_FAILED and the reason as its last error. stop() ends OBS's
// capture and ends the stream on that thread, so OBS's UI thread never waits on the network;
// start() leaves the last run's thread to the new one, and a release hands a stream still
// ending to a thread of its own (joined at the module's unload). Nothing signals OBS while it
// stops the output, and nothing touches the output once libobs released it.
#pragma once

#include <obs-module.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "obs_sender.hpp"

namespace rdmavideo::obs {

inline constexpr const char* kOutputId = "rdmavideo_output";

/// Registers the output type with libobs (obs_module_load).
void register_output();
/// Waits for outputs libobs released while their streams were still ending (obs_module_unload):
/// a release never waits on the network, an unload does.
void wait_for_released_outputs();

/// A mix track's name for the audio stream ("Track 2" unless the frontend names it).
void set_track_namer(std::function<std::string(size_t mix)> namer);

/// What the dialog shows of an output of this type. Other libobs programs get the counters
/// through the output's proc handler: "get_stats" (out int frames, dropped, bytes,
/// callback_ns, callback_cpu_ns).
struct OutputStatus {
  bool active = false;
  std::string summary;  ///< the stream's format and where it goes, or the last error
  uint64_t frames = 0, dropped = 0, bytes = 0;
  uint64_t callback_ns = 0, callback_cpu_ns = 0;  ///< in OBS's raw video callback, in total
  std::vector<DestinationStats> destinations;
};
OutputStatus status_of(obs_output_t* output);

}  // namespace rdmavideo::obs
