// SPDX-License-Identifier: Apache-2.0
#include "recorder_choice.hpp"

extern "C" {
#include <libavformat/avformat.h>
#include <libavutil/cpu.h>
#include <libavutil/imgutils.h>
}

#include <algorithm>
#include <limits>
#include <vector>

#include "audio_track.hpp"
#include "av_util.hpp"
#include "rdmavideo/convert.hpp"

namespace rdmavideo::av {
namespace {

constexpr Container kContainers[] = {
    {".mov", "mov", "prores_hq", true},
    {".mkv", "matroska", "ffv1", false},
    {".mp4", "mp4", "h264", true},
    {".nut", "nut", "ffv1", false},
    {".y4m", "yuv4mpegpipe", "rawvideo", false},
};

const CodecChoice kCodecs[] = {
    {"prores_proxy", AV_CODEC_ID_PRORES, "prores_aw", "proxy", FF_PROFILE_PRORES_PROXY,
     AV_PIX_FMT_YUV422P10LE},
    {"prores_lt", AV_CODEC_ID_PRORES, "prores_aw", "lt", FF_PROFILE_PRORES_LT,
     AV_PIX_FMT_YUV422P10LE},
    {"prores", AV_CODEC_ID_PRORES, "prores_aw", "standard", FF_PROFILE_PRORES_STANDARD,
     AV_PIX_FMT_YUV422P10LE},
    {"prores_hq", AV_CODEC_ID_PRORES, "prores_aw", "hq", FF_PROFILE_PRORES_HQ,
     AV_PIX_FMT_YUV422P10LE},
    {"prores_4444", AV_CODEC_ID_PRORES, "prores_aw", "4444", FF_PROFILE_PRORES_4444,
     AV_PIX_FMT_YUV444P10LE},
    {"dnxhr_hq", AV_CODEC_ID_DNXHD, "dnxhd", "dnxhr_hq", FF_PROFILE_UNKNOWN, AV_PIX_FMT_YUV422P},
    {"ffv1", AV_CODEC_ID_FFV1, "ffv1", nullptr, FF_PROFILE_UNKNOWN, AV_PIX_FMT_NONE},
    {"h264", AV_CODEC_ID_H264, "libx264", nullptr, FF_PROFILE_UNKNOWN, AV_PIX_FMT_NONE},
    {"hevc", AV_CODEC_ID_HEVC, "libx265", nullptr, FF_PROFILE_UNKNOWN, AV_PIX_FMT_NONE},
    {"rawvideo", AV_CODEC_ID_RAWVIDEO, "rawvideo", nullptr, FF_PROFILE_UNKNOWN, AV_PIX_FMT_NONE},
};

}  // namespace

const AVPixelFormat kY4mFormats[] = {
    AV_PIX_FMT_YUV420P,     AV_PIX_FMT_YUV422P,     AV_PIX_FMT_YUV444P, AV_PIX_FMT_YUV420P10LE,
    AV_PIX_FMT_YUV422P10LE, AV_PIX_FMT_YUV444P10LE, AV_PIX_FMT_NONE};

namespace {

std::string extension_of(const std::string& path) {
  const auto dot = path.rfind('.');
  const auto slash = path.rfind('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
  std::string ext = path.substr(dot);
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return ext;
}

}  // namespace

const Container* find_container(const std::string& path) {
  const std::string ext = extension_of(path);
  for (const auto& c : kContainers) {
    if (ext == c.extension) return &c;
  }
  return nullptr;
}

namespace {

const CodecChoice* find_codec(std::string_view name) {
  for (const auto& c : kCodecs) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// What errors about the file begin with: the front end's name for it and its path.
std::string output_named(const RecorderOptions& o) {
  return fmt::format("{} {}", o.setting, o.path);
}

}  // namespace

Result<Choice> choose(const RecorderOptions& o, std::optional<PixelFormat> format) {
  const Container* container = find_container(o.path);
  if (!container) {
    return make_error(ErrorCode::invalid_argument,
                      "{}: unknown container extension \"{}\" (known: {}; raw frames: .yuv, .raw)",
                      output_named(o), extension_of(o.path), join(recorder_extensions()));
  }
  const bool full_chroma = format && !traits(*format).rgb && traits(*format).chroma_shift_x == 0;
  const bool own = o.encoder == kOwnProresEncoder;  // ProRes 422 only: 4:4:4 made 4:2:2
  const std::string codec_name =
      !o.codec.empty() ? o.codec
      : full_chroma && !own && std::string_view(container->default_codec).starts_with("prores")
          ? "prores_4444"
          : container->default_codec;
  const CodecChoice* codec = find_codec(codec_name);
  if (!codec) {
    return make_error(ErrorCode::invalid_argument, "{} \"{}\" unknown (known: {})", o.codec_setting,
                      codec_name, join(recorder_codecs()));
  }
  if (own) {
    if (codec->id != AV_CODEC_ID_PRORES || codec->fixed != AV_PIX_FMT_YUV422P10LE) {
      return make_error(ErrorCode::invalid_argument,
                        "{} {} encodes ProRes 422 ({} prores_proxy, prores_lt, prores or "
                        "prores_hq), not {}: use {} prores_aw or prores_ks for it",
                        o.encoder_setting, kOwnProresEncoder, o.codec_setting, codec->name,
                        o.encoder_setting);
    }
    if (std::string_view(container->muxer) != "mov") {
      return make_error(ErrorCode::invalid_argument, "{} {} writes .mov files, not {} ({})",
                        o.encoder_setting, kOwnProresEncoder, container->extension,
                        output_named(o));
    }
    return Choice{container, codec, nullptr};
  }
  // yuv4mpegpipe takes raw pictures only as wrapped AVFrames (FFmpeg 5 and later).
  const bool y4m = std::string_view(container->muxer) == "yuv4mpegpipe";
  const std::string encoder_name =
      !o.encoder.empty()
          ? o.encoder
          : (y4m && codec->id == AV_CODEC_ID_RAWVIDEO ? "wrapped_avframe" : codec->encoder);
  const AVCodec* encoder = avcodec_find_encoder_by_name(encoder_name.c_str());
  if (!encoder) {
    return make_error(ErrorCode::unsupported, "{} {}: this FFmpeg has no such encoder",
                      o.encoder_setting, encoder_name);
  }
  const bool wrapped =
      encoder->id == AV_CODEC_ID_WRAPPED_AVFRAME && codec->id == AV_CODEC_ID_RAWVIDEO;
  if (encoder->id != codec->id && !wrapped) {
    return make_error(ErrorCode::invalid_argument, "{} {} encodes {}, not {} ({} {})",
                      o.encoder_setting, encoder_name, avcodec_get_name(encoder->id),
                      avcodec_get_name(codec->id), o.codec_setting, codec->name);
  }
  const AVOutputFormat* muxer = av_guess_format(container->muxer, nullptr, nullptr);
  if (!muxer) {
    return make_error(ErrorCode::unsupported, "{}: this FFmpeg has no {} muxer", output_named(o),
                      container->muxer);
  }
  if (avformat_query_codec(muxer, encoder->id, FF_COMPLIANCE_NORMAL) != 1) {
    return make_error(ErrorCode::unsupported, "{}: the {} container cannot hold {} ({} {})",
                      output_named(o), container->muxer, avcodec_get_name(codec->id),
                      o.codec_setting, codec->name);
  }
  return Choice{container, codec, encoder};
}

const std::vector<std::string>& recorder_extensions() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& c : kContainers) v.emplace_back(c.extension);
    return v;
  }();
  return names;
}

const std::vector<std::string>& recorder_codecs() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& c : kCodecs) v.emplace_back(c.name);
    return v;
  }();
  return names;
}

Result<void> check_recorder_options(const RecorderOptions& options) {
  auto choice = choose(options);
  if (!choice) return Unexpected(choice.error());
  return {};
}

Result<void> check_recorder_format(const RecorderOptions& options,
                                   const proto::StreamStart& format) {
  auto choice = choose(options, format.pixel_format);
  if (!choice) return Unexpected(choice.error());
  const std::string who = output_named(options);
  if (format.pixel_format != PixelFormat::v210 && !to_av(format.pixel_format)) {
    return make_error(ErrorCode::unsupported,
                      "{}: StreamStart.pixel_format {} cannot be encoded (FFmpeg has no such pixel "
                      "format); send yuv422p10le",
                      who, name(format.pixel_format));
  }
  // FFmpeg's time base and frame rate are fractions of ints.
  constexpr uint32_t kMostRateTerm = std::numeric_limits<int>::max();
  if (format.frame_rate.num == 0 || format.frame_rate.den == 0 ||
      format.frame_rate.num > kMostRateTerm || format.frame_rate.den > kMostRateTerm) {
    return make_error(ErrorCode::unsupported,
                      "{}: StreamStart.frame_rate {} cannot be recorded (a recording's rate is a "
                      "fraction of two numbers from 1 to {})",
                      who, to_string(format.frame_rate), kMostRateTerm);
  }
  // A frame lasts no longer than the longest gap a file keeps: each would bring that much
  // silence to every track.
  constexpr uint64_t kMostFrameSeconds = AudioTrack::kMostGapNs / 1'000'000'000;
  if (format.frame_rate.den > kMostFrameSeconds * format.frame_rate.num) {
    return make_error(
        ErrorCode::unsupported,
        "{}: StreamStart.frame_rate {} cannot be recorded: a frame would last {:.0f} s, "
        "and a recording's frames last at most {} s",
        who, to_string(format.frame_rate),
        static_cast<double>(format.frame_rate.den) / format.frame_rate.num, kMostFrameSeconds);
  }
  if (const int rc = av_image_check_size(format.width, format.height, 0, nullptr); rc < 0) {
    return make_error(ErrorCode::unsupported,
                      "{}: StreamStart.width x height {}x{} too large for FFmpeg", who,
                      format.width, format.height);
  }
  // DNxHR's smallest picture (FFmpeg's dnxhd encoder refuses smaller ones).
  if (choice->codec->id == AV_CODEC_ID_DNXHD && (format.width < 256 || format.height < 120)) {
    return make_error(ErrorCode::unsupported,
                      "{}: StreamStart.width x height {}x{} too small for {} (at least 256x120)",
                      who, format.width, format.height, choice->codec->name);
  }
  return {};
}

namespace {

// Bytes a pixel of the stream's picture costs an encoder, beside the frames themselves: the
// growth of the receiver's peak resident memory over raw recording, at 3840x2160 NV12 with one
// thread and with two (FFmpeg 5.1), rounded up. An encoder not measured is taken to hold four
// frames and two more a thread.
struct EncoderCost {
  const char* encoder;  // FFmpeg's name; nullptr: the library's own ProRes encoder
  double fixed;         // bytes a pixel, whatever the threads
  double per_thread;    // bytes a pixel, each thread
  bool inter;           // predicts across frames: a fragment waits for the next keyframe
};
constexpr EncoderCost kEncoderCosts[] = {
    {nullptr, 16, 0, false},      // measured 14: 10-bit planes, coefficients, the packet
    {"prores_ks", 0, 10, false},  // 7 with one thread, 15.6 with two
    {"prores_aw", 0, 26, false},  // 23.5, 48.6
    {"dnxhd", 0, 60, false},      // 42.6, 112
    {"ffv1", 170, 0, false},      // 162 with one thread or two
    {"libx264", 45, 16, true},    // 55, 70
    {"libx265", 90, 12, true},    // about 100 (1920x1080)
    {"h264_nvenc", 0, 0, true},   // the GPU's memory, not the host's
    {"hevc_nvenc", 0, 0, true},
};
// libx264's and libx265's keyframe interval when none is set: a fragment holds up to this many
// frames.
constexpr uint64_t kInterKeyframeFrames = 250;
// matroska's cluster, written once it holds this much (or 5 s).
constexpr uint64_t kClusterBytes = 5ull << 20;

}  // namespace

int encoder_threads(const RecorderOptions& o) {
  return o.threads > 0 ? o.threads : std::clamp(av_cpu_count(), 1, 16);
}

Result<RecorderMemory> recorder_memory(const RecorderOptions& options,
                                       const proto::StreamStart& format) {
  auto choice = choose(options, format.pixel_format);
  if (!choice) return Unexpected(choice.error());
  const double pixels = static_cast<double>(format.width) * format.height;
  const uint64_t in_bytes = format.layout.frame_bytes;
  // The frame as the encoder takes it: the codec's fixed format, else at most the stream's
  // own or 16 bits a sample of 4:2:2 (a conversion's widest).
  uint64_t coded = std::max<uint64_t>(in_bytes, static_cast<uint64_t>(pixels * 4));
  if (choice->codec->fixed != AV_PIX_FMT_NONE) {
    const int size = av_image_get_buffer_size(choice->codec->fixed, static_cast<int>(format.width),
                                              static_cast<int>(format.height), 64);
    if (size > 0) coded = static_cast<uint64_t>(size);
  }
  const std::string_view name = choice->encoder ? choice->encoder->name : "";
  const EncoderCost* cost = nullptr;
  for (const auto& c : kEncoderCosts) {
    if (c.encoder ? name == c.encoder : !choice->encoder) cost = &c;
  }
  RecorderMemory m;
  // The project's encoder's threads (its twin's, on the CPU) hold no memory of their own
  // (per_thread 0), so a budget never takes them away.
  m.threads = encoder_threads(options);
  if (cost) {
    m.fixed = static_cast<uint64_t>(cost->fixed * pixels);
    m.per_thread = static_cast<uint64_t>(cost->per_thread * pixels);
  } else {
    m.fixed = 4 * coded;
    m.per_thread = 2 * coded;
  }
  // The frame copied out of the ring, and converted for the encoder.
  m.fixed += in_bytes + coded;
  // What a packet is: raw and lossless pictures a frame and an eighth; ProRes 422 and DNxHR HQ
  // 0.6 bytes a pixel (their nominal rates are about 0.45), ProRes 4444 0.9 (0.67); H.264 and
  // HEVC, mostly predicted frames, a tenth of a byte on average.
  const auto id = choice->codec->id;
  const uint64_t packet = id == AV_CODEC_ID_RAWVIDEO || id == AV_CODEC_ID_FFV1 ? coded + coded / 8
                          : cost && cost->inter ? static_cast<uint64_t>(pixels / 10)
                          : choice->codec->fixed == AV_PIX_FMT_YUV444P10LE
                              ? static_cast<uint64_t>(pixels * 0.9)
                              : static_cast<uint64_t>(pixels * 0.6);
  const std::string_view muxer = choice->container->muxer;
  if (choice->container->fragmented) {
    // A fragment of about a second, cut at a keyframe: every frame of an intra codec.
    const uint64_t second =
        format.frame_rate.den == 0
            ? 1
            : (format.frame_rate.num + format.frame_rate.den - 1) / format.frame_rate.den;
    const uint64_t frames =
        1 + (cost && cost->inter ? std::max(second, kInterKeyframeFrames) : second);
    m.fixed += frames * packet;
  } else if (muxer == "matroska") {
    m.fixed += kClusterBytes + packet;
  } else {
    m.fixed += packet;
  }
  return m;
}

bool recorder_holds_audio(const std::string& path) {
  const Container* container = find_container(path);
  return container && std::string_view(container->muxer) != "yuv4mpegpipe";
}

Result<void> check_recorder_audio(const RecorderOptions& options, const proto::AudioStart& format) {
  auto choice = choose(options);
  if (!choice) return Unexpected(choice.error());
  if (std::string_view(choice->container->muxer) == "yuv4mpegpipe")
    return {};  // holds none: dropped
  auto codec = AudioTrack::encoder_for(choice->container->muxer, format);
  if (!codec) return Unexpected(codec.error().context(output_named(options)));
  return {};
}

}  // namespace rdmavideo::av
