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

.PHONY: all deps configure build setup test test-arm64 test-asan test-tsan unit demo bench fuzz format clean

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
test-arm64:
	BUILD_ARM64=$(BUILD_ARM64) HOST_BUILD=$(BUILD) JOBS=$(JOBS) TEST_JOBS=$(TEST_JOBS) bash scripts/test-arm64.sh

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

format:
	clang-format -i $$(git ls-files '*.cpp' '*.hpp')

clean:
	rm -rf $(BUILD) $(BUILD_ARM64) build-asan build-tsan $(BUILD_FUZZ)
