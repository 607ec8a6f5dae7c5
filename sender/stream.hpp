// SPDX-License-Identifier: Apache-2.0
// rdmavideo-send's two ways of running: one stream as the command line says (main.cpp), and
// an NMOS node whose controller says when and where to stream (nmos_mode.cpp).
#pragma once

#include <atomic>

#include "options.hpp"

namespace rdmavideo::send_cli {

/// Sends one stream to o.connect until the input ends, --frames, or `stop`; the exit code.
int run_stream(Options o, const std::atomic<bool>& stop);

/// --nmos: serves the node, and streams (run_stream) while an IS-05 activation has the sender
/// enabled, to where it says; until `stop`. The exit code.
int run_nmos(const Options& o, const std::atomic<bool>& stop);

}  // namespace rdmavideo::send_cli
