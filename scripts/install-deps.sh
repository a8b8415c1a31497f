#!/usr/bin/env bash
# Installs every Debian 12 package the build, the tests, the benchmarks and the demo use.
# Idempotent: packages already installed are skipped, and nothing is done when all are present.
#
#   scripts/install-deps.sh           the native (host architecture) build and its tests
#   scripts/install-deps.sh --arm64   also the arm64 cross build and qemu-user to run it
#                                     (make test-arm64; an x86-64 host is assumed)
set -euo pipefail

arm64=0
for arg in "$@"; do
  case "$arg" in
    --arm64) arm64=1 ;;
    *) echo "usage: $0 [--arm64]" >&2; exit 2 ;;
  esac
done

packages=(
  # build
  build-essential cmake ninja-build pkg-config clang-format
  # libraries
  libmicrohttpd-dev libcurl4-openssl-dev libyaml-cpp-dev nlohmann-json3-dev libsimdjson-dev
  nettle-dev libcli11-dev libfmt-dev libspdlog-dev libgtest-dev libgmock-dev libbenchmark-dev
  libgnutls28-dev libcrypt-dev
  # fuzzing (make fuzz): clang with its libFuzzer and sanitizer runtimes
  clang libclang-rt-14-dev
  # test and benchmark tools
  prometheus curl wrk slurm-wlm munge iproute2 procps faketime openssl
  python3 python3-numpy python3-pandas python3-yaml python3-prometheus-client chromium
  # the Debian package (make deb, tests/install/test_deb.sh): man pages, dpkg-shlibdeps,
  # lintian, man -l, systemd-analyze
  help2man lintian dpkg-dev man-db systemd file
  # the sharded store's test and benchmark (tests/integration/test_store_sharded.sh,
  # bench/store_scale.sh): Debian 12 has 1.79.5, binary `victoria-metrics`. The package
  # enables a victoria-metrics.service on :8428 (as prometheus does on :9090) where systemd
  # runs; the tests start their own on free loopback ports and need no service.
  victoria-metrics
)

# The arm64 cross build: Debian's cross compiler, qemu-user, and the arm64 libraries beside
# the native ones (multiarch). libcurl4 is loaded with dlopen at run time, so the arm64
# runtime library is needed for the tests under qemu. nlohmann-json3-dev and libcli11-dev are
# header-only (Architecture: all) and already in the list above.
arm64_packages=(
  g++-aarch64-linux-gnu binutils-aarch64-linux-gnu qemu-user-static
  libc6:arm64 libstdc++6:arm64 libcurl4:arm64
  libmicrohttpd-dev:arm64 libcurl4-openssl-dev:arm64 libfmt-dev:arm64 libspdlog-dev:arm64
  nettle-dev:arm64 libgnutls28-dev:arm64 libcrypt-dev:arm64
  libgtest-dev:arm64 libgmock-dev:arm64 libbenchmark-dev:arm64
  libyaml-cpp0.7:arm64 libsimdjson14:arm64
)
# -dev packages without Multi-Arch: same: installing the :arm64 one would remove the native
# one. Their arm64 .debs (and their runtime library's, which their CMake files name by path)
# are unpacked into ARM64_EXTRA instead; cmake/aarch64-linux-gnu.cmake searches there.
arm64_unpacked=(libyaml-cpp-dev libyaml-cpp0.7 libsimdjson-dev libsimdjson14)
ARM64_EXTRA=${CPUPOWER_ARM64_EXTRA:-/opt/cpu-power-telemetry/arm64-extra}

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
apt_get() {
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=900 "$@"
}

# A name without an architecture means the native package (or an Architecture: all one); once
# arm64 is added, dpkg-query answers a bare name for both architectures.
native=$(dpkg --print-architecture)
installed() {
  local p=$1
  case "$p" in *:*) ;; *) dpkg-query -W "$p:$native" >/dev/null 2>&1 && p="$p:$native" ;; esac
  dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -qx 'install ok installed'
}

updated=0
install_missing() {
  local missing=() p
  for p in "$@"; do installed "$p" || missing+=("$p"); done
  if [ ${#missing[@]} -eq 0 ]; then
    echo "install-deps: all $# packages present"
    return 0
  fi
  echo "install-deps: installing ${missing[*]}"
  if [ "$updated" = 0 ]; then
    apt_get update -qq
    updated=1
  fi
  apt_get install -y -qq --no-install-recommends "${missing[@]}"
}

install_missing "${packages[@]}"
[ "$arm64" = 1 ] || exit 0

if [ "$native" != amd64 ]; then
  echo "install-deps: --arm64 sets up a cross build on an x86-64 (amd64) host;" \
    "on an aarch64 machine build natively (README.md, Building on a Grace node)" >&2
  exit 1
fi
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  echo "install-deps: adding the arm64 architecture (dpkg --add-architecture arm64)"
  $SUDO dpkg --add-architecture arm64
  updated=0
fi
install_missing "${arm64_packages[@]}"

# The unpacked -dev packages, at exactly the installed runtime library's version. A stamp
# file records what was unpacked, so a second run does nothing.
want=""
for p in "${arm64_unpacked[@]}"; do
  runtime=$p
  case "$p" in
    libyaml-cpp-dev) runtime=libyaml-cpp0.7 ;;
    libsimdjson-dev) runtime=libsimdjson14 ;;
  esac
  version=$(dpkg-query -W -f='${Version}' "$runtime:arm64")
  want+="$p:arm64=$version "
done
stamp="$ARM64_EXTRA/.unpacked"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "install-deps: arm64 -dev packages already unpacked in $ARM64_EXTRA"
else
  echo "install-deps: unpacking ${want}into $ARM64_EXTRA"
  tmp=$(mktemp -d)
  chmod 755 "$tmp" # apt's download user writes here
  trap 'rm -rf "$tmp"' EXIT
  # shellcheck disable=SC2086 # one word per package
  (cd "$tmp" && apt_get download -qq $want) || {
    # A stale package list may name versions the mirror no longer has.
    apt_get update -qq
    (cd "$tmp" && apt_get download -qq $want)
  }
  $SUDO rm -rf "$ARM64_EXTRA"
  $SUDO mkdir -p "$ARM64_EXTRA"
  for deb in "$tmp"/*.deb; do $SUDO dpkg-deb -x "$deb" "$ARM64_EXTRA"; done
  echo "$want" | $SUDO tee "$stamp" >/dev/null
fi
