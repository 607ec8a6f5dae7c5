// SPDX-License-Identifier: Apache-2.0
// rdmavideo-send --nmos: the sender as an NMOS node. It serves the Node and Connection APIs
// and registers; an activation with master_enable true starts a stream to the destination it
// names (address and port, or a receiver's DNS-SD name), one with false ends it cleanly, and
// a new destination ends the stream and starts one there. A stream that ends by itself
// (--frames, the receiver ended it) leaves the sender disabled in /active.
#include <condition_variable>
#include <mutex>
#include <thread>

#include "cli.hpp"
#include "rdmavideo/log.hpp"
#include "rdmavideo/nmos.hpp"
#include "rdmavideo/test_tone.hpp"
#include "stream.hpp"

namespace rdmavideo::send_cli {

int run_nmos(const Options& o, const std::atomic<bool>& stop) {
  nmos::NodeOptions no = *o.nmos;
  no.label = o.name;
  no.seed = "sender/" + o.name;
  auto node = nmos::Node::start(no);
  if (!node) {
    log().error("rdmavideo-send: {}", node.error().message());
    return cli::kExitFailed;
  }
  std::mutex mu;
  std::condition_variable changed;
  std::optional<nmos::SenderActivation> wanted;
  uint64_t generation = 0;
  std::atomic<bool> stream_stop{false};
  nmos::VideoFormat video{o.pix_fmt, o.width, o.height, o.rate, o.colour.value_or(Colour{})};
  std::optional<nmos::AudioFormat> audio;
  if (o.tone) audio = nmos::AudioFormat{o.tone_channels, TestTone::kRate};
  const std::string sender_id = (*node)->add_sender(
      o.name, video, audio, [&](const nmos::SenderActivation& a) -> Result<void> {
        {
          std::lock_guard lock(mu);
          wanted = a;
          ++generation;
        }
        stream_stop = true;  // the stream under way, if any, ends; the loop starts the next
        changed.notify_all();
        return {};
      });
  log().info("NMOS node at http://{}/x-nmos/ (sender {}), {}; waiting for an activation",
             (*node)->local_endpoint().to_string(), sender_id, (*node)->registration());

  int exit_code = 0;
  uint64_t seen = 0;
  while (!stop) {
    nmos::SenderActivation a;
    {
      std::unique_lock lock(mu);
      changed.wait_for(lock, std::chrono::milliseconds(100), [&] { return generation != seen; });
      if (generation == seen || !wanted) continue;
      seen = generation;
      a = *wanted;
    }
    if (!a.enable) {
      log().info("NMOS: disabled; waiting for an activation");
      continue;
    }
    Options run = o;
    run.connect = {a.destination};
    run.transport = a.transport;
    if (!a.stream_name.empty()) run.name = a.stream_name;
    run.reconnect = true;  // a receiver not there yet is waited for, as a controller expects
    run.advertise = false;
    log().info("NMOS: activated: sending to {} over {}{}", a.destination.to_string(),
               to_string(a.transport),
               a.receiver_id.empty() ? "" : " (receiver " + a.receiver_id + ")");
    stream_stop = false;
    std::thread watch([&] {  // SIGINT/SIGTERM end the stream too
      while (!stream_stop && !stop) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      stream_stop = true;
    });
    const int code = run_stream(run, stream_stop);
    const bool by_itself = !stream_stop.exchange(true);
    watch.join();
    if (code != 0) exit_code = code;
    bool replaced = false;
    {
      std::lock_guard lock(mu);
      replaced = generation != seen;
    }
    if (by_itself && !replaced && !stop) {
      log().info("NMOS: the stream ended; the sender is disabled until the next activation");
      (*node)->sender_stopped(sender_id);
    }
  }
  return exit_code;
}

}  // namespace rdmavideo::send_cli
