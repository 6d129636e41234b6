#!/usr/bin/env bash
# One-step set-up: install the Debian packages listed in tools/debian-packages.txt that are missing,
# configure build/ (once) and build it. Safe to run again: it skips whatever is already done.
# Usage: tools/setup.sh            (as root, or with sudo available)
# Environment: KVFLEET_BUILD_DIR (default build), KVFLEET_CMAKE_ARGS (extra configure arguments),
#              KVFLEET_JOBS (default 2).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${KVFLEET_BUILD_DIR:-$root/build}"
jobs="${KVFLEET_JOBS:-2}"

mapfile -t wanted < <(grep -v '^\s*#' "$root/tools/debian-packages.txt" | sed 's/\s.*//' | grep -v '^$')
missing=()
for p in "${wanted[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]})); then
  echo "setup: installing ${#missing[@]} missing Debian packages: ${missing[*]}"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [ ! -f "$build/CMakeCache.txt" ]; then
  # shellcheck disable=SC2086
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release ${KVFLEET_CMAKE_ARGS:-}
fi
cmake --build "$build" -j "$jobs"
