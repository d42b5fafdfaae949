#pragma once
/// \file
/// Eigen's core module, as every seedrl header includes it.
///
/// GCC 12.0-12.2 (Debian 12's compiler) warns, falsely, that `__Y` "may be used uninitialized"
/// inside its own AVX-512 intrinsics (avx512fintrin.h writes `__m512 __Y = __Y;` for "any
/// value") wherever Eigen's vectorised exp, logistic, min/max or GEMM kernels are inlined into
/// code compiled for AVX-512 (`-march=native` on most current servers). That is GCC bug 105593,
/// fixed in GCC 12.3; under -Werror it stops the build. The warning comes from the optimiser,
/// which checks the diagnostic pragmas in force at the warned line: the intrinsics header is
/// therefore included here first, under a pragma that silences those two warnings for its own
/// lines only. Every other line, ours included, keeps both warnings (and -Werror).
/// Remove this block once GCC older than 12.3 is no longer supported (CMakeLists.txt says which
/// compilers are).

#if defined(__GNUC__) && !defined(__clang__) && defined(__AVX512F__) && \
    (__GNUC__ < 12 || (__GNUC__ == 12 && __GNUC_MINOR__ < 3))
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif

#include <Eigen/Core>
