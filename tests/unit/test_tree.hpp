#pragma once
// A scratch directory for building small sysfs-like trees in tests; removed afterwards.

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace cpupower::testing {

class TestTree {
 public:
  TestTree() {
    char tmpl[] = "/tmp/cpupower-test-XXXXXX";
    root_ = ::mkdtemp(tmpl);
  }
  ~TestTree() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  const std::string& root() const { return root_; }
  std::string path(const std::string& rel) const { return root_ + "/" + rel; }

  void write(const std::string& rel, const std::string& content) const {
    const auto p = std::filesystem::path(path(rel));
    std::filesystem::create_directories(p.parent_path());
    const auto tmp = p.parent_path() / (".tmp." + p.filename().string());
    std::ofstream(tmp) << content;
    std::filesystem::rename(tmp, p);
  }
  void symlink(const std::string& target, const std::string& rel) const {
    const auto p = std::filesystem::path(path(rel));
    std::filesystem::create_directories(p.parent_path());
    std::filesystem::create_symlink(target, p);
  }
  void fifo(const std::string& rel) const {
    const auto p = std::filesystem::path(path(rel));
    std::filesystem::create_directories(p.parent_path());
    std::filesystem::remove(p);
    ::mkfifo(p.c_str(), 0644);
  }
  // A power_meter hwmon node in the >= 6.15 layout with one channel.
  void meter(const std::string& hwmon, const std::string& oem, const std::string& microwatts,
             const std::string& channel = "power1") const {
    write(hwmon + "/name", "power_meter\n");
    write(hwmon + "/" + channel + "_average", microwatts + "\n");
    if (!oem.empty()) write(hwmon + "/" + channel + "_oem_info", oem + "\n");
  }

 private:
  std::string root_;
};

}  // namespace cpupower::testing
