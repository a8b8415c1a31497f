#pragma once
// Starts a plan's exporters and finds where to scrape them, then stops them. Best-effort
// throughout: a group whose srun fails, a node that does not resolve, an exporter that never
// says it listens, is logged and left out; the others go on.

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "launch/process.hpp"
#include "launch/session_plan.hpp"
#include "scrape/endpoint.hpp"

namespace cpupower::sim {
class SimNode;
class SimRaplNode;
}  // namespace cpupower::sim

namespace cpupower::launch {

// Where each of `nodes` answers (slurm mode), node -> IP address: the resolver steps'
// answers, every step at once, then name resolution on this host for the nodes no step
// answered for, all by `deadline`. `what` begins the log lines ("CPU power",
// "dcgm-exporter"). A node found neither way is absent.
std::map<std::string, std::string> resolve_node_addresses(
    const std::vector<ResolverStep>& steps, const std::vector<std::string>& nodes,
    std::chrono::steady_clock::time_point deadline, std::string_view what);

// A simulated node and the flags that point a reader (the exporter, the host collector) at
// its tree: `--hwmon-root <tree>` for a Grace node; for an x86 node `--powercap-root <tree>`
// and `--hwmon-root <an empty directory>`, so that neither this host's own sensors nor its
// RAPL zones stand in for the node's.
struct SimulatedNode {
  std::string node;
  std::vector<std::string> root_flags;
};

class Launcher {
 public:
  explicit Launcher(const SessionPlan& plan);
  ~Launcher();  // stop() with the default grace

  // Starts the exporters and resolves their endpoints, all by `deadline`; `give_up` ends the
  // waiting early (a signal). Endpoints are in node order.
  std::vector<scrape::Endpoint> start(std::chrono::steady_clock::time_point deadline,
                                      const std::function<bool()>& give_up);

  // The simulated nodes (simulate mode), started on first use. The host leg reads the same
  // trees as the exporters.
  const std::vector<SimulatedNode>& simulated_nodes();

  // Where the CPU exporters' resolution found `node` (slurm mode, after start()); the GPU
  // leg's endpoints use it too.
  std::optional<std::string> node_address(const std::string& node) const;

  // Whether any exporter process (srun or local exporter) is still running; reaps and logs
  // those that ended. Nothing is worth waiting for once none is.
  bool any_running();

  // Exporters (srun steps, local exporters) get SIGTERM, then SIGKILL after `grace`; then
  // the simulated nodes stop. Idempotent.
  void stop(std::chrono::milliseconds grace = std::chrono::milliseconds(5000));

 private:
  std::vector<scrape::Endpoint> start_slurm(std::chrono::steady_clock::time_point deadline);
  std::vector<scrape::Endpoint> start_local();
  std::vector<scrape::Endpoint> start_simulated(std::chrono::steady_clock::time_point deadline,
                                                const std::function<bool()>& give_up);

  const SessionPlan& plan_;
  ProcessSet processes_{"CPU power exporter"};
  std::vector<std::unique_ptr<sim::SimNode>> sims_;
  std::vector<std::unique_ptr<sim::SimRaplNode>> rapl_sims_;  // x86 profiles
  std::vector<SimulatedNode> sim_roots_;
  std::map<std::string, std::string> addresses_;  // node -> address (slurm mode)
  bool sims_started_ = false;
  bool stopped_ = false;
};

}  // namespace cpupower::launch
