# Cross-compiles the project for aarch64 Linux (Grace: GH200, GB200, GB300) on an x86-64
# Debian 12 host with Debian's cross toolchain (g++-aarch64-linux-gnu) and the arm64 library
# packages installed side by side with the native ones (multiarch, :arm64):
#
#   scripts/install-deps.sh --arm64
#   cmake -S . -B build-arm64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
#
# Libraries and headers are looked up in the multiarch directories (/usr/lib/aarch64-linux-gnu,
# /usr/include/aarch64-linux-gnu, then the architecture-independent /usr/include). Two -dev
# packages are not co-installable with their amd64 twins (libyaml-cpp-dev, libsimdjson-dev: no
# Multi-Arch: same), so install-deps.sh unpacks their arm64 .debs into CPUPOWER_ARM64_EXTRA
# (with their runtime libraries, which their CMake files name by path) and the search looks
# there first. At run time the same sonames come from /usr/lib/aarch64-linux-gnu, where the
# runtime packages are installed as :arm64. Test binaries run under qemu-user
# (CMAKE_CROSSCOMPILING_EMULATOR), so ctest runs every unit test, including ones added later.

set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

set(CPUPOWER_TRIPLE aarch64-linux-gnu)
set(CMAKE_C_COMPILER ${CPUPOWER_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${CPUPOWER_TRIPLE}-g++)

set(CPUPOWER_ARM64_EXTRA "/opt/cpu-power-telemetry/arm64-extra"
    CACHE PATH "arm64 -dev packages unpacked beside the system (scripts/install-deps.sh --arm64)")

# Search the host's root (the multiarch arm64 paths under it) and the unpacked packages for
# libraries, headers and CMake package files; programs (pkg-config, promtool) are the host's.
set(CMAKE_FIND_ROOT_PATH ${CPUPOWER_ARM64_EXTRA} /)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# pkg-config (libmicrohttpd): the arm64 .pc files, never the host's.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/${CPUPOWER_TRIPLE}/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")

# Test binaries run through qemu-user. The arm64 dynamic loader (/lib/ld-linux-aarch64.so.1,
# from libc6:arm64) finds the arm64 libraries in their multiarch directories, so no -L
# prefix is needed.
find_program(CPUPOWER_QEMU_AARCH64 NAMES qemu-aarch64-static qemu-aarch64 REQUIRED)
set(CMAKE_CROSSCOMPILING_EMULATOR ${CPUPOWER_QEMU_AARCH64})
