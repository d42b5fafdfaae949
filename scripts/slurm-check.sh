#!/usr/bin/env bash
# Rehearses deploy/slurm/seedrl.sbatch on this machine (issue 30; not part of CI): starts a
# one-machine Slurm from Debian's slurm-wlm and munge (installed when missing; needs root),
# submits the sbatch script with two CPU learner ranks and two actor processes (its GPU lines
# removed, its partitions and counts fitted to one node), waits for the job and checks that the
# learners solved CartPole with every rank ending in the same state. The links between the two
# components run TLS 1.3 with the test certificates (SEEDRL_TLS_DIR=test/fixtures/tls; the
# learners' certificate names 127.0.0.1, the nodes' NodeAddr here). The daemons it started are
# stopped at the end, pass or fail.
#
#   scripts/slurm-check.sh [build dir]     (default build/release; builds seedrl_cartpole_seed)
#   SEEDRL_SLURM_ONLY_START=1 scripts/slurm-check.sh ...   starts the daemons, prints SLURM_CONF
#                                                          and leaves them running, for a look
#
# Slurm here: two node names on this host, each with a slurmd of its own (slurmd -N), since
# Slurm does not place a heterogeneous job's two components on one node. Passes here
# (2026-12-07: Slurm 22.05.8, Open MPI 4.1.4 with PMIx, in about a minute).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build/release}" && pwd)
fail() {
  echo "slurm-check: FAIL: $*" >&2
  exit 1
}
[ "$(id -u)" = 0 ] || fail "run as root: it starts munged, slurmctld and slurmd"
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends slurm-wlm munge
fi
program=$build/examples/seedrl_cartpole_seed
if [ ! -x "$program" ]; then
  [ -f "$build/CMakeCache.txt" ] || cmake --preset release
  cmake --build "$build" --target seedrl_cartpole_seed -j"$(nproc)"
fi
command -v mpirun >/dev/null || fail "no MPI: apt-get install libopenmpi-dev openmpi-bin"
ldd "$program" | grep -q libmpi || fail "$program was built without MPI"

work=$(mktemp -d /tmp/seedrl-slurm.XXXXXX)
chmod 755 "$work"
pids=()
cleanup() {
  scancel --full --quiet --user root 2>/dev/null || true
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# munge: a key of our own, a socket of our own.
mkdir -p "$work/munge"
dd if=/dev/urandom of="$work/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$work/munge/munge.key"
munged --foreground --force --key-file="$work/munge/munge.key" \
  --socket="$work/munge/socket" --pid-file="$work/munge/pid" --log-file="$work/munge/log" \
  --seed-file="$work/munge/seed" &
pids+=($!)
export MUNGE_SOCKET="$work/munge/socket"  # not read by Slurm: AuthInfo below says where

host=$(hostname -s)
cpus=8  # more than this machine may have: slurmd takes the configured count (config_overrides)
cat >"$work/slurm.conf" <<CONF
ClusterName=seedrl-check
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$work/munge/socket
CredType=cred/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool/%n
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd-%n.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd-%n.log
SlurmctldPort=16817
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
DefMemPerCPU=64
MpiDefault=none
SchedulerParameters=bf_interval=1,bf_hetjob_immediate
ReturnToService=2
SlurmdParameters=config_overrides
# Two node names on this host, each with a slurmd of its own (-N): the heterogeneous job's
# components (learners, actors) go to different nodes, as on a cluster.
NodeName=gpunode NodeHostname=$host NodeAddr=127.0.0.1 Port=16818 CPUs=$cpus RealMemory=4096 State=UNKNOWN
NodeName=cpunode NodeHostname=$host NodeAddr=127.0.0.1 Port=16819 CPUs=$cpus RealMemory=4096 State=UNKNOWN
PartitionName=check Nodes=gpunode,cpunode Default=YES MaxTime=INFINITE State=UP
CONF
mkdir -p "$work/state" "$work/spool/gpunode" "$work/spool/cpunode"
export SLURM_CONF="$work/slurm.conf"
slurmctld -D -f "$SLURM_CONF" &
pids+=($!)
for node in gpunode cpunode; do
  slurmd -D -N "$node" -f "$SLURM_CONF" &
  pids+=($!)
done
for _ in $(seq 1 100); do
  [ "$(sinfo -h -N -o '%T' 2>/dev/null | grep -cE '^(idle|mixed)')" = 2 ] && break
  sleep 0.2
done
[ "$(sinfo -h -N -o '%T' | grep -cE '^(idle|mixed)')" = 2 ] ||
  { tail -20 "$work"/slurm*.log >&2; fail "the nodes never came up"; }
echo "slurm-check: Slurm up on this machine ($(sinfo -h -N -o '%N %c CPUs %T' | tr '\n' ' '))"

if [ -n "${SEEDRL_SLURM_ONLY_START:-}" ]; then
  echo "SLURM_CONF=$SLURM_CONF"
  trap - EXIT
  exit 0
fi

# The sbatch script, fitted to one node: no GPUs, this partition, two learner ranks and two
# actor tasks. Everything else, the body included, is the script as shipped.
sed -e '/^#SBATCH --gres=/d' \
  -e 's/^#SBATCH --partition=.*/#SBATCH --partition=check/' \
  -e 's/^#SBATCH --nodes=.*/#SBATCH --nodes=1/' \
  -e 's/^#SBATCH --ntasks-per-node=.*/#SBATCH --ntasks-per-node=2/' \
  -e 's/^#SBATCH --cpus-per-task=.*/#SBATCH --cpus-per-task=1/' \
  -e 's/^#SBATCH --time=.*/#SBATCH --time=00:20:00/' \
  "$root/deploy/slurm/seedrl.sbatch" >"$work/seedrl.sbatch"
mkdir -p "$work/run"
# Open MPI's ranks under srun find their PMIx server through Slurm; as root they need leave.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out="$work/run/job.out"
rc=0
(cd "$work/run" && SEEDRL_PROGRAM="$program" SEEDRL_RUN_DIR="$work/run" SEEDRL_PORT=19300 \
  SEEDRL_ENVS_PER_ACTOR=8 SEEDRL_TLS_DIR="$root/test/fixtures/tls" timeout 900 sbatch --wait --output="$out" "$work/seedrl.sbatch" \
  --algo ppo --target-return 475 --total-frames 4000000) || rc=$?
echo "slurm-check: job output:"
grep -v '^frames' "$out" | tail -30 || true
((rc == 0)) || fail "the job exited $rc"
grep -q '^solved: mean return\|stopped the run (solved)' "$out" || fail "CartPole was not solved"
hashes=$(sed -n 's/.*rank \([01]\) of 2: parameters and optimizer state \([0-9a-f]*\) after.*/\2/p' "$out" | sort -u)
[ "$(echo "$hashes" | wc -w)" = 1 ] || fail "the ranks did not end in one state: $hashes"
ls "$work/run/checkpoints" | grep -q '^ckpt-' || fail "rank 0 wrote no checkpoint"
! grep -q 'TLS handshake failed\|TLS refused' "$out" || fail "a TLS handshake failed"
echo "slurm-check: PASS (two learner ranks and two actors under Slurm, over TLS, solved CartPole)"
