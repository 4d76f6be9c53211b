#!/usr/bin/env bash
# Installs every Debian package chorus needs to build and test. Idempotent: runs
# `apt-get update` and `apt-get install` only when a package is missing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache
  libfmt-dev libpugixml-dev nlohmann-json3-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  clang-format
  openmpi-bin libopenmpi-dev libgloo-dev
  libhwloc-dev pkg-config
  iproute2 procps
  python3-dev pybind11-dev python3-torch libtorch-dev
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install_deps: all ${#packages[@]} packages already installed"
  exit 0
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo=(sudo)
  else
    echo "install_deps: missing ${missing[*]}; run as root or install them" >&2
    exit 1
  fi
fi

echo "install_deps: installing ${missing[*]}"
"${sudo[@]}" apt-get update
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
