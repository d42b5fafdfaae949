# seedrl_add_avx512_check(<target>): compile <target>'s C++ sources once more for x86-64-v4
# (AVX-512), as object files that are never linked or run.
#
# Some GCC warnings appear only where AVX-512 code is generated: GCC 12.0-12.2's false
# -Wmaybe-uninitialized inside its own AVX-512 intrinsics (GCC bug 105593; the workaround is in
# include/seedrl/detail/eigen_core.hpp) broke every -march=native build on AVX-512 machines
# while machines without AVX-512 built cleanly. With SEEDRL_CHECK_AVX512 on (the ci preset),
# every machine compiles the AVX-512 code paths, so such a failure shows wherever CI runs. Where
# -march=native already means AVX-512, the target's own build covers it and nothing is added.
include_guard(GLOBAL)
include(CheckCXXSourceCompiles)

option(SEEDRL_CHECK_AVX512 "Also compile the -march=native programs for x86-64-v4 (CI)" OFF)

if(SEEDRL_CHECK_AVX512)
  set(CMAKE_REQUIRED_FLAGS -march=x86-64-v4)
  check_cxx_source_compiles("int main() {}" SEEDRL_HAS_MARCH_X86_64_V4)
  set(CMAKE_REQUIRED_FLAGS -march=native)
  check_cxx_source_compiles("
#ifndef __AVX512F__
#error no AVX-512 here
#endif
int main() {}" SEEDRL_NATIVE_HAS_AVX512)
  unset(CMAKE_REQUIRED_FLAGS)
endif()

function(seedrl_add_avx512_check target)
  if(NOT SEEDRL_CHECK_AVX512 OR NOT SEEDRL_HAS_MARCH_X86_64_V4 OR SEEDRL_NATIVE_HAS_AVX512)
    return()
  endif()
  get_target_property(_sources ${target} SOURCES)
  list(FILTER _sources INCLUDE REGEX "\\.cpp$")
  if(NOT _sources)
    return()
  endif()
  get_target_property(_source_dir ${target} SOURCE_DIR)
  list(TRANSFORM _sources PREPEND "${_source_dir}/" REGEX "^[^/]")
  add_library(${target}_avx512_check OBJECT ${_sources})
  get_target_property(_libraries ${target} LINK_LIBRARIES)
  target_link_libraries(${target}_avx512_check PRIVATE ${_libraries})
  get_target_property(_definitions ${target} COMPILE_DEFINITIONS)
  if(_definitions)
    target_compile_definitions(${target}_avx512_check PRIVATE ${_definitions})
  endif()
  # The optimiser emits these warnings, so the check needs it; debug info would only cost time.
  target_compile_options(${target}_avx512_check PRIVATE -march=x86-64-v4 -O2 -g0)
endfunction()
