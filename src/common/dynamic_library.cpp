#include "common/dynamic_library.hpp"

#include <dlfcn.h>

namespace cpupower::common {

namespace {

// The pending dlerror message, copied, or `fallback` when there is none. glibc keeps the
// message in a per-thread record that it frees only on the next dlerror call or at thread
// exit; the second call here releases it at once, so a reader thread still running (or
// exiting) when the process ends holds no allocation of ours.
std::string take_dlerror(const std::string& fallback) {
  const char* e = ::dlerror();
  std::string message = e ? e : fallback;
  if (e) ::dlerror();
  return message;
}

}  // namespace

Status DynamicLibrary::open(const std::vector<std::string>& candidates) {
  Error error;
  for (const auto& c : candidates) {
    handle_ = ::dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_) {
      name_ = c;
      return Ok{};
    }
    error.message = take_dlerror("cannot load " + c);
  }
  return error;
}

Result<void*> DynamicLibrary::symbol(const char* symbol_name) const {
  ::dlerror();
  void* p = handle_ ? ::dlsym(handle_, symbol_name) : nullptr;
  if (!p) return Error{std::string("symbol ") + symbol_name + ": " + take_dlerror("not found")};
  return p;
}

}  // namespace cpupower::common
