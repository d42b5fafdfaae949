#pragma once
/// \file
/// The library version. CMake reads it from here, so this is the single place to bump it.

#define SEEDRL_VERSION_MAJOR 0
#define SEEDRL_VERSION_MINOR 1
#define SEEDRL_VERSION_PATCH 0

/// Encoded as major * 10000 + minor * 100 + patch, for `#if SEEDRL_VERSION >= ...` checks.
#define SEEDRL_VERSION \
  (SEEDRL_VERSION_MAJOR * 10000 + SEEDRL_VERSION_MINOR * 100 + SEEDRL_VERSION_PATCH)
