// The report's CPU samples loader (report/cpu_load: every layout of both legs, exporter v1-v3
// and host v1-v5, long and wide) on any bytes: from text and from a file (the report's path,
// through the block reader) it must load the same data, and every track it builds must
// integrate without fault.

#include <cstdio>
#include <string>

#include "fuzz_util.hpp"
#include "report/cpu_data.hpp"
#include "track_checks.hpp"

namespace {

using cpupower::fuzz::track_text;
namespace report = cpupower::report;

std::string summary(const report::CpuData& d) {
  std::string out = d.layout + (d.wide ? " wide" : " long") + (d.empty ? " empty" : "") +
                    " rows=" + std::to_string(d.rows) + "\nhosts:";
  for (const auto& h : d.hosts) out += " " + h;
  for (const auto& s : d.sockets) {
    out += "\nsocket " + s.label() + " sensor=" + s.sensor + (s.dcgm ? " dcgm" : "") +
           " power=" + track_text(s.power);
    for (const auto& r : s.rails) out += r ? " rail=" + track_text(*r) : " -";
    if (s.module) out += " module=" + track_text(*s.module);
    for (const auto& u : s.util) out += u ? " util=" + track_text(*u) : " -";
    for (const auto& o : s.other_sensors) out += " other=" + o;
    for (const auto& src : s.sources) out += " source=" + src;
  }
  for (const auto& n : d.nodes) out += "\nnode " + n.host + " total=" + track_text(n.total);
  for (const auto& w : d.issues.warnings("samples.csv", d.rows)) out += "\n" + w;
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = cpupower::fuzz::as_text(data, size);
  const auto from_text = report::parse_cpu_samples_text(text);
  const std::string path = cpupower::fuzz::scratch_dir() + "/samples.csv";
  cpupower::fuzz::write_file(path, text);
  const auto from_file = report::load_cpu_samples(path, 2);
  if (from_text && from_file) {
    const std::string a = summary(*from_text), b = summary(*from_file);
    FUZZ_CHECK(a == b, "text and file loads differ:\n%s\n---\n%s", a.c_str(), b.c_str());
  }
  if (cpupower::fuzz::verbose()) {
    std::fprintf(stderr, "%s\n",
                 from_file ? summary(*from_file).c_str() : from_file.error().c_str());
  }
  if (!from_file) return 0;
  for (const auto& s : from_file->sockets) {
    cpupower::fuzz::integrate_checks(s.power);
    if (s.module) cpupower::fuzz::integrate_checks(*s.module);
    (void)from_file->find_socket(s.host, s.socket);
  }
  for (const auto& n : from_file->nodes) cpupower::fuzz::integrate_checks(n.total);
  return 0;
}
