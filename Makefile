# Two commands on a fresh Debian 12 machine: `make demo` and `make test`.
BUILD ?= build
BUILD_ARM64 ?= build-arm64
BUILD_FUZZ ?= build-fuzz
FUZZ_SECONDS ?= 30
FUZZ_JOBS ?= 1
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=RelWithDebInfo
JOBS ?= $(shell nproc)
# Tests at twice the cores: most integration tests wait on processes, sockets and fixed
# scrape durations far more than they compute, and none asserts how fast a busy machine runs
# it (docs/reliability.md, CI time).
TEST_JOBS ?= $(shell echo $$(( $$(nproc) * 2 )))
# make deb ARCH=arm64 packages the cross build in $(BUILD_ARM64) (make test-arm64 makes it).
NATIVE_ARCH := $(shell dpkg --print-architecture 2>/dev/null || echo amd64)
ARCH ?= $(NATIVE_ARCH)

.PHONY: all deps configure build setup test test-arm64 test-asan test-tsan unit demo bench fuzz deb format clean help

all: build

deps:
	bash scripts/install-deps.sh

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS)

configure: $(BUILD)/build.ninja

build: configure
	ninja -C $(BUILD) -j $(JOBS)

setup: deps build

# Every test: unit tests, then integration tests with real processes (exporters, simulated
# nodes, Prometheus, a local Slurm cluster), each starting and stopping its own services.
test: setup
	ctest --test-dir $(BUILD) --output-on-failure -j $(TEST_JOBS)

# The whole project cross-compiled for aarch64 (Grace) into $(BUILD_ARM64) and tested under
# qemu-user: unit tests, integration tests without Slurm, and byte-for-byte comparisons with
# the native build in $(BUILD), which it brings up to date first (scripts/test-arm64.sh).
# Emulated processes compute several times slower: its tests run at the cores, not twice
# that, and its integration tests one at a time (tests/CMakeLists.txt).
test-arm64:
	BUILD_ARM64=$(BUILD_ARM64) HOST_BUILD=$(BUILD) JOBS=$(JOBS) TEST_JOBS=$(JOBS) bash scripts/test-arm64.sh

# The unit and integration tests against sanitized builds of the whole project, each in its
# own build directory: AddressSanitizer with LeakSanitizer and UndefinedBehaviorSanitizer, and
# ThreadSanitizer. A sanitizer report anywhere fails the run (scripts/test-sanitizer.sh).
test-asan:
	JOBS=$(JOBS) TEST_JOBS=$(TEST_JOBS) bash scripts/test-sanitizer.sh asan build-asan

test-tsan:
	JOBS=$(JOBS) TEST_JOBS=$(TEST_JOBS) bash scripts/test-sanitizer.sh tsan build-tsan

unit: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(TEST_JOBS) -R '^unit\.'

demo: setup
	bash scripts/demo.sh $(BUILD)/bin

bench: setup
	bash bench/run.sh $(BUILD)/bin

# The libFuzzer targets (tests/fuzz), built with clang into $(BUILD_FUZZ) and run for
# FUZZ_SECONDS each, FUZZ_JOBS at a time; fails when one crashes, and copies its input to
# tests/fuzz/regressions/<target>/ (tests/fuzz/run.sh). `make fuzz BUILD_FUZZ=build-asan`
# after `make test-asan` uses the ASan build, which has the fuzz targets too (CI does this).
fuzz: deps
	BUILD_FUZZ=$(BUILD_FUZZ) FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_JOBS=$(FUZZ_JOBS) JOBS=$(JOBS) \
	  bash tests/fuzz/run.sh

# The Debian package cpu-power-telemetry_<version>-1_<arch>.deb in $(BUILD)/deb/ (CPack,
# docs/operations.md): both binaries, the fallback exporter, man pages (help2man), docs and
# the hardened cpu-power-exporter.service. It builds the two binaries, not the tests. ARCH=arm64 on an x86-64 host packages the cross
# build $(BUILD_ARM64) into $(BUILD_ARM64)/deb/ instead; it must exist (make test-arm64).
ifeq ($(ARCH),$(NATIVE_ARCH))
deb: configure
	ninja -C $(BUILD) -j $(JOBS) deb
else ifeq ($(ARCH),arm64)
deb:
	@test -f $(BUILD_ARM64)/build.ninja || { echo "make deb ARCH=arm64: no cross build in $(BUILD_ARM64); run make test-arm64 first" >&2; exit 1; }
	ninja -C $(BUILD_ARM64) -j $(JOBS) deb
else
deb:
	@echo "make deb: ARCH=$(ARCH) is neither this machine's ($(NATIVE_ARCH)) nor arm64" >&2; exit 1
endif

format:
	clang-format -i $$(git ls-files '*.cpp' '*.hpp')

help:
	@echo "make demo        simulated two-node run with the combined report (demo-run/)"
	@echo "make test        dependencies, build, every test"
	@echo "make unit        unit tests only"
	@echo "make test-arm64  cross build for aarch64, tested under qemu-user"
	@echo "make test-asan   sanitizer builds and tests (also test-tsan)"
	@echo "make bench       benchmarks;  make fuzz: libFuzzer targets"
	@echo "make deb         Debian package in $(BUILD)/deb/ (ARCH=arm64: from $(BUILD_ARM64))"
	@echo "make format      clang-format every .cpp/.hpp;  make clean"

clean:
	rm -rf $(BUILD) $(BUILD_ARM64) build-asan build-tsan $(BUILD_FUZZ)
