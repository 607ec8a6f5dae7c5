/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rdmavideo's C API: send raw video frames (and their sound) into a receiver's ring of frame
 * buffers over RDMA verbs or TCP, and receive them, without a copy on either side.
 *
 * This header is the library's stable surface: plain C99, usable from C++, opaque handles,
 * no C++ type or exception crosses it. librdmavideo.so.0 exports these functions and nothing
 * else; a change that would break a program built against this header comes with a new
 * SONAME (docs/sdk.md, "The ABI promise").
 *
 * Errors. Every function that can fail returns an rdmavideo_status. RDMAVIDEO_OK and the other
 * values >= 0 are outcomes (a frame dropped, a wait that timed out, the end of the streams);
 * values < 0 are errors, and rdmavideo_last_error() then gives the message, which names what
 * was wrong ("key_file: /etc/k: No such file or directory"). The message is kept per thread,
 * until that thread's next failing call. A function given a NULL handle or a NULL pointer it
 * must write through returns RDMAVIDEO_ERROR_INVALID_ARGUMENT.
 *
 * Ownership. The library owns what it hands out: a handle until its _destroy(), a lent
 * buffer until it is submitted or discarded, a received frame until it is released, and every
 * string it returns for as long as the object it came from. Strings and structs the caller
 * passes in are copied before the call returns.
 *
 * Threads. See each object's section. Every function may be called from any thread unless
 * said otherwise; rdmavideo_last_error() is per thread.
 *
 * Configuration structs begin with struct_size: fill them with their _init() function (which
 * sets struct_size and every default), then change the fields you need. A later version adds
 * fields only at the end, and reads only the fields a caller's struct_size covers, so a
 * program built against this header keeps working with a later library.
 */
#ifndef RDMAVIDEO_RDMAVIDEO_H
#define RDMAVIDEO_RDMAVIDEO_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#if defined(RDMAVIDEO_BUILDING_LIBRARY)
#define RDMAVIDEO_API __declspec(dllexport)
#else
#define RDMAVIDEO_API __declspec(dllimport)
#endif
#else
#define RDMAVIDEO_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- version and errors ------------------------------------------------------------------- */

/* The version this header belongs to. rdmavideo_version() gives the library's. */
#define RDMAVIDEO_VERSION_MAJOR 0
#define RDMAVIDEO_VERSION_MINOR 5
#define RDMAVIDEO_VERSION_PATCH 0

typedef enum rdmavideo_status {
  RDMAVIDEO_OK = 0,
  /* Outcomes, not errors. */
  RDMAVIDEO_DROPPED = 1, /* the frame was not sent: live and no receiver had room, or none up */
  RDMAVIDEO_TIMEOUT = 2, /* nothing came within the time asked for */
  RDMAVIDEO_ENDED = 3,   /* a sender: every receiver wants no more frames; a receiver: every
                            stream it took has ended and none is connected */
  /* Errors: rdmavideo_last_error() says what was wrong. */
  RDMAVIDEO_ERROR_INVALID_ARGUMENT = -1, /* a value out of range, a NULL, a wrong call order */
  RDMAVIDEO_ERROR_PROTOCOL = -2,         /* the peer sent what the protocol does not allow */
  RDMAVIDEO_ERROR_PEER_CLOSED = -3,      /* the peer closed the connection */
  RDMAVIDEO_ERROR_TIMED_OUT = -4,        /* a connection or handshake took too long */
  RDMAVIDEO_ERROR_RESOURCE = -5,         /* out of memory, buffers, descriptors; busy */
  RDMAVIDEO_ERROR_UNSUPPORTED = -6,      /* a format, version or feature not handled here */
  RDMAVIDEO_ERROR_SYSTEM = -7,           /* a system call failed */
  RDMAVIDEO_ERROR_AUTH_FAILED = -8,      /* the peer did not prove the shared key */
  RDMAVIDEO_ERROR_INTERNAL = -9          /* a failure inside the library (a bug: report it) */
} rdmavideo_status;

/* The library's version, "0.5.0". Static storage. */
RDMAVIDEO_API const char* rdmavideo_version(void);
/* The message of this thread's last error, or "" when it has none. Valid until this thread's
 * next call into the library. */
RDMAVIDEO_API const char* rdmavideo_last_error(void);
/* The status's name, "RDMAVIDEO_ERROR_TIMED_OUT". Static storage. */
RDMAVIDEO_API const char* rdmavideo_status_name(rdmavideo_status status);

/* What the library logs, on stderr: "trace", "debug", "info", "warn", "error" or "off". The
 * default is "warn", or what the environment variable RDMAVIDEO_LOG_LEVEL says. */
RDMAVIDEO_API rdmavideo_status rdmavideo_set_log_level(const char* level);

/* ---- formats ------------------------------------------------------------------------------ */

typedef enum rdmavideo_memory {
  RDMAVIDEO_MEMORY_HOST = 0, /* the CPU reads and writes it */
  RDMAVIDEO_MEMORY_CUDA = 1  /* a GPU's memory: a CUDA device pointer (CUdeviceptr) */
} rdmavideo_memory;

/* A video stream's format. */
typedef struct rdmavideo_video_format {
  uint32_t struct_size;
  /* FFmpeg's name of the pixel format: nv12, yuv420p, p010le, uyvy422, yuyv422, v210, rgba,
   * bgra, rgb24, yuv422p10le, yuv444p, yuv444p10le, yuv444p12le. Default "uyvy422". */
  const char* pix_fmt;
  uint32_t width; /* pixels, at most 16384; as the format allows (even for 4:2:x) */
  uint32_t height;
  uint32_t fps_num; /* frame rate fps_num/fps_den, default 60/1 */
  uint32_t fps_den;
  /* The frames' colour: bt601, bt709, srgb, bt2100-pq, bt2100-hlg, each optionally with
   * " full" or " limited"; NULL or "": not said. */
  const char* colour;
  /* The stream's name, shown by the receiver; at most 63 bytes. NULL: the sender's name. */
  const char* name;
} rdmavideo_video_format;
RDMAVIDEO_API void rdmavideo_video_format_init(rdmavideo_video_format* format);

#define RDMAVIDEO_MAX_PLANES 4
/* Where a frame's planes lie in its bytes: plane i starts at offset[i], its rows stride[i]
 * bytes apart. Frames are always laid out this way, the same at both ends. */
typedef struct rdmavideo_layout {
  uint32_t plane_count;
  uint64_t offset[RDMAVIDEO_MAX_PLANES];
  uint32_t stride[RDMAVIDEO_MAX_PLANES];
  uint32_t rows[RDMAVIDEO_MAX_PLANES];
  uint64_t frame_bytes;
} rdmavideo_layout;
/* The layout rdmavideo gives `format`. */
RDMAVIDEO_API rdmavideo_status rdmavideo_video_format_layout(const rdmavideo_video_format* format,
                                                             rdmavideo_layout* layout);

/* An audio track: samples on the video's clock. */
typedef enum rdmavideo_sample_format {
  RDMAVIDEO_SAMPLES_S16 = 1, /* signed 16-bit, channels interleaved */
  RDMAVIDEO_SAMPLES_S32 = 2,
  RDMAVIDEO_SAMPLES_F32 = 3,  /* float, nominally -1..1 */
  RDMAVIDEO_SAMPLES_S16P = 4, /* the same three, planar: all of channel 0, then channel 1, ... */
  RDMAVIDEO_SAMPLES_S32P = 5,
  RDMAVIDEO_SAMPLES_F32P = 6
} rdmavideo_sample_format;

typedef struct rdmavideo_audio_format {
  uint32_t struct_size;
  rdmavideo_sample_format sample_format; /* default F32 */
  uint32_t sample_rate;                  /* default 48000 */
  uint32_t channels;                     /* 1..16, default 2 */
  uint64_t channel_layout; /* WAVE channel mask (bit 0 front left, ...); 0: unspecified */
  const char* name;        /* the track's name; NULL: none */
} rdmavideo_audio_format;
RDMAVIDEO_API void rdmavideo_audio_format_init(rdmavideo_audio_format* format);

/* Counters of a sender or receiver, since it was created. Set struct_size to
 * sizeof(rdmavideo_stats) before asking for them. */
typedef struct rdmavideo_stats {
  uint32_t struct_size;
  uint64_t frames;            /* frames sent (to at least one receiver) or received */
  uint64_t bytes;             /* their payload bytes */
  uint64_t dropped;           /* frames dropped: by the sender (live, late, no room) */
  uint64_t checksum_failures; /* a receiver: frames whose checksum did not match */
  double seconds;             /* from the first frame to now (or the end) */
  double cpu_seconds;         /* the process's CPU time since the sender or receiver began */
  double latency_p50_us;      /* a receiver: write to arrival, on the same clock */
  double latency_p99_us;
  uint64_t audio_samples; /* samples per channel sent or received, all tracks */
  uint32_t streams;       /* a receiver: streams taken so far; a sender: receivers up */
} rdmavideo_stats;

/* ---- sender ------------------------------------------------------------------------------- *
 *
 * A sender connects to one receiver or several (fan-out: every frame goes to each, written
 * once from the same buffer), then sends a stream of frames. The frames live in a pool of
 * buffers the sender registered with every connection: lend one, fill it, submit it, and it
 * goes out without a copy (rdmavideo_sender_send() copies into one for you). A submitted
 * buffer comes back to the pool once every receiver has it.
 *
 *   rdmavideo_sender_create()        connects to every destination (the handshakes)
 *   rdmavideo_sender_start()         the stream's format; again to change it
 *   rdmavideo_sender_lend()          a pool buffer, waiting for one to be free
 *   rdmavideo_sender_submit()        sends it (and takes it back into the pool)
 *   rdmavideo_sender_end()           the end of the stream, every frame delivered
 *   rdmavideo_sender_destroy()
 *
 * Threads: one thread calls everything but the audio functions and rdmavideo_sender_stats();
 * the audio functions may come from one other thread; stats from any. */

typedef struct rdmavideo_sender rdmavideo_sender;
typedef struct rdmavideo_buffer rdmavideo_buffer;

typedef struct rdmavideo_sender_config {
  uint32_t struct_size;
  /* "host:port", or several separated by commas for fan-out (at most 64); an entry without
   * ":port" is the name a receiver advertises by DNS-SD, found at each connect. Required. */
  const char* destinations;
  /* A shared key file (rdmavideo-keygen, docs/security.md): both ends prove it. NULL: none. */
  const char* key_file;
  /* The stream's name the receiver shows, at most 63 bytes. NULL: none. */
  const char* name;
  /* "auto" (NULL: verbs where an RDMA device reaches the destination, else TCP), "tcp",
   * "verbs". */
  const char* transport;
  /* Where the pool is: "host" (NULL), "pinned" (page-locked host memory), "cuda" or "cuda:N"
   * (GPU N: lent buffers are device pointers, sent by GPUDirect RDMA where the NIC can). */
  const char* memory;
  /* Live: a frame no receiver has room for within the lateness bound is dropped (counted)
   * rather than waited for, so a slow receiver never holds the source back. Default 0. */
  int live;
  /* Paced: submit waits until the frame is due at the stream's rate (a file played in real
   * time); 0 (default): as fast as the receivers take them. */
  int paced;
  /* A receiver lost (or not up yet) is connected again with back-off, and joins the stream
   * where it is. Default 0: a lost receiver is dropped, the others go on. */
  int reconnect;
  /* Any receiver lost fails the sender. Default 0. */
  int require_all;
  /* An XXH3-64 of each frame goes with it; the receiver checks it. Default 0. */
  int checksum;
  /* Buffers in the pool (2..64). Default 4. */
  uint32_t pool_buffers;
  /* The connection and handshake's limit, ms. Default 5000. */
  uint32_t connect_timeout_ms;
} rdmavideo_sender_config;
RDMAVIDEO_API void rdmavideo_sender_config_init(rdmavideo_sender_config* config);

/* Connects to every destination. A destination that cannot be reached fails the call (with
 * require_all, or when none could be reached, without reconnect). */
RDMAVIDEO_API rdmavideo_status rdmavideo_sender_create(const rdmavideo_sender_config* config,
                                                       rdmavideo_sender** sender);
/* Starts the stream, or changes its format (frames in flight go first), and waits for every
 * receiver's ring. The pool is allocated for this format. */
RDMAVIDEO_API rdmavideo_status rdmavideo_sender_start(rdmavideo_sender* sender,
                                                      const rdmavideo_video_format* format);
/* The stream's layout: how to fill a lent buffer. */
RDMAVIDEO_API rdmavideo_status rdmavideo_sender_layout(const rdmavideo_sender* sender,
                                                       rdmavideo_layout* layout);
/* Lends a pool buffer, waiting for one that no transfer reads (a buffer is held while a
 * receiver takes its frame: at most a dead receiver's timeout, 5 s). Its contents are what its
 * last use left. The buffer is the caller's until it is submitted or discarded. */
RDMAVIDEO_API rdmavideo_status rdmavideo_sender_lend(rdmavideo_sender* sender,
                                                     rdmavideo_buffer** buffer);
/* The buffer's memory (frame_bytes of the stream's layout) and where it is. */
RDMAVIDEO_API void* rdmavideo_buffer_data(const rdmavideo_buffer* buffer);
RDMAVIDEO_API uint64_t rdmavideo_buffer_size(const rdmavideo_buffer* buffer);
RDMAVIDEO_API rdmavideo_memory rdmavideo_buffer_memory(const rdmavideo_buffer* buffer);
/* Sends a lent buffer to every receiver and takes it back: `buffer` is no longer the
 * caller's, whatever the outcome. pts_ns: the frame's presentation time; RDMAVIDEO_PTS_AUTO
 * counts it from the frame rate. RDMAVIDEO_DROPPED: no receiver took it (counted);
 * RDMAVIDEO_ENDED: every receiver wants no more frames. */
#define RDMAVIDEO_PTS_AUTO INT64_MIN
RDMAVIDEO_API rdmavideo_status rdmavideo_sender_submit(rdmavideo_sender* sender,
                                                       rdmavideo_buffer* buffer, int64_t pts_ns);
/* Gives a lent buffer back unsent. */
RDMAVIDEO_API void rdmavideo_sender_discard(rdmavideo_sender* sender, rdmavideo_buffer* buffer);
/* Lends, copies `size` bytes of host memory (exactly the layout's frame_bytes) into the
 * buffer and submits it: one copy, for callers whose frames are somewhere else already. */
RDMAVIDEO_API rdmavideo_status rdmavideo_sender_send(rdmavideo_sender* sender, const void* data,
                                                     uint64_t size, int64_t pts_ns);

/* Adds an audio track beside the video (at most 16), before or after start. `*track` gets
 * its number, 0, 1, ... */
RDMAVIDEO_API rdmavideo_status rdmavideo_sender_start_audio(rdmavideo_sender* sender,
                                                            const rdmavideo_audio_format* format,
                                                            uint32_t* track);
/* `samples` samples per channel in the track's format (`bytes` must be exactly that), the
 * first at pts_ns on the video's clock. Copied before the call returns. */
RDMAVIDEO_API rdmavideo_status rdmavideo_sender_send_audio(rdmavideo_sender* sender, uint32_t track,
                                                           int64_t pts_ns, uint32_t samples,
                                                           const void* data, uint64_t bytes);
/* Ends one track; the video and the other tracks go on. */
RDMAVIDEO_API rdmavideo_status rdmavideo_sender_end_audio(rdmavideo_sender* sender, uint32_t track);

/* Sends every frame in flight, then the end of the stream, and closes the connections.
 * Idempotent; rdmavideo_sender_destroy() does it too. */
RDMAVIDEO_API rdmavideo_status rdmavideo_sender_end(rdmavideo_sender* sender);
/* The sender's counters. */
RDMAVIDEO_API rdmavideo_status rdmavideo_sender_stats(const rdmavideo_sender* sender,
                                                      rdmavideo_stats* stats);
/* Ends the stream if need be and frees the sender. Buffers still lent are invalid after. */
RDMAVIDEO_API void rdmavideo_sender_destroy(rdmavideo_sender* sender);

/* ---- receiver ----------------------------------------------------------------------------- *
 *
 * A receiver listens, takes streams as senders connect (up to max_streams at once), and hands
 * out their frames in arrival order, each still in the ring slot its sender wrote it into:
 * while the caller holds a frame, its slot is the caller's and the sender cannot overwrite
 * it; releasing the frame gives the slot back to its sender. A caller that holds every slot
 * of a stream's ring holds that sender back.
 *
 *   rdmavideo_receiver_create()         listens
 *   rdmavideo_receiver_next_frame()     the next frame of any stream, waiting for one
 *   rdmavideo_frame_release()           gives its slot back
 *   rdmavideo_receiver_destroy()        ends every stream (each sender is told) and frees it
 *
 * Threads: rdmavideo_receiver_next_frame() and rdmavideo_receiver_next_chunk() from one thread
 * each; a frame may be read and released on any thread; the rest from any thread. */

typedef struct rdmavideo_receiver rdmavideo_receiver;
typedef struct rdmavideo_frame rdmavideo_frame;
typedef struct rdmavideo_chunk rdmavideo_chunk;

typedef struct rdmavideo_receiver_config {
  uint32_t struct_size;
  /* "host:port" to listen on: "0.0.0.0:5000", "[::]:5000", port 0 for any. Required. */
  const char* listen;
  /* The shared key every sender must prove. NULL: none (any sender is taken). */
  const char* key_file;
  /* "auto" (NULL: TCP, and verbs too where an RDMA device is), "tcp", "verbs". */
  const char* transport;
  /* Where the rings are: "host" (NULL), "pinned", or "cuda" / "cuda:N" (frames are then
   * device pointers). */
  const char* memory;
  uint32_t max_streams; /* streams taken at once; one more is refused as busy. Default 1 */
  uint32_t ring_slots;  /* slots in each stream's ring, 1..240. Default 8 */
  /* The most memory all rings may hold; 0: half of physical memory. */
  uint64_t max_memory;
  /* Streams taken over the receiver's life before it refuses all others; 0: no limit. */
  uint64_t stream_limit;
  /* Check each frame in host memory against the checksum its sender sent with it (the
   * sender's `checksum`); a mismatch is counted in rdmavideo_stats.checksum_failures, and the
   * frame is still handed out. Default 0. */
  int verify;
} rdmavideo_receiver_config;
RDMAVIDEO_API void rdmavideo_receiver_config_init(rdmavideo_receiver_config* config);

/* Listens and starts taking connections (on threads of its own). */
RDMAVIDEO_API rdmavideo_status rdmavideo_receiver_create(const rdmavideo_receiver_config* config,
                                                         rdmavideo_receiver** receiver);
/* The port it listens on (the real one when asked for port 0). */
RDMAVIDEO_API uint16_t rdmavideo_receiver_port(const rdmavideo_receiver* receiver);
/* The next frame of any stream, waiting up to timeout_ms (< 0: as long as it takes).
 * RDMAVIDEO_TIMEOUT: none came; RDMAVIDEO_ENDED: at least one stream was taken, every one has
 * ended, and no sender is connected. The frame is the caller's until released. */
RDMAVIDEO_API rdmavideo_status rdmavideo_receiver_next_frame(rdmavideo_receiver* receiver,
                                                             int32_t timeout_ms,
                                                             rdmavideo_frame** frame);
/* The frame's bytes (frame_bytes of its layout), in host memory or a GPU's. */
RDMAVIDEO_API const void* rdmavideo_frame_data(const rdmavideo_frame* frame);
RDMAVIDEO_API uint64_t rdmavideo_frame_size(const rdmavideo_frame* frame);
RDMAVIDEO_API rdmavideo_memory rdmavideo_frame_memory(const rdmavideo_frame* frame);
/* The frame's format (pix_fmt, name and colour strings live as long as the frame). */
RDMAVIDEO_API void rdmavideo_frame_format(const rdmavideo_frame* frame,
                                          rdmavideo_video_format* format);
RDMAVIDEO_API void rdmavideo_frame_layout(const rdmavideo_frame* frame, rdmavideo_layout* layout);
RDMAVIDEO_API int64_t rdmavideo_frame_pts_ns(const rdmavideo_frame* frame);
/* The sender's frame number: a gap is frames the sender dropped. */
RDMAVIDEO_API uint64_t rdmavideo_frame_sequence(const rdmavideo_frame* frame);
/* The stream it belongs to: 1, 2, ... in the order the receiver took them. */
RDMAVIDEO_API uint64_t rdmavideo_frame_stream(const rdmavideo_frame* frame);
/* Gives the frame's slot back to its sender and frees the frame. */
RDMAVIDEO_API void rdmavideo_frame_release(rdmavideo_frame* frame);

/* The next chunk of audio of any stream's tracks, waiting up to timeout_ms; as
 * rdmavideo_receiver_next_frame(). Audio a caller never asks for is dropped (counted) once the
 * stream's audio queue is full; a receiver that wants no audio never calls this. */
RDMAVIDEO_API rdmavideo_status rdmavideo_receiver_next_chunk(rdmavideo_receiver* receiver,
                                                             int32_t timeout_ms,
                                                             rdmavideo_chunk** chunk);
RDMAVIDEO_API uint64_t rdmavideo_chunk_stream(const rdmavideo_chunk* chunk);
RDMAVIDEO_API uint32_t rdmavideo_chunk_track(const rdmavideo_chunk* chunk);
/* The track's format (its name lives as long as the chunk). */
RDMAVIDEO_API void rdmavideo_chunk_format(const rdmavideo_chunk* chunk,
                                          rdmavideo_audio_format* format);
RDMAVIDEO_API int64_t rdmavideo_chunk_pts_ns(const rdmavideo_chunk* chunk);
RDMAVIDEO_API uint32_t rdmavideo_chunk_samples(const rdmavideo_chunk* chunk);
RDMAVIDEO_API const void* rdmavideo_chunk_data(const rdmavideo_chunk* chunk);
RDMAVIDEO_API uint64_t rdmavideo_chunk_size(const rdmavideo_chunk* chunk);
RDMAVIDEO_API void rdmavideo_chunk_release(rdmavideo_chunk* chunk);

/* The receiver's counters, over every stream. */
RDMAVIDEO_API rdmavideo_status rdmavideo_receiver_stats(const rdmavideo_receiver* receiver,
                                                        rdmavideo_stats* stats);
/* Ends every stream (each sender is told) and wakes the waits, which return
 * RDMAVIDEO_ENDED from then on. Frames still held stay valid until released. */
RDMAVIDEO_API void rdmavideo_receiver_stop(rdmavideo_receiver* receiver);
/* Stops and frees the receiver. Frames and chunks still held stay valid until released. */
RDMAVIDEO_API void rdmavideo_receiver_destroy(rdmavideo_receiver* receiver);

#ifdef __cplusplus
}
#endif

#endif /* RDMAVIDEO_RDMAVIDEO_H */
