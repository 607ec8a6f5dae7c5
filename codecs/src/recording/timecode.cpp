// SPDX-License-Identifier: Apache-2.0
#include "timecode.hpp"

extern "C" {
#include <libavutil/timecode.h>
}

#include <cmath>
#include <ctime>

#include "av_util.hpp"
#include "rdmavideo/log.hpp"

namespace rdmavideo::av {

// "2026-11-23T22:28:05.123456Z": the form FFmpeg writes and reads as creation_time.
std::string iso8601_utc(uint64_t wall_ns) {
  const std::time_t seconds = static_cast<std::time_t>(wall_ns / 1000000000u);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:06d}Z", date, (wall_ns % 1000000000u) / 1000);
}

// The time of day of `wall_ns` (local time zone) as a timecode at `rate`, drop-frame at 29.97
// and 59.94 as cameras do; nullopt (and a warning) for a rate timecode cannot count.
std::optional<std::string> time_of_day_timecode(uint64_t wall_ns, Rational rate,
                                                const std::string& who) {
  const std::time_t seconds = static_cast<std::time_t>(wall_ns / 1000000000u);
  std::tm tm{};
  localtime_r(&seconds, &tm);
  const double of_day = tm.tm_hour * 3600.0 + tm.tm_min * 60.0 + tm.tm_sec +
                        static_cast<double>(wall_ns % 1000000000u) / 1e9;
  const AVRational fps{static_cast<int>(rate.num), static_cast<int>(rate.den)};
  const long nominal = std::lround(av_q2d(fps));
  const int flags =
      rate.den == 1001 && (nominal == 30 || nominal == 60) ? AV_TIMECODE_FLAG_DROPFRAME : 0;
  AVTimecode tc{};
  const int first = static_cast<int>(of_day * av_q2d(fps));
  if (const int rc = av_timecode_init(&tc, fps, flags, first, nullptr); rc < 0) {
    log().warn("[{}] no timecode track: a frame rate of {} has no timecode ({})", who,
               to_string(rate), error_text(rc));
    return std::nullopt;
  }
  char text[AV_TIMECODE_STR_SIZE];
  av_timecode_make_string(&tc, text, 0);
  return std::string(text);
}

}  // namespace rdmavideo::av
