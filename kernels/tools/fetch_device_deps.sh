#!/usr/bin/env bash
# Downloads (does not install) the Debian packages that kernels/device_check.sh unpacks on the GPU
# machine, where GoogleTest and Google Benchmark are not installed: into .devdeps/ at the
# repository root, which git ignores. Run here once before the device call; carry `.devdeps`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
mkdir -p "$root/.devdeps"
cd "$root/.devdeps"
apt-get download libgtest-dev libgmock-dev googletest libbenchmark-dev libbenchmark1debian
ls -l "$root/.devdeps"
