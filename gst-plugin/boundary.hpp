// SPDX-License-Identifier: Apache-2.0
// The plugin's edge with GStreamer's C: no C++ exception crosses it. Every virtual function,
// pad function and property accessor the elements hand GStreamer is installed as
// guarded<"what it does", function>, which runs the function and turns an exception escaping
// it (the library's HMAC where OpenSSL has none, an allocation that failed) into an error
// message on the element, naming what failed and why, and the function's failure value:
// FALSE, GST_FLOW_ERROR, GST_STATE_CHANGE_FAILURE, NULL. The application sees an error on
// its bus instead of a process ended by std::terminate.
#pragma once

#include <gst/gst.h>

#include <cstddef>
#include <exception>
#include <type_traits>

namespace rdmavideo::gst {

/// A string as a template argument: what a guarded function does, for the error message.
template <std::size_t N>
struct What {
  char text[N];
  constexpr What(const char (&s)[N]) noexcept {  // NOLINT(google-explicit-constructor)
    for (std::size_t i = 0; i < N; ++i) text[i] = s[i];
  }
};

/// Posts an error message naming `what` and the exception on the element `object` is, or on
/// the element a pad `object` belongs to; logs it where there is no element. Never throws.
void report_exception(gpointer object, const char* what, const std::exception_ptr& error) noexcept;

/// What a GStreamer virtual function returns when it failed.
template <typename R>
constexpr R failure_value() noexcept {
  if constexpr (std::is_same_v<R, GstFlowReturn>) {
    return GST_FLOW_ERROR;
  } else if constexpr (std::is_same_v<R, GstStateChangeReturn>) {
    return GST_STATE_CHANGE_FAILURE;
  } else {
    return R{};  // FALSE for a gboolean, NULL for a pointer
  }
}

template <What what, auto function>
struct Guarded;
template <What what, typename R, typename First, typename... Rest, R (*function)(First, Rest...)>
struct Guarded<what, function> {
  static R call(First first, Rest... rest) noexcept {
    try {
      return function(first, rest...);
    } catch (...) {
      report_exception(first, what.text, std::current_exception());
    }
    if constexpr (!std::is_void_v<R>) return failure_value<R>();
  }
};

/// `function` with the signature GStreamer wants, exceptions stopped at its edge.
template <What what, auto function>
inline constexpr auto guarded = &Guarded<what, function>::call;

}  // namespace rdmavideo::gst
