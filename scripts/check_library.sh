#!/usr/bin/env bash
# Compiles (with the verifier) every algorithm of `chorus algorithms` at every rank count
# 2..16 -- node-shaped algorithms at every N x G up to 4 x 4 -- and the parameter values that
# select another collective (alltonext direction=backward), and prints the pass count.
# Usage: scripts/check_library.sh [path/to/chorus]   (default: build/chorus)
# Exit status 0 when every case passes, 1 otherwise (the failures are listed).
set -uo pipefail
chorus="${1:-$(dirname "$0")/../build/chorus}"
if [[ ! -x "$chorus" ]]; then
  echo "check_library.sh: '$chorus' is not an executable; build first or pass its path" >&2
  exit 2
fi
pass=0
fail=0
failures=()
# Extra lines for the loop below: NAME SHAPE MIN_RANKS, then --set options.
variants() {
  echo "alltonext nodes 2 --set direction=backward"
}
check() {  # name, then the shape options
  local name="$1"
  shift
  local output
  if output=$("$chorus" compile "$name" "$@" -o /dev/null 2>&1); then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    failures+=("$name $*: ${output%%$'\n'*}")
  fi
}
algorithms=0
while read -r name shape min_ranks settings; do
  algorithms=$((algorithms + 1))
  read -r -a set_options <<<"$settings"
  if [[ "$shape" == "ranks" ]]; then
    for ((ranks = min_ranks > 2 ? min_ranks : 2; ranks <= 16; ranks++)); do
      check "$name" --ranks "$ranks" "${set_options[@]}"
    done
  else
    for ((nodes = 1; nodes <= 4; nodes++)); do
      for ((gpus = 1; gpus <= 4; gpus++)); do
        ((nodes * gpus >= 2 && nodes * gpus >= min_ranks)) || continue
        check "$name" --nodes "$nodes" --gpus-per-node "$gpus" "${set_options[@]}"
      done
    done
  fi
done < <("$chorus" algorithms --names && variants)
for failure in "${failures[@]}"; do
  echo "FAIL $failure"
done
echo "check_library: $pass of $((pass + fail)) compiles verified ($algorithms algorithms and variants, ranks 2..16, N x G up to 4 x 4)"
((fail == 0))
