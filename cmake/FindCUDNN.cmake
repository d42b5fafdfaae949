# FindCUDNN
# ---------
# Finds NVIDIA cuDNN (version 8 or newer: the version is read from cudnn_version.h).
#
# Where it looks, in order: CUDNN_ROOT (CMake or environment variable), the CUDA toolkit
# (CUDAToolkit_LIBRARY_ROOT / CUDAToolkit_INCLUDE_DIRS when find_package(CUDAToolkit) ran first,
# else CUDA_PATH / CUDA_HOME), the pip wheel `nvidia-cudnn-cu*` of the python3 on PATH, then the
# standard system directories. The wheel ships only libcudnn.so.9 (no unversioned symlink), so a
# versioned library is accepted when no libcudnn.so exists.
#
# Result variables: CUDNN_FOUND, CUDNN_VERSION, CUDNN_VERSION_MAJOR/MINOR/PATCH,
# CUDNN_INCLUDE_DIR, CUDNN_LIBRARY. Imported target: CUDNN::cudnn.

set(_cudnn_hints)
foreach(_root IN ITEMS "${CUDNN_ROOT}" "$ENV{CUDNN_ROOT}" "${CUDAToolkit_LIBRARY_ROOT}"
                       "$ENV{CUDA_PATH}" "$ENV{CUDA_HOME}")
  if(_root)
    list(APPEND _cudnn_hints "${_root}")
  endif()
endforeach()
if(CUDAToolkit_INCLUDE_DIRS)
  foreach(_inc IN LISTS CUDAToolkit_INCLUDE_DIRS)
    get_filename_component(_up "${_inc}" DIRECTORY)
    list(APPEND _cudnn_hints "${_up}")
  endforeach()
endif()

# The pip wheel: nvidia.cudnn is a namespace package, so ask for __path__, not __file__.
if(NOT CUDNN_INCLUDE_DIR OR NOT CUDNN_LIBRARY)
  find_program(_cudnn_python NAMES python3 python)
  if(_cudnn_python)
    execute_process(
      COMMAND "${_cudnn_python}" -c
              "import nvidia.cudnn as m; print(list(m.__path__)[0])"
      OUTPUT_VARIABLE _cudnn_wheel_dir
      OUTPUT_STRIP_TRAILING_WHITESPACE
      ERROR_QUIET
      RESULT_VARIABLE _cudnn_python_rc)
    if(_cudnn_python_rc EQUAL 0 AND IS_DIRECTORY "${_cudnn_wheel_dir}")
      list(APPEND _cudnn_hints "${_cudnn_wheel_dir}")
    endif()
  endif()
  unset(_cudnn_python CACHE)
endif()
list(REMOVE_DUPLICATES _cudnn_hints)

find_path(CUDNN_INCLUDE_DIR
  NAMES cudnn_version.h
  HINTS ${_cudnn_hints}
  PATH_SUFFIXES include include/x86_64-linux-gnu targets/x86_64-linux/include)

# The library beside the headers first, so that a header and a library of different cuDNN
# installations are never paired; NAMES_PER_DIR so that a directory holding only libcudnn.so.9
# (the wheel) wins over a later directory holding libcudnn.so.
set(_cudnn_lib_hints ${_cudnn_hints})
if(CUDNN_INCLUDE_DIR)
  get_filename_component(_cudnn_beside "${CUDNN_INCLUDE_DIR}" DIRECTORY)
  list(PREPEND _cudnn_lib_hints "${_cudnn_beside}")
endif()
find_library(CUDNN_LIBRARY
  NAMES cudnn libcudnn.so.9 libcudnn.so.8
  NAMES_PER_DIR
  HINTS ${_cudnn_lib_hints}
  PATH_SUFFIXES lib lib64 lib/x86_64-linux-gnu targets/x86_64-linux/lib)

if(CUDNN_INCLUDE_DIR AND EXISTS "${CUDNN_INCLUDE_DIR}/cudnn_version.h")
  file(STRINGS "${CUDNN_INCLUDE_DIR}/cudnn_version.h" _cudnn_version_lines
    REGEX "#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) +[0-9]+")
  foreach(_part MAJOR MINOR PATCHLEVEL)
    string(REGEX REPLACE ".*#define CUDNN_${_part} +([0-9]+).*" "\\1" _v "${_cudnn_version_lines}")
    set(CUDNN_VERSION_${_part} "${_v}")
  endforeach()
  set(CUDNN_VERSION_PATCH "${CUDNN_VERSION_PATCHLEVEL}")
  set(CUDNN_VERSION "${CUDNN_VERSION_MAJOR}.${CUDNN_VERSION_MINOR}.${CUDNN_VERSION_PATCH}")
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(CUDNN
  REQUIRED_VARS CUDNN_LIBRARY CUDNN_INCLUDE_DIR
  VERSION_VAR CUDNN_VERSION)

if(CUDNN_FOUND AND NOT TARGET CUDNN::cudnn)
  add_library(CUDNN::cudnn SHARED IMPORTED)
  set_target_properties(CUDNN::cudnn PROPERTIES
    IMPORTED_LOCATION "${CUDNN_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${CUDNN_INCLUDE_DIR}")
  # libcudnn.so.9 loads its sub-libraries (ops, cnn, engines) from its own directory at run
  # time; a wheel's directory is not on the loader's path, so record it for consumers' RPATH.
  get_filename_component(_cudnn_lib_dir "${CUDNN_LIBRARY}" DIRECTORY)
  set_property(TARGET CUDNN::cudnn PROPERTY INTERFACE_LINK_DIRECTORIES "${_cudnn_lib_dir}")
  set_property(TARGET CUDNN::cudnn PROPERTY INTERFACE_LINK_OPTIONS
    "LINKER:-rpath,${_cudnn_lib_dir}")
endif()

mark_as_advanced(CUDNN_INCLUDE_DIR CUDNN_LIBRARY)
