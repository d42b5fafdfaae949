#pragma once
/// \file
/// How the program layer is built, as {fmt} offers it (docs/getting-started.md,
/// "Compiled or header-only"):
///   - compiled, the CMake target `seedrl::app`: the flags, the actor's link loop and whole
///     programs for the library's recipes (the learner, its engines, trainers and losses, eval)
///     are built once into the library, which defines SEEDRL_APP_COMPILED=1 for its users. A
///     user's translation unit sees declarations and `extern template`s, and compiles only its
///     environment and `main`;
///   - header-only, the target `seedrl::app_header_only` (or any use of the headers without
///     SEEDRL_APP_COMPILED): every definition is an inline function or a template in the
///     headers, as before.
/// `SEEDRL_APP_API` marks a function the library defines: `inline` in header-only use, a plain
/// declaration in compiled use. Its definition sits in a `detail/*-inl.hpp` header that the
/// declaring header includes in header-only use and one source file of the library (src/app/)
/// includes in compiled use.

#ifndef SEEDRL_APP_COMPILED
#define SEEDRL_APP_COMPILED 0
#endif

/// Whether the compiled seedrl::app holds pixel_recipe's whole program too (CMake option
/// SEEDRL_APP_PIXEL_PROGRAM, on by default; the sanitizer presets build without it).
#ifndef SEEDRL_APP_PIXEL_PROGRAM
#define SEEDRL_APP_PIXEL_PROGRAM SEEDRL_APP_COMPILED
#endif

#if SEEDRL_APP_COMPILED
#define SEEDRL_APP_API
#else
#define SEEDRL_APP_API inline
#endif
