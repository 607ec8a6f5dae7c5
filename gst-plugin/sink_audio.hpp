// SPDX-License-Identifier: Apache-2.0
// rdmasink's sound: request pads audio_%u beside the video pad, each one audio track of the
// stream, sent with the session's audio calls (the ones OBS's output makes).
//
// Why request pads on rdmasink and not a combiner in front (as NDI's ndisinkcombiner): the
// protocol already carries sound as its own messages on the video's pts clock, and the
// session places and batches them, so nothing needs to be attached to video buffers; a pad
// for each track keeps gst-launch lines short (`rdmasink name=s ... ! s.audio_0`), and each
// track keeps its own format.
//
// A track starts at its pad's first buffer, with the caps then current and the name of its
// `title` tag (else the pad's name), and tracks start in the order of their pads' numbers
// (audio_0 before audio_1, whichever buffer comes first: a pad waits, at most kStall, for
// the caps of the linked pads numbered before it). A caps change goes on in the same track,
// converted (GstAudioConverter: format, channels, rate) into the format it started with, so
// a receiver's recording keeps it. Timestamps are taken as they are, like the video's. In no-drop
// mode (files) the first picture waits until every linked pad has started its track (at most
// kStall), and a pad waits for the first picture (until then the receiver's ring may not be up, and
// sound sent would be lost), then while its samples run more than kLead ahead of the last picture
// sent, so a file's sound does not race ahead of its pictures into the receiver's bounded audio
// queue; the wait gives up after kStall when no picture moves (an upstream that feeds both pads
// from one thread without queues). In live mode a pad never waits. The stream ends (EndOfStream)
// once the video pad and every audio pad have had EOS, or kEosWait after the video's.
#pragma once

#include <gst/audio/audio.h>
#include <gst/gst.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace rdmavideo {
class SenderSession;
}

namespace rdmavideo::gst {

class SinkAudio {
 public:
  explicit SinkAudio(GstElement* element) : element_(element) {}
  SinkAudio(const SinkAudio&) = delete;
  SinkAudio& operator=(const SinkAudio&) = delete;

  /// GstElement's request_new_pad and release_pad.
  GstPad* request_pad(GstPadTemplate* templ, const gchar* name);
  void release_pad(GstPad* pad);

  /// The session tracks go to, from start() until close(); `live`: never wait.
  void open(SenderSession* session, bool live);
  /// No more sound goes out (before the stream ends, and at stop): waits for a send in progress.
  void close();
  /// Before a picture goes: the first waits (no-drop mode, at most kStall) until every linked
  /// audio pad has started its track, as a receiver's recording knows its tracks by the first
  /// picture.
  void before_picture();
  /// The video's progress: the pts of the last picture sent (or dropped).
  void picture_sent(std::optional<int64_t> pts_ns);
  /// The video pad had EOS: waits until every audio pad has had it too, at most kEosWait.
  void wait_eos();
  /// Flushing or stopping: abandon waits (true) until told otherwise (false).
  void set_unlocked(bool unlocked);

  static constexpr std::chrono::milliseconds kLead{200};
  static constexpr std::chrono::seconds kStall{2};
  static constexpr std::chrono::seconds kEosWait{2};

 private:
  struct Track {
    GstPad* pad = nullptr;
    uint32_t index = 0;   // the pad's number: tracks start in its order
    GstAudioInfo info{};  // the pad's caps
    bool has_caps = false;
    GstAudioInfo sent{};                         // the track's format, from its first caps
    std::shared_ptr<GstAudioConverter> convert;  // the caps, when they changed, into `sent`
    std::string title;
    std::optional<uint32_t> number;  // the session's, once started
    int64_t next_pts = 0;            // where its last samples ended
    bool eos = false;
    bool flushing = false;
    // The samples as they are sent, where they are not the buffer's own bytes: converted,
    // or planar ones gathered plane after plane.
    std::vector<std::byte> packed;
  };
  static gboolean event(GstPad* pad, GstObject* parent, GstEvent* event);
  static GstFlowReturn chain(GstPad* pad, GstObject* parent, GstBuffer* buffer);
  Track* find(GstPad* pad);  // under mutex_
  GstFlowReturn send(GstPad* pad, GstBuffer* buffer);
  gboolean handle_event(GstPad* pad, GstEvent* event);
  void end_track(Track& track);  // under mutex_
  // Starts `track`'s track, after every linked pad numbered before it that has caps (under
  // mutex_); false with an error posted where the session refused it.
  bool start_in_order(std::unique_lock<std::mutex>& lock, GstPad* pad);
  bool start_track(Track& track);  // under mutex_
  void wait_for_pictures(std::unique_lock<std::mutex>& lock, GstPad* pad, int64_t pts_ns);
  // Waits (under mutex_, at most `timeout`) until `done` holds for every linked pad, or the
  // element is unlocked; false when the time ran out.
  template <typename Done>
  bool wait_for_every_track(std::unique_lock<std::mutex>& lock, std::chrono::milliseconds timeout,
                            Done done);

  GstElement* element_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<Track> tracks_;
  SenderSession* session_ = nullptr;
  bool live_ = false;
  bool unlocked_ = false;
  std::optional<int64_t> last_picture_;
  uint32_t next_pad_ = 0;
};

}  // namespace rdmavideo::gst
