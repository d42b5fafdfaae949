# Sourced by the test scripts that need a test tool (gymnasium, ale-py, MuJoCo, Conan):
# `missing_tool "WHAT ..."` ends the test as skipped (exit 77, with the marker ctest reads),
# or, in CI (CI=true), as failed, naming the tool: there a missing tool must not pass as a skip.
missing_tool() {
  if [ "${CI:-}" = true ]; then
    echo "FAILED: CI=true and a test tool is missing: $*" >&2
    exit 1
  fi
  echo "SEEDRL_TEST_SKIPPED: $*"
  exit 77
}
