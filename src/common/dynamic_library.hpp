#pragma once
// dlopen with a list of candidate names, and typed dlsym. Closing is left to process exit:
// a library whose threads may still be inside a call must never be unloaded.

#include <string>
#include <vector>

namespace cpupower::common {

class DynamicLibrary {
 public:
  // Tries each candidate in order; false with the last dlerror when none loads.
  bool open(const std::vector<std::string>& candidates, std::string* error);
  const std::string& name() const { return name_; }

  // The symbol, or nullptr with "symbol <name>: <dlerror>" appended to `missing`.
  template <class Fn>
  Fn symbol(const char* symbol_name, std::string* missing) const {
    return reinterpret_cast<Fn>(raw_symbol(symbol_name, missing));
  }
  // The same into a function pointer of the symbol's type.
  template <class Fn>
  void bind(Fn*& fn, const char* symbol_name, std::string* missing) const {
    fn = symbol<Fn*>(symbol_name, missing);
  }

 private:
  void* raw_symbol(const char* symbol_name, std::string* missing) const;
  void* handle_ = nullptr;
  std::string name_;
};

}  // namespace cpupower::common
