#include "sources/ladder.hpp"

#include <fmt/ranges.h>

#include <algorithm>
#include <set>
#include <thread>

#include "common/log.hpp"

namespace cpupower::sources {

using Clock = std::chrono::steady_clock;

AcpiRung try_acpi(const LadderOptions& options) {
  AcpiRung rung;
  auto discovery = discover_acpi(options.hwmon_root);
  rung.warnings = discovery.warnings;
  if (!discovery.error.empty()) {
    rung.reason = discovery.error;
    return rung;
  }
  if (discovery.channels.empty()) {
    rung.reason = "no ACPI power_meter hwmon sensors found under " + options.hwmon_root;
    return rung;
  }
  if (options.channel_bytes && options.max_channel_bytes > 0) {
    // Socket totals first, then the rest, each in discovery order; kept in discovery order.
    auto& all = discovery.channels;
    std::vector<bool> keep(all.size(), false);
    std::size_t bytes = 0, kept = 0;
    for (const bool totals_pass : {true, false}) {
      for (std::size_t i = 0; i < all.size(); ++i) {
        if ((all[i].cls.kind == rails::Kind::total) != totals_pass) continue;
        const auto b = options.channel_bytes(all[i]);
        if (bytes + b > options.max_channel_bytes) continue;
        bytes += b;
        keep[i] = true;
        ++kept;
      }
    }
    if (kept < all.size()) {
      std::vector<AcpiChannel> served;
      std::string first_left;
      for (std::size_t i = 0; i < all.size(); ++i) {
        if (keep[i]) {
          served.push_back(std::move(all[i]));
        } else if (first_left.empty()) {
          first_left = all[i].sensor;
        }
      }
      rung.warnings.push_back(
          "too many ACPI power_meter channels for one exposition body; reading and serving the "
          "first " +
          std::to_string(kept) + " (socket totals first) discovered=" + std::to_string(all.size()) +
          " left_out=" + std::to_string(all.size() - kept) + " first_left_out=" + first_left +
          " body_bytes_bound=" + std::to_string(bytes));
      all = std::move(served);
    }
  }
  std::vector<std::size_t> totals;
  std::set<std::string> labels;
  for (std::size_t i = 0; i < discovery.channels.size(); ++i) {
    if (discovery.channels[i].cls.kind == rails::Kind::total) totals.push_back(i);
    labels.insert(discovery.channels[i].oem_info);
  }
  const std::size_t discovered = discovery.channels.size();
  if (totals.empty()) {
    rung.reason = "no ACPI socket-total power_meter channels under " + options.hwmon_root +
                  " (found: " + fmt::format("{}", fmt::join(labels, ", ")) + ")";
    return rung;
  }

  auto log = common::logger("cpu_power_exporter");
  auto reader = std::make_unique<AcpiReader>(std::move(discovery.channels), options.read_interval,
                                             options.max_age, options.hwmon_root);
  const auto started = Clock::now();
  reader->start();
  // The probe reads through the reader threads, so a hung total only costs the deadline.
  std::size_t live = reader->table().wait_live(totals, started, started + options.max_age);
  constexpr int kProbes = 2;
  if (live == 0) {
    log->debug("no ACPI socket-total sensor reads positive; retrying probe attempt=1");
    std::this_thread::sleep_for(options.probe_retry_delay);
    const auto retry = Clock::now();
    live = reader->table().wait_live(totals, retry, retry + options.max_age);
  }
  if (live == 0) {
    reader->stop(std::chrono::milliseconds(200));
    rung.reason = "no ACPI socket-total power_meter sensor under " + options.hwmon_root +
                  " read positive across " + std::to_string(kProbes) + " probe(s) (" +
                  std::to_string(discovered) + " sensors discovered)";
    return rung;
  }
  if (live < totals.size()) {
    // Usable, but not whole: a socket without its total would halve the node's power.
    std::string missing;
    const auto readings = reader->table().snapshot();
    std::set<std::string> seen;
    for (const auto i : totals) {
      if (readings[i].watts) continue;
      const auto& c = reader->channels()[i];
      if (seen.insert(c.cls.socket).second) missing += (missing.empty() ? "" : ",") + c.cls.socket;
    }
    log->warn(
        "ACPI socket totals report non-zero power on some sockets only; using ACPI, and the "
        "node's power is incomplete while the others give none live={} total={} "
        "sockets_without_power={}",
        live, totals.size(), missing);
  } else {
    log->info("ACPI socket totals report non-zero power; using ACPI live={} total={}", live,
              totals.size());
  }
  rung.reader = std::move(reader);
  return rung;
}

namespace {

SourceRung open_acpi(const LadderOptions& options) {
  auto log = common::logger("cpu_power_exporter");
  auto acpi = try_acpi(options);
  for (const auto& w : acpi.warnings) log->warn("{}", w);
  if (!acpi.reader) return {nullptr, acpi.reason};
  log->info("discovered ACPI sensors count={}", acpi.reader->channels().size());
  for (const auto& c : acpi.reader->channels()) {
    log->debug(
        "sensor sensor={} kind={} socket={} oem_info={} path={} average_interval_ms={}", c.sensor,
        rails::kind_name(c.cls.kind), common::quoted(c.cls.socket), common::quoted(c.oem_info),
        common::quoted(c.value_path),
        c.average_interval ? std::to_string(c.average_interval->count()) : std::string("unknown"));
  }
  return {std::move(acpi.reader), {}};
}

SourceRung open_rapl(const LadderOptions& options) {
  auto log = common::logger("cpu_power_exporter");
  RaplOptions o;
  o.root = options.powercap_root;
  o.read_interval = options.read_interval;
  o.max_age = options.max_age;
  o.probe_retry_delay = options.probe_retry_delay;
  auto rapl = try_rapl(o);
  for (const auto& w : rapl.warnings) log->warn("{}", w);
  if (!rapl.reader) return {nullptr, rapl.reason};
  log->info("discovered RAPL zones count={}", rapl.reader->zones().size());
  for (const auto& z : rapl.reader->zones()) {
    log->debug("zone sensor={} name={} type={} socket={} path={} max_energy_range_uj={}", z.sensor,
               common::quoted(z.zone_name), rapl_type_name(z.type), z.socket,
               common::quoted(z.energy_path), z.max_energy_range_uj);
  }
  return {std::move(rapl.reader), {}};
}

SourceRung open_dcgm(const LadderOptions& options) {
  auto dcgm = try_dcgm(options.dcgm);
  if (!dcgm.reader) return {nullptr, dcgm.reason};
  dcgm.reader->start();
  return {std::move(dcgm.reader), {}};
}

// The registry: every source the node side can read CPU power from.
constexpr SourceEntry kSources[] = {
    {AcpiReader::kMode, "ACPI", "live ACPI", 1, open_acpi},
    {RaplReader::kMode, "RAPL", "RAPL", 2, open_rapl},
    {DcgmReader::kMode, "DCGM", "DCGM", 3, open_dcgm},
};

std::vector<const SourceEntry*> by_rank(std::span<const SourceEntry> table) {
  std::vector<const SourceEntry*> out;
  for (const auto& e : table) out.push_back(&e);
  std::stable_sort(out.begin(), out.end(), [](auto* a, auto* b) { return a->rank < b->rank; });
  return out;
}

}  // namespace

std::span<const SourceEntry> registered_sources() {
  return kSources;
}

std::vector<std::string> source_choices(std::span<const SourceEntry> table) {
  std::vector<std::string> out{"auto"};
  for (const auto* e : by_rank(table)) out.emplace_back(e->name);
  return out;
}

std::string source_help(std::span<const SourceEntry> table) {
  const auto rungs = by_rank(table);
  std::string ladder, names;
  for (std::size_t i = 0; i < rungs.size(); ++i) {
    ladder += (i ? ", then " : "") + std::string(rungs[i]->auto_help);
    names += (i == 0 ? "" : i + 1 == rungs.size() ? " or " : ", ") + std::string(rungs[i]->name);
  }
  return "auto (" + ladder + "), " + names;
}

ResolvedSource resolve_source(const LadderOptions& options, std::span<const SourceEntry> table) {
  auto log = common::logger("cpu_power_exporter");
  const bool automatic = options.request == "auto";
  auto rungs = by_rank(table);
  std::erase_if(rungs, [&](const auto* e) { return !automatic && e->name != options.request; });
  ResolvedSource out;
  std::string reasons;
  for (std::size_t i = 0; i < rungs.size(); ++i) {
    auto rung = rungs[i]->open(options);
    if (rung.source) {
      out.mode = std::string(rungs[i]->name);
      out.source = std::move(rung.source);
      out.acpi = dynamic_cast<const AcpiReader*>(out.source.get());
      out.rapl = dynamic_cast<const RaplReader*>(out.source.get());
      out.dcgm = dynamic_cast<const DcgmReader*>(out.source.get());
      return out;
    }
    if (!automatic) {
      out.error = rung.reason;
      return out;
    }
    if (i + 1 < rungs.size()) {
      log->warn("{} unusable; falling back to {} reason={}", rungs[i]->title, rungs[i + 1]->title,
                common::quoted(rung.reason));
    }
    reasons += (i ? "; " : "") + std::string(rungs[i]->title) + ": " + rung.reason;
  }
  out.error = "no CPU power source could be established: " + reasons;
  return out;
}

NodeSources open_node_sources(const NodeFlags& flags, LadderOptions ladder) {
  ladder.request = flags.source;
  ladder.hwmon_root = flags.hwmon_root;
  ladder.powercap_root = flags.powercap_root;
  ladder.dcgm.library = flags.dcgm_lib;
  ladder.dcgm.max_age = ladder.max_age;
  NodeSources out{resolve_source(ladder), nullptr};
  if (!out.base.source || flags.no_nvml) return out;
  NvmlOptions n;
  n.library = flags.nvml_lib;
  n.pci_root = flags.pci_root;
  n.cpu_sockets = out.base.cpu_sockets();
  n.max_age = ladder.max_age;
  out.nvml = std::make_unique<NvmlModuleReader>(std::move(n));
  out.nvml->start();
  return out;
}

std::set<std::uint32_t> ResolvedSource::cpu_sockets() const {
  std::set<std::uint32_t> out;
  if (!source) return out;
  for (const auto& s : *source->snapshot().sensors) {
    if (s.primary && s.socket) out.insert(*s.socket);
  }
  return out;
}

}  // namespace cpupower::sources
