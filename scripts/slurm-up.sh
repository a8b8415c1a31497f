#!/usr/bin/env bash
# Starts a local Slurm cluster whose fake nodes look like real worker nodes to a process
# that srun starts on them: slurmctld on the host and one slurmd per fake node, each slurmd
# in its own network, mount and UTS namespaces, with
#   - its own address on a private bridge (so every node's exporter binds the same port),
#   - its own simulated /sys/class/hwmon (a `cpu-power sim-node` tree bind-mounted there),
#   - its node name as hostname. srun's %N is the host name of the node a task runs on; on
#     fake nodes that share the machine's hostname it would be the same for every node, and
#     `--output .../x.%N.out` would make them all write (and truncate) one file. With the
#     node name as hostname, %N names one file per node, as on a cluster.
# Everything lives under DIR, including a private munged; scripts/slurm-down.sh DIR stops
# it all by PID and removes the namespaces, the mounts and the bridge.
#
# usage: slurm-up.sh [--sim BIN_DIR] [--profile gb200|gh200] [--update-ms MS] DIR N|NAME...
#   N      a node count: nodes n1..nN
#   NAME.. explicit node names. Slurm forbids whitespace, ',', '#' and brackets in them, and
#          its slurmd cannot signal steps on a node whose name is not a valid regular
#          expression ('(', '{', ...); shell metacharacters such as ; & < > ' " ! % ~ work
#          and are exercised by the tests
#   --sim  BIN_DIR holding cpu-power: run a simulated node per fake node (without it the
#          fake nodes have an empty /sys/class/hwmon)
# Needs root. Prints the environment to use (also written to DIR/env.sh).
set -euo pipefail

SIM_BIN="" PROFILE=gb200 UPDATE_MS=500
while [ $# -gt 0 ]; do
  case "$1" in
    --sim) SIM_BIN=$(realpath "$2"); shift 2 ;;
    --profile) PROFILE=$2; shift 2 ;;
    --update-ms) UPDATE_MS=$2; shift 2 ;;
    --) shift; break ;;
    -*) echo "slurm-up: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
[ $# -ge 2 ] || { echo "usage: slurm-up.sh [--sim BIN_DIR] DIR N|NAME..." >&2; exit 2; }
D=$(realpath -m "$1")
shift
NAMES=()
if [ $# -eq 1 ] && [[ $1 =~ ^[0-9]+$ ]]; then
  for i in $(seq 1 "$1"); do NAMES+=("n$i"); done
else
  NAMES=("$@")
fi
N=${#NAMES[@]}
((N >= 1 && N <= 250)) || { echo "slurm-up: 1..250 nodes" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "slurm-up: needs root (namespaces, slurmd)" >&2; exit 1; }

HERE=$(dirname "$(realpath "$0")")
mkdir -p "$D"/{state,log,run,spool,nodes,munge}
# Undo whatever part of the bring-up happened, so a failed start leaves nothing behind.
# The ERR trap remembers which command failed, so that the message names it.
FAILED_AT=""
set -E  # the ERR trap also fires inside functions
trap 'FAILED_AT="line $LINENO: $BASH_COMMAND"' ERR
trap 'rc=$?; if [ $rc -ne 0 ]; then echo "slurm-up: failed (${FAILED_AT:-exit $rc}), tearing down" >&2; bash "$HERE/slurm-down.sh" "$D" >&2 || true; fi' EXIT

# Names derived from DIR, so that two clusters never share a bridge, subnet or port.
HASH=$(printf '%s' "$D" | md5sum | cut -c1-6)
NET=$((0x${HASH:0:2} % 250 + 1))
BRIDGE="cpb$HASH"
# slurmctld's port lies below the kernel's ephemeral range, which every client connection and
# every port-0 listener of the tests draws from: a port in that range can be taken by one.
read -r EPHEMERAL_LO _ </proc/sys/net/ipv4/ip_local_port_range
PORT_BASE=$((EPHEMERAL_LO > 21000 ? 20000 : 1024))
CTL_PORT=$((PORT_BASE + 0x${HASH:2:4} % (EPHEMERAL_LO - PORT_BASE)))
HOST_ADDR="10.213.$NET.1"
echo "$BRIDGE" >"$D/run/bridge"
printf '%s\n' "${NAMES[@]}" >"$D/nodes/names"

# munged on its own socket, with a root-owned copy of the machine's key (Debian's package
# creates /etc/munge/munge.key at install time). --force: DIR may sit below a 0700 temporary
# directory, which munged would refuse as "inaccessible"; every client here is root.
chmod 755 "$D/munge"
install -m 0600 /etc/munge/munge.key "$D/munge/munge.key"
/usr/sbin/munged --force --socket="$D/munge/munge.sock" --key-file="$D/munge/munge.key" \
  --log-file="$D/munge/munged.log" --pid-file="$D/run/munged.pid" \
  --seed-file="$D/munge/munged.seed"

conf="$D/slurm.conf"
cat >"$conf" <<CONF
ClusterName=local
SlurmctldHost=$(hostname -s)($HOST_ADDR)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$D/munge/munge.sock
SlurmctldPort=$CTL_PORT
SlurmdPort=6818
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool/%n
SlurmctldPidFile=$D/run/slurmctld.pid
SlurmdPidFile=$D/run/slurmd.%n.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd.%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
KillWait=2
# Het jobs are scheduled by the backfill scheduler only, every bf_interval (30 s by default).
SchedulerParameters=bf_interval=1
MailProg=/bin/true
CONF
for i in $(seq 1 "$N"); do
  name=${NAMES[$((i - 1))]}
  echo "NodeName=$name NodeHostname=$name NodeAddr=10.213.$NET.$((i + 1)) CPUs=2 RealMemory=1000 State=UNKNOWN" >>"$conf"
  mkdir -p "$D/spool/$name" "$D/nodes/$i/hwmon" "$D/nodes/$i/stage"
done
echo "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8" >>"$conf"
export SLURM_CONF="$conf"
echo "export SLURM_CONF=$(printf '%q' "$conf")" >"$D/env.sh"

ip link add "$BRIDGE" type bridge
ip addr add "$HOST_ADDR/24" dev "$BRIDGE"
ip link set "$BRIDGE" up

slurmctld -f "$conf"

# One fake node: a holder process owns the namespaces; slurmd is started inside them, and
# everything srun starts there (slurmstepd, the exporter) inherits them.
start_node() {
  local i=$1 name=$2 dir="$D/nodes/$1" holder veth="${BRIDGE}v$1" peer="${BRIDGE}p$1"
  echo "$name" >"$dir/name"
  if [ -n "$SIM_BIN" ]; then
    "$SIM_BIN/cpu-power" sim-node --root "$dir/hwmon" --profile "$PROFILE" \
      --update-ms "$UPDATE_MS" --seed "$i" </dev/null >"$dir/sim.log" 2>&1 &
    echo $! >"$D/run/sim.$i.pid"
  fi
  unshare --net --mount --uts --propagation private sleep infinity </dev/null >/dev/null 2>&1 &
  holder=$!
  echo "$holder" >"$D/run/holder.$i.pid"
  for _ in $(seq 100); do
    [ "$(readlink "/proc/$holder/ns/net")" != "$(readlink /proc/self/ns/net)" ] && break
    sleep 0.01
  done
  readlink "/proc/$holder/ns/net" >"$dir/netns"
  ip link add "$veth" type veth peer name "$peer"
  ip link set "$veth" master "$BRIDGE"
  ip link set "$veth" up
  ip link set "$peer" netns "$holder"
  nsenter -t "$holder" -n sh -c "ip link set lo up && ip link set $peer name eth0 &&
    ip addr add 10.213.$NET.$((i + 1))/24 dev eth0 && ip link set eth0 up &&
    ip route add default via $HOST_ADDR"
  # /sys/class/hwmon: bind the node's tree there. Where the host has no hwmon class (this
  # build machine) a tmpfs over /sys/class carries the host's other classes, re-bound one
  # by one, plus the hwmon mount point. All of it exists only in the node's mount namespace.
  nsenter -t "$holder" -m sh -c '
    set -e
    if [ ! -d /sys/class/hwmon ]; then
      mount --bind /sys/class "$1/stage"
      mount -t tmpfs -o mode=755 sysclass /sys/class
      for e in "$1"/stage/*; do
        n=${e##*/}; mkdir "/sys/class/$n"; mount --bind "$e" "/sys/class/$n"
      done
      mkdir /sys/class/hwmon
    fi
    mount --bind "$1/hwmon" /sys/class/hwmon' sh "$dir"
  nsenter -t "$holder" -u /usr/bin/python3 -c 'import socket, sys; socket.sethostname(sys.argv[1])' "$name"
  nsenter -t "$holder" -n -m -u slurmd -f "$conf" -N "$name"
}

for i in $(seq 1 "$N"); do
  start_node "$i" "${NAMES[$((i - 1))]}"
done

# Ready when every simulated node has written its tree and every node is idle.
if [ -n "$SIM_BIN" ]; then
  for i in $(seq 1 "$N"); do
    for _ in $(seq 600); do
      grep -q '^sim-node ready' "$D/nodes/$i/sim.log" 2>/dev/null && break
      sleep 0.05
    done
    grep -q '^sim-node ready' "$D/nodes/$i/sim.log" || { cat "$D/nodes/$i/sim.log" >&2; exit 1; }
  done
fi
# sinfo fails until slurmctld answers, which on a busy machine can take a while: a failure
# is "none idle yet", not the end of the wait. A slurmctld that has exited ends it at once.
idle=0
deadline=$((SECONDS + 60))
while ((SECONDS < deadline)); do
  ctld=$(cat "$D/run/slurmctld.pid" 2>/dev/null || true)
  if [ -n "$ctld" ] && ! kill -0 "$ctld" 2>/dev/null; then
    echo "slurm-up: slurmctld exited; the end of its log:" >&2
    tail -5 "$D/log/slurmctld.log" >&2 || true
    exit 1
  fi
  idle=$(sinfo -h -t idle -o '%D' 2>/dev/null | awk '{s += $1} END {print s + 0}') || idle=0
  [ "$idle" = "$N" ] && break
  sleep 0.1
done
if [ "$idle" != "$N" ]; then
  echo "slurm-up: only $idle of $N nodes idle" >&2
  sinfo -N >&2 || true
  exit 1
fi
echo "slurm-up: $N nodes idle on $BRIDGE ($HOST_ADDR/24), slurmctld port $CTL_PORT"
echo "export SLURM_CONF=$(printf '%q' "$conf")"
