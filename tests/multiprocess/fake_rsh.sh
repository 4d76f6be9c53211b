#!/bin/sh
# A remote shell agent for chorus launch's tests: `fake_rsh.sh HOST SCRIPT` runs SCRIPT on this
# machine with sh and an empty environment (PATH only), as ssh would start it on HOST, and
# appends "HOST SCRIPT" to $FAKE_RSH_LOG when that is set.
host=$1
shift
if [ -n "$FAKE_RSH_LOG" ]; then printf '%s %s\n' "$host" "$*" >> "$FAKE_RSH_LOG"; fi
exec env -i PATH="$PATH" sh -c "$*"
