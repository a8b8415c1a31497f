#pragma once
// Writes the on-disk shape of /sys/class/hwmon and the device directories behind it. Every
// value change is a rename() within one directory, so a reader opens either the old inode
// or the new one and never sees a half-written file.

#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.hpp"
#include "sim/profiles.hpp"

namespace cpupower::sim {

// Present in a root that sim-node wrote, so that a later run may clear it. A root holding
// anything else is never touched.
inline constexpr std::string_view kRootMarker = ".cpu-power-sim";

// The temporary sibling of `path` used for atomic replacement: ".<name>.<suffix>", dot-first
// so that it never matches a consumer's power*_average glob.
std::string temp_sibling(const std::string& path, std::string_view suffix = "tmp");

// Replaces `path` by a regular file holding `content` (temp sibling + rename).
Status write_atomic(const std::string& path, std::string_view content);
// The same with the file's mode set exactly (0400 for a root-only sysfs attribute).
Status write_atomic(const std::string& path, std::string_view content, std::optional<mode_t> mode);

// Replaces `path` by a socket inode: stat() finds it, open() fails with ENXIO, which stands in
// for sysfs read errors such as ENODATA.
Status replace_with_socket(const std::string& path);

// Replaces `path` by a FIFO: open(O_RDONLY) blocks until a writer opens it.
Status replace_with_fifo(const std::string& path);

// hwmon class numbers of the power meters: 2, 3, then 10, 11, ... so that a string sort puts
// hwmon10 before hwmon2 and only a numeric sort gets the order right.
std::string power_meter_hwmon(std::size_t index);

// "devices/platform/ACPI000D:NN", relative to the root.
std::string acpi_device_dir(std::size_t index);

struct NodeSpec {
  std::string hwmon;       // "hwmon10"
  std::string device_dir;  // relative to the root, e.g. "devices/platform/ACPI000D:02"
  std::string name;        // content of `name`
  Layout layout = Layout::modern;
  // Written in order; the first one named power1_average (if any) is the value file.
  std::vector<std::pair<std::string, std::string>> attributes;
};

// Where a node's `name` and attributes live (absolute): the class directory in the modern
// layout, the device directory in the legacy one.
std::string attribute_dir(const std::string& root, const NodeSpec& node);

// Creates the device and class directories, `device` link, name, attributes and (legacy) the
// power1_average alias. The root's hwmonM entry is left to link_class_entry, so a scan of
// the root never finds a half-written node.
Status write_node(const std::string& root, const NodeSpec& node);

// ROOT/hwmonM -> devices/.../hwmon/hwmonM, relative so the tree survives a bind mount.
Status link_class_entry(const std::string& root, const NodeSpec& node);

// Creates the root if missing. A non-empty root must carry kRootMarker (an earlier sim-node
// run), in which case its hwmon* and intel-rapl* entries and devices/ are removed. Writes the
// marker.
Status prepare_root(const std::string& root);

}  // namespace cpupower::sim
