#!/usr/bin/env bash
# Simulated hosts on this machine for chorus's multi-host tests and recipes: network namespaces
# joined by a bridge, each with its own address, as separate machines on one Ethernet segment.
# Needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN) and iproute2.
#
#   scripts/netns_hosts.sh up ID N     creates hosts ID-h0 .. ID-h<N-1> (addresses 10.231.0.1 ..
#                                      10.231.0.N on eth0) and the switch ID-sw; prints the hosts
#   scripts/netns_hosts.sh down ID     removes them (and anything still running in them)
#   scripts/netns_hosts.sh addr ID I   prints host I's address
#
# Run a program on host I: ip netns exec ID-hI PROGRAM. ID: a short name, e.g. ch1 (the
# interface names it makes must fit in 15 characters).
set -euo pipefail

usage() {
  sed -n '2,13p' "$0" >&2
  exit 2
}

[[ $# -ge 2 ]] || usage
command=$1
id=$2

address() { echo "10.231.0.$(($1 + 1))"; }

case "$command" in
  up)
    [[ $# -eq 3 && $3 -ge 1 && $3 -le 200 ]] || usage
    hosts=$3
    ip netns add "$id-sw"
    ip -n "$id-sw" link add br0 type bridge
    ip -n "$id-sw" link set br0 up
    for ((i = 0; i < hosts; i++)); do
      ip netns add "$id-h$i"
      ip link add "$id-v$i" netns "$id-sw" type veth peer name eth0 netns "$id-h$i"
      ip -n "$id-sw" link set "$id-v$i" master br0
      ip -n "$id-sw" link set "$id-v$i" up
      ip -n "$id-h$i" addr add "$(address "$i")/24" dev eth0
      ip -n "$id-h$i" link set eth0 up
      ip -n "$id-h$i" link set lo up
      echo "$id-h$i $(address "$i")"
    done
    ;;
  down)
    for ns in $(ip netns list | awk '{print $1}' | grep -E "^$id-(h[0-9]+|sw)$" || true); do
      for pid in $(ip netns pids "$ns" 2>/dev/null || true); do kill -9 "$pid" 2>/dev/null || true; done
      ip netns del "$ns"
    done
    ;;
  addr)
    [[ $# -eq 3 ]] || usage
    address "$3"
    ;;
  *)
    usage
    ;;
esac
