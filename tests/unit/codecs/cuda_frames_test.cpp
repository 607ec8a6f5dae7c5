// SPDX-License-Identifier: Apache-2.0
// FFmpeg's CUDA frames meeting our copies, on the stand-in driver (tests/fakecuda), which
// orders streams as CUDA does: work FFmpeg queues on its device's stream is only seen by a
// copy that runs after it there. NVDEC (FFmpeg 5.1's nvdec.c) maps and copies each decoded
// picture into its frame on that stream and does not wait; so does FFmpeg's upload into a
// CUDA frame, which stands in for the decoder here (there is no NVDEC without a GPU).
#include <dlfcn.h>
#include <gtest/gtest.h>

extern "C" {
#include <libavutil/hwcontext.h>
}

#include <vector>

#include "av_util.hpp"
#include "rdmavideo/cuda.hpp"

namespace rdmavideo::av {
namespace {

// The stand-in as the process's libcuda.so.1, for our loader and FFmpeg's alike: loaded
// first, so that both find it by its soname.
bool load_stand_in() {
  static void* handle = dlopen(RDMAVIDEO_FAKE_CUDA, RTLD_NOW | RTLD_GLOBAL);
  return handle != nullptr;
}

TEST(CudaFrames, FfmpegWorksOnOurContextAndStream) {
  ASSERT_TRUE(load_stand_in()) << dlerror();
  auto device = cuda::Device::shared(0);
  ASSERT_TRUE(device) << device.error().message();
  auto stream = (*device)->create_stream();
  ASSERT_TRUE(stream) << stream.error().message();
  // FFmpeg's own av_hwdevice_ctx_create(primary_ctx) refuses a primary context already
  // active with flags other than its own, as ours is: cuda_device_on() hands it ours.
  auto hw = cuda_device_on(**stream, "test");
  ASSERT_TRUE(hw) << hw.error().message();
}

// A decoded picture copied into a frame laid out as the stream holds what the decoder wrote,
// not what its surface held before.
TEST(CudaFrames, ACopyOfADecodedPictureWaitsForTheDecoder) {
  ASSERT_TRUE(load_stand_in()) << dlerror();
  auto device = cuda::Device::shared(0);
  ASSERT_TRUE(device) << device.error().message();
  auto stream = (*device)->create_stream();
  ASSERT_TRUE(stream);
  auto hw = cuda_device_on(**stream, "test");
  ASSERT_TRUE(hw) << hw.error().message();

  constexpr int kWidth = 64, kHeight = 36;
  UniqueBufferRef frames(av_hwframe_ctx_alloc(hw->get()));
  ASSERT_TRUE(frames);
  auto* fc = reinterpret_cast<AVHWFramesContext*>(frames->data);
  fc->format = AV_PIX_FMT_CUDA;
  fc->sw_format = AV_PIX_FMT_NV12;
  fc->width = kWidth;
  fc->height = kHeight;
  ASSERT_EQ(av_hwframe_ctx_init(frames.get()), 0);
  auto surface = make_frame("test");
  ASSERT_TRUE(surface);
  ASSERT_EQ(av_hwframe_get_buffer(frames.get(), surface->get(), 0), 0);

  // Where the frame goes, laid out as the stream says (made first: a synchronous fill would
  // also wait for the NULL stream).
  proto::StreamStart format;
  format.pixel_format = PixelFormat::nv12;
  format.width = kWidth;
  format.height = kHeight;
  auto layout = canonical_layout(PixelFormat::nv12, kWidth, kHeight);
  ASSERT_TRUE(layout);
  format.layout = *layout;
  auto out = (*device)->allocate(layout->frame_bytes);
  ASSERT_TRUE(out);
  ASSERT_TRUE((*device)->fill(**out, std::byte{0}, layout->frame_bytes));

  // The "decoder" writes a picture into the surface on FFmpeg's stream, and does not wait.
  auto picture = make_frame("test");
  ASSERT_TRUE(picture);
  AVFrame* p = picture->get();
  p->format = AV_PIX_FMT_NV12;
  p->width = kWidth;
  p->height = kHeight;
  ASSERT_EQ(av_frame_get_buffer(p, 0), 0);
  for (int plane = 0; plane < 2; ++plane) {
    for (int row = 0; row < (plane ? kHeight / 2 : kHeight); ++row) {
      for (int x = 0; x < kWidth; ++x)
        p->data[plane][row * p->linesize[plane] + x] = uint8_t(row * 7 + x + plane * 100);
    }
  }
  ASSERT_EQ(av_hwframe_transfer_data(surface->get(), p, 0), 0);

  // Our copy into the stream's layout, as the NVDEC source makes it.
  auto copied = copy_cuda_frame(**stream, format, **out, *surface->get(), true);
  ASSERT_TRUE(copied) << copied.error().message();

  std::vector<std::byte> got(layout->frame_bytes);
  ASSERT_TRUE((*device)->download(got, **out));
  for (int plane = 0; plane < 2; ++plane) {
    const auto& pl = layout->planes[plane];
    for (uint32_t row = 0; row < pl.rows; ++row) {
      for (int x = 0; x < kWidth; ++x) {
        const auto want = static_cast<std::byte>(p->data[plane][row * p->linesize[plane] + x]);
        ASSERT_EQ(got[pl.offset + row * pl.stride + x], want)
            << "plane " << plane << " row " << row << " byte " << x
            << ": the copy ran before the decoder's write (on another stream)";
      }
    }
  }
}

}  // namespace
}  // namespace rdmavideo::av
