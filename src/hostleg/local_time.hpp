#pragma once
// timestamp_local of the host leg's CSV: the same instant as timestamp_unix, in the node's
// own time zone with its UTC offset, formatted as Python's
// datetime.fromtimestamp(ts).astimezone().isoformat() does, so files from either
// implementation read the same: "2026-09-03T14:32:07.891234-07:00", no fraction when the
// microseconds are 0, "+HH:MM:SS" for an offset with seconds.

#include <string>

namespace cpupower::hostleg {

std::string iso_local(double timestamp_unix);

}  // namespace cpupower::hostleg
