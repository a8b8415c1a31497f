#pragma once
// Stand-in NVIDIA libraries read their behaviour from a key=value control file named by an
// environment variable, re-read on every call, so a test can change values while the
// exporter runs. Unknown keys are ignored; a missing file means defaults.

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <thread>

namespace standin {

inline std::map<std::string, std::string> control(const char* env) {
  std::map<std::string, std::string> kv;
  const char* path = std::getenv(env);
  if (!path) return kv;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const auto eq = line.find('=');
    if (eq == std::string::npos || line.empty() || line[0] == '#') continue;
    kv[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return kv;
}

inline std::string get(const std::map<std::string, std::string>& kv, const std::string& key,
                       const std::string& fallback = "") {
  const auto it = kv.find(key);
  return it == kv.end() ? fallback : it->second;
}

// "hang:MS" sleeps MS milliseconds; returns the rest of the value otherwise.
inline void maybe_hang(const std::string& value) {
  if (value.rfind("hang:", 0) == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(std::atol(value.c_str() + 5)));
  }
}

// Appends a call name to the file named by the control key "calls", for order checks.
inline void note_call(const std::map<std::string, std::string>& kv, const char* name) {
  const auto path = get(kv, "calls");
  if (path.empty()) return;
  std::ofstream(path, std::ios::app) << name << "\n";
}

}  // namespace standin
