#pragma once
// Ready and error markers of the host collectors (provisional; the head side scans them).

#include <string>

namespace cpupower::hostleg {

bool write_ready_marker(const std::string& ready_dir, const std::string& host,
                        const std::string& source, double ready_at_unix, std::string* error);
bool write_error_marker(const std::string& ready_dir, const std::string& host,
                        const std::string& error_text, std::string* error);

}  // namespace cpupower::hostleg
