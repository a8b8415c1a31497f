#include "common/dynamic_library.hpp"

#include <dlfcn.h>

namespace cpupower::common {

bool DynamicLibrary::open(const std::vector<std::string>& candidates, std::string* error) {
  for (const auto& c : candidates) {
    handle_ = ::dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_) {
      name_ = c;
      return true;
    }
    const char* e = ::dlerror();
    if (error) *error = e ? e : ("cannot load " + c);
  }
  return false;
}

void* DynamicLibrary::raw_symbol(const char* symbol_name, std::string* missing) const {
  ::dlerror();
  void* p = handle_ ? ::dlsym(handle_, symbol_name) : nullptr;
  if (!p && missing) {
    const char* e = ::dlerror();
    if (!missing->empty()) *missing += "; ";
    *missing += std::string("symbol ") + symbol_name + ": " + (e ? e : "not found");
  }
  return p;
}

}  // namespace cpupower::common
