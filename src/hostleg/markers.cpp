#include "hostleg/markers.hpp"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <system_error>

#include "common/text.hpp"

namespace cpupower::hostleg {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;  // std::map underneath: keys come out sorted

Status write_marker(const std::string& ready_dir, const std::string& host, std::string_view suffix,
                    const Json& doc) {
  if (!is_file_name(host)) return Error{"invalid host name '" + host + "' for a marker"};
  std::error_code ec;
  fs::create_directories(ready_dir, ec);
  const std::string path = (fs::path(ready_dir) / (host + std::string(suffix))).string();
  std::string text;
  try {
    text = doc.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
  } catch (const std::exception& e) {
    return Error{path + ": " + e.what()};
  }
  return common::write_file_atomic(path, text, true);
}

// The host a marker file names, or empty when the name is not a marker (a temporary file
// "<host>.ready.json.tmp.<pid>", a hidden file, a bare suffix).
std::string host_of(const std::string& name, std::string_view suffix) {
  if (name.size() <= suffix.size() || name.front() == '.') return {};
  if (name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) return {};
  return name.substr(0, name.size() - suffix.size());
}

std::string error_text_of(const std::string& path) {
  const auto text = common::read_small_file(path, 1u << 20);
  if (!text) return "error marker " + path + " could not be read: " + text.error();
  const Json doc = Json::parse(*text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    return "error marker " + path + " is not a JSON object";
  }
  const auto it = doc.find("error");
  if (it == doc.end()) return "error marker " + path + " has no \"error\" key";
  if (it->is_string()) return it->get<std::string>();
  return it->dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace

bool is_file_name(std::string_view host) {
  return !host.empty() && host != "." && host != ".." &&
         host.find_first_of(std::string_view("/\0", 2)) == std::string_view::npos;
}

Status write_ready_marker(const std::string& ready_dir, const std::string& host,
                          const std::string& source, double ready_at_unix) {
  Json doc = Json::object();
  doc["hostname"] = host;
  doc["source"] = source;
  doc["ready_at_unix"] = ready_at_unix;
  return write_marker(ready_dir, host, kReadySuffix, doc);
}

Status write_error_marker(const std::string& ready_dir, const std::string& host,
                          const std::string& error_text) {
  Json doc = Json::object();
  doc["error"] = error_text;
  doc["hostname"] = host;
  return write_marker(ready_dir, host, kErrorSuffix, doc);
}

MarkerScan scan_markers(const std::string& ready_dir) {
  MarkerScan scan;
  std::error_code ec;
  fs::directory_iterator it(ready_dir, ec);
  if (ec) return scan;
  for (const fs::directory_iterator end; it != end; it.increment(ec)) {
    if (ec) break;
    const std::string name = it->path().filename().string();
    if (auto ready_host = host_of(name, kReadySuffix); !ready_host.empty()) {
      scan.ready.insert(std::move(ready_host));
    } else if (auto error_host = host_of(name, kErrorSuffix); !error_host.empty()) {
      scan.errors[error_host] = error_text_of(it->path().string());
    }
  }
  return scan;
}

}  // namespace cpupower::hostleg
