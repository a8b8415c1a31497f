#!/usr/bin/env bash
# Installs every Debian 12 package the build, the tests, the benchmarks and the demo use.
# Idempotent: packages already installed are skipped, and nothing is done when all are present.
set -euo pipefail

packages=(
  # build
  build-essential cmake ninja-build pkg-config clang-format
  # libraries
  libmicrohttpd-dev libcurl4-openssl-dev libyaml-cpp-dev nlohmann-json3-dev libsimdjson-dev
  libcli11-dev libfmt-dev libspdlog-dev libgtest-dev libgmock-dev libbenchmark-dev
  # test and benchmark tools
  prometheus curl wrk slurm-wlm munge iproute2 procps
  python3 python3-numpy python3-pandas python3-yaml chromium
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
