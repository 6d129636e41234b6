#!/usr/bin/env bash
# Downloads (does not install) the Debian packages calibration/gpu_day.sh unpacks on a GPU machine
# that has CMake, a compiler and CUDA but none of kvfleet's libraries: into .devdeps/ at the
# repository root (git ignores it). Run on a Debian 12 machine once, then carry `.devdeps`.
# Runtime libraries the -dev packages depend on are fetched too, except the base system's.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
mkdir -p "$root/.devdeps"
cd "$root/.devdeps"
apt-get download \
  libhdf5-dev libhdf5-103-1 libhdf5-hl-100 libhdf5-cpp-103-1 libaec0 libsz2 \
  libyaml-cpp-dev libyaml-cpp0.7 \
  libboost-program-options-dev libboost-program-options1.74-dev libboost-program-options1.74.0 \
  libboost1.74-dev \
  libeigen3-dev nlohmann-json3-dev libabsl-dev libabsl20220623 \
  libgtest-dev libgmock-dev googletest libbenchmark-dev libbenchmark1debian
du -sh "$root/.devdeps"
