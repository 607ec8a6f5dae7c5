// SPDX-License-Identifier: Apache-2.0
// rdmavideo-prores-encoders: the library's ProRes 422 HQ encoder (on the GPU where there is
// one, and its CPU twin on one thread and on every core) next to FFmpeg's prores_aw and
// prores_ks (every core, frame threads), on the same 10-bit 4:2:2 pictures, in one run and one
// table: frames a second, CPU milliseconds a frame, the frames' mean size and their PSNR against
// the source (luma, decoded with FFmpeg's ProRes decoder). The GPU encoder reads a picture already
// in GPU memory, as a --memory cuda ring holds it; its row also gives the time an encode takes.
//
//   rdmavideo-prores-encoders [--sizes 1920x1080,3840x2160] [--frames N] [--streams N] [--no-gpu]
//
// The GPU's rows: one encoder with one frame at a time (an encode's latency), then with three
// frames in flight (each on its own CUDA stream, as the recorder runs it), then --streams N
// encoders at once, each on its own thread (default 8 at 1080p and below, 2 above: the
// recording machine's target).
//
// The source is FFmpeg's testsrc2 (a moving test card) at each size, made by libavfilter.
// Where there is a GPU, rows of their own then give where one encoder's frame spends its time,
// pass by pass (each waited for and timed from the host, as a profiler would show them).
// scripts/gpu-check.sh runs it on a GPU machine; bench/README.md has a run.
extern "C" {
#include <libavcodec/avcodec.h>
#include <libavfilter/avfilter.h>
#include <libavfilter/buffersink.h>
#include <libavutil/opt.h>
}
#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "rdmavideo/cuda.hpp"
#include "rdmavideo/prores.hpp"

namespace {

using namespace rdmavideo;
using Clock = std::chrono::steady_clock;
constexpr unsigned kInFlight = 3;  // as the recorder runs it (kGpuFramesInFlight)

struct Picture {
  uint32_t width = 0, height = 0;
  std::vector<uint16_t> y, cb, cr;
  prores::Planes422 planes() const {
    return {y.data(), cb.data(), cr.data(), width, (width + 1) / 2};
  }
};

// One frame of testsrc2 as 10-bit 4:2:2, made by libavfilter in this process (a GPU machine
// may have FFmpeg's libraries without its programs). An empty picture where it cannot.
Picture testsrc2(uint32_t width, uint32_t height) {
  Picture p{width, height, {}, {}, {}};
  const std::string description = "testsrc2=s=" + std::to_string(width) + "x" +
                                  std::to_string(height) + ",format=yuv422p10le,buffersink@out";
  AVFilterGraph* graph = avfilter_graph_alloc();
  AVFilterInOut* inputs = nullptr;
  AVFilterInOut* outputs = nullptr;
  AVFrame* frame = av_frame_alloc();
  AVFilterContext* sink = nullptr;
  if (graph && frame && avfilter_graph_parse2(graph, description.c_str(), &inputs, &outputs) >= 0 &&
      avfilter_graph_config(graph, nullptr) >= 0 &&
      (sink = avfilter_graph_get_filter(graph, "buffersink@out")) != nullptr &&
      av_buffersink_get_frame(sink, frame) >= 0) {
    const size_t cw = (width + 1) / 2;
    auto plane = [&](int index, size_t columns, std::vector<uint16_t>& to) {
      to.resize(columns * height);
      for (uint32_t r = 0; r < height; ++r) {
        std::memcpy(to.data() + r * columns, frame->data[index] + r * frame->linesize[index],
                    columns * 2);
      }
    };
    plane(0, width, p.y);
    plane(1, cw, p.cb);
    plane(2, cw, p.cr);
  }
  av_frame_free(&frame);
  avfilter_inout_free(&inputs);
  avfilter_inout_free(&outputs);
  avfilter_graph_free(&graph);
  return p;
}

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

double luma_psnr(const Picture& p, const uint8_t* frame, size_t bytes) {
  const AVCodec* codec = avcodec_find_decoder(AV_CODEC_ID_PRORES);
  AVCodecContext* ctx = avcodec_alloc_context3(codec);
  ctx->codec_tag = MKTAG('a', 'p', 'c', 'h');
  ctx->width = int(p.width);
  ctx->height = int(p.height);
  AVPacket* packet = av_packet_alloc();
  AVFrame* out = av_frame_alloc();
  double psnr = 0;
  if (avcodec_open2(ctx, codec, nullptr) == 0 && av_new_packet(packet, int(bytes)) == 0) {
    std::memcpy(packet->data, frame, bytes);
    if (avcodec_send_packet(ctx, packet) == 0 && avcodec_receive_frame(ctx, out) == 0) {
      double se = 0;
      for (uint32_t r = 0; r < p.height; ++r) {
        const auto* row = reinterpret_cast<const uint16_t*>(out->data[0] + r * out->linesize[0]);
        for (uint32_t c = 0; c < p.width; ++c) {
          const double d = double(row[c]) - p.y[r * p.width + c];
          se += d * d;
        }
      }
      const double mse = se / (double(p.width) * p.height);
      psnr = mse == 0 ? 99 : 10 * std::log10(1023.0 * 1023.0 / mse);
    }
  }
  av_frame_free(&out);
  av_packet_free(&packet);
  avcodec_free_context(&ctx);
  return psnr;
}

struct Row {
  std::string encoder;
  double fps = 0, cpu_ms = 0, mean_bytes = 0, psnr = 0, encode_ms = 0;
  std::string note;
};

Row run_ffmpeg(const char* name, const Picture& p, int frames) {
  Row row;
  row.encoder = name;
  const AVCodec* codec = avcodec_find_encoder_by_name(name);
  AVCodecContext* ctx = avcodec_alloc_context3(codec);
  ctx->width = int(p.width);
  ctx->height = int(p.height);
  ctx->pix_fmt = AV_PIX_FMT_YUV422P10LE;
  ctx->time_base = {1, 60};
  ctx->thread_count = 0;  // every core
  ctx->profile = 3;       // HQ
  AVFrame* in = av_frame_alloc();
  AVPacket* packet = av_packet_alloc();
  in->width = ctx->width;
  in->height = ctx->height;
  in->format = ctx->pix_fmt;
  if (avcodec_open2(ctx, codec, nullptr) != 0 || av_frame_get_buffer(in, 0) != 0) {
    row.note = "could not be opened";
    return row;
  }
  const uint32_t cw = (p.width + 1) / 2;
  for (uint32_t r = 0; r < p.height; ++r) {
    std::memcpy(in->data[0] + r * in->linesize[0], &p.y[r * p.width], p.width * 2);
    std::memcpy(in->data[1] + r * in->linesize[1], &p.cb[r * cw], cw * 2);
    std::memcpy(in->data[2] + r * in->linesize[2], &p.cr[r * cw], cw * 2);
  }
  std::vector<uint8_t> last;
  size_t bytes = 0;
  int received = 0;
  const double cpu0 = cpu_seconds();
  const auto t0 = Clock::now();
  auto drain = [&] {
    while (avcodec_receive_packet(ctx, packet) == 0) {
      bytes += size_t(packet->size);
      last.assign(packet->data, packet->data + packet->size);
      ++received;
      av_packet_unref(packet);
    }
  };
  for (int i = 0; i < frames; ++i) {
    in->pts = i;
    avcodec_send_frame(ctx, in);
    drain();
  }
  avcodec_send_frame(ctx, nullptr);
  drain();
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  row.fps = received / wall;
  row.cpu_ms = 1000 * (cpu_seconds() - cpu0) / std::max(1, received);
  row.mean_bytes = double(bytes) / std::max(1, received);
  row.psnr = luma_psnr(p, last.data(), last.size());
  av_packet_free(&packet);
  av_frame_free(&in);
  avcodec_free_context(&ctx);
  return row;
}

Row run_cpu_twin(const Picture& p, int frames, unsigned threads) {
  Row row;
  row.encoder = "rdmavideo ProRes, CPU twin (" + std::to_string(threads) +
                (threads == 1 ? " thread)" : " threads)");
  auto encoder = prores::Encoder::create({p.width, p.height, prores::Profile::hq}, threads);
  std::vector<uint8_t> out(encoder->max_frame_bytes());
  size_t bytes = 0, last = 0;
  const double cpu0 = cpu_seconds();
  const auto t0 = Clock::now();
  for (int i = 0; i < frames; ++i) {
    auto size = encoder->encode(p.planes(), out);
    if (!size) {
      row.note = size.error().message();
      return row;
    }
    bytes += *size;
    last = *size;
  }
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  row.fps = frames / wall;
  row.cpu_ms = 1000 * (cpu_seconds() - cpu0) / frames;
  row.mean_bytes = double(bytes) / frames;
  row.psnr = luma_psnr(p, out.data(), last);
  return row;
}

// The picture in GPU memory (its planes kept in `memory`), as a --memory cuda ring holds it.
std::optional<prores::DevicePicture> on_gpu(cuda::Device& device, const Picture& p,
                                            std::vector<std::shared_ptr<cuda::DevicePtr>>& memory) {
  prores::DevicePicture picture{{}, p.width, p.height};
  const std::vector<uint16_t>* planes[3] = {&p.y, &p.cb, &p.cr};
  for (int i = 0; i < 3; ++i) {
    auto at = device.allocate(planes[i]->size() * 2);
    if (!at || !device.upload(**at, std::as_bytes(std::span(*planes[i])))) return std::nullopt;
    memory.push_back(*at);
    picture.planes.at[i] = **at;
    picture.planes.pitch[i] = (i == 0 ? p.width : (p.width + 1) / 2) * 2;
  }
  return picture;
}

// `streams` encoders on their own threads at once, as a recording machine runs one a stream,
// each with `in_flight` frames queued (each on its own CUDA stream): frames a second and CPU
// time a frame over all of them. With one frame in flight, "encode ms" is an encode's latency.
Row run_gpu(const Picture& p, int frames, int streams, unsigned in_flight) {
  Row row;
  row.encoder = "rdmavideo ProRes, GPU" +
                (streams > 1 ? ", " + std::to_string(streams) + " streams" : std::string()) + ", " +
                std::to_string(in_flight) + " in flight";
  auto device = cuda::Device::shared(0);
  if (!device) {
    row.note = "no GPU: " + device.error().message();
    return row;
  }
  std::vector<std::unique_ptr<prores::GpuEncoder>> encoders;
  for (int s = 0; s < streams; ++s) {
    auto encoder =
        prores::GpuEncoder::create(*device, {p.width, p.height, prores::Profile::hq}, in_flight);
    if (!encoder) {
      row.note = encoder.error().message();
      return row;
    }
    encoders.push_back(std::move(*encoder));
  }
  std::vector<std::shared_ptr<cuda::DevicePtr>> memory;
  const auto picture = on_gpu(**device, p, memory);
  if (!picture) {
    row.note = "could not put the picture in GPU memory";
    return row;
  }
  struct Run {
    std::vector<uint8_t> out;
    size_t bytes = 0, last = 0;
    double encode_ms = 0;
    std::string error;
  };
  std::vector<Run> runs(encoders.size());
  const double cpu0 = cpu_seconds();
  const auto t0 = Clock::now();
  std::vector<std::thread> threads;
  for (size_t s = 0; s < encoders.size(); ++s) {
    threads.emplace_back([&, s] {
      Run& r = runs[s];
      r.out.resize(encoders[s]->max_frame_bytes());
      prores::GpuEncoder& e = *encoders[s];
      const auto collect = [&] {
        auto size = e.collect(r.out);
        if (!size) {
          r.error = size.error().message();
          return false;
        }
        r.bytes += *size;
        r.last = *size;
        r.encode_ms += e.last_encode_ms();
        return true;
      };
      for (int i = 0; i < frames; ++i) {
        if (auto ok = e.submit(*picture); !ok) {
          r.error = ok.error().message();
          return;
        }
        if (e.queued() == e.frames_in_flight() && !collect()) return;
      }
      while (e.queued() > 0) {
        if (!collect()) return;
      }
    });
  }
  for (auto& t : threads) t.join();
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  const double total = double(frames) * double(streams);
  for (const Run& r : runs) {
    if (!r.error.empty()) {
      row.note = r.error;
      return row;
    }
    row.mean_bytes += double(r.bytes) / total;
    row.encode_ms += r.encode_ms / total;
  }
  row.fps = total / wall;
  row.cpu_ms = 1000 * (cpu_seconds() - cpu0) / total;
  row.psnr = luma_psnr(p, runs[0].out.data(), runs[0].last);
  row.note = (*device)->describe();
  return row;
}

// Where one encoder's frame spends its time on the GPU: each pass waited for and timed
// (GpuEncoder::time_passes), the mean of `frames` frames; printed as rows of their own.
void print_pass_times(const Picture& p, int frames, const std::string& picture) {
  auto device = cuda::Device::shared(0);
  if (!device) return;
  auto encoder = prores::GpuEncoder::create(*device, {p.width, p.height, prores::Profile::hq});
  if (!encoder) return;
  prores::GpuEncoder& e = **encoder;
  std::vector<std::shared_ptr<cuda::DevicePtr>> memory;
  const auto at = on_gpu(**device, p, memory);
  if (!at) return;
  e.time_passes(true);
  std::vector<uint8_t> out(e.max_frame_bytes());
  std::vector<std::pair<std::string, double>> sums;
  for (int f = 0; f < frames; ++f) {
    if (!e.encode(*at, out)) return;
    const auto times = e.last_pass_times();
    for (size_t i = 0; i < times.size(); ++i) {
      if (sums.size() <= i) sums.emplace_back(std::string(times[i].pass), 0.0);
      sums[i].second += times[i].ms;
    }
  }
  double total = 0;
  for (const auto& [pass, ms] : sums) {
    std::printf("%-12s   pass: %-37s %8.3f ms a frame\n", picture.c_str(), pass.c_str(),
                ms / frames);
    total += ms / frames;
  }
  std::printf("%-12s   pass: %-37s %8.3f ms a frame (each pass waited for)\n", picture.c_str(),
              "all", total);
}

}  // namespace

int main(int argc, char** argv) {
  std::string sizes = "1920x1080,3840x2160";
  int frames = 30;
  int streams = 0;  // 0: 8 at 1080p and below, 2 above (the recording machine's target)
  bool gpu = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--sizes" && i + 1 < argc) {
      sizes = argv[++i];
    } else if (a == "--frames" && i + 1 < argc) {
      frames = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--streams" && i + 1 < argc) {
      streams = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--no-gpu") {
      gpu = false;
    } else {
      std::fprintf(stderr,
                   "usage: rdmavideo-prores-encoders [--sizes WxH,...] [--frames N] "
                   "[--streams N] [--no-gpu]\n");
      return 2;
    }
  }
  av_log_set_level(AV_LOG_ERROR);
  std::printf("%-12s %-46s %8s %12s %12s %9s %10s  %s\n", "picture", "encoder (ProRes 422 HQ)",
              "fps", "CPU ms/frame", "bytes/frame", "PSNR Y", "encode ms", "");
  for (size_t at = 0; at < sizes.size();) {
    size_t comma = sizes.find(',', at);
    if (comma == std::string::npos) comma = sizes.size();
    uint32_t w = 0, h = 0;
    std::sscanf(sizes.substr(at, comma - at).c_str(), "%ux%u", &w, &h);
    at = comma + 1;
    const Picture p = testsrc2(w, h);
    if (p.y.empty()) {
      std::fprintf(stderr,
                   "rdmavideo-prores-encoders: libavfilter's testsrc2 made no %ux%u picture\n", w,
                   h);
      return 1;
    }
    std::vector<Row> rows;
    if (gpu) {
      // One encoder a frame at a time (its latency), then with frames in flight, then as many
      // as the recording machine runs.
      rows.push_back(run_gpu(p, frames, 1, 1));
      const int at_once = streams > 0 ? streams : (size_t{w} * h <= 1920 * 1080 ? 8 : 2);
      if (rows.back().fps > 0) {
        rows.push_back(run_gpu(p, frames, 1, kInFlight));
        if (at_once > 1) rows.push_back(run_gpu(p, frames, at_once, kInFlight));
      }
    }
    rows.push_back(run_cpu_twin(p, std::max(1, frames / 3), 1));
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    if (cores > 1) rows.push_back(run_cpu_twin(p, std::max(1, frames / 3), cores));
    rows.push_back(run_ffmpeg("prores_aw", p, frames));
    rows.push_back(run_ffmpeg("prores_ks", p, frames));
    const std::string picture = std::to_string(w) + "x" + std::to_string(h);
    for (const Row& r : rows) {
      if (r.fps == 0) {
        std::printf("%-12s %-46s %s\n", picture.c_str(), r.encoder.c_str(), r.note.c_str());
        continue;
      }
      std::printf("%-12s %-46s %8.1f %12.2f %12.0f %9.2f %10s  %s\n", picture.c_str(),
                  r.encoder.c_str(), r.fps, r.cpu_ms, r.mean_bytes, r.psnr,
                  r.encode_ms > 0 ? std::to_string(r.encode_ms).substr(0, 6).c_str() : "-",
                  r.note.c_str());
    }
    if (gpu && rows.front().fps > 0) print_pass_times(p, frames, picture);
  }
  return 0;
}
