/* SPDX-License-Identifier: Apache-2.0
 * Debian's libobs headers leave out threading-windows.h, which util/threading.h includes for
 * Windows. The plugin is built with GCC (MinGW-w64), whose atomic builtins the POSIX header
 * uses, and nothing of it crosses into obs.dll: its inline atomics and types serve here. */
#pragma once
#include "threading-posix.h"
