/* SPDX-License-Identifier: Apache-2.0 */
/* rdmavideo's C API, sending: a moving picture (RGBA, drawn straight into the buffers the
 * sender lends, so nothing is copied) with a 1 kHz tone beside it, as fast as the receiver
 * takes it.
 *
 *   rdmavideo-example-sender [-n FRAMES] [-s WIDTHxHEIGHT] [-c CHECKSUMS] [-1] HOST:PORT
 *
 * FRAMES defaults to 300, the size to 1280x720; CHECKSUMS, a file, gets "SEQUENCE FNV1A64" for
 * every frame sent (the receiver example writes the same of what it got). -1 draws each pool
 * buffer once, at its first use, and sends what it holds from then on (the picture then cycles
 * through the pool's frames), so that what is measured is the sending, not the drawing.
 *
 * Build against the installed SDK with CMake (find_package(rdmavideo), see CMakeLists.txt) or
 *   cc -std=c99 sender.c $(pkg-config --cflags --libs rdmavideo) -lm -o sender */
#define _POSIX_C_SOURCE 200809L /* getopt */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdmavideo/rdmavideo.h>

#define RATE_NUM 60
#define SAMPLE_RATE 48000

static int fail(const char* what, rdmavideo_status status) {
  fprintf(stderr, "%s: %s (%s)\n", what, rdmavideo_last_error(), rdmavideo_status_name(status));
  return 1;
}

/* Frame n: colour gradients drifting right and down, and a white bar sweeping across. */
static void draw(uint8_t* pixels, uint32_t stride, uint32_t width, uint32_t height, uint64_t n) {
  const uint32_t bar = (uint32_t)((n * 8) % width);
  for (uint32_t y = 0; y < height; ++y) {
    uint8_t* row = pixels + (size_t)y * stride;
    for (uint32_t x = 0; x < width; ++x) {
      uint8_t* p = row + (size_t)x * 4;
      const int on_bar = x >= bar && x < bar + 16;
      p[0] = on_bar ? 255 : (uint8_t)(x + n * 4);
      p[1] = on_bar ? 255 : (uint8_t)(y + n * 2);
      p[2] = on_bar ? 255 : (uint8_t)((x ^ y) + n);
      p[3] = 255;
    }
  }
}

static uint64_t fnv1a64(const uint8_t* data, uint64_t size) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint64_t i = 0; i < size; ++i) h = (h ^ data[i]) * 0x100000001b3ull;
  return h;
}

int main(int argc, char** argv) {
  uint64_t frames = 300;
  unsigned width = 1280, height = 720;
  const char* checksums_path = NULL;
  int draw_once = 0;
  for (int opt; (opt = getopt(argc, argv, "n:s:c:1")) != -1;) {
    if (opt == 'n') {
      frames = strtoull(optarg, NULL, 10);
    } else if (opt == 's') {
      if (sscanf(optarg, "%ux%u", &width, &height) != 2) {
        fprintf(stderr, "size \"%s\" is not WIDTHxHEIGHT\n", optarg);
        return 2;
      }
    } else if (opt == 'c') {
      checksums_path = optarg;
    } else if (opt == '1') {
      draw_once = 1;
    } else {
      optind = argc + 1;
      break;
    }
  }
  if (optind != argc - 1) {
    fprintf(stderr, "usage: %s [-n FRAMES] [-s WIDTHxHEIGHT] [-c CHECKSUMS] [-1] HOST:PORT\n",
            argv[0]);
    return 2;
  }
  FILE* checksums = NULL;
  if (checksums_path && !(checksums = fopen(checksums_path, "w"))) {
    perror(checksums_path);
    return 1;
  }

  rdmavideo_sender_config config;
  rdmavideo_sender_config_init(&config);
  config.destinations = argv[optind];
  config.name = "c example";
  config.checksum = 1; /* the receiver can check every frame */
  rdmavideo_sender* sender = NULL;
  rdmavideo_status status = rdmavideo_sender_create(&config, &sender);
  if (status != RDMAVIDEO_OK) return fail("connect", status);

  rdmavideo_audio_format tone;
  rdmavideo_audio_format_init(&tone); /* 48 kHz stereo float */
  tone.name = "1 kHz";
  uint32_t track = 0;
  status = rdmavideo_sender_start_audio(sender, &tone, &track);
  if (status != RDMAVIDEO_OK) return fail("audio", status);

  rdmavideo_video_format format;
  rdmavideo_video_format_init(&format);
  format.pix_fmt = "rgba";
  format.width = width;
  format.height = height;
  format.fps_num = RATE_NUM;
  format.fps_den = 1;
  format.colour = "srgb";
  status = rdmavideo_sender_start(sender, &format);
  if (status != RDMAVIDEO_OK) return fail("start", status);
  rdmavideo_layout layout;
  rdmavideo_sender_layout(sender, &layout);

  enum { kSamples = SAMPLE_RATE / RATE_NUM };
  float samples[kSamples * 2];
  uint64_t sent = 0, dropped = 0, sample = 0;
  for (uint64_t n = 0; n < frames; ++n) {
    for (int i = 0; i < kSamples; ++i, ++sample) {
      const float v =
          0.25f * (float)sin(2.0 * 3.14159265358979 * 1000.0 * (double)sample / SAMPLE_RATE);
      samples[2 * i] = samples[2 * i + 1] = v;
    }
    const int64_t pts = (int64_t)(n * 1000000000ull / RATE_NUM);
    status = rdmavideo_sender_send_audio(sender, track, pts, kSamples, samples, sizeof(samples));
    if (status != RDMAVIDEO_OK) return fail("audio", status);

    rdmavideo_buffer* buffer = NULL;
    status = rdmavideo_sender_lend(sender, &buffer);
    if (status != RDMAVIDEO_OK) return fail("lend", status);
    uint8_t* pixels = rdmavideo_buffer_data(buffer);
    if (!draw_once) {
      draw(pixels, layout.stride[0], width, height, n);
    } else {
      /* The pool's buffers drawn so far, by address. */
      static void* drawn[64];
      static int drawn_count = 0;
      int seen = 0;
      for (int i = 0; i < drawn_count; ++i) seen |= drawn[i] == pixels;
      if (!seen && drawn_count < 64) {
        draw(pixels, layout.stride[0], width, height, n);
        drawn[drawn_count++] = pixels;
      }
    }
    if (checksums) {
      fprintf(checksums, "%llu %016llx\n", (unsigned long long)n,
              (unsigned long long)fnv1a64(pixels, layout.frame_bytes));
    }
    status = rdmavideo_sender_submit(sender, buffer, pts);
    if (status == RDMAVIDEO_ENDED) break; /* the receiver wants no more */
    if (status == RDMAVIDEO_DROPPED) {
      ++dropped;
    } else if (status != RDMAVIDEO_OK) {
      return fail("submit", status);
    } else {
      ++sent;
    }
  }
  status = rdmavideo_sender_end(sender);
  if (status != RDMAVIDEO_OK) return fail("end", status);
  rdmavideo_stats stats;
  stats.struct_size = sizeof(stats);
  rdmavideo_sender_stats(sender, &stats);
  printf(
      "sent %llu frames of %ux%u rgba (%llu dropped) in %.2f s: %.2f GB/s, %.3f ms CPU a frame\n",
      (unsigned long long)sent, width, height, (unsigned long long)dropped, stats.seconds,
      stats.seconds > 0 ? (double)stats.bytes / stats.seconds / 1e9 : 0.0,
      sent ? stats.cpu_seconds * 1e3 / (double)sent : 0.0);
  rdmavideo_sender_destroy(sender);
  if (checksums) fclose(checksums);
  return 0;
}
