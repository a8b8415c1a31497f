#!/usr/bin/env bash
# Stops a cluster started by scripts/slurm-up.sh DIR, by PID: slurmctld, every slurmd, every
# process still inside a fake node's namespaces (slurmstepd, exporters), the simulated
# nodes and munged; then waits for the namespaces to go (which takes their veths and
# mounts along) and deletes the bridge. Safe on a half-started or already stopped cluster.
# Exit status 1 when something could not be stopped.
# usage: slurm-down.sh DIR
set -uo pipefail
[ $# -eq 1 ] || { echo "usage: slurm-down.sh DIR" >&2; exit 2; }
D=$(realpath -m "$1")
[ -d "$D/run" ] || exit 0
status=0

alive() { kill -0 "$1" 2>/dev/null && [ "$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" != Z ]; }

# stop PID...: SIGTERM, up to 5 s, then SIGKILL.
stop() {
  local p
  for p in "$@"; do kill -TERM "$p" 2>/dev/null; done
  for p in "$@"; do
    for _ in $(seq 50); do alive "$p" || break; sleep 0.1; done
    if alive "$p"; then
      kill -KILL "$p" 2>/dev/null
      sleep 0.1
      alive "$p" && { echo "slurm-down: pid $p survived SIGKILL" >&2; status=1; }
    fi
  done
}

pid_of() { [ -f "$1" ] && cat "$1" 2>/dev/null; }

daemons=()
for f in "$D"/run/slurmctld.pid "$D"/run/slurmd.*.pid; do
  p=$(pid_of "$f") && [ -n "$p" ] && daemons+=("$p")
done
((${#daemons[@]})) && stop "${daemons[@]}"

# Whatever still runs in a fake node's network namespace (slurmstepd outlives slurmd by
# design, and so do the tasks it started): found by namespace identity, not by name, in one
# pass over /proc for all nodes.
declare -A node_ns=()
holders=" "
for nsfile in "$D"/nodes/*/netns; do
  [ -f "$nsfile" ] && node_ns[$(cat "$nsfile")]=1
done
for f in "$D"/run/holder.*.pid; do
  p=$(pid_of "$f") && holders+="$p "
done
inside=()
if ((${#node_ns[@]})); then
  for p in /proc/[0-9]*; do
    p=${p#/proc/}
    [[ $holders == *" $p "* ]] && continue
    ns=$(readlink "/proc/$p/ns/net" 2>/dev/null) || continue
    [ -n "${node_ns[$ns]:-}" ] && inside+=("$p")
  done
fi
((${#inside[@]})) && stop "${inside[@]}"

others=()
for f in "$D"/run/holder.*.pid "$D"/run/sim.*.pid "$D"/run/munged.pid; do
  p=$(pid_of "$f") && [ -n "$p" ] && others+=("$p")
done
((${#others[@]})) && stop "${others[@]}"

# A namespace (with its veth and mounts) is freed once its last process is gone.
bridge=$(cat "$D/run/bridge" 2>/dev/null || true)
if [ -n "$bridge" ]; then
  for _ in $(seq 50); do
    ip -o link show master "$bridge" 2>/dev/null | grep -q . || break
    sleep 0.1
  done
  ip link del "$bridge" 2>/dev/null
  if ip link show "$bridge" >/dev/null 2>&1; then
    echo "slurm-down: bridge $bridge still present" >&2
    status=1
  fi
fi
rm -f "$D"/run/*.pid
exit $status
