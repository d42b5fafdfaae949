# Fails configuration with a clear message when the compiler or the target cannot build seedrl,
# instead of letting the first C++20 feature it lacks fail deep inside a template.
#
# Supported: GCC 12 or newer (CI builds with Debian 12's GCC 12.2) and Clang 14 or newer (the
# fuzz targets build with Debian 12's Clang 14), on 64-bit targets. SEEDRL_ALLOW_UNSUPPORTED_COMPILER
# skips the compiler check for those who want to try another one.
include_guard(GLOBAL)

option(SEEDRL_ALLOW_UNSUPPORTED_COMPILER "Configure even with a compiler seedrl does not support" OFF)

set(_seedrl_min_gcc 12)
set(_seedrl_min_clang 14)
set(_seedrl_id "${CMAKE_CXX_COMPILER_ID}")
set(_seedrl_version "${CMAKE_CXX_COMPILER_VERSION}")
set(_seedrl_supported_text
  "seedrl needs GCC >= ${_seedrl_min_gcc} or Clang >= ${_seedrl_min_clang} (C++20 concepts, <span>, std::bit_cast)")
if(NOT SEEDRL_ALLOW_UNSUPPORTED_COMPILER)
  if(_seedrl_id STREQUAL "GNU")
    if(_seedrl_version VERSION_LESS _seedrl_min_gcc)
      message(FATAL_ERROR "${_seedrl_supported_text}; ${CMAKE_CXX_COMPILER} is GCC ${_seedrl_version}. "
        "Install a newer GCC (e.g. apt-get install g++-12) and configure with "
        "-DCMAKE_CXX_COMPILER=g++-12, or set SEEDRL_ALLOW_UNSUPPORTED_COMPILER=ON to try anyway.")
    endif()
  elseif(_seedrl_id MATCHES "^(Clang|AppleClang)$")
    if(_seedrl_version VERSION_LESS _seedrl_min_clang)
      message(FATAL_ERROR "${_seedrl_supported_text}; ${CMAKE_CXX_COMPILER} is Clang ${_seedrl_version}. "
        "Configure with -DCMAKE_CXX_COMPILER=<a newer clang++>, or set "
        "SEEDRL_ALLOW_UNSUPPORTED_COMPILER=ON to try anyway.")
    endif()
  else()
    message(FATAL_ERROR "${_seedrl_supported_text}; ${CMAKE_CXX_COMPILER} is ${_seedrl_id} "
      "${_seedrl_version}, which seedrl is not built or tested with. Configure with "
      "-DCMAKE_CXX_COMPILER=g++ or clang++, or set SEEDRL_ALLOW_UNSUPPORTED_COMPILER=ON to try anyway.")
  endif()
endif()

# seedrl is built and tested for 64-bit targets only.
if(NOT CMAKE_SIZEOF_VOID_P EQUAL 8)
  message(FATAL_ERROR "seedrl needs a 64-bit target; this build's pointers are "
    "${CMAKE_SIZEOF_VOID_P} bytes (CMAKE_SIZEOF_VOID_P). Configure for a 64-bit target.")
endif()
