// SPDX-License-Identifier: Apache-2.0
// Where the composite's canvas lives and what draws it (compositor.hpp):
//
//   host memory: av::Canvas, libswscale; any format it writes. Frames received
//                into GPU memory are downloaded into their tiles' buffers.
//   GPU memory:  where frames are received into a GPU, an NV12 canvas on that GPU drawn by its
//                kernels (CanvasKernels::place, fill, gray: bilinear scaling, area averages beyond
//                2:1 down, the same bytes on every GPU); the tiles' buffers are there too, so a
//                frame in a GPU ring is copied inside the GPU and one in host memory is uploaded.
//                The writer takes the canvas from GPU memory as it takes a GPU ring's frames: NVENC
//                encodes it where it is, everything else downloads it.
//
// create() puts it in GPU memory wherever the frames are received into a GPU and it can be there;
// where it cannot (a format other than nv12, kernels this build or GPU lacks) it is in host memory
// and `where` says why, for the log. One thread draws a canvas; hold() is called on the
// tiles' threads, each with its own copier.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "rdmavideo/av/canvas.hpp"
#include "rdmavideo/cuda.hpp"
#include "rdmavideo/frame_lease.hpp"
#include "rdmavideo/media/engine_options.hpp"
#include "rdmavideo/memory.hpp"

namespace rdmavideo::media {

class CompositeCanvas {
 public:
  /// The canvas `options` describe, in GPU memory where frames are received into a GPU and it
  /// can be there, else in host memory; `why_host` says why it is not on that GPU.
  static Result<std::unique_ptr<CompositeCanvas>> create(const CompositeOptions& options,
                                                         std::string* why_host);
  virtual ~CompositeCanvas() = default;

  /// The canvas as a stream's frame describes itself.
  virtual const proto::StreamStart& format() const = 0;
  /// Where it is, and where its tiles' buffers and the frames handed on are.
  virtual const memory::MemorySpec& memory() const = 0;
  /// "in host memory, drawn with libswscale", "in GPU memory (cuda:0 (...)), drawn by ...".
  virtual std::string describe() const = 0;

  /// `frame`, laid out as `format` says in `held` (memory()), scaled into `area` with its
  /// aspect ratio kept and the bars beside it black; `held` is read by the time it returns.
  /// Returns where the picture went.
  virtual Result<av::Rect> place(const proto::StreamStart& format, const memory::Region& held,
                                 av::Rect area) = 0;
  virtual Result<void> fill(av::Rect area, av::Rgb colour) = 0;
  /// A label (av::label_band) at (x, y). Returns the band's rectangle.
  virtual Result<av::Rect> label(int x, int y, std::string_view text, int scale) = 0;
  /// The canvas as drawn so far copied into `into` (memory(), at least a frame's bytes).
  virtual Result<void> copy_out(const memory::Region& into) = 0;

  /// What a tile keeps of a frame of `format` in host memory that is shown in `area`: where
  /// the canvas is drawn by the CPU, the frame fitted to its picture in the canvas's format
  /// (av::Canvas::fitted()), scaled by the tile's own thread so that the canvas's thread only
  /// copies it and a frame much larger than its tile costs its own stream alone; nullopt where
  /// the frame is kept as it came (a canvas in GPU memory scales on the GPU).
  virtual std::optional<proto::StreamStart> held_as(const proto::StreamStart& format,
                                                    av::Rect area) const = 0;

  /// Copies frames out of ring slots into tiles' buffers: a memcpy (or a scaling, held_as()),
  /// a download, an upload or a copy inside the GPU, finished when hold() returns. One a tile
  /// (a GPU stream each), made by copier().
  class Copier {
   public:
    Copier() = default;
    explicit Copier(std::unique_ptr<av::Canvas::Fitter> fitter) : fitter_(std::move(fitter)) {}
    /// `frame` into the start of `into`, as it came or, with `as` (held_as()), fitted. Says
    /// which way it went.
    enum class Way { host, fitted, download, upload, device };
    Result<Way> hold(const FrameLease& frame, const memory::Region& into,
                     const proto::StreamStart* as = nullptr);

   private:
    std::unique_ptr<av::Canvas::Fitter> fitter_;  // a canvas drawn by the CPU: held_as() frames
    std::unique_ptr<cuda::Stream> stream_;        // made on first need, on into's GPU
  };
  /// A copier for one tile's thread.
  virtual Copier copier() const = 0;
};

}  // namespace rdmavideo::media
