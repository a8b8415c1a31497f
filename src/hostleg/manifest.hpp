#pragma once
// <cpu_dir>/manifest.json of the host-collector leg: a file format, so it is defined in
// artifacts (artifacts/host_manifest.hpp), where `cpu-power validate` reads it too. The host
// leg's names for it.

#include "artifacts/host_manifest.hpp"

namespace cpupower::hostleg {

using artifacts::HostManifest;
using artifacts::parse_host_manifest;
using artifacts::read_host_manifest;
using artifacts::render_host_manifest;
using artifacts::write_host_manifest;
inline constexpr std::string_view kManifestFilename = artifacts::kHostManifestFilename;
inline constexpr std::string_view kStatusStarting = artifacts::kHostStatusStarting;
inline constexpr std::string_view kStatusRunning = artifacts::kHostStatusRunning;
inline constexpr std::string_view kStatusFailed = artifacts::kHostStatusFailed;
inline constexpr std::string_view kStatusComplete = artifacts::kHostStatusComplete;
inline constexpr std::string_view kStatusIncomplete = artifacts::kHostStatusIncomplete;

}  // namespace cpupower::hostleg
