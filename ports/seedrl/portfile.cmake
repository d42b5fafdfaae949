# vcpkg port for seedrl, a template library whose program layer (seedrl::app) is compiled. Copy ports/seedrl into an overlay-ports folder
# and point SEEDRL_SOURCE_PATH at a checkout, or replace the source step with
# vcpkg_from_github once releases are tagged.
set(VCPKG_BUILD_TYPE release)  # one configuration: seedrl::app is the only library

if(DEFINED ENV{SEEDRL_SOURCE_PATH})
  set(SOURCE_PATH "$ENV{SEEDRL_SOURCE_PATH}")
else()
  get_filename_component(SOURCE_PATH "${CMAKE_CURRENT_LIST_DIR}/../.." ABSOLUTE)
endif()

vcpkg_cmake_configure(
  SOURCE_PATH "${SOURCE_PATH}"
  OPTIONS
    -DSEEDRL_BUILD_TESTS=OFF
    -DSEEDRL_BUILD_EXAMPLES=OFF
    -DSEEDRL_BUILD_BENCHMARKS=OFF
    -DSEEDRL_ENABLE_CUDA=OFF
)
vcpkg_cmake_install()
vcpkg_cmake_config_fixup(PACKAGE_NAME seedrl CONFIG_PATH share/cmake/seedrl)
file(REMOVE_RECURSE "${CURRENT_PACKAGES_DIR}/debug" "${CURRENT_PACKAGES_DIR}/share/doc")
vcpkg_install_copyright(FILE_LIST "${SOURCE_PATH}/LICENSE")
