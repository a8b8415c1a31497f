# Two commands on a fresh Debian 12 machine: `make demo` and `make test`.
BUILD ?= build
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=RelWithDebInfo
JOBS ?= $(shell nproc)

.PHONY: all deps configure build setup test unit demo bench format clean

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
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

unit: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) -R '^unit\.'

demo: setup
	bash scripts/demo.sh $(BUILD)/bin

bench: setup
	bash bench/run.sh $(BUILD)/bin

format:
	clang-format -i $$(git ls-files '*.cpp' '*.hpp')

clean:
	rm -rf $(BUILD)
