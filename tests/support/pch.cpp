// SPDX-License-Identifier: Apache-2.0
// The program that compiles the test programs' precompiled header (pch.hpp) for them to reuse.
