#include "sources/acpi_discovery.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <thread>

#include "common/text.hpp"
#include "expo/writer.hpp"

namespace cpupower::sources {
namespace {

struct DirList {
  std::vector<std::string> names;
  int error = 0;  // errno of opendir, 0 when listed
};

DirList list_dir(const std::string& dir) {
  DirList out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) {
    out.error = errno;
    return out;
  }
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") out.names.push_back(name);
  }
  ::closedir(d);
  return out;
}

std::string read_trimmed(const std::string& path) {
  const auto text = common::read_small_file(path);
  return text ? std::string(common::trim(*text)) : std::string();
}

bool is_power_meter(const std::string& dir) {
  return read_trimmed(dir + "/name") == "power_meter" ||
         read_trimmed(dir + "/device/name") == "power_meter";
}

// A channel value file: anything that is not a directory (sysfs attributes are regular
// files; the simulator's slow and failing channels are FIFOs and sockets). stat() follows
// symlinks, as the class node's aliases require.
bool is_value_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && !S_ISDIR(st.st_mode);
}

std::string real_path(const std::string& path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) ? std::string(buf) : path;
}

// Channel names (power1, ...) with a readable value file in `dir`: power*_average, or
// power*_input where the channel has no _average.
std::map<std::string, std::string> value_files(const std::string& dir,
                                               const std::vector<std::string>& names) {
  std::map<std::string, std::string> out;  // channel -> file name
  for (const auto& name : names) {
    if (name.rfind("power", 0) != 0) continue;
    std::string channel;
    if (name.ends_with("_average")) {
      channel = name.substr(0, name.size() - 8);
    } else if (name.ends_with("_input")) {
      channel = name.substr(0, name.size() - 6);
    } else {
      continue;
    }
    if (channel.find('_') != std::string::npos) continue;  // e.g. power1_average_interval
    if (!is_value_file(dir + "/" + name)) continue;
    auto& slot = out[channel];
    if (slot.empty() || name.ends_with("_average")) slot = name;
  }
  return out;
}

}  // namespace

AcpiDiscovery discover_acpi(const std::string& hwmon_root) {
  AcpiDiscovery result;
  const auto root = list_dir(hwmon_root);
  if (root.error != 0) {
    result.error = "list " + hwmon_root + ": " + std::strerror(root.error);
    return result;
  }
  std::vector<std::string> nodes;
  for (const auto& n : root.names) {
    if (n.rfind("hwmon", 0) == 0) nodes.push_back(n);
  }
  std::sort(nodes.begin(), nodes.end(), common::natural_less);

  // Identity of a channel is the real path of its value file: hwmonN/power1_average and
  // hwmonN/device/power1_average can be the same file.
  std::map<std::string, std::size_t> by_identity;
  for (const auto& node : nodes) {
    const std::string node_dir = hwmon_root + "/" + node;
    if (!is_power_meter(node_dir)) continue;
    for (const std::string sub : {"", "/device"}) {
      const std::string dir = node_dir + sub;
      const auto listing = list_dir(dir);
      if (listing.error != 0) {
        if (listing.error != ENOENT && listing.error != ENOTDIR) {
          result.warnings.push_back("hwmon directory unreadable; its rails are not exported dir=" +
                                    dir + " error=" + std::strerror(listing.error));
        }
        continue;
      }
      for (const auto& [channel, file] : value_files(dir, listing.names)) {
        AcpiChannel c;
        c.hwmon = node;
        c.channel = channel;
        c.sensor = node + "/" + channel;
        c.value_path = dir + "/" + file;
        std::string oem = read_trimmed(dir + "/" + channel + "_oem_info");
        if (oem.empty()) oem = read_trimmed(dir + "/" + channel + "_label");
        c.has_metadata = !oem.empty();
        c.oem_info = c.has_metadata ? oem : channel;
        c.interval_path = dir + "/" + channel + "_average_interval";
        c.average_interval = read_average_interval(c.interval_path);
        c.device = real_path(node_dir + "/device");
        const std::string identity = real_path(c.value_path);
        const auto it = by_identity.find(identity);
        if (it == by_identity.end()) {
          by_identity.emplace(identity, result.channels.size());
          result.channels.push_back(std::move(c));
        } else if (c.has_metadata && !result.channels[it->second].has_metadata) {
          result.channels[it->second] = std::move(c);  // the side with the OEM label wins
        }
      }
    }
  }
  std::stable_sort(result.channels.begin(), result.channels.end(),
                   [](const AcpiChannel& a, const AcpiChannel& b) {
                     if (a.hwmon != b.hwmon) return common::natural_less(a.hwmon, b.hwmon);
                     return common::natural_less(a.channel, b.channel);
                   });
  for (auto& c : result.channels) {
    c.cls = rails::classify_oem(c.oem_info);
    c.label_text = expo::label_text(expo::kAcpiWatts, {c.sensor, rails::kind_name(c.cls.kind),
                                                       c.cls.socket, c.oem_info, "acpi"});
  }
  return result;
}

std::optional<std::chrono::milliseconds> read_average_interval(const std::string& path) {
  const auto text = common::read_small_file(path, 64);
  if (!text) return std::nullopt;
  const auto ms = common::parse_u64(common::trim(*text));
  if (!ms || *ms == 0 || *ms > 86400000) return std::nullopt;
  return std::chrono::milliseconds(static_cast<std::int64_t>(*ms));
}

std::vector<std::string> stable_keys(const std::vector<AcpiChannel>& channels) {
  std::map<std::string, int> labels;
  for (const auto& c : channels) {
    if (c.has_metadata) labels[c.oem_info]++;
  }
  std::vector<std::string> out;
  for (const auto& c : channels) {
    out.push_back(c.has_metadata && labels[c.oem_info] == 1 ? "oem:" + c.oem_info
                                                            : "dev:" + c.device + "/" + c.channel);
  }
  return out;
}

namespace {

// A sysfs store: one write at offset 0. O_TRUNC changes nothing on sysfs and keeps a plain
// file (the simulator's) from keeping a longer old value's tail.
std::string write_interval_file(const std::string& path, std::chrono::milliseconds interval) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) return std::strerror(errno);
  const std::string text = std::to_string(interval.count()) + "\n";
  const ssize_t n = ::write(fd, text.data(), text.size());
  const int write_errno = errno;
  const int close_rc = ::close(fd);
  if (n < 0) return std::strerror(write_errno);
  if (static_cast<std::size_t>(n) != text.size()) return "short write";
  if (close_rc != 0) return std::strerror(errno);
  return {};
}

}  // namespace

IntervalChange set_average_interval(const std::string& hwmon_root,
                                    std::chrono::milliseconds interval,
                                    std::chrono::milliseconds settle) {
  IntervalChange out;
  const auto before = discover_acpi(hwmon_root);
  const auto keys = stable_keys(before.channels);
  struct Pending {
    std::string node;  // <root>/hwmonN
    struct stat st {};
    bool existed = false;
    std::string key;
    std::string sensor;
  };
  std::vector<Pending> pending;
  for (std::size_t k = 0; k < before.channels.size(); ++k) {
    const auto& c = before.channels[k];
    if (c.average_interval == interval) {
      out.unchanged++;
      continue;
    }
    Pending p;
    p.node = hwmon_root + "/" + c.hwmon;
    p.existed = ::stat(p.node.c_str(), &p.st) == 0;
    p.key = keys[k];
    p.sensor = c.sensor;
    if (const auto why = write_interval_file(c.interval_path, interval); !why.empty()) {
      out.failures.push_back("sensor=" + c.sensor + " path=" + c.interval_path + " error=" + why);
      continue;
    }
    out.written++;
    // Kernels >= 6.15 (attributes on the class node) re-register the hwmon device on the
    // CONFIG notify that _PAI raises; older ones keep it and only the value changes.
    const bool on_class_node = c.interval_path.rfind(p.node + "/device/", 0) != 0;
    if (on_class_node) pending.push_back(std::move(p));
  }
  if (pending.empty()) return out;

  // Each old node is first seen gone, then its channel looked for: a channel found after its
  // old node went can only be on its new one. The other way round, a discovery that read the
  // old node just before the kernel removed it would pass for the new one, and the caller's
  // own discovery would then miss the channel while it re-registers.
  std::vector<bool> moved(pending.size(), false), back(pending.size(), false);
  const auto deadline = std::chrono::steady_clock::now() + settle;
  while (true) {
    bool any_moved = false;
    for (std::size_t i = 0; i < pending.size(); ++i) {
      const auto& p = pending[i];
      struct stat st {};
      if (!moved[i]) {
        moved[i] = !p.existed || ::stat(p.node.c_str(), &st) != 0 || st.st_ino != p.st.st_ino ||
                   st.st_dev != p.st.st_dev;
      }
      any_moved = any_moved || moved[i];
    }
    std::set<std::string> present;
    if (any_moved) {
      const auto found_keys = stable_keys(discover_acpi(hwmon_root).channels);
      present.insert(found_keys.begin(), found_keys.end());
    }
    bool done = true;
    for (std::size_t i = 0; i < pending.size(); ++i) {
      back[i] = moved[i] && present.count(pending[i].key) > 0;
      done = done && back[i];
    }
    if (done) return out;
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  out.settled = false;
  for (std::size_t i = 0; i < pending.size(); ++i) {
    if (!moved[i]) {
      out.not_moved.push_back(pending[i].sensor);
    } else if (!back[i]) {
      out.not_back.push_back(pending[i].sensor);
    }
  }
  return out;
}

}  // namespace cpupower::sources
