#!/usr/bin/env bash
# Side-by-side benchmark of chorus, Open MPI, MPICH and Gloo in one invocation (same machine state).
#
# Usage:
#   bench/peers/compare.sh COLL --ranks N [-b MIN] [-e MAX] [-f FACTOR] [--transport shm|thread]
#                          [--rounds R] [--registered] [--peers LIST] [--build DIR] [--out DIR]
#                          [-- EXTRA BENCH OPTIONS...]
#
#   COLL         allreduce, allgather, reducescatter, alltoall, broadcast or reduce
#   --ranks N    ranks for every library (default 2)
#   -b -e -f     size sweep, nccl-tests style (default 8, 64M, 4)
#   --transport  chorus transport (default shm: processes, like the peers); with tcp, Open MPI
#                runs its tcp BTL too (--mca btl self,tcp) instead of vader, and MPICH its
#                ch4:ucx over tcp with its shared memory off (MPIR_CVAR_NOLOCAL=1 UCX_TLS=tcp,self);
#                with ucx, Open MPI runs its UCX PML (--mca pml ucx, on any UCX transport) and
#                MPICH its ch4:ucx with its own shared memory off (MPIR_CVAR_NOLOCAL=1), all three
#                on the UCX_TLS of the caller's environment (default: UCX's own choice)
#   --rounds R   run R rounds, each one chorus, Open MPI, MPICH, Gloo back to back, so a slow spell
#                of the machine hits every library (default 1). The tables then show the median
#                busbw over rounds, chorus's min-max, and per ratio the median over rounds of the
#                ratio measured within one round
#   --registered chorus's buffers come from chorus::memAlloc (registered memory, which local peers
#                map: single copy on shm); the peers' stay on the heap, as theirs would
#   Every round first probes this machine's memory rates at working sets of 256 KiB to 1 GiB
#   (bench_membw); for 2 ranks the tables show chorus's busbw as a percentage of the memory
#   ceiling at each cell's working set ("% ceil", src/perf/memory_ceiling.h)
#   --peers LIST the peers to run beside chorus, comma-separated (default openmpi,mpich,gloo);
#                chorus-tcp is chorus itself over its tcp transport (for --transport ucx)
#   --build DIR  build directory with chorus, bench/bench_mpi, bench/bench_mpich, bench/bench_gloo,
#                bench/bench_compare
#                (default: $CHORUS_BUILD_DIR, else <repo>/build)
#   --out DIR    where chorus.json, openmpi.json, mpich.json, gloo.json, membw.json and
#                compare.svg go (default: a new temporary directory); with R > 1, round N writes
#                NAME.rN.json for each (bench_compare takes NAME.rN.json as round N of NAME)
#   after --     passed to every benchmark, e.g. -- --budget 0.05 --op max --no-inplace
#
# Example (quick smoke run; the second with 3 rounds):
#   bench/peers/compare.sh allreduce --ranks 2 -b 8 -e 1M -f 16 -- --budget 0.05
#   bench/peers/compare.sh allreduce --ranks 2 -b 8 -e 1M -f 16 --rounds 3 -- --budget 0.05
#
# Open MPI runs with shared memory: mpirun --oversubscribe -n N --mca pml ob1 --mca btl self,vader
# (self,tcp with --transport tcp). MPICH (Debian's, ch4) runs under its own launcher,
# mpirun.mpich -n N, with its defaults (shared memory within the host).
# Gloo runs N forked processes over tcp on 127.0.0.1. A peer whose binary was not built (CMake did
# not find MPI, MPICH or Gloo; scripts/install_deps.sh installs them) is skipped with a message.
# Compare libraries within one run: this machine's memory bandwidth drifts between runs
# (docs/sources.md "Peer benchmarks").
set -euo pipefail

usage() {
  awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^# \{0,1\}//'
  exit 2
}

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${CHORUS_BUILD_DIR:-$repo/build}"
out=""
coll=""
ranks=2
min=8
max=64M
factor=4
transport=shm
rounds=1
peers=openmpi,mpich,gloo
extra=()
chorus_only=()

while [ $# -gt 0 ]; do
  case "$1" in
    --ranks | -n) ranks="$2"; shift 2 ;;
    -b | --minbytes) min="$2"; shift 2 ;;
    -e | --maxbytes) max="$2"; shift 2 ;;
    -f | --stepfactor) factor="$2"; shift 2 ;;
    --transport) transport="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --registered) chorus_only+=(--registered); shift ;;
    --peers) peers="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h | --help) usage ;;
    --) shift; extra=("$@"); break ;;
    -*) echo "compare.sh: unknown option '$1' (options for the benchmarks go after --)" >&2; exit 2 ;;
    *)
      if [ -n "$coll" ]; then echo "compare.sh: give one collective, not '$coll' and '$1'" >&2; exit 2; fi
      coll="$1"; shift ;;
  esac
done
[ -n "$coll" ] || usage
if ! [[ "$rounds" =~ ^[1-9][0-9]*$ ]]; then
  echo "compare.sh: --rounds takes a whole number >= 1, not '$rounds'" >&2
  exit 2
fi
for peer in ${peers//,/ }; do
  case "$peer" in
    openmpi | mpich | gloo | chorus-tcp) ;;
    *) echo "compare.sh: --peers takes openmpi, mpich, gloo and chorus-tcp, comma-separated, not '$peer'" >&2; exit 2 ;;
  esac
done
# Whether the peer $1 was asked for (--peers).
wanted() { [[ ",$peers," == *",$1,"* ]]; }
if [ ! -x "$build/chorus" ]; then
  echo "compare.sh: $build/chorus not found; build it (ninja -C $build chorus) or pass --build DIR" >&2
  exit 2
fi
if [ -z "$out" ]; then out="$(mktemp -d "${TMPDIR:-/tmp}/chorus-compare.XXXXXX")"; fi
mkdir -p "$out"

sweep=(-b "$min" -e "$max" -f "$factor")
files=()
ceilings=()
mpirun_bin="$(command -v mpirun.openmpi || command -v mpirun || true)"
mpich_launcher="$(command -v mpirun.mpich || command -v mpiexec.mpich || true)"

failed=()

# Runs one library's benchmark ($1 names it, $2 is its JSON file, the rest is the command). A run
# that fails (e.g. a peer's wrong elements) does not stop the others or the comparison; the
# script exits 1 at the end, naming it. Its JSON, if written, still joins the comparison.
run_bench() {
  local name="$1" json="$2"
  shift 2
  if ! "$@"; then
    echo "compare.sh: $name exited with an error (above); going on with the other runs" >&2
    failed+=("$name")
  fi
  if [ -f "$json" ]; then files+=("$json"); fi
}

# One round: chorus, Open MPI, MPICH, Gloo back to back; $1 is the file suffix ("" or ".rN").
run_round() {
  local suffix="$1"
  if [ -x "$build/bench/bench_membw" ]; then
    echo "== memory rates (the ceiling)"
    "$build/bench/bench_membw" --json "$out/membw$suffix.json"
    ceilings+=("$out/membw$suffix.json")
    echo
  fi
  echo "== chorus ($transport, $ranks ranks)"
  run_bench "chorus$suffix" "$out/chorus$suffix.json" \
    "$build/chorus" bench "$coll" --ranks "$ranks" --transport "$transport" "${sweep[@]}" \
    --json "$out/chorus$suffix.json" "${chorus_only[@]}" "${extra[@]}"

  if wanted chorus-tcp; then
    echo
    echo "== chorus-tcp (chorus's tcp transport, $ranks ranks)"
    run_bench "chorus-tcp$suffix" "$out/chorus-tcp$suffix.json" \
      "$build/chorus" bench "$coll" --ranks "$ranks" --transport tcp "${sweep[@]}" \
      --json "$out/chorus-tcp$suffix.json" "${chorus_only[@]}" "${extra[@]}"
    # Its records name the library "chorus": rename them, so the tables tell the two apart.
    if [ -f "$out/chorus-tcp$suffix.json" ]; then
      sed -i 's/"library": *"chorus"/"library": "chorus-tcp"/g' "$out/chorus-tcp$suffix.json"
    fi
  fi

  echo
  if ! wanted openmpi; then
    :
  elif [ ! -x "$build/bench/bench_mpi" ]; then
    echo "== openmpi: skipped ($build/bench/bench_mpi was not built: CMake found no MPI)"
  elif [ -z "$mpirun_bin" ]; then
    echo "== openmpi: skipped (no mpirun on PATH; apt-get install openmpi-bin)"
  else
    local transport_args=(--mca pml ob1 --mca btl self,vader) what="vader shared memory"
    if [ "$transport" = tcp ]; then
      transport_args=(--mca pml ob1 --mca btl self,tcp) what="tcp loopback"
    elif [ "$transport" = ucx ]; then
      # Open MPI takes UCX only on Mellanox RDMA devices unless told otherwise
      # (pml_ucx_tls, pml_ucx_devices: ompi_info --param pml ucx --level 9).
      transport_args=(--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any)
      what="UCX PML, UCX_TLS=${UCX_TLS:-unset: UCX chooses}"
    fi
    echo "== openmpi ($what, $ranks ranks)"
    run_bench "openmpi$suffix" "$out/openmpi$suffix.json" \
      "$mpirun_bin" --allow-run-as-root --oversubscribe -n "$ranks" "${transport_args[@]}" \
      "$build/bench/bench_mpi" "$coll" "${sweep[@]}" \
      --json "$out/openmpi$suffix.json" "${extra[@]}"
  fi

  echo
  if ! wanted mpich; then
    :
  elif [ ! -x "$build/bench/bench_mpich" ]; then
    echo "== mpich: skipped ($build/bench/bench_mpich was not built: CMake found no MPICH)"
  elif [ -z "$mpich_launcher" ]; then
    echo "== mpich: skipped (no mpirun.mpich on PATH; apt-get install mpich)"
  else
    local mpich_env=() what="shared memory"
    if [ "$transport" = tcp ]; then mpich_env=(MPIR_CVAR_NOLOCAL=1 UCX_TLS=tcp,self) what="tcp loopback"; fi
    if [ "$transport" = ucx ]; then
      mpich_env=(MPIR_CVAR_NOLOCAL=1) what="ch4:ucx, UCX_TLS=${UCX_TLS:-unset: UCX chooses}"
    fi
    echo "== mpich ($what, $ranks ranks)"
    run_bench "mpich$suffix" "$out/mpich$suffix.json" \
      env "${mpich_env[@]}" "$mpich_launcher" -n "$ranks" "$build/bench/bench_mpich" "$coll" \
      "${sweep[@]}" --json "$out/mpich$suffix.json" "${extra[@]}"
  fi

  echo
  if ! wanted gloo; then
    :
  elif [ ! -x "$build/bench/bench_gloo" ]; then
    echo "== gloo: skipped ($build/bench/bench_gloo was not built: CMake found no Gloo)"
  else
    echo "== gloo (tcp loopback, $ranks processes)"
    run_bench "gloo$suffix" "$out/gloo$suffix.json" \
      "$build/bench/bench_gloo" "$coll" --ranks "$ranks" "${sweep[@]}" \
      --json "$out/gloo$suffix.json" "${extra[@]}"
  fi
}

if [ "$rounds" -eq 1 ]; then
  run_round ""
  names="{chorus,chorus-tcp,openmpi,mpich,gloo,membw}.json"
else
  for ((round = 1; round <= rounds; round++)); do
    if [ "$round" -gt 1 ]; then echo; fi
    echo "==== round $round of $rounds"
    run_round ".r$round"
  done
  names="{chorus,chorus-tcp,openmpi,mpich,gloo,membw}.r{1..$rounds}.json"
fi

echo
echo "== comparison"
ceiling_args=()
if [ ${#ceilings[@]} -gt 0 ]; then ceiling_args=(--ceiling "${ceilings[@]}"); fi
"$build/bench/bench_compare" "${files[@]}" --plot "$out/compare.svg" "${ceiling_args[@]}"
echo
echo "records and chart: $out/$names, $out/compare.svg"
if [ ${#failed[@]} -gt 0 ]; then
  echo "compare.sh: these runs failed (their output above says why): ${failed[*]}" >&2
  exit 1
fi
