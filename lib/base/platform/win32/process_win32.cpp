// SPDX-License-Identifier: Apache-2.0
// The console's control handler runs on a thread of its own, so a stop request sets the flag
// and cancels the read of standard input that the program may be blocked in (Windows's
// counterpart of EINTR). Pacing sleeps on a high-resolution waitable timer, one per thread.
#include <windows.h>

#include <mutex>
#include <thread>

#include "platform/win32/win32_error.hpp"
#include "rdmavideo/platform/process.hpp"

#ifndef CREATE_WAITABLE_TIMER_HIGH_RESOLUTION
#define CREATE_WAITABLE_TIMER_HIGH_RESOLUTION 0x00000002  // Windows 10 1803 on
#endif

namespace rdmavideo::platform {
namespace {

std::atomic<bool>* g_stop_flag = nullptr;
// The thread blocked in a read of standard input, if one is: a stop request cancels its read.
std::mutex g_reader_mutex;
HANDLE g_reader = nullptr;

BOOL WINAPI on_console_event(DWORD event) {
  if (g_stop_flag) g_stop_flag->store(true);
  {
    std::lock_guard lock(g_reader_mutex);
    if (g_reader) CancelSynchronousIo(g_reader);
  }
  if (event == CTRL_C_EVENT || event == CTRL_BREAK_EVENT) return TRUE;
  // A closed console, a log-off or a shutdown: the process ends when this returns, so wait
  // here while the program finishes; its return from main() ends the process, this thread
  // with it.
  Sleep(INFINITE);
  return TRUE;
}

class Timer {
 public:
  Timer() {
    handle_ = CreateWaitableTimerExW(nullptr, nullptr, CREATE_WAITABLE_TIMER_HIGH_RESOLUTION,
                                     TIMER_ALL_ACCESS);
    if (!handle_) handle_ = CreateWaitableTimerW(nullptr, TRUE, nullptr);
  }
  ~Timer() {
    if (handle_) CloseHandle(handle_);
  }
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  // False where no timer could be made or set.
  bool wait(std::chrono::nanoseconds span) const {
    if (!handle_) return false;
    LARGE_INTEGER due{};
    due.QuadPart = -static_cast<LONGLONG>(span.count() / 100);  // relative, in 100 ns
    if (due.QuadPart == 0) return true;
    if (!SetWaitableTimer(handle_, &due, 0, nullptr, nullptr, FALSE)) return false;
    return WaitForSingleObject(handle_, INFINITE) == WAIT_OBJECT_0;
  }

 private:
  HANDLE handle_ = nullptr;
};

// This thread's handle for other threads (GetCurrentThread() is a pseudo-handle that means
// the caller), made once a thread and closed when it ends.
HANDLE this_thread() {
  struct Owned {
    HANDLE handle = nullptr;
    ~Owned() {
      if (handle) CloseHandle(handle);
    }
  };
  thread_local Owned owned;
  if (!owned.handle) {
    DuplicateHandle(GetCurrentProcess(), GetCurrentThread(), GetCurrentProcess(), &owned.handle, 0,
                    FALSE, DUPLICATE_SAME_ACCESS);
  }
  return owned.handle;
}

// Marks this thread as the one reading standard input while it blocks there.
class ReaderMark {
 public:
  ReaderMark() {
    const HANDLE self = this_thread();
    std::lock_guard lock(g_reader_mutex);
    g_reader = self;
  }
  ~ReaderMark() {
    std::lock_guard lock(g_reader_mutex);
    g_reader = nullptr;
  }
  ReaderMark(const ReaderMark&) = delete;
  ReaderMark& operator=(const ReaderMark&) = delete;
};

Result<std::optional<size_t>> read_handle(HANDLE in, std::span<std::byte> into) {
  DWORD got = 0;
  const auto want = static_cast<DWORD>(std::min<size_t>(into.size(), 1u << 30));
  BOOL ok = FALSE;
  {
    ReaderMark mark;
    if (g_stop_flag && g_stop_flag->load()) return std::optional<size_t>{};
    ok = ReadFile(in, into.data(), want, &got, nullptr);
  }
  if (ok) return std::optional<size_t>(got);
  const DWORD code = GetLastError();
  if (code == ERROR_BROKEN_PIPE || code == ERROR_HANDLE_EOF) return std::optional<size_t>(0);
  if (code == ERROR_OPERATION_ABORTED) return std::optional<size_t>{};  // a stop request
  return make_error(ErrorCode::system, "stdin: ReadFile: {}", win32::error_text(code));
}

}  // namespace

void on_stop_request(std::atomic<bool>* flag) {
  g_stop_flag = flag;
  SetConsoleCtrlHandler(on_console_event, TRUE);
}

void sleep_until(std::chrono::steady_clock::time_point when) {
  thread_local Timer timer;
  const auto left = when - std::chrono::steady_clock::now();
  if (left <= std::chrono::steady_clock::duration::zero()) return;
  if (!timer.wait(left)) std::this_thread::sleep_until(when);
}

Result<std::optional<size_t>> read_stdin(std::span<std::byte> into,
                                         std::chrono::milliseconds wait) {
  HANDLE in = GetStdHandle(STD_INPUT_HANDLE);
  if (in == nullptr || in == INVALID_HANDLE_VALUE) return std::optional<size_t>(0);  // none
  // ReadFile gives bytes as they are: the C runtime's text mode (which ends the input at a
  // 0x1A byte and turns CR LF into LF) is never in the way.
  switch (GetFileType(in)) {
    case FILE_TYPE_CHAR:  // a console: readable when a key or a line is waiting
      switch (WaitForSingleObject(in, static_cast<DWORD>(wait.count()))) {
        case WAIT_OBJECT_0: break;
        case WAIT_TIMEOUT: return std::optional<size_t>{};
        default:
          return make_error(ErrorCode::system, "stdin: waiting on the console: {}",
                            win32::error_text(GetLastError()));
      }
      return read_handle(in, into);
    case FILE_TYPE_PIPE: {
      // A pipe cannot be waited on: what is there is read at once; with nothing there, the
      // read blocks until the writer writes, closes its end, or a stop request cancels it.
      DWORD waiting = 0;
      if (PeekNamedPipe(in, nullptr, 0, nullptr, &waiting, nullptr)) {
        if (waiting > 0) into = into.first(std::min<size_t>(into.size(), waiting));
      } else if (GetLastError() == ERROR_BROKEN_PIPE) {
        return std::optional<size_t>(0);
      }  // else a pipe that cannot be peeked (wine's view of a Unix pipe): the read blocks
      return read_handle(in, into);
    }
    default: return read_handle(in, into);  // a file: never waits
  }
}

uint64_t raise_descriptor_limit() { return UINT64_MAX; }

}  // namespace rdmavideo::platform
