#!/usr/bin/env bash
# Installs every Debian package chorus needs to build and test, then the pinned PyPI packages
# of python/requirements.txt (PyTorch 2.x) into the virtual environment $CHORUS_VENV (default
# /opt/chorus/venv, made from Debian's /usr/bin/python3), once per machine. Idempotent: runs
# `apt-get update` and `apt-get install` only when a package is missing, and pip only when a pin
# is not met.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

packages=(
  build-essential cmake ninja-build ccache
  libfmt-dev libpugixml-dev nlohmann-json3-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  clang-format
  openmpi-bin libopenmpi-dev mpich libmpich-dev libgloo-dev
  libhwloc-dev pkg-config
  iproute2 procps libucx-dev
  slurmd slurmctld slurm-client munge
  python3-dev python3-venv
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

sudo=()
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then
  sudo=(sudo)
fi

if [ ${#missing[@]} -eq 0 ]; then
  echo "install_deps: all ${#packages[@]} Debian packages already installed"
else
  if [ "$(id -u)" -ne 0 ] && [ ${#sudo[@]} -eq 0 ]; then
    echo "install_deps: missing ${missing[*]}; run as root or install them" >&2
    exit 1
  fi
  echo "install_deps: installing ${missing[*]}"
  "${sudo[@]}" apt-get update
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
fi

# PyTorch 2.x and the rest of python/requirements.txt, in a virtual environment shared by every
# clone on this machine (the torch wheel and its CUDA libraries take about 5 GiB).
venv=${CHORUS_VENV:-/opt/chorus/venv}
requirements=python/requirements.txt
pins_met() {
  [ -x "$venv/bin/python" ] && "$venv/bin/python" - "$requirements" <<'PY'
import sys
from importlib import metadata
for line in open(sys.argv[1]):
    line = line.split("#")[0].strip()
    if not line:
        continue
    name, version = line.split("==")
    try:
        if metadata.version(name) != version:
            sys.exit(1)
    except metadata.PackageNotFoundError:
        sys.exit(1)
PY
}
if pins_met; then
  echo "install_deps: $venv already has every pin of $requirements"
  exit 0
fi
if [ ! -x "$venv/bin/python" ]; then
  if ! mkdir -p "$(dirname "$venv")" 2>/dev/null || [ ! -w "$(dirname "$venv")" ]; then
    echo "install_deps: cannot create $venv; run as root or set CHORUS_VENV to a writable path" >&2
    exit 1
  fi
  echo "install_deps: creating the virtual environment $venv (/usr/bin/python3)"
  /usr/bin/python3 -m venv "$venv"
fi
echo "install_deps: installing $requirements into $venv (PyTorch's wheel is large: minutes)"
"$venv/bin/pip" install --disable-pip-version-check --no-input -q -r "$requirements"
pins_met || {
  echo "install_deps: $venv still misses a pin of $requirements after pip install" >&2
  exit 1
}
