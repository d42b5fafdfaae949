# seedrl_find_optional_package(<Package> [<find_package arguments>...]
#                               WHAT <what it is> WITHOUT <what seedrl does without it>
#                               INSTALL <how to get it>)
#
# find_package() for a dependency seedrl can do without, that cannot stop the configure.
#
# A package's own config can raise an error that no QUIET catches: Debian's oneDNN config runs
# find_package(OpenCL REQUIRED) although libdnnl-dev only recommends the OpenCL headers, and a
# half-removed package fails in its targets file. So the config is first loaded by a throwaway
# configure (a separate cmake process, under a second) with the same search paths.
# Only when that succeeds is it loaded here; otherwise <Package>_FOUND is FALSE and one line
# says why (the first line of the package's own error) and how to get it. A successful probe is
# remembered per config file, so reconfiguring costs nothing; a failed one is tried again, so
# installing what was missing is enough.
include_guard(GLOBAL)

function(_seedrl_probe_package package out_ok out_why)
  set(dir "${CMAKE_BINARY_DIR}/CMakeFiles/seedrl_probe/${package}")
  file(REMOVE_RECURSE "${dir}")
  string(JOIN " " find_args ${ARGN})
  file(WRITE "${dir}/CMakeLists.txt"
    "cmake_minimum_required(VERSION 3.25)\n"
    "project(seedrl_probe_${package} LANGUAGES CXX)\n"
    "find_package(${package} ${find_args} REQUIRED)\n")
  set(args -S "${dir}" -B "${dir}/build" -G "${CMAKE_GENERATOR}" -Wno-dev
           "-DCMAKE_CXX_COMPILER=${CMAKE_CXX_COMPILER}")
  # The search paths a user or a toolchain may have set, passed on as they are here.
  foreach(var IN ITEMS CMAKE_PREFIX_PATH CMAKE_FIND_ROOT_PATH CMAKE_TOOLCHAIN_FILE
                       CMAKE_SYSTEM_PREFIX_PATH ${package}_DIR ${package}_ROOT)
    if(DEFINED ${var} AND NOT "${${var}}" STREQUAL "" AND NOT "${${var}}" MATCHES "-NOTFOUND$")
      string(REPLACE ";" "\\;" value "${${var}}")
      list(APPEND args "-D${var}=${value}")
    endif()
  endforeach()
  execute_process(COMMAND "${CMAKE_COMMAND}" ${args}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  file(REMOVE_RECURSE "${dir}")
  if(rc EQUAL 0)
    set(${out_ok} TRUE PARENT_SCOPE)
    set(${out_why} "" PARENT_SCOPE)
    return()
  endif()
  # The package's own words: the error's text up to its call stack, on one line.
  set(why "")
  string(REPLACE "\n" ";" lines "${err}")
  set(after_error FALSE)
  foreach(line IN LISTS lines)
    string(STRIP "${line}" line)
    if(line MATCHES "^CMake Error")
      set(after_error TRUE)
    elseif(after_error AND line MATCHES "^Call Stack")
      break()
    elseif(after_error AND NOT line STREQUAL "")
      string(APPEND why " ${line}")
    endif()
  endforeach()
  string(STRIP "${why}" why)
  if(why STREQUAL "")
    set(why "its CMake config failed to load")
  endif()
  # CMake's long "could not find a package configuration file" paragraph, said briefly.
  if(why MATCHES "package configuration file provided by \"([^\"]+)\"")
    if(CMAKE_MATCH_1 STREQUAL package)
      set(why "not installed")
    else()
      set(why "its config needs ${CMAKE_MATCH_1}, which was not found")
    endif()
  elseif(why MATCHES "compatible with requested version")
    set(why "no installed version is compatible with the one asked for (${find_args})")
  endif()
  set(${out_ok} FALSE PARENT_SCOPE)
  set(${out_why} "${why}" PARENT_SCOPE)
endfunction()

# A macro, not a function: a package's config sets variables for its caller (Catch2's adds its
# directory to CMAKE_MODULE_PATH for include(Catch)), as a plain find_package() would.
macro(seedrl_find_optional_package _sfop_package)
  cmake_parse_arguments(_sfop "" "WHAT;WITHOUT;INSTALL" "" ${ARGN})
  set(_sfop_ok FALSE)
  set(_sfop_why "")
  set(_sfop_remembered "${_SEEDRL_PROBED_${_sfop_package}}")
  if(_sfop_remembered AND "${_sfop_remembered}" STREQUAL "${${_sfop_package}_DIR}"
     AND EXISTS "${_sfop_remembered}")
    set(_sfop_ok TRUE)  # this config file loaded before
  else()
    _seedrl_probe_package(${_sfop_package} _sfop_ok _sfop_why ${_sfop_UNPARSED_ARGUMENTS})
  endif()
  if(_sfop_ok)
    find_package(${_sfop_package} ${_sfop_UNPARSED_ARGUMENTS} QUIET)
    if(NOT ${_sfop_package}_FOUND)
      set(_sfop_why "not found by the configure although its probe loaded it")
    endif()
  endif()
  if(${_sfop_package}_FOUND)
    set(_SEEDRL_PROBED_${_sfop_package} "${${_sfop_package}_DIR}" CACHE INTERNAL "")
  else()
    unset(_SEEDRL_PROBED_${_sfop_package} CACHE)
    set(${_sfop_package}_FOUND FALSE)
    message(STATUS "seedrl: ${_sfop_WHAT}: ${_sfop_why}; ${_sfop_WITHOUT}. "
                   "To use it: ${_sfop_INSTALL}")
  endif()
endmacro()
