#!/usr/bin/env bash
# The README's promise, rehearsed: a minimal Debian 12 (debootstrap --variant=minbase) from this
# machine's apt mirror, a clone of HEAD in it, and the README's two commands run in a chroot as
# root, exactly as the README shows them. Prints pass or fail and the time of each command;
# exits 0 only when both pass, and a test suite that skipped tests (a test tool the README's
# command could not install) does not pass unless SEEDRL_FRESH_ALLOW_SKIPS=1. Takes about half
# an hour to an hour on two cores; not part of .ci/run.
#
#   scripts/fresh-machine-check.sh [--only demo|test] [--keep]
#
# --only runs one of the two commands; --keep leaves the root in place (mounts are still
# removed) for a look afterwards.
#
# The bare base system is cached (SEEDRL_FRESH_CACHE, default ~/.cache/seedrl/fresh-machine),
# never anything the README commands installed: each run unpacks the base into a new temporary
# directory under SEEDRL_FRESH_WORK (default /var/tmp) and deletes it at the end. Logs of each
# command stay in the cache's logs/ folder. SEEDRL_FRESH_TIMEOUT bounds each command (seconds,
# default 5400).
#
# What the fresh root gets from this machine, and nothing else: the apt sources' Debian entries
# (read from /etc/apt, so no mirror is named here), the local CA certificates and CA bundle,
# pip's system configuration, the PIP_* and SSL_* variables and a hosts file naming localhost
# (debootstrap writes none; it copies the resolver configuration itself).
set -euo pipefail

only=""
keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --only) only=${2:?--only needs demo or test}; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n '2,/^set -euo pipefail/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "fresh-machine-check: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$only" in ""|demo|test) ;; *) echo "fresh-machine-check: --only demo|test" >&2; exit 2 ;; esac

die() { echo "fresh-machine-check: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "run as root (debootstrap, chroot and mount need it)"
for tool in debootstrap chroot mount umount git tar timeout; do
  command -v "$tool" >/dev/null || die "$tool is missing (apt-get install debootstrap git)"
done

repo=$(cd "$(dirname "$0")/.." && git rev-parse --show-toplevel)
commit=$(git -C "$repo" rev-parse HEAD)
if [ -n "$(git -C "$repo" status --porcelain --untracked-files=no)" ]; then
  echo "fresh-machine-check: the work tree has uncommitted changes; only HEAD is checked" >&2
fi
timeout_s=${SEEDRL_FRESH_TIMEOUT:-5400}
cache=${SEEDRL_FRESH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/seedrl/fresh-machine}
mkdir -p "$cache/logs"

# --- the host's Debian 12 apt entries -----------------------------------------------------
# One "URI SUITE COMPONENTS" line per enabled deb entry of a bookworm suite, from both the
# one-line format (*.list) and deb822 (*.sources).
host_apt_entries() {
  local f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    sed -e 's/#.*//' -e 's/\[[^]]*\]//' "$f" |
      awk '$1 == "deb" && $3 ~ /^bookworm/ { c = ""; for (i = 4; i <= NF; i++) c = c " " $i;
                                             print $2, $3 c }'
  done
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk 'function flush() {
           if (types ~ /(^| )deb( |$)/ && enabled != "no")
             for (i = 1; i <= nu; i++) for (j = 1; j <= ns; j++)
               if (s[j] ~ /^bookworm/) print u[i], s[j], comps
           types = ""; enabled = ""; nu = 0; ns = 0; comps = ""
         }
         /^[ \t]*#/ { next }
         /^[ \t]*$/ { flush(); next }
         { key = tolower($1); sub(/:$/, "", key); $1 = ""; sub(/^ +/, "")
           if (key == "types") types = $0
           else if (key == "enabled") enabled = tolower($0)
           else if (key == "uris") nu = split($0, u, " ")
           else if (key == "suites") ns = split($0, s, " ")
           else if (key == "components") comps = $0 }
         END { flush() }' "$f"
  done
}
entries=$(host_apt_entries | sort -u)
mirror=$(awk '$2 == "bookworm" { print $1; exit }' <<<"$entries")
[ -n "$mirror" ] || die "no enabled 'deb ... bookworm' entry in this machine's apt sources"

# --- the cached bare base system ----------------------------------------------------------
key=$( (echo "$mirror"; debootstrap --version; dpkg --print-architecture) | sha256sum | cut -c1-16)
base="$cache/debian12-minbase-$key.tar"
if [ ! -f "$base" ]; then
  echo "fresh-machine-check: building the base system (debootstrap --variant=minbase bookworm)"
  staging=$(mktemp -d "${SEEDRL_FRESH_WORK:-/var/tmp}/seedrl-base.XXXXXX")
  if ! debootstrap --variant=minbase bookworm "$staging" "$mirror" >"$cache/logs/debootstrap.log" 2>&1; then
    tail -20 "$cache/logs/debootstrap.log" >&2
    # debootstrap mounts proc and sys in the target while it works; they are gone by now unless
    # it died in between.
    grep -q " $staging" /proc/self/mounts || rm -rf --one-file-system "$staging"
    die "debootstrap failed (log: $cache/logs/debootstrap.log)"
  fi
  rm -f "$staging"/var/cache/apt/archives/*.deb  # a fresh machine has no package downloads
  tar -C "$staging" -cf "$base.partial" . && mv "$base.partial" "$base"
  rm -rf --one-file-system "$staging"
fi

# --- a fresh root for this run ------------------------------------------------------------
work=$(mktemp -d "${SEEDRL_FRESH_WORK:-/var/tmp}/seedrl-fresh.XXXXXX")
root="$work/root"
mounts=()
cleanup() {
  local rc=$? i
  # Whatever the README commands left running inside the root holds its mounts.
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] && kill -9 "${p#/proc/}" 2>/dev/null
  done
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
    umount -R "${mounts[i]}" 2>/dev/null || umount -R -l "${mounts[i]}" 2>/dev/null || true
  done
  if grep -q " $root[/ ]" /proc/self/mounts; then
    echo "fresh-machine-check: mounts remain under $root; not deleting $work" >&2
  elif [ "$keep" = 1 ]; then
    echo "fresh-machine-check: kept $root"
  else
    rm -rf --one-file-system "$work"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

mkdir -p "$root"
tar -C "$root" -xf "$base"

# apt: the host's Debian entries.
rm -f "$root/etc/apt/sources.list"
while read -r uri suite comps; do
  printf 'Types: deb\nURIs: %s\nSuites: %s\nComponents: %s\n\n' "$uri" "$suite" "$comps"
done <<<"$entries" >"$root/etc/apt/sources.list.d/debian.sources"
# The registries as this machine reaches them: hosts, certificates, pip's configuration.
printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' >"$root/etc/hosts"
if [ -d /usr/local/share/ca-certificates ]; then
  mkdir -p "$root/usr/local/share/ca-certificates"
  cp -rL /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/"
fi
if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
  mkdir -p "$root/etc/ssl/certs"
  cp -L /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
fi
for f in /etc/pip.conf /etc/xdg/pip/pip.conf; do
  if [ -f "$f" ]; then mkdir -p "$root$(dirname "$f")"; cp -L "$f" "$root$f"; fi
done
passenv=()
while IFS= read -r name; do
  passenv+=("$name=${!name}")
done < <(compgen -e | grep -E '^(PIP_|SSL_)' || true)

for m in proc sys dev; do
  mkdir -p "$root/$m"
done
mount -t proc proc "$root/proc" && mounts+=("$root/proc")
mount --rbind /sys "$root/sys" && mounts+=("$root/sys")
mount --rbind /dev "$root/dev" && mounts+=("$root/dev")
mount --make-rslave "$root/sys" 2>/dev/null || true
mount --make-rslave "$root/dev" 2>/dev/null || true

git clone --quiet --no-local "$repo" "$root/root/seedrl"
git -C "$root/root/seedrl" checkout --quiet --detach "$commit"

# --- the README's commands ----------------------------------------------------------------
logs="$cache/logs/$(date -u +%Y%m%dT%H%M%SZ)-${commit:0:12}"
mkdir -p "$logs"
results=()
status=0
run_readme_command() {  # NAME COMMAND
  local name=$1 command=$2 start=$SECONDS rc=0 verdict
  echo "fresh-machine-check: $command (log: $logs/$name.log)"
  timeout --kill-after=30 "$timeout_s" chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 \
    TERM=dumb PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "${passenv[@]}" \
    /bin/bash -c "cd /root/seedrl && $command" >"$logs/$name.log" 2>&1 || rc=$?
  local took=$((SECONDS - start))
  # A test the suite skipped on a fresh machine means a test tool the README's command failed
  # to install there (the tests skip, saying why, where one is missing): that breaks the
  # promise too, unless SEEDRL_FRESH_ALLOW_SKIPS=1.
  local skipped
  skipped=$(grep -c '^[[:space:]]*[0-9]* - .* (Skipped)$' "$logs/$name.log" || true)
  if [ "$rc" -eq 0 ] && [ "$skipped" -gt 0 ] && [ "${SEEDRL_FRESH_ALLOW_SKIPS:-0}" != 1 ]; then
    rc=1
    verdict="FAIL ($skipped tests skipped)"
  elif [ "$rc" -eq 0 ]; then
    verdict=pass
  elif [ "$rc" -eq 124 ]; then
    verdict="FAIL (timed out after $timeout_s s)"
  else
    verdict="FAIL (exit $rc)"
  fi
  [ "$rc" -eq 0 ] || status=1
  results+=("$(printf '  %-18s %-28s %5d s' "$command" "$verdict" "$took")")
  if [ "$rc" -ne 0 ] && [ "$skipped" -eq 0 ]; then
    echo "--- last lines of $logs/$name.log ---"
    tail -30 "$logs/$name.log"
  fi
  if [ "$skipped" -gt 0 ]; then
    echo "--- skipped in $name (the log says why) ---"
    grep '^[[:space:]]*[0-9]* - .* (Skipped)$' "$logs/$name.log"
    grep "^seedrl: could not" "$logs/$name.log" || true
  fi
}
[ "$only" = test ] || run_readme_command demo ./scripts/demo.sh
[ "$only" = demo ] || run_readme_command test ./scripts/test.sh

echo "fresh-machine-check: commit ${commit:0:12}, $(date -u +%Y-%m-%d), Debian $(cat "$root/etc/debian_version")"
printf '%s\n' "${results[@]}"
if [ "$status" -eq 0 ]; then echo "fresh-machine-check: PASS"; else echo "fresh-machine-check: FAIL"; fi
exit "$status"
