#pragma once
// One window's report from what a metrics store returned for it: the same rows, totals and
// figures as the samples-file path (report/window_report.hpp), each energy the increase of the
// exporter's counter over the window (store/counter.hpp), each coverage the increase of its
// covered-seconds counter over the window's length. Pure: the queries' answers in, a
// report::WindowReport out; store_report.hpp does the asking.

#include <array>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "report/window_report.hpp"
#include "store/counter.hpp"
#include "store/queries.hpp"
#include "store/series.hpp"

namespace cpupower::store {

struct FamilyData {
  std::string expr;  // the query, for messages
  bool queried = false;
  std::vector<RawSeries> series;
};

struct WindowData {
  std::array<FamilyData, kFamilies> families;
  std::vector<std::string> store_warnings;  // the store's own, each with its query

  const FamilyData& operator[](Family f) const { return families[index(f)]; }
  FamilyData& operator[](Family f) { return families[index(f)]; }
};

// What the run says it expected (its CPU leg's manifest): the nodes, and the sockets of those
// whose entry lists them.
struct ExpectedNodes {
  std::string source;  // the file that says
  std::set<std::string> nodes;
  std::map<std::string, std::vector<long long>> sockets;
};

struct BuildOptions {
  double lookback_s = 300;
  std::string store_url;
  std::optional<ExpectedNodes> expected;
};

// Power over time from the windows' series, for the plot and the HTML report: for each CPU
// socket, superchip module and GPU, the mean power between consecutive scrapes (a counter's
// gain over the interval) at the interval's midpoint, or the gauge's samples. Windows whose
// spans overlap give the same points once.
class Charts {
 public:
  enum class Kind { cpu, module, gpu };
  void add(Kind kind, const std::string& host, long long index, const std::vector<double>& t,
           const std::vector<double>& w);
  // The sockets (power_w and module_w tracks) and node totals, the GPU devices and node sums
  // and the module nodes, as the renderers read them from a run's files. A node total or sum
  // has a point where every socket or device of the node has one at that time.
  void fill(report::RunData& data) const;

 private:
  using Key = std::pair<std::string, long long>;
  std::map<Key, std::map<double, double>> cpu_, module_, gpu_;
};

// The window's report. A window without any energy counter in the store, a socket or GPU
// whose counter has no sample near an edge (within the lookback), or a node whose sockets are
// not all there fails with the reason and the query; module rows only warn, as on the
// samples-file path. `charts` (may be null) gathers the window's power over time.
report::WindowReport build_window(const report::Window& window, const WindowData& data,
                                  const BuildOptions& options, Charts* charts);

}  // namespace cpupower::store
