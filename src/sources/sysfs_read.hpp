#pragma once
// One read of a power_meter channel file and the rules that turn its text into watts.

#include <optional>
#include <string>
#include <string_view>

namespace cpupower::sources {

// The firmware reports 0xFFFFFFFF mW for "invalid/unknown"; older kernels print it in uW.
inline constexpr std::string_view kFirmwareInvalidUw = "4294967295000";

struct PowerRead {
  std::optional<double> watts;  // present only for a finite reading > 0, within the bound
  std::string problem;          // why there is no value: "read failed: ...", "empty", ...
  int error_number = 0;         // errno of a failed open or read, else 0
};

// A value file's text: one fresh open (as sysfs attributes and FIFOs both require), read to
// its end or to `limit` bytes, closed. error_number: the errno of a failed open or read;
// too_long: the file goes on past `limit` bytes (its first bytes alone are not its value).
struct ValueText {
  std::string text;
  int error_number = 0;
  bool too_long = false;
};
ValueText read_value_text(const std::string& path, std::size_t limit);

// Interprets the text of a power*_average / power*_input file (microwatts). Zero, negative,
// non-finite, the firmware's invalid value, empty and unparsable text are all "no value":
// a live Grace socket draws tens of watts, so none of them may ever integrate as idle power.
// So is a reading above artifacts::kMaxSocketWatts (a wrapped 2^64-1, a runaway value): the
// bound the collectors and the report apply, so the exporter never serves what they refuse.
PowerRead interpret_microwatts(std::string_view text);

// Opens, reads and closes the file (a fresh open per read, as sysfs attributes and FIFOs
// both require), then interprets it. A file longer than 256 bytes is no value. Blocks as long as
// the firmware (or file) does. ENOENT or ENODEV in error_number: the hwmon device went away (it
// re-registers when its averaging interval changes on kernels >= 6.15).
PowerRead read_power_file(const std::string& path);

// True for the errors that mean the channel's device is gone rather than failing.
bool device_gone(int error_number);

}  // namespace cpupower::sources
