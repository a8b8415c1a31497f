# The Debian package cpu-power-telemetry (`make deb`, `cpack -G DEB` in a build directory;
# docs/operations.md). Everything `cmake --install` installs, plus what only a system package
# carries, in the install component `deb` (EXCLUDE_FROM_ALL: a plain `cmake --install` never
# writes /etc or /lib): the man pages generated from --help with help2man, the systemd unit,
# its defaults file (a conffile), the udev rule for the RAPL counters, the Debian copyright
# file and changelog. The maintainer
# scripts create the system user and enable and start the unit as dh_installsystemd's would.
#
# One package, not two: the exporter and the tools share the documentation, the fallback
# exporter belongs to both, and a node that runs the service also runs `cpu-power
# sim-node`/`node-address`/`host-collect` (srun starts them there); two packages would
# split ~3 MiB for no user.

set(CPUPOWER_PACKAGING_DIR ${PROJECT_SOURCE_DIR}/packaging)
set(CPUPOWER_DEB_NAME cpu-power-telemetry)
set(CPUPOWER_DEB_RELEASE 1)
set(CPUPOWER_DEB_MAINTAINER "cpu-power-telemetry maintainers <cpu-power-telemetry@example.org>"
    CACHE STRING "the Maintainer field of the Debian package")

# The Debian architecture of the binaries: the cross build's (cmake/aarch64-linux-gnu.cmake)
# or this machine's.
if(CMAKE_CROSSCOMPILING AND CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64)$")
  set(CPUPOWER_DEB_ARCH arm64)
else()
  execute_process(COMMAND dpkg --print-architecture OUTPUT_VARIABLE CPUPOWER_DEB_ARCH
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(NOT CPUPOWER_DEB_ARCH)
    set(CPUPOWER_DEB_ARCH amd64)
  endif()
endif()

# --- man pages: help2man on the built binaries, gzip -9n (no name, no time stamp) -----------
set(CPUPOWER_MAN_DIR ${CMAKE_BINARY_DIR}/man)
set(CPUPOWER_MAN_cpu-power "CPU and superchip power telemetry around benchmarks on Grace clusters")
set(CPUPOWER_MAN_cpu-power-exporter "Prometheus exporter of Grace CPU and superchip power")
set(CPUPOWER_MAN_PAGES)
foreach(prog cpu-power cpu-power-exporter)
  set(page ${CPUPOWER_MAN_DIR}/${prog}.1)
  if(CMAKE_CROSSCOMPILING_EMULATOR)
    # help2man runs the program by path and names the page after it: a wrapper of the same
    # name runs the cross-built binary under the emulator.
    set(runner ${CPUPOWER_MAN_DIR}/run/${prog})
    list(JOIN CMAKE_CROSSCOMPILING_EMULATOR " " emulator)
    file(GENERATE OUTPUT ${runner}
         CONTENT "#!/bin/sh\nexec ${emulator} '$<TARGET_FILE:${prog}>' \"$@\"\n"
         FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE)
  else()
    set(runner $<TARGET_FILE:${prog}>)
  endif()
  # SOURCE_DATE_EPOCH fixes the page's date (help2man reads it): the same binaries give the
  # same page whenever they are packaged.
  add_custom_command(
    OUTPUT ${page}.gz
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CPUPOWER_MAN_DIR}
    COMMAND ${CMAKE_COMMAND} -E env SOURCE_DATE_EPOCH=1767225600 LC_ALL=C.UTF-8
            help2man --no-info --no-discard-stderr --section=1 "--name=${CPUPOWER_MAN_${prog}}"
            --include=${CPUPOWER_PACKAGING_DIR}/man/${prog}.h2m --output=${page} ${runner}
    COMMAND gzip -9nf ${page}
    DEPENDS ${prog} ${CPUPOWER_PACKAGING_DIR}/man/${prog}.h2m
    COMMENT "help2man ${prog}.1"
    VERBATIM)
  list(APPEND CPUPOWER_MAN_PAGES ${page}.gz)
endforeach()
add_custom_target(manpages DEPENDS ${CPUPOWER_MAN_PAGES})

# --- Debian files: copyright, changelog.Debian.gz ------------------------------------------
set(CPUPOWER_DEB_VERSION ${PROJECT_VERSION}-${CPUPOWER_DEB_RELEASE})
configure_file(${CPUPOWER_PACKAGING_DIR}/debian/changelog.in ${CMAKE_BINARY_DIR}/deb/changelog.Debian
               @ONLY)
add_custom_command(
  OUTPUT ${CMAKE_BINARY_DIR}/deb/changelog.Debian.gz
  COMMAND gzip -9nkf ${CMAKE_BINARY_DIR}/deb/changelog.Debian
  DEPENDS ${CMAKE_BINARY_DIR}/deb/changelog.Debian
  VERBATIM)
add_custom_target(deb_files DEPENDS manpages ${CMAKE_BINARY_DIR}/deb/changelog.Debian.gz)

# --- the component `deb` -----------------------------------------------------------------
install(FILES ${CPUPOWER_MAN_PAGES} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT deb
        EXCLUDE_FROM_ALL)
install(FILES ${CPUPOWER_PACKAGING_DIR}/debian/copyright ${CMAKE_BINARY_DIR}/deb/changelog.Debian.gz
        DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT deb EXCLUDE_FROM_ALL)
# Debian 12 keeps system units under /lib (lintian: systemd-service-file-outside-lib).
install(FILES ${CPUPOWER_PACKAGING_DIR}/systemd/cpu-power-exporter.service
        DESTINATION /lib/systemd/system COMPONENT deb EXCLUDE_FROM_ALL)
install(FILES ${CPUPOWER_PACKAGING_DIR}/systemd/cpu-power-exporter.default
        DESTINATION /etc/default RENAME cpu-power-exporter COMPONENT deb EXCLUDE_FROM_ALL)
# x86 nodes: the RAPL counters (root-only on current kernels) readable by the service's group,
# so the unit keeps its hardening (docs/operations.md, RAPL permissions).
install(FILES ${CPUPOWER_PACKAGING_DIR}/udev/60-cpu-power-exporter-rapl.rules
        DESTINATION /lib/udev/rules.d COMPONENT deb EXCLUDE_FROM_ALL)

# --- CPack ---------------------------------------------------------------------------------
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME ${CPUPOWER_DEB_NAME})
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${CPUPOWER_DEB_MAINTAINER}")
set(CPACK_PACKAGE_DIRECTORY ${CMAKE_BINARY_DIR}/deb)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
# The project's own files and the package-only component, in one package.
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_GROUPING ALL_COMPONENTS_IN_ONE)
set(CPACK_COMPONENTS_ALL Unspecified deb)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_NAME ${CPUPOWER_DEB_NAME})
set(CPACK_DEBIAN_PACKAGE_RELEASE ${CPUPOWER_DEB_RELEASE})
set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE ${CPUPOWER_DEB_ARCH})
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${CPUPOWER_DEB_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Depends: from the binaries' real shared-library needs (dpkg-shlibdeps), plus adduser for
# the postinst and python3 for the fallback exporter. libcurl, DCGM and NVML are loaded with
# dlopen, so no dependency names them.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser, python3")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libcurl4")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "prometheus, datacenter-gpu-manager")
# The synopsis, then the extended description: CPack indents each line and turns the empty
# line into the " ." paragraph separator itself.
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "CPU and superchip power telemetry for NVIDIA Grace clusters
Per-node Prometheus exporter of Grace CPU and superchip module power
(cpu-power-exporter, with a systemd service) and the cpu-power tool, which
runs power telemetry around a benchmark under Slurm and writes per-node and
per-socket energy reports.

The exporter reads ACPI power meters from hwmon. DCGM (libdcgm) and NVML
(libnvidia-ml) are optional: they are loaded at run time when present, and
no package dependency names them. cpu-power loads libcurl (libcurl4) when
it starts collecting.")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${CPUPOWER_PACKAGING_DIR}/debian/conffiles ${CPUPOWER_PACKAGING_DIR}/debian/postinst
    ${CPUPOWER_PACKAGING_DIR}/debian/prerm ${CPUPOWER_PACKAGING_DIR}/debian/postrm)
include(CPack)

# `ninja deb`: the package files first (man pages need the binaries), then cpack.
add_custom_target(
  deb
  COMMAND ${CMAKE_COMMAND} -E env DEB_HOST_ARCH=${CPUPOWER_DEB_ARCH} ${CMAKE_CPACK_COMMAND} -G DEB
          --config ${CMAKE_BINARY_DIR}/CPackConfig.cmake
  DEPENDS deb_files cpu-power cpu-power-exporter
  WORKING_DIRECTORY ${CMAKE_BINARY_DIR}
  COMMENT "cpack: ${CPUPOWER_DEB_NAME}_${CPUPOWER_DEB_VERSION}_${CPUPOWER_DEB_ARCH}.deb in deb/"
  VERBATIM)
