# The configure never dies inside an optional dependency's config (issue 27): seedrl is
# configured (not built) against stand-ins for broken installs, and must go on without each
# dependency, saying why in one line. Then CI=true must refuse a missing test dependency.
#   cmake -DSOURCE_DIR=... -DWORK=... -DGENERATOR=... -DCXX=... -P configure_without_optional.cmake
file(REMOVE_RECURSE "${WORK}")

# Stand-ins for the ways a real config fails: a dependency of its own that is missing (Debian's
# oneDNN without the OpenCL headers), an explicit error, a half-removed package.
file(WRITE "${WORK}/broken/dnnl/dnnl-config.cmake"
  "find_package(SeedrlNoSuchDependency REQUIRED)\n")
file(WRITE "${WORK}/broken/CLI11/CLI11Config.cmake"
  "message(FATAL_ERROR \"CLI11 broken on purpose\")\n")
file(WRITE "${WORK}/broken/benchmark/benchmarkConfig.cmake"
  "include(\"\${CMAKE_CURRENT_LIST_DIR}/benchmarkTargets-removed.cmake\")\n")
file(WRITE "${WORK}/broken/Catch2/Catch2Config.cmake"
  "message(FATAL_ERROR \"Catch2 broken on purpose\")\n")
file(WRITE "${WORK}/broken/Boost/BoostConfig.cmake"
  "message(FATAL_ERROR \"Boost broken on purpose\")\n")

# seedrl asks for versions: a config without a version file would be passed over, not loaded.
foreach(pkg_version IN ITEMS "CLI11;2.3.2" "Catch2;2.13.10" "Boost;1.74.0")
  list(GET pkg_version 0 pkg)
  list(GET pkg_version 1 version)
  file(WRITE "${WORK}/broken/${pkg}/${pkg}ConfigVersion.cmake"
    "set(PACKAGE_VERSION ${version})\nset(PACKAGE_VERSION_COMPATIBLE TRUE)\n")
endforeach()

# configure(NAME EXPECT_RC OUT_VAR [ENV...] -- [cmake args...])
function(configure name expect_rc out_var)
  cmake_parse_arguments(PARSE_ARGV 3 arg "" "" "ENV;ARGS")
  execute_process(
    COMMAND "${CMAKE_COMMAND}" -E env ${arg_ENV}
            "${CMAKE_COMMAND}" -S "${SOURCE_DIR}" -B "${WORK}/${name}" -G "${GENERATOR}"
            "-DCMAKE_CXX_COMPILER=${CXX}" -DSEEDRL_ENABLE_CUDA=OFF ${arg_ARGS}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(out "${out}${err}")
  if(expect_rc EQUAL 0 AND NOT rc EQUAL 0)
    message(FATAL_ERROR "configure '${name}' failed (${rc}):\n${out}")
  elseif(NOT expect_rc EQUAL 0 AND rc EQUAL 0)
    message(FATAL_ERROR "configure '${name}' succeeded but should have failed:\n${out}")
  endif()
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

function(expect out pattern)
  if(NOT out MATCHES "${pattern}")
    message(FATAL_ERROR "expected a line matching\n  ${pattern}\nin:\n${out}")
  endif()
endfunction()

# 1. oneDNN, CLI11 and Google Benchmark broken: configured without them (had any of their
# configs been loaded by the configure itself, it would have failed).
configure(deps 0 out ENV --unset=CI ARGS
  "-Ddnnl_DIR=${WORK}/broken/dnnl" "-DCLI11_DIR=${WORK}/broken/CLI11"
  "-Dbenchmark_DIR=${WORK}/broken/benchmark")
expect("${out}" "seedrl: oneDNN: its config needs SeedrlNoSuchDependency, which was not found; CPU convolutions use im2col \\+ GEMM\\. To use it: apt-get install libdnnl-dev ocl-icd-opencl-dev")
expect("${out}" "seedrl: CLI11: CLI11 broken on purpose; seedrl::app and the example programs are not built")
expect("${out}" "seedrl: Google Benchmark: [^\n]*benchmarkTargets-removed[^\n]*; the CPU benchmarks")

# 2. Boost and Catch2 broken: no transports, no tests, still configured.
configure(boost_catch 0 out ENV --unset=CI ARGS
  "-DBoost_DIR=${WORK}/broken/Boost" "-DCatch2_DIR=${WORK}/broken/Catch2")
expect("${out}" "seedrl: Boost's headers: Boost broken on purpose; seedrl::asio")
expect("${out}" "seedrl: Catch2 \\(for the tests\\): Catch2 broken on purpose; the tests are not built")

# 3. In CI a missing test dependency stops the configure, naming it.
configure(ci_catch 1 out ENV CI=true ARGS "-DCatch2_DIR=${WORK}/broken/Catch2")
expect("${out}" "CI=true and Catch2, which the tests need, is missing")

file(REMOVE_RECURSE "${WORK}")
message(STATUS "configure without optional dependencies: ok")
