#!/bin/sh
# A remote shell agent (Open MPI's plm_rsh_agent, chorus launch's --rsh) for simulated hosts
# (scripts/netns_hosts.sh): `netns_rsh.sh HOST CMD...` runs CMD in network namespace HOST with
# HOST as its host name (a UTS namespace), as ssh would on a real host; Open MPI names its
# shared-memory files after the host name. Use with
#   ip netns exec ID-h0 unshare --uts sh -c 'hostname ID-h0; exec mpirun \
#     --mca plm_rsh_agent scripts/netns_rsh.sh -H ID-h0:2,ID-h1:2 ...'
host=$1
shift
exec ip netns exec "$host" unshare --uts sh -c "hostname $host && $*"
