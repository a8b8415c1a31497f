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

// A value file's text: one fresh open (as a FIFO requires), read to its end or to `limit`
// bytes, closed. error_number: the errno of a failed open or read;
// too_long: the file goes on past `limit` bytes (its first bytes alone are not its value).
struct ValueText {
  std::string text;
  int error_number = 0;
  bool too_long = false;
};
ValueText read_value_text(const std::string& path, std::size_t limit);

// A value file kept open between reads, for the files a reader reads every cycle. A read
// from offset 0 of an open sysfs attribute runs the driver again (the kernel regenerates the
// text at offset 0), so a read costs one pread and one fstat instead of an open with its path
// lookup, two reads and a close. The file is opened again when the path changes, when a read
// fails, and when the open file was unlinked (st_nlink 0: a file renamed over it, as the
// simulated node writes its values, or a device removed). A path whose file was replaced
// once is read with open, pread and close from then on: its values come as new files, and a
// held one would stay alive (on ext4, its eviction charged to this reader) until the next
// read. A file that cannot be read at an offset (a FIFO: ESPIPE) is read to its end and
// opened afresh every time, as before. At most
// kMaxHeldValueFiles are held open in a process (they share the descriptors the HTTP server
// counts on); reads beyond that open and close the file each time. One reader thread a file.
inline constexpr int kMaxHeldValueFiles = 64;

class ValueFile {
 public:
  ValueFile() = default;
  ~ValueFile();
  ValueFile(const ValueFile&) = delete;
  ValueFile& operator=(const ValueFile&) = delete;

  // The text of the file at `path`, with read_value_text's meaning.
  ValueText read(const std::string& path, std::size_t limit);
  // Whether a descriptor is held now (for tests).
  bool held() const { return fd_ >= 0; }

 private:
  void release();
  int fd_ = -1;
  std::string path_;
  bool stream_ = false;    // `path_` cannot be read at an offset: a fresh open per read
  bool replaced_ = false;  // `path_` was replaced by a new file: not held
};

// Interprets the text of a power*_average / power*_input file (microwatts). Zero, negative,
// non-finite, the firmware's invalid value, empty and unparsable text are all "no value":
// a live Grace socket draws tens of watts, so none of them may ever integrate as idle power.
// So is a reading above artifacts::kMaxSocketWatts (a wrapped 2^64-1, a runaway value): the
// bound the collectors and the report apply, so the exporter never serves what they refuse.
PowerRead interpret_microwatts(std::string_view text);

// Opens, reads and closes the file (read_value_text), then interprets it. A file longer than
// 256 bytes is no value. Blocks as long as
// the firmware (or file) does. ENOENT or ENODEV in error_number: the hwmon device went away (it
// re-registers when its averaging interval changes on kernels >= 6.15).
PowerRead read_power_file(const std::string& path);
// The same through a file kept open between reads (ValueFile).
PowerRead read_power_file(ValueFile& file, const std::string& path);

// True for the errors that mean the channel's device is gone rather than failing.
bool device_gone(int error_number);

}  // namespace cpupower::sources
