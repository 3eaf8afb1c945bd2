#!/usr/bin/env bash
# Installs every build, test and benchmark dependency from Debian 12's archive (nothing else).
# man-db, groff-base and bsdextrautils (col) check the man pages; zsh and fish check the completions.
# strace checks the cache writer's system-call order (tests/cli/test_cache_write_order.sh).
# python3-mypy type-checks the Python package and examples/notebook_tour.py against the stubs (--strict).
# ansible-core runs examples/fleet/playbook.yml in tests/cli/test_fleet_recipe.sh.
set -euo pipefail
PACKAGES=(
  cmake ninja-build g++ pkg-config git
  libcli11-dev libprotobuf-dev protobuf-compiler libfmt-dev libspdlog-dev libtomlplusplus-dev
  doctest-dev nlohmann-json3-dev libcpuinfo-dev libonnx-dev
  pybind11-dev python3-dev python3-numpy python3-onnx python3-pytest python3-mypy
  libbenchmark-dev
  man-db groff-base bsdextrautils zsh fish strace ansible-core
)
# Callers add their own (scripts/fuzz.sh: clang and libFuzzer's runtime).
read -r -a EXTRA <<< "${ONNX_LIGHT_EXTRA_PACKAGES:-}"
PACKAGES+=("${EXTRA[@]}")
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  echo "install-deps: installing ${missing[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
