#pragma once
// Readiness markers of the host-collector leg: each node's collector writes
// <ready_dir>/<host>.ready.json once its source is established, or <host>.error.json when
// it cannot start, and the head node waits for one or the other from every node. Markers
// are written atomically (temporary file, fsync, rename), so a reader never sees half of
// one; the temporary files themselves are never mistaken for markers.

#include <map>
#include <set>
#include <string>
#include <string_view>

#include "common/result.hpp"

namespace cpupower::hostleg {

inline constexpr std::string_view kReadySuffix = ".ready.json";
inline constexpr std::string_view kErrorSuffix = ".error.json";

// Whether `host` can name a node's files in a directory: not empty, no '/', no NUL, not "."
// or "..". A name that is not would write outside the directory, or never be found again.
bool is_file_name(std::string_view host);

// {"hostname", "ready_at_unix", "source"}: sorted keys, 2-space indent, trailing newline.
// An error when it cannot be written; never throws.
Status write_ready_marker(const std::string& ready_dir, const std::string& host,
                          const std::string& source, double ready_at_unix);

// {"error", "hostname"}, in the same layout.
Status write_error_marker(const std::string& ready_dir, const std::string& host,
                          const std::string& error_text);

struct MarkerScan {
  std::set<std::string> ready;
  std::map<std::string, std::string> errors;  // host -> error text
};

// Every marker in `ready_dir` (a missing directory has none). The host is the file name
// before the suffix. An error marker that cannot be read or parsed still counts as an
// error, its text saying so: the node did fail, only its message was lost. A host with
// both markers is listed in both.
MarkerScan scan_markers(const std::string& ready_dir);

}  // namespace cpupower::hostleg
