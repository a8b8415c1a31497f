#include "launch/leg.hpp"

#include <cmath>
#include <thread>

namespace cpupower::launch {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {
// Spreading the slots over an interval keeps a thousand requests from queueing behind each
// other; a few dozen do not queue, and all-at-once gives every node its first row at once.
constexpr std::size_t kSpreadAboveNodes = 64;
}  // namespace

milliseconds to_ms(double seconds) {
  return milliseconds(static_cast<std::int64_t>(std::llround(seconds * 1000.0)));
}

scrape::CollectorOptions collector_options(const SessionPlan& plan, std::string out_dir) {
  const auto& t = plan.recipe.telemetry;
  scrape::CollectorOptions o;
  o.out_dir = std::move(out_dir);
  o.collect_interval = milliseconds(t.collect_interval_ms);
  o.request_timeout = to_ms(t.request_timeout_seconds);
  o.join_timeout = to_ms(config::resolved_join_timeout_s(t));
  o.spread_slots = plan.nodes.size() > kSpreadAboveNodes;
  return o;
}

milliseconds row_wait(const SessionPlan& plan) {
  const auto& t = plan.recipe.telemetry;
  return milliseconds(t.collect_interval_ms) + to_ms(t.request_timeout_seconds) + milliseconds(250);
}

bool wait_for_rows(const scrape::Collector& collector, Clock::time_point deadline,
                   const std::function<bool(std::size_t, const scrape::NodeStats&)>& satisfied,
                   const std::function<bool()>& give_up) {
  while (true) {
    const auto nodes = collector.stats().nodes;
    bool all = true;
    for (std::size_t i = 0; i < nodes.size(); ++i) all = all && satisfied(i, nodes[i]);
    if (all) return true;
    if (Clock::now() >= deadline || give_up()) return false;
    std::this_thread::sleep_for(milliseconds(20));
  }
}

}  // namespace cpupower::launch
