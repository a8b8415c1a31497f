#pragma once
// <cpu_dir>/manifest.json of the host-collector leg: a file format, so it is defined in
// artifacts (artifacts/host_manifest.hpp), where `cpu-power validate` reads it too.

#include "artifacts/host_manifest.hpp"

namespace cpupower::hostleg {
using namespace artifacts::host;
}  // namespace cpupower::hostleg
