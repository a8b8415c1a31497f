#pragma once
// dlopen with a list of candidate names, and typed dlsym. Closing is left to process exit:
// a library whose threads may still be inside a call must never be unloaded.

#include <string>
#include <vector>

#include "common/result.hpp"

namespace cpupower::common {

class DynamicLibrary {
 public:
  // Tries each candidate in order; the error is the last dlerror when none loads.
  Status open(const std::vector<std::string>& candidates);
  const std::string& name() const { return name_; }

  // The symbol's address, or the error "symbol <name>: <dlerror>".
  Result<void*> symbol(const char* symbol_name) const;

 private:
  void* handle_ = nullptr;
  std::string name_;
};

// Binds function pointers to a library's symbols one after another and collects the missing
// ones, so that one message names them all.
class SymbolBinder {
 public:
  explicit SymbolBinder(const DynamicLibrary& lib) : lib_(lib) {}

  // `fn` becomes the symbol, or nullptr with the symbol noted as missing.
  template <class Fn>
  void bind(Fn*& fn, const char* symbol_name) {
    const auto p = lib_.symbol(symbol_name);
    fn = p ? reinterpret_cast<Fn*>(*p) : nullptr;
    if (!p) missing_ += (missing_.empty() ? "" : "; ") + p.error();
  }
  // The symbol as whichever function pointer it initialises, bound as bind() does, so that a
  // table of functions names each symbol once: `struct Api { init_fn init = symbols("init"); };`
  struct Symbol {
    SymbolBinder& binder;
    const char* name;
    template <class Fn>
    operator Fn*() const {  // NOLINT: implicit on purpose
      Fn* fn = nullptr;
      binder.bind(fn, name);
      return fn;
    }
  };
  Symbol operator()(const char* symbol_name) { return {*this, symbol_name}; }
  // Ok, or each missing symbol as "symbol <name>: <dlerror>", joined with "; ".
  Status status() const {
    if (missing_.empty()) return Ok{};
    return Error{missing_};
  }

 private:
  const DynamicLibrary& lib_;
  std::string missing_;
};

}  // namespace cpupower::common
