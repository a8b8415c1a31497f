#pragma once
// The property every benchmark-window reader keeps, for the aiperf and sa-bench targets: a
// window without an error has finite edges (the span the energy arithmetic uses).

#include <cmath>
#include <cstdio>

#include "fuzz_util.hpp"
#include "report/window.hpp"

namespace cpupower::fuzz {

inline void check_window(const report::Window& w) {
  if (verbose()) {
    std::fprintf(stderr, "window %s: %s\n", w.source.c_str(),
                 w.error.empty() ? "ok" : w.error.c_str());
  }
  if (!w.error.empty()) return;
  FUZZ_CHECK(std::isfinite(w.start_unix) && std::isfinite(w.end_unix),
             "a window without an error has a non-finite edge (%s)", w.source.c_str());
  (void)w.duration_s();
}

}  // namespace cpupower::fuzz
