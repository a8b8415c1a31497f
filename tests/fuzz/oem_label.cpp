// The OEM label classifier (rails::classify_oem), which decides from a sysfs power*_oem_info
// text what a hwmon channel measures and for which socket, and the report's sensor-name
// classifier built on it. Its promises: the socket is a run of decimal digits exactly when the
// kind is not `other`, it appears in the label, and the kind has a name that reads back.

#include <string>

#include "fuzz_util.hpp"
#include "rails/rails.hpp"
#include "report/cpu_data.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace rails = cpupower::rails;
  const std::string_view label = cpupower::fuzz::as_text(data, size);
  const rails::Classification c = rails::classify_oem(label);
  if (c.kind == rails::Kind::other) {
    FUZZ_CHECK(c.socket.empty());
  } else {
    FUZZ_CHECK(!c.socket.empty());
    for (const char ch : c.socket) FUZZ_CHECK(ch >= '0' && ch <= '9');
    FUZZ_CHECK(label.find(c.socket) != std::string_view::npos);
    const auto index = rails::socket_index(c.socket);
    if (index) (void)rails::acpi_sensor_name(c.kind, *index);
    const auto again = rails::parse_kind(rails::kind_name(c.kind));
    FUZZ_CHECK(again && *again == c.kind);
  }
  (void)rails::parse_kind(label);
  (void)cpupower::report::classify_sensor(label);
  return 0;
}
