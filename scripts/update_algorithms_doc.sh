#!/usr/bin/env bash
# Regenerates the algorithm table in docs/algorithms.md from the registry
# (`chorus algorithms --markdown`), between its BEGIN/END markers.
# Usage: scripts/update_algorithms_doc.sh [path/to/chorus]   (default: build/chorus)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
chorus="${1:-$root/build/chorus}"
doc="$root/docs/algorithms.md"
table="$(mktemp)"
trap 'rm -f "$table"' EXIT
"$chorus" algorithms --markdown >"$table"
awk -v table="$table" '
  /<!-- BEGIN chorus algorithms --markdown -->/ { print; while ((getline line < table) > 0) print line; skip = 1; next }
  /<!-- END chorus algorithms --markdown -->/ { skip = 0 }
  !skip { print }
' "$doc" >"$doc.new"
mv "$doc.new" "$doc"
echo "updated $doc"
