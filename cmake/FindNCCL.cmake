# FindNCCL
# --------
# Finds NVIDIA NCCL (2.14 or newer: non-blocking communicators), for data-parallel GPU learner
# ranks (seedrl/distributed/nccl_reducer.hpp).
#
# Where it looks: NCCL_ROOT (CMake or environment variable), the CUDA toolkit
# (CUDAToolkit_LIBRARY_ROOT / CUDAToolkit_INCLUDE_DIRS when find_package(CUDAToolkit) ran first,
# else CUDA_PATH / CUDA_HOME), then the standard system directories (Debian's libnccl-dev).
#
# Result variables: NCCL_FOUND, NCCL_VERSION, NCCL_INCLUDE_DIR, NCCL_LIBRARY. Imported target:
# NCCL::nccl.

set(_nccl_hints)
foreach(_root IN ITEMS "${NCCL_ROOT}" "$ENV{NCCL_ROOT}" "${CUDAToolkit_LIBRARY_ROOT}"
                       "$ENV{CUDA_PATH}" "$ENV{CUDA_HOME}")
  if(_root)
    list(APPEND _nccl_hints "${_root}")
  endif()
endforeach()
foreach(_inc IN LISTS CUDAToolkit_INCLUDE_DIRS)
  get_filename_component(_up "${_inc}" DIRECTORY)
  list(APPEND _nccl_hints "${_up}")
endforeach()
list(REMOVE_DUPLICATES _nccl_hints)

find_path(NCCL_INCLUDE_DIR NAMES nccl.h HINTS ${_nccl_hints}
  PATH_SUFFIXES include targets/x86_64-linux/include)
set(_nccl_lib_hints ${_nccl_hints})
if(NCCL_INCLUDE_DIR)
  get_filename_component(_nccl_beside "${NCCL_INCLUDE_DIR}" DIRECTORY)
  list(PREPEND _nccl_lib_hints "${_nccl_beside}")
endif()
find_library(NCCL_LIBRARY NAMES nccl HINTS ${_nccl_lib_hints}
  PATH_SUFFIXES lib lib64 lib/x86_64-linux-gnu targets/x86_64-linux/lib)

if(NCCL_INCLUDE_DIR AND EXISTS "${NCCL_INCLUDE_DIR}/nccl.h")
  file(STRINGS "${NCCL_INCLUDE_DIR}/nccl.h" _nccl_lines REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) ")
  foreach(_part IN ITEMS MAJOR MINOR PATCH)
    string(REGEX MATCH "NCCL_${_part} +([0-9]+)" _m "${_nccl_lines}")
    set(NCCL_VERSION_${_part} "${CMAKE_MATCH_1}")
  endforeach()
  set(NCCL_VERSION "${NCCL_VERSION_MAJOR}.${NCCL_VERSION_MINOR}.${NCCL_VERSION_PATCH}")
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(NCCL
  REQUIRED_VARS NCCL_LIBRARY NCCL_INCLUDE_DIR
  VERSION_VAR NCCL_VERSION)

if(NCCL_FOUND AND NOT TARGET NCCL::nccl)
  add_library(NCCL::nccl UNKNOWN IMPORTED)
  set_target_properties(NCCL::nccl PROPERTIES
    IMPORTED_LOCATION "${NCCL_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")
endif()
mark_as_advanced(NCCL_INCLUDE_DIR NCCL_LIBRARY)
