#!/usr/bin/env bash
# A one-machine Slurm cluster (Debian's slurmctld + slurmd + munge) for trying `srun` launches of
# chorus: `up` writes a configuration for this host into a state directory, starts munged,
# slurmctld and slurmd and waits until the node is idle; `down` stops them and removes the
# directory. Needs root and Debian's packages: apt-get install slurmd slurmctld slurm-client munge.
#
#   scripts/slurm_one_machine.sh up [DIR [PORT]]   # DIR default /tmp/chorus-slurm; slurmctld
#                                                  # on PORT (default 6917), slurmd on PORT + 1
#   SLURM_CONF=DIR/slurm.conf srun -n 2 build/chorus bench allreduce --launched -b 1K -e 1M
#   scripts/slurm_one_machine.sh down [DIR]
set -euo pipefail

action=${1:-}
dir=${2:-/tmp/chorus-slurm}
port=${3:-6917}
host=$(hostname -s)

die() {
  echo "slurm_one_machine.sh: $*" >&2
  exit 1
}

up() {
  [ "$(id -u)" = 0 ] || die "needs root (the daemons run as root)"
  for tool in slurmctld slurmd srun munged; do
    command -v "$tool" > /dev/null ||
      die "$tool not found; install Debian's slurmd slurmctld slurm-client munge"
  done
  mkdir -p "$dir/ctld" "$dir/d" "$dir/munge" "$dir/log"
  # This host's CPUs as slurmd sees them (its first line is the node line).
  local node
  node=$(slurmd -C | head -n 1)
  cat > "$dir/slurm.conf" << EOF
ClusterName=chorus-test
SlurmctldHost=$host
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket.2
CryptoType=crypto/munge
SlurmUser=root
SlurmdUser=root
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
StateSaveLocation=$dir/ctld
SlurmdSpoolDir=$dir/d
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
$node State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
EOF
  : > "$dir/cgroup.conf"
  munged --socket="$dir/munge/munge.socket.2" --pid-file="$dir/munge/munged.pid" \
    --log-file="$dir/log/munged.log" --seed-file="$dir/munge/munged.seed" --force
  SLURM_CONF="$dir/slurm.conf" slurmctld
  SLURM_CONF="$dir/slurm.conf" slurmd
  for _ in $(seq 1 60); do
    if SLURM_CONF="$dir/slurm.conf" sinfo -h -o %T 2> /dev/null | grep -q idle; then
      echo "slurm up: SLURM_CONF=$dir/slurm.conf (node $host)"
      return 0
    fi
    sleep 1
  done
  die "the node did not become idle within 60 s; see $dir/log"
}

down() {
  for pid in "$dir/slurmd.pid" "$dir/slurmctld.pid" "$dir/munge/munged.pid"; do
    [ -f "$pid" ] && kill "$(cat "$pid")" 2> /dev/null || true
  done
  sleep 1
  rm -rf "$dir"
}

case "$action" in
  up) up ;;
  down) down ;;
  *) die "usage: $0 up|down [DIR]" ;;
esac
