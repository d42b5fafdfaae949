# Sourced by the build scripts: `phase NAME COMMAND...` runs COMMAND and prints how long it took
# as `seedrl phase: NAME N s`, also appending that line to $SEEDRL_PHASE_LOG when it is set
# (.ci/run sets it and prints the collected lines as its closing summary).
phase() {
  local name=$1 start=$SECONDS
  shift
  "$@"
  local line="seedrl phase: $name $((SECONDS - start)) s"
  echo "$line"
  if [ -n "${SEEDRL_PHASE_LOG:-}" ]; then
    echo "$line" >>"$SEEDRL_PHASE_LOG"
  fi
}
