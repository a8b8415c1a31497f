#include <fmt/format.h>

#include <cmath>

#include "common/json_fields.hpp"
#include "validate/checker.hpp"

// The run's clock check: every node synchronised, within the recorded offset bound.
namespace cpupower::validate {

void check_clock(Checker& k, Package P, const Json* raw_manifest, const ar::GpuManifest* m) {
  const std::string rel = "clock_sync.json";
  const std::string path = path_of(k.o.run_dir, rel);
  const std::string_view fix_none =
      "let `cpu-power run` probe the node clocks (it writes clock_sync.json unless the "
      "recipe sets `telemetry.clock_sync_check: false`), then rerun";
  const std::string_view fix_sync =
      "synchronise the node clocks (chronyd, ntpd or systemd-timesyncd), then rerun: row "
      "times come from each node's clock, so an offset moves every window edge";
  std::optional<Json> doc;
  std::string file = rel;
  if (fs::exists(path)) {
    auto parsed = read_json(path);
    if (!parsed) {
      k.add(P, reason::kClockSyncUnverified, rel, "clock_sync.json is " + parsed.error(), fix_none);
      return;
    }
    doc = std::move(*parsed);
  } else if (raw_manifest && raw_manifest->contains("clock_sync_check") &&
             !(*raw_manifest)["clock_sync_check"].is_null()) {
    doc = (*raw_manifest)["clock_sync_check"];
    file = join_rel(k.o.gpu_dir, ar::kGpuManifestFilename);
  }
  if (m && !m->clock_sync_failures.empty()) {
    k.add(P, reason::kClockSyncUnverified, join_rel(k.o.gpu_dir, ar::kGpuManifestFilename),
          "clock_sync_failures names " + list_text(m->clock_sync_failures), fix_sync);
  }
  if (!doc) {
    k.add(P, reason::kClockSyncUnverified, rel,
          "no clock check ran: no clock_sync.json and no clock_sync_check in the GPU manifest",
          fix_none);
    return;
  }
  const Json* nodes = doc->is_object() && doc->contains("nodes") ? &(*doc)["nodes"] : nullptr;
  if (!nodes || !nodes->is_array()) {
    k.add(P, reason::kClockSyncUnverified, file, "the clock check has no \"nodes\" list", fix_none);
    return;
  }
  std::optional<double> bound;
  common::get_to(*doc, "max_offset_seconds", bound);
  std::size_t unknown = 0;
  std::vector<std::string> unsynced, over;
  for (const auto& n : *nodes) {
    std::string host = "?", state = "unknown";
    common::get_to(n, "hostname", host);
    common::get_to(n, "synchronized", state);
    if (state == "no") {
      unsynced.push_back(host);
    } else if (state != "yes") {
      ++unknown;
    }
    if (double off = 0;
        bound && common::get_to(n, "offset_seconds", off) && std::abs(off) > *bound) {
      over.push_back(fmt::format("{} ({:+.6f} s)", host, off));
    }
  }
  if (nodes->empty() || unknown == nodes->size()) {
    k.add(P, reason::kClockSyncUnverified, file,
          nodes->empty() ? std::string("the clock check lists no node")
                         : std::string("no node's clock state could be read (every node "
                                       "unknown)"),
          "install a tool that reports the clock's state (chronyc, timedatectl, ntpq) on the "
          "nodes, then rerun");
  }
  if (!unsynced.empty()) {
    k.add(P, reason::kClockSyncUnverified, file, "not synchronised: " + list_text(unsynced),
          fix_sync);
  }
  if (!over.empty()) {
    k.add(P, reason::kClockSyncUnverified, file,
          fmt::format("offset over the {} s bound: {}", bound.value_or(0), list_text(over)),
          fix_sync);
  }
}

}  // namespace cpupower::validate
