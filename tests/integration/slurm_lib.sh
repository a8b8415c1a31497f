# Shared set-up of the tests on a real local Slurm cluster (scripts/slurm-up.sh): sources
# lib.sh, and stops the cluster by PID when the test exits, whatever happened.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PY=/usr/bin/python3
CLUSTER="$WORK/cluster"
cluster_down() { bash "$ROOT/scripts/slurm-down.sh" "$CLUSTER" >&2 || true; }
trap 'cluster_down; cleanup' EXIT
[ "$(id -u)" = 0 ] || fail "needs root (network and mount namespaces, slurmd)"

# start_cluster N | NAME...: simulated nodes n1..nN (or the given names); exports
# SLURM_CONF and moves into $WORK.
start_cluster() {
  bash "$ROOT/scripts/slurm-up.sh" --sim "$BIN" "$CLUSTER" "$@" >"$WORK/up.log" 2>&1 ||
    { cat "$WORK/up.log"; fail "slurm-up"; }
  export SLURM_CONF="$CLUSTER/slurm.conf"
  cd "$WORK"
}
