# Installs the configured build tree BUILD_DIR into a fresh PREFIX.
file(REMOVE_RECURSE "${PREFIX}")
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${PREFIX}"
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (${rc})")
endif()
foreach(f include/seedrl/seedrl.hpp include/seedrl/env/cartpole.hpp
          share/cmake/seedrl/seedrlConfig.cmake share/cmake/seedrl/seedrlConfigVersion.cmake)
  if(NOT EXISTS "${PREFIX}/${f}")
    message(FATAL_ERROR "install is missing ${f}")
  endif()
endforeach()
message(STATUS "installed seedrl into ${PREFIX}")
