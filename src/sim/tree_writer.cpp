#include "sim/tree_writer.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace cpupower::sim {
namespace fs = std::filesystem;
namespace {

Error sys_fail(const std::string& what, const std::string& path) {
  return Error{what + " " + path + ": " + std::strerror(errno)};
}

Error fs_fail(const std::string& what, const std::string& path, const std::error_code& ec) {
  return Error{what + " " + path + ": " + ec.message()};
}

Status rename_over(const std::string& tmp, const std::string& path) {
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int saved = errno;
    ::unlink(tmp.c_str());
    errno = saved;
    return sys_fail("rename onto", path);
  }
  return Ok{};
}

// A stale temp sibling (killed run) would make mknod/mkfifo fail with EEXIST.
void clear(const std::string& path) {
  ::unlink(path.c_str());
}

Status make_symlink(const std::string& target, const std::string& link) {
  clear(link);
  if (::symlink(target.c_str(), link.c_str()) != 0) return sys_fail("symlink", link);
  return Ok{};
}

std::string class_dir(const std::string& root, const NodeSpec& node) {
  return root + "/" + node.device_dir + "/hwmon/" + node.hwmon;
}

}  // namespace

std::string temp_sibling(const std::string& path, std::string_view suffix) {
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  return dir + "." + name + "." + std::string(suffix);
}

Status write_atomic(const std::string& path, std::string_view content) {
  return write_atomic(path, content, std::nullopt);
}

Status write_atomic(const std::string& path, std::string_view content, std::optional<mode_t> mode) {
  const std::string tmp = temp_sibling(path);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return sys_fail("open", tmp);
  // A file left over from a killed run keeps its old mode through O_TRUNC: set it.
  if (mode && ::fchmod(fd, *mode) != 0) {
    const int saved = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    errno = saved;
    return sys_fail("chmod", tmp);
  }
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int saved = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      errno = saved;
      return sys_fail("write", tmp);
    }
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  return rename_over(tmp, path);
}

Status replace_with_socket(const std::string& path) {
  // mknod(S_IFSOCK) makes the same inode a bound-then-closed socket leaves behind, without
  // bind()'s 108-byte sun_path limit on deep roots.
  const std::string tmp = temp_sibling(path, "sock");
  clear(tmp);
  if (::mknod(tmp.c_str(), S_IFSOCK | 0644, 0) != 0) return sys_fail("mknod", tmp);
  return rename_over(tmp, path);
}

Status replace_with_fifo(const std::string& path) {
  const std::string tmp = temp_sibling(path, "fifo");
  clear(tmp);
  if (::mkfifo(tmp.c_str(), 0644) != 0) return sys_fail("mkfifo", tmp);
  return rename_over(tmp, path);
}

std::string power_meter_hwmon(std::size_t index) {
  return "hwmon" + std::to_string(index < 2 ? index + 2 : index + 8);
}

std::string acpi_device_dir(std::size_t index) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "ACPI000D:%02zu", index);
  return std::string("devices/platform/") + buf;
}

std::string attribute_dir(const std::string& root, const NodeSpec& node) {
  return node.layout == Layout::legacy ? root + "/" + node.device_dir : class_dir(root, node);
}

Status write_node(const std::string& root, const NodeSpec& node) {
  const std::string hwmon_dir = class_dir(root, node);
  std::error_code ec;
  fs::create_directories(hwmon_dir, ec);
  if (ec) return fs_fail("mkdir", hwmon_dir, ec);
  // sysfs links the class device to its parent device; "../../" from .../DEV/hwmon/hwmonM.
  if (Status s = make_symlink("../../", hwmon_dir + "/device"); !s) return s;

  const std::string attrs = attribute_dir(root, node);
  if (Status s = write_atomic(attrs + "/name", node.name + "\n"); !s) return s;
  for (const auto& [attr, content] : node.attributes) {
    if (Status s = write_atomic(attrs + "/" + attr, content); !s) return s;
  }
  if (node.layout == Layout::legacy) {
    // Older acpi_power_meter kernels also exposed power1_average on the class device; the
    // alias resolves to the same file, which consumers must count once.
    for (const auto& [attr, content] : node.attributes) {
      if (attr != "power1_average") continue;
      return make_symlink("device/power1_average", hwmon_dir + "/power1_average");
    }
  }
  return Ok{};
}

Status link_class_entry(const std::string& root, const NodeSpec& node) {
  return make_symlink(node.device_dir + "/hwmon/" + node.hwmon, root + "/" + node.hwmon);
}

Status prepare_root(const std::string& root) {
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) return fs_fail("cannot create root", root, ec);
  if (!fs::is_directory(root, ec)) return Error{"root " + root + " is not a directory"};
  const bool ours = fs::exists(fs::path(root) / kRootMarker, ec);
  std::vector<fs::path> stale;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name == kRootMarker) continue;
    if (!ours) {
      return Error{"root " + root + " is not empty and was not written by sim-node (no " +
                   std::string(kRootMarker) + "); refusing to write over it"};
    }
    if (name == "devices" || name.rfind("hwmon", 0) == 0 || name.rfind("intel-rapl", 0) == 0) {
      stale.push_back(it->path());
    }
  }
  if (ec) return fs_fail("cannot list root", root, ec);
  for (const auto& p : stale) {
    fs::remove_all(p, ec);
    if (ec) return fs_fail("cannot remove stale", p.string(), ec);
  }
  return write_atomic(root + "/" + std::string(kRootMarker), "cpu-power sim-node\n");
}

}  // namespace cpupower::sim
