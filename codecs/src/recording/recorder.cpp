// SPDX-License-Identifier: Apache-2.0
// The recorder: a stream's frames made into pictures for its video encoder (video_encoder.hpp:
// FFmpeg's, NVENC from GPU memory, or the project's ProRes) and muxed with its audio tracks.
// What it is made of is chosen in recorder_choice.cpp; its state is recorder_impl.hpp.
#include "recorder_impl.hpp"

extern "C" {
#include <libavutil/imgutils.h>
#include <libavutil/pixdesc.h>
}

#include <algorithm>
#include <cstring>
#include <limits>

#include "rdmavideo/convert.hpp"
#include "rdmavideo/log.hpp"
#include "rdmavideo/output_file.hpp"
#include "recorder_choice.hpp"
#include "ten_bit.hpp"
#include "timecode.hpp"

namespace rdmavideo::av {

Recorder::Recorder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Recorder::~Recorder() {
  if (impl_ && !impl_->finished) {
    if (auto ok = finish(); !ok) log().warn("{}", ok.error().message());
  }
}

Result<std::unique_ptr<Recorder>> Recorder::open(const RecorderOptions& options,
                                                 const proto::StreamStart& format) {
  auto choice = choose(options, format.pixel_format);
  if (!choice) return Unexpected(choice.error());
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->format = format;
  impl->who = fmt::format("record {}", options.path);
  const std::string& who = impl->who;
  if (auto ok = check_recorder_format(options, format); !ok) return Unexpected(ok.error());
  // v210 has no FFmpeg pixel format: it is unpacked to yuv422p10le (the same samples) first.
  const auto input_format = format.pixel_format == PixelFormat::v210
                                ? std::optional<AVPixelFormat>(AV_PIX_FMT_YUV422P10LE)
                                : to_av(format.pixel_format);
  if (!input_format) {
    return make_error(ErrorCode::unsupported,
                      "{}: stream pixel format {} cannot be encoded (FFmpeg has no {} pixel "
                      "format); send yuv422p10le",
                      who, name(format.pixel_format), name(format.pixel_format));
  }
  if (format.frame_rate.num == 0 || format.frame_rate.den == 0) {
    return make_error(ErrorCode::invalid_argument, "{}: StreamStart.frame_rate {} is not a rate",
                      who, to_string(format.frame_rate));
  }
  impl->input_format = *input_format;

  AVFormatContext* raw = nullptr;
  if (const int rc = avformat_alloc_output_context2(&raw, nullptr, choice->container->muxer,
                                                    options.path.c_str());
      rc < 0 || !raw) {
    return Unexpected(
        av_error(who, "avformat_alloc_output_context2", rc < 0 ? rc : AVERROR(ENOMEM)));
  }
  impl->output.reset(raw);
  auto video = open_video_encoder(*choice, options, format, *input_format,
                                  (raw->oformat->flags & AVFMT_GLOBALHEADER) != 0, who);
  if (!video) return Unexpected(video.error());
  impl->video = std::move(*video);
  impl->video_out = [s = impl.get()](AVPacket& p) { return s->write_video(p); };
  // Raw video keeps the words as they came; v210 unpacks to 10-bit values only.
  impl->mask_to_10_bits =
      (*input_format == AV_PIX_FMT_YUV422P10LE || *input_format == AV_PIX_FMT_YUV444P10LE) &&
      impl->encode_format() == *input_format && format.pixel_format != PixelFormat::v210 &&
      !impl->video->stores_raw();
  if (auto ok = impl->open_file(*choice->container); !ok) return Unexpected(ok.error());
  if (auto ok = impl->make_pictures(); !ok) return Unexpected(ok.error());
  impl->description = impl->video->describe(choice->container->muxer);
  for (const auto& track : impl->audio) impl->description += ", audio " + track->describe();
  return std::unique_ptr<Recorder>(new Recorder(std::move(impl)));
}

// The file: the picture's stream as the encoder describes it, the audio tracks, the output
// opened, its metadata and header written.
Result<void> Recorder::Impl::open_file(const Container& container) {
  AVFormatContext* raw = output.get();
  const AVCodecContext& enc = video->context();
  stream = avformat_new_stream(raw, nullptr);
  if (!stream) return make_error(ErrorCode::resource, "{}: avformat_new_stream failed", who);
  if (const int rc = avcodec_parameters_from_context(stream->codecpar, &enc); rc < 0) {
    return Unexpected(av_error(who, "avcodec_parameters_from_context", rc));
  }
  if (std::string_view(container.muxer) != "mov") stream->codecpar->codec_tag = 0;
  if (const uint32_t tag = video->codec_tag()) stream->codecpar->codec_tag = tag;
  if (recorder_holds_audio(options.path)) {
    for (size_t i = 0; i < options.audio.size(); ++i) {
      auto track = AudioTrack::open(raw, container.muxer, options.audio[i],
                                    fmt::format("{} audio {}", who, i));
      if (!track) return Unexpected(track.error());
      audio.push_back(std::move(*track));
    }
    // A track that lags never holds more than about a second of picture in the muxer.
    raw->max_interleave_delta = 1'000'000;
  }
  stream->time_base = enc.time_base;
  stream->avg_frame_rate = enc.framerate;
  stream->r_frame_rate = enc.framerate;

  if (!(raw->oformat->flags & AVFMT_NOFILE)) {
    // A write(2) per MiB: ProRes frames are larger.
    if (auto ok =
            muxer_out.open(options.path, options.abort_fd, raw, who, 1 << 20, options.setting);
        !ok)
      return ok;
  }
  if (options.start_wall_ns) {
    // When the first frame was sent, so files of several cameras can be lined up.
    av_dict_set(&raw->metadata, "creation_time", iso8601_utc(*options.start_wall_ns).c_str(), 0);
    if (auto tc = time_of_day_timecode(*options.start_wall_ns, format.frame_rate, who)) {
      av_dict_set(&stream->metadata, "timecode", tc->c_str(), 0);
    }
  }
  AVDictionary* raw_opts = nullptr;
  std::unique_ptr<AVDictionary*, void (*)(AVDictionary**)> opts(&raw_opts, av_dict_free);
  if (container.fragmented) {
    // Every ProRes frame is a keyframe, so cut on time (about 1 s), not on keyframes.
    // MP4 (H.264 with B-frames, AAC with its priming) holds back its moov until the first
    // fragment, so the edit lists that line the tracks up can be written; mov (intra-only
    // pictures, PCM) needs none and writes it at once.
    av_dict_set(&raw_opts, "movflags",
                std::string_view(container.muxer) == "mp4" ? "+delay_moov+default_base_moof"
                                                           : "+empty_moov+default_base_moof",
                0);
    av_dict_set(&raw_opts, "frag_duration", "1000000", 0);
  }
  if (const int rc = avformat_write_header(raw, &raw_opts); rc < 0) {
    return Unexpected(muxer_out.error_or(av_error(who, "avformat_write_header", rc)));
  }
  return {};
}

// The pictures host frames are made into for the encoder: a pool of its format's size.
Result<void> Recorder::Impl::make_pictures() {
  const AVCodecContext& enc = video->context();
  const int bytes = av_image_get_buffer_size(encode_format(), enc.width, enc.height, 64);
  if (bytes < 0) return Unexpected(av_error(who, "av_image_get_buffer_size", bytes));
  buffer_bytes = bytes;
  pool.reset(av_buffer_pool_init(static_cast<size_t>(bytes) + 64, av_buffer_alloc));
  if (!pool) return make_error(ErrorCode::resource, "{}: av_buffer_pool_init failed", who);
  auto made = make_frame(who);
  if (!made) return Unexpected(made.error());
  frame = std::move(*made);
  return {};
}

Result<void> Recorder::write(std::span<const std::byte> data, int64_t pts_ns) {
  Impl& s = *impl_;
  if (s.finished) return make_error(ErrorCode::invalid_argument, "{}: write after finish", s.who);
  const auto began = Clock::now();
  if (data.size() < s.format.layout.frame_bytes) {
    return make_error(ErrorCode::invalid_argument, "{}: frame of {} bytes, StreamStart says {}",
                      s.who, data.size(), s.format.layout.frame_bytes);
  }
  AVFrame* frame = s.frame.get();
  av_frame_unref(frame);
  frame->buf[0] = av_buffer_pool_get(s.pool.get());
  if (!frame->buf[0])
    return make_error(ErrorCode::resource, "{}: av_buffer_pool_get failed", s.who);
  frame->format = s.encode_format();
  frame->width = static_cast<int>(s.format.width);
  frame->height = static_cast<int>(s.format.height);
  if (const int rc = av_image_fill_arrays(frame->data, frame->linesize, frame->buf[0]->data,
                                          s.encode_format(), frame->width, frame->height, 64);
      rc < 0) {
    return Unexpected(av_error(s.who, "av_image_fill_arrays", rc));
  }
  const uint8_t* src[4] = {};
  int src_linesize[4] = {};
  if (s.format.pixel_format == PixelFormat::v210) {
    const uint32_t w = s.format.width, h = s.format.height, cw = (w + 1) / 2;
    s.v210_planes.resize(size_t{w} * h + 2 * size_t{cw} * h);
    uint16_t* y = s.v210_planes.data();
    uint16_t* u = y + size_t{w} * h;
    uint16_t* v = u + size_t{cw} * h;
    unpack_v210(data.data() + s.format.layout.planes[0].offset, s.format.layout.planes[0].stride, w,
                h, y, u, v);
    src[0] = reinterpret_cast<const uint8_t*>(y);
    src[1] = reinterpret_cast<const uint8_t*>(u);
    src[2] = reinterpret_cast<const uint8_t*>(v);
    src_linesize[0] = static_cast<int>(w * 2);
    src_linesize[1] = src_linesize[2] = static_cast<int>(cw * 2);
  } else {
    for (int p = 0; p < s.format.layout.plane_count; ++p) {
      src[p] = reinterpret_cast<const uint8_t*>(data.data()) + s.format.layout.planes[p].offset;
      src_linesize[p] = static_cast<int>(s.format.layout.planes[p].stride);
    }
  }
  if (s.encode_format() == s.input_format) {
    av_image_copy(frame->data, frame->linesize, src, src_linesize, s.input_format, frame->width,
                  frame->height);
    if (s.mask_to_10_bits) s.mask(frame);
  } else {
    s.sws.reset(sws_getCachedContext(s.sws.release(), frame->width, frame->height, s.input_format,
                                     frame->width, frame->height, s.encode_format(),
                                     SWS_BICUBIC | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT, nullptr,
                                     nullptr, nullptr));
    if (!s.sws) {
      return make_error(ErrorCode::unsupported, "{}: sws_getCachedContext({} -> {}) failed", s.who,
                        av_name(s.input_format), av_name(s.encode_format()));
    }
    // In the stream's matrix and range, and out in the encoder's (the same, or for RGB into
    // YUV the ones set at open), not libswscale's BT.601 limited.
    const AVCodecContext* enc = &s.video->context();
    const bool in_full =
        s.format.colour.range == colour::kFull || traits(s.format.pixel_format).rgb;
    const bool out_full = enc->color_range == AVCOL_RANGE_JPEG;
    sws_setColorspaceDetails(
        s.sws.get(), sws_getCoefficients(sws_matrix(s.format.colour.matrix, s.format.height)),
        in_full ? 1 : 0,
        sws_getCoefficients(sws_matrix(static_cast<uint8_t>(enc->colorspace), s.format.height)),
        out_full ? 1 : 0, 0, 1 << 16, 1 << 16);
    scale_within(s.sws.get(), s.input_format, frame->width, frame->height, src, src_linesize,
                 frame->data, frame->linesize, s.padded);
  }
  return s.encode(pts_ns, began);
}

bool Recorder::takes_gpu_frames() const { return impl_->video->takes_gpu_frames(); }

Result<void> Recorder::write(FrameLease lease) {
  Impl& s = *impl_;
  if (s.finished) return make_error(ErrorCode::invalid_argument, "{}: write after finish", s.who);
  if (lease.memory_kind() == memory::MemoryKind::cuda) {
    if (s.video->takes_gpu_frames()) return s.encode_gpu_frame(std::move(lease));
    auto host = std::move(lease).to_host();
    if (!host) return Unexpected(host.error().context(s.who));
    return write(std::move(*host));
  }
  if (!s.can_wrap(lease)) return write(lease.data(), lease.info().pts_ns);
  const auto began = Clock::now();
  const int64_t pts_ns = lease.info().pts_ns;
  AVFrame* frame = s.frame.get();
  av_frame_unref(frame);
  frame->format = s.encode_format();
  frame->width = static_cast<int>(s.format.width);
  frame->height = static_cast<int>(s.format.height);
  std::byte* base = lease.mutable_data().data();
  for (int p = 0; p < s.format.layout.plane_count; ++p) {
    frame->data[p] = reinterpret_cast<uint8_t*>(base + s.format.layout.planes[p].offset);
    frame->linesize[p] = static_cast<int>(s.format.layout.planes[p].stride);
  }
  // The frame is the ring slot itself: the encoder reads it there (its threads may hold it
  // after this returns) and the slot's credit goes back when the encoder lets it go.
  const size_t bytes = lease.data().size();
  auto* held = new FrameLease(std::move(lease));
  frame->buf[0] = av_buffer_create(
      reinterpret_cast<uint8_t*>(base), bytes,
      [](void* opaque, uint8_t*) { delete static_cast<FrameLease*>(opaque); }, held, 0);
  if (!frame->buf[0]) {
    delete held;
    return make_error(ErrorCode::resource, "{}: av_buffer_create failed", s.who);
  }
  if (s.mask_to_10_bits) s.mask(frame);
  return s.encode(pts_ns, began);
}

Result<void> Recorder::finish() {
  Impl& s = *impl_;
  if (s.finished) {
    if (s.finish_error) return Unexpected(*s.finish_error);
    return {};
  }
  s.finished = true;
  if (s.frames_masked > 0) {
    log().warn("[{}] {} of {} frames had yuv422p10le samples above 1023, masked to 10 bits", s.who,
               s.frames_masked, s.frames);
  }
  std::optional<Error> error;
  if (auto ok = s.video->flush(s.video_out); !ok) error = ok.error();
  // Every audio track as long as the picture, then its encoder drained.
  for (auto& track : s.audio) {
    if (error) break;
    if (auto ok = track->finish(s.video_end_ns(), s.write_audio_packet()); !ok) error = ok.error();
  }
  // The trailer even after an encoder error: the frames already written stay readable.
  if (const int rc = av_write_trailer(s.output.get()); rc < 0 && !error) {
    error = s.muxer_out.error_or(av_error(s.who, "av_write_trailer", rc));
  }
  // fsync: the recording is on disk when the receiver says it is finalised.
  if (auto closed = s.muxer_out.close(s.who); closed && !error) error = closed;
  s.finish_error = error;
  if (error) return Unexpected(*error);
  return {};
}

Result<void> Recorder::write_audio(uint32_t track, int64_t pts_ns, uint32_t samples,
                                   std::span<const std::byte> data) {
  Impl& s = *impl_;
  if (s.finished) return make_error(ErrorCode::invalid_argument, "{}: audio after finish", s.who);
  if (track >= s.audio.size()) {
    return make_error(ErrorCode::invalid_argument, "{}: audio track {} not opened", s.who, track);
  }
  const auto since_origin = s.timeline ? s.timeline->audio_ns(pts_ns) : std::nullopt;
  if (!since_origin)
    return make_error(ErrorCode::invalid_argument, "{}: audio before the first frame", s.who);
  return s.audio[track]->write(*since_origin, samples, data, s.video_end_ns(),
                               s.write_audio_packet());
}

void Recorder::end_audio(uint32_t track) {
  if (track < impl_->audio.size()) impl_->audio[track]->end();
}

std::vector<RecordedAudio> Recorder::audio() const {
  std::vector<RecordedAudio> out;
  for (size_t i = 0; i < impl_->audio.size(); ++i) {
    const auto& st = impl_->audio[i]->stats();
    out.push_back({impl_->options.audio[i].name, st.samples, st.written, st.silence, st.trimmed,
                   impl_->options.audio[i].sample_rate});
  }
  return out;
}

uint64_t Recorder::frames_written() const { return impl_->frames; }
double Recorder::speed() const { return impl_->last_speed.load(std::memory_order_relaxed); }
double Recorder::gpu_ms() const { return impl_->last_gpu_ms.load(std::memory_order_relaxed); }
std::string Recorder::describe() const { return impl_->description; }
const std::string& Recorder::path() const { return impl_->options.path; }

}  // namespace rdmavideo::av
