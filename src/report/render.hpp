#pragma once
// The report's outputs: the reference's text table and JSON list, and our SVG power plot.

#include <string>
#include <vector>

#include "report/window_report.hpp"

namespace cpupower::report {

// The text table, one block per window, then the grand total (trailing newline included).
std::string render_text(const std::vector<WindowReport>& reports, Edges edges);

// The JSON list: `json.dumps(list, indent=2) + "\n"`, keys in the reference's order,
// our additions after them.
std::string render_json(const std::vector<WindowReport>& reports);
Json window_json(const WindowReport& report);

// Power over time per node (CPU total, GPU, module) with the windows shaded.
std::string render_svg(const RunData& run, const std::vector<WindowReport>& reports);

}  // namespace cpupower::report
