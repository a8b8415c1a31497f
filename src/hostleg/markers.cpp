#include "hostleg/markers.hpp"

#include <nlohmann/json.hpp>

#include "common/text.hpp"

namespace cpupower::hostleg {

bool write_ready_marker(const std::string& ready_dir, const std::string& host,
                        const std::string& source, double ready_at_unix, std::string* error) {
  nlohmann::json j = {{"hostname", host}, {"ready_at_unix", ready_at_unix}, {"source", source}};
  return common::write_file_atomic(ready_dir + "/" + host + ".ready.json", j.dump(2) + "\n", error,
                                   true);
}

bool write_error_marker(const std::string& ready_dir, const std::string& host,
                        const std::string& error_text, std::string* error) {
  nlohmann::json j = {{"error", error_text}, {"hostname", host}};
  return common::write_file_atomic(ready_dir + "/" + host + ".error.json", j.dump(2) + "\n", error,
                                   true);
}

}  // namespace cpupower::hostleg
