// SPDX-License-Identifier: Apache-2.0
// LeakSanitizer settings built into the gst test binaries (read by the sanitizer runtime
// before main; ASAN_OPTIONS and LSAN_OPTIONS still override them). Only third-party global
// state that is never freed by design is suppressed; none of ours.
//
// GLib allocates its quark table in a library constructor and, as the table grows, keeps
// the old block for lock-free readers instead of freeing it. GStreamer registers enough
// quarks to grow it, so every process that runs gst_init() "leaks" that first block. GLib
// has no frame pointers, so only the slow unwinder reaches the constructor's caller
// (_dl_init) that the suppression names; with the fast one the stack stops in g_malloc.
extern "C" const char* __asan_default_options() { return "fast_unwind_on_malloc=0"; }
extern "C" const char* __lsan_default_suppressions() { return "leak:_dl_init\n"; }
