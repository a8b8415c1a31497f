#!/usr/bin/env bash
# The Debian package (ctest install.deb, tests/CMakeLists.txt; `make deb` builds the same
# package into <build>/deb/): built with CPack from this build into a temporary directory,
# then checked from the outside.
#
# 1. control fields: name, version, architecture, Depends from dpkg-shlibdeps (and no libcurl,
#    DCGM or NVML: they are loaded with dlopen), Recommends libcurl4, the description;
# 2. contents: exactly the expected files with their modes, owned by root; the conffile; the
#    maintainer scripts;
# 3. the maintainer scripts run against stub commands (adduser, deb-systemd-helper, ...) that
#    record their arguments: the system user, enable, start only where systemd runs;
# 4. the package unpacked into a throwaway root (dpkg -x): man pages render (man -l), the unit
#    passes `systemd-analyze verify` and scores 2.0 or lower in `systemd-analyze security`;
# 5. lintian --fail-on error;
# 6. the installed exporter serves /metrics from a simulated node (installed cpu-power
#    sim-node), started with the flags of the installed /etc/default file;
# 7. the arm64 package, only when a cross build exists (BUILD_ARM64, make test-arm64).
#
# Exits 77 (ctest: skipped) only when a tool it needs is missing; scripts/install-deps.sh
# installs them all.
#
# Environment (set by ctest): BUILD_DIR, SOURCE_DIR, CMAKE_COMMAND, CPACK_COMMAND, DEB_ARCH;
# BUILD_ARM64 (optional: the cross build directory).
set -euo pipefail
: "${BUILD_DIR:?}" "${SOURCE_DIR:?}" "${CMAKE_COMMAND:?}" "${CPACK_COMMAND:?}" "${DEB_ARCH:?}"

missing=()
for tool in dpkg-deb dpkg-shlibdeps help2man lintian systemd-analyze man gzip curl python3; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "SKIP: missing ${missing[*]} (scripts/install-deps.sh installs them)"
  exit 77
fi

# The exporter and sim-node that lib.sh starts are the installed ones.
ROOT_DIR=$(mktemp -d /tmp/cpupower-deb-root.XXXXXX)
BIN="$ROOT_DIR/usr/bin"
source "$SOURCE_DIR/tests/integration/lib.sh"
trap 'cleanup; rm -rf "$ROOT_DIR"' EXIT
MAX_EXPOSURE=2.0
UNIT=cpu-power-exporter.service

# build_deb BUILD OUT: the package of BUILD into OUT (man pages and changelog first); prints
# the .deb's path.
build_deb() {
  local build=$1 out=$2 arch
  # (A build configured before the packaging existed configures itself again here.)
  "$CMAKE_COMMAND" --build "$build" --target deb_files cpu-power cpu-power-exporter -j 2 \
    >"$WORK/build.log" 2>&1 || { cat "$WORK/build.log" >&2; fail "building the package files in $build"; }
  arch=$(sed -n 's/^set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE "\(.*\)")$/\1/p' "$build/CPackConfig.cmake")
  DEB_HOST_ARCH=$arch "$CPACK_COMMAND" -G DEB --config "$build/CPackConfig.cmake" -B "$out" \
    >"$WORK/cpack.log" 2>&1 || { cat "$WORK/cpack.log" >&2; fail "cpack in $build"; }
  ls "$out"/*.deb
}

# --- 1. control fields -----------------------------------------------------------------------
DEB=$(build_deb "$BUILD_DIR" "$WORK/pkg") || exit 1
version=$(sed -n 's/^set(CPACK_PACKAGE_VERSION "\(.*\)")$/\1/p' "$BUILD_DIR/CPackConfig.cmake")
[ "$(basename "$DEB")" = "cpu-power-telemetry_${version}-1_${DEB_ARCH}.deb" ] || fail "package file $(basename "$DEB")"
field() { dpkg-deb --field "$DEB" "$1"; }
[ "$(field Package)" = cpu-power-telemetry ] || fail "Package: $(field Package)"
[ "$(field Version)" = "${version}-1" ] || fail "Version: $(field Version), project version $version"
[ "$(field Architecture)" = "$DEB_ARCH" ] || fail "Architecture: $(field Architecture)"
grep -qF "$version" <<<"$("$BUILD_DIR/bin/cpu-power" --version)" || fail "the package version is not the binaries'"
ok "$(basename "$DEB"): Package, Version (the project's, -1) and Architecture"

depends=$(field Depends)
# has_dep PKG: Depends names PKG (with or without a version).
has_dep() { sed 's/, /\n/g' <<<"$depends" | awk '{print $1}' | grep -qxF "$1"; }
# Every library the binaries are linked against directly (their NEEDED entries), by the
# package that holds it: what dpkg-shlibdeps has to have found.
bins=("$BUILD_DIR/bin/cpu-power" "$BUILD_DIR/bin/cpu-power-exporter")
readelf -d "${bins[@]}" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p' | sort -u >"$WORK/needed"
ldd "${bins[@]}" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u |
  awk 'NR == FNR {need[$1]; next} $1 in need' "$WORK/needed" - >"$WORK/libs"
[ "$(wc -l <"$WORK/libs")" = "$(wc -l <"$WORK/needed")" ] || fail "ldd does not resolve every NEEDED library: $(cat "$WORK/needed")"
[ -s "$WORK/libs" ] || fail "ldd found no libraries"
while read -r lib path; do
  pkg=$(dpkg -S "$path" 2>/dev/null || dpkg -S "$(realpath "$path")" 2>/dev/null || true)
  pkg=${pkg%%:*}
  [ -n "$pkg" ] || fail "no package holds $path ($lib)"
  # The package itself, or a name it provides (libspdlog1.10 provides libspdlog1.10-fmt9,
  # the name its shlibs file gives).
  found=0
  for name in "$pkg" $(dpkg-query -W -f='${Provides}\n' "$pkg" | sed 's/([^)]*)//g; s/,/ /g' | tr ' ' '\n' | sort -u); do
    has_dep "${name%%:*}" && found=1
  done
  [ "$found" = 1 ] || fail "Depends lacks $pkg (for $lib): $depends"
done <"$WORK/libs"
for pkg in adduser python3; do has_dep "$pkg" || fail "Depends lacks $pkg: $depends"; done
if grep -qiE 'curl|dcgm|nvidia' <<<"$depends"; then fail "Depends names a library loaded with dlopen: $depends"; fi
[ "$(field Recommends)" = libcurl4 ] || fail "Recommends: $(field Recommends)"
description=$(field Description)
grep -qF 'DCGM (libdcgm) and NVML' <<<"$description" && grep -qF 'optional' <<<"$description" ||
  fail "the description does not say DCGM and NVML are optional"
ok "Depends from dpkg-shlibdeps ($(wc -l <"$WORK/libs") libraries) plus adduser, python3; libcurl4 recommended; DCGM/NVML optional"

# --- 2. contents -------------------------------------------------------------------------------
dpkg-deb --contents "$DEB" >"$WORK/contents"
# mode owner path, for plain files
awk '$1 ~ /^-/ {sub(/^\./, "", $6); print $1, $2, $6}' "$WORK/contents" | sort -k3 >"$WORK/files"
DOC=/usr/share/doc/cpu-power-telemetry
{
  echo "-rwxr-xr-x root/root /usr/bin/cpu-power"
  echo "-rwxr-xr-x root/root /usr/bin/cpu-power-exporter"
  echo "-rwxr-xr-x root/root /usr/share/cpu-power-telemetry/cpu_power_exporter_fallback.py"
  echo "-rw-r--r-- root/root /usr/share/man/man1/cpu-power.1.gz"
  echo "-rw-r--r-- root/root /usr/share/man/man1/cpu-power-exporter.1.gz"
  echo "-rw-r--r-- root/root /lib/systemd/system/$UNIT"
  echo "-rw-r--r-- root/root /lib/udev/rules.d/60-cpu-power-exporter-rapl.rules"
  echo "-rw-r--r-- root/root /etc/default/cpu-power-exporter"
  for f in README.md copyright changelog.Debian.gz; do echo "-rw-r--r-- root/root $DOC/$f"; done
  for f in "$SOURCE_DIR"/docs/*.md; do echo "-rw-r--r-- root/root $DOC/docs/${f##*/}"; done
  for f in "$SOURCE_DIR"/deploy/web-config/*.yml "$SOURCE_DIR"/deploy/prometheus/{alerts,recording,prometheus}.yml; do
    echo "-rw-r--r-- root/root $DOC/examples/${f#"$SOURCE_DIR"/deploy/}"
  done
} | sort -k3 >"$WORK/want"
diff -u "$WORK/want" "$WORK/files" || fail "package contents differ from the expected files and modes"
ok "contents: $(wc -l <"$WORK/files") files with their modes, all root/root"

mkdir -p "$WORK/control"
dpkg-deb --control "$DEB" "$WORK/control"
[ "$(cat "$WORK/control/conffiles")" = /etc/default/cpu-power-exporter ] || fail "conffiles: $(cat "$WORK/control/conffiles")"
for s in postinst prerm postrm; do
  [ "$(stat -c %a "$WORK/control/$s")" = 755 ] || fail "$s mode $(stat -c %a "$WORK/control/$s")"
  cmp -s "$WORK/control/$s" "$SOURCE_DIR/packaging/debian/$s" || fail "$s differs from packaging/debian/$s"
  sh -n "$WORK/control/$s" || fail "$s: sh syntax"
done
[ -f "$WORK/control/md5sums" ] || fail "no md5sums"
ok "conffile /etc/default/cpu-power-exporter; postinst, prerm, postrm executable; md5sums"

# --- 3. maintainer scripts against recording stubs --------------------------------------------
STUBS="$WORK/stubs"
mkdir -p "$STUBS"
for cmd in adduser addgroup deb-systemd-helper deb-systemd-invoke systemctl; do
  printf '#!/bin/sh\necho "%s $*" >>"$CALLS"\n' "$cmd" >"$STUBS/$cmd"
  chmod +x "$STUBS/$cmd"
done
# getent: the user exists when $USER_EXISTS is 1. was-enabled: deb-systemd-helper's answer
# for a new installation is yes (exit 0), as the stub's is.
printf '#!/bin/sh\necho "getent $*" >>"$CALLS"\n[ "$USER_EXISTS" = 1 ]\n' >"$STUBS/getent"
chmod +x "$STUBS/getent"
run_script() {  # run_script USER_EXISTS SCRIPT ARGS...: the calls it made, one per line
  local exists=$1 script=$2
  shift 2
  : >"$WORK/calls"
  CALLS="$WORK/calls" USER_EXISTS=$exists PATH="$STUBS:/usr/bin:/bin" sh -e "$WORK/control/$script" "$@" ||
    fail "$script $* exited $?"
  cat "$WORK/calls"
}
systemd_running=0
[ -d /run/systemd/system ] && systemd_running=1
calls=$(run_script 0 postinst configure)
want="getent group cpu-power-exporter
addgroup --quiet --system cpu-power-exporter
getent passwd cpu-power-exporter
adduser --quiet --system --ingroup cpu-power-exporter --no-create-home --home /nonexistent --disabled-password --gecos cpu-power-exporter service cpu-power-exporter
deb-systemd-helper unmask cpu-power-exporter.service
deb-systemd-helper --quiet was-enabled cpu-power-exporter.service
deb-systemd-helper enable cpu-power-exporter.service"
[ "$systemd_running" = 0 ] || want+="
systemctl --system daemon-reload
deb-systemd-invoke start cpu-power-exporter.service"
[ "$calls" = "$want" ] || fail "postinst configure (first install) made these calls:
$calls
expected:
$want"
ok "postinst configure: system group and user cpu-power-exporter, unit enabled, $([ "$systemd_running" = 1 ] && echo started || echo "not started (systemd not running here), exit 0")"

calls=$(run_script 1 postinst configure "${version}-1")
grep -qE '^(adduser|addgroup)' <<<"$calls" && fail "postinst created the user again: $calls"
[ "$systemd_running" = 0 ] || grep -qx "deb-systemd-invoke restart $UNIT" <<<"$calls" || fail "upgrade does not restart: $calls"
ok "postinst configure on upgrade: the existing user is kept"

calls=$(run_script 1 prerm remove)
[ "$systemd_running" = 1 ] && want="deb-systemd-invoke stop $UNIT" || want=""
[ "$calls" = "$want" ] || fail "prerm remove: $calls"
if [ -x /usr/bin/deb-systemd-helper ]; then
  calls=$(run_script 1 postrm remove)
  grep -qx "deb-systemd-helper mask $UNIT" <<<"$calls" || fail "postrm remove: $calls"
  calls=$(run_script 1 postrm purge)
  [ "$calls" = "deb-systemd-helper purge $UNIT
deb-systemd-helper unmask $UNIT" ] || fail "postrm purge: $calls"
fi
ok "prerm stops only under systemd; postrm masks on remove and purges the unit's state on purge"

# --- 4. unpacked: man pages, the unit -----------------------------------------------------------
dpkg -x "$DEB" "$ROOT_DIR"
for prog in cpu-power cpu-power-exporter; do
  page="$ROOT_DIR/usr/share/man/man1/$prog.1.gz"
  [ "$(gzip -dc "$page" | head -c 2 | wc -c)" = 2 ] || fail "$prog.1.gz is not gzip"
  MANWIDTH=100 man -l "$page" 2>"$WORK/man.err" >"$WORK/$prog.man" || fail "man -l $prog.1.gz"
  [ ! -s "$WORK/man.err" ] || { cat "$WORK/man.err" >&2; fail "man -l $prog.1.gz warned"; }
  grep -qE "^NAME" "$WORK/$prog.man" && grep -qE "^ +$prog - " "$WORK/$prog.man" || fail "$prog.1: no NAME section"
done
grep -qF -- '--hwmon-root' "$WORK/cpu-power-exporter.man" || fail "cpu-power-exporter.1 lacks --hwmon-root"
grep -qE '^ +run ' "$WORK/cpu-power.man" || fail "cpu-power.1 lacks the run subcommand"
ok "man pages cpu-power.1 and cpu-power-exporter.1 render with man -l (NAME, options, subcommands)"

# systemd-analyze verify checks that ExecStart's binary exists and is executable on this
# machine, and runs man for Documentation=: a copy of the unit points at the unpacked binary,
# and MANPATH at the unpacked man pages.
PKG_UNIT="$ROOT_DIR/lib/systemd/system/$UNIT"
mkdir -p "$WORK/verify"
sed "s|^ExecStart=/usr/bin/|ExecStart=$ROOT_DIR/usr/bin/|" "$PKG_UNIT" >"$WORK/verify/$UNIT"
grep -q "^ExecStart=$ROOT_DIR/usr/bin/cpu-power-exporter \\\$ARGS$" "$WORK/verify/$UNIT" || fail "ExecStart not rewritten"
MANPATH="$ROOT_DIR/usr/share/man" systemd-analyze verify "$WORK/verify/$UNIT" >"$WORK/verify.log" 2>&1 ||
  { cat "$WORK/verify.log" >&2; fail "systemd-analyze verify $UNIT"; }
[ ! -s "$WORK/verify.log" ] || { cat "$WORK/verify.log" >&2; fail "systemd-analyze verify printed warnings"; }
ok "systemd-analyze verify: clean (ExecStart at the unpacked binary, Documentation= man page found)"

systemd-analyze security --offline=yes --no-pager "$PKG_UNIT" >"$WORK/security.log" 2>&1 || true
score=$(sed -n "s/^→ Overall exposure level for $UNIT: \([0-9.]*\) .*/\1/p" "$WORK/security.log")
[ -n "$score" ] || { cat "$WORK/security.log" >&2; fail "no exposure score from systemd-analyze security"; }
awk -v s="$score" -v m="$MAX_EXPOSURE" 'BEGIN {exit !(s <= m)}' || {
  grep '✗' "$WORK/security.log" >&2
  fail "exposure score $score is above $MAX_EXPOSURE"
}
ok "systemd-analyze security --offline=yes: exposure $score (at most $MAX_EXPOSURE)"

# --- 5. lintian -------------------------------------------------------------------------------
# -I: the informational tags too, so that the log lists everything docs/operations.md
# justifies.
lintian --fail-on error --tag-display-limit 0 -I "$DEB" >"$WORK/lintian.log" 2>&1 ||
  { cat "$WORK/lintian.log" >&2; fail "lintian --fail-on error"; }
grep -E '^[EWIPX]: ' "$WORK/lintian.log" | sed 's/^/  /' || true
counts=$(for t in E W I; do echo "$t=$(grep -c "^$t: " "$WORK/lintian.log" || true)"; done | tr '\n' ' ')
ok "lintian --fail-on error: no errors ($counts)"

# --- 6. the installed exporter serves a simulated node -----------------------------------------
# shellcheck disable=SC1091 # the installed defaults file, as systemd reads it
ARGS=$(. "$ROOT_DIR/etc/default/cpu-power-exporter" && echo "$ARGS")
[ -z "$ARGS" ] || fail "the default ARGS are not empty: $ARGS"
start_sim sim "$WORK/hwmon" --profile gb200 --model constant --load 0.25 --no-noise
# shellcheck disable=SC2086 # ARGS is a word list, as in ExecStart
start_exporter exp --hwmon-root "$WORK/hwmon" $ARGS
body=$(curl -sf "http://127.0.0.1:$PORT/metrics") || fail "curl /metrics"
grep -q '^cpu_power_acpi_watts{sensor="hwmon2/power1",type="total",socket="0"' <<<"$body" || fail "no socket 0 total: $body"
grep -qF "cpu_power_exporter_info{version=\"$version\",source=\"acpi\"} 1" <<<"$body" || fail "no info gauge"
stop "$EXPORTER_PID"
ok "the installed cpu-power-exporter serves /metrics from the installed cpu-power sim-node"

# --- 7. arm64 -----------------------------------------------------------------------------------
if [ -n "${BUILD_ARM64:-}" ] && [ -f "$BUILD_ARM64/CMakeCache.txt" ]; then
  ARM_DEB=$(build_deb "$BUILD_ARM64" "$WORK/pkg-arm64") || exit 1
  [ "$(dpkg-deb --field "$ARM_DEB" Architecture)" = arm64 ] || fail "arm64 package Architecture"
  mkdir -p "$WORK/arm64"
  dpkg -x "$ARM_DEB" "$WORK/arm64"
  file -b "$WORK/arm64/usr/bin/cpu-power-exporter" | grep -q 'ARM aarch64' || fail "arm64 exporter is not aarch64"
  lintian --fail-on error --tag-display-limit 0 "$ARM_DEB" >"$WORK/lintian-arm64.log" 2>&1 ||
    { cat "$WORK/lintian-arm64.log" >&2; fail "lintian on the arm64 package"; }
  ok "arm64 package from $BUILD_ARM64: $(basename "$ARM_DEB"), aarch64 binaries, lintian without errors"
else
  echo "note: no cross build (BUILD_ARM64=${BUILD_ARM64:-unset}); the arm64 package is not built"
fi
finish
