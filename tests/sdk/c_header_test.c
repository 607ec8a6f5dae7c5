/* SPDX-License-Identifier: Apache-2.0 */
/* The C API's header is plain C99: this file is compiled as C99 with -pedantic and warnings
 * as errors, and links against librdmavideo.so.0 alone (sdk_symbols checks the rest). */
#include <stdio.h>
#include <string.h>

#include "rdmavideo/rdmavideo.h"

int main(void) {
  rdmavideo_video_format format;
  rdmavideo_layout layout;
  rdmavideo_video_format_init(&format);
  format.pix_fmt = "v210";
  format.width = 1920;
  format.height = 1080;
  if (rdmavideo_video_format_layout(&format, &layout) != RDMAVIDEO_OK) {
    fprintf(stderr, "%s\n", rdmavideo_last_error());
    return 1;
  }
  if (layout.frame_bytes != 5120u * 1080u || strcmp(rdmavideo_version(), "0.5.0") != 0) {
    fprintf(stderr, "v210 1080p is %llu bytes; version %s\n",
            (unsigned long long)layout.frame_bytes, rdmavideo_version());
    return 1;
  }
  /* In C any int is a value of the enum: the library must take one that names no status. */
  if (strcmp(rdmavideo_status_name((rdmavideo_status)42), "(not a status)") != 0) {
    fprintf(stderr, "status 42 is named %s\n", rdmavideo_status_name((rdmavideo_status)42));
    return 1;
  }
  printf("rdmavideo %s: v210 1920x1080 is %llu bytes a frame\n", rdmavideo_version(),
         (unsigned long long)layout.frame_bytes);
  return 0;
}
