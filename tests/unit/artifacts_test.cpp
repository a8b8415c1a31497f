#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <limits>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "../support/cpu_samples_writer.hpp"
#include "artifacts/cpu_manifest.hpp"
#include "artifacts/cpu_samples.hpp"
#include "artifacts/gpu_samples.hpp"
#include "artifacts/gpu_samples_out.hpp"
#include "artifacts/host_samples.hpp"
#include "artifacts/layout.hpp"
#include "artifacts/row_appender.hpp"
#include "report/cpu_data.hpp"
#include "temp_dir.hpp"
#include "v3_rows.hpp"

namespace cpupower::artifacts {
namespace {

namespace fs = std::filesystem;

// Every TempDir of this file: its own prefix.
class TempDir : public cpupower::testing::TempDir {
 public:
  TempDir() : cpupower::testing::TempDir("artifacts_test") {}
};
using cpupower::testing::slurp;
using cpupower::testing::spit;

CpuSampleRow dcgm_row() {
  CpuSampleRow row;
  row.timestamp_unix = 1788310143.461;
  row.hostname = "node-a";
  row.source = "dcgm";
  row.sensor = "CPU0:cpuPowerUsageW";
  row.socket_id = 0;
  row.power_w = 43.878;
  row.total_power_w = 96.228;
  return row;
}

CpuSampleRow acpi_row() {
  CpuSampleRow row;
  row.timestamp_unix = 1788310143.461;
  row.hostname = "node-a";
  row.source = "acpi";
  row.sensor = "CPU0:cpuSidePowerUsageW";
  row.socket_id = 0;
  row.power_w = 94.29;
  row.cpu_rail_w = 49.023;
  row.soc_w = 5.1;
  row.total_power_w = 189.002;
  return row;
}

const std::string kHeaderV3 =
    "schema_version,timestamp_unix,hostname,source,sensor,socket_id,power_w,cpu_rail_w,soc_w,"
    "dram_w,module_w,total_power_w";

// ---- formatting -----------------------------------------------------------------------

TEST(CpuSamplesFormat, HeadersAreExactlyTheReferenceOnes) {
  EXPECT_EQ(kCpuHeaderV3, kHeaderV3);
  EXPECT_EQ(kCpuHeaderV2,
            "schema_version,timestamp_unix,hostname,source,sensor,socket_id,power_w,cpu_rail_w,"
            "soc_w,dram_w,total_power_w");
  EXPECT_EQ(kCpuHeaderV1,
            "schema_version,timestamp_unix,hostname,source,sensor,socket_id,power_w,total_power_w");
  // v3 is v2 with module_w inserted before total_power_w.
  std::string v2(kCpuHeaderV2);
  v2.insert(v2.rfind(",total_power_w"), ",module_w");
  EXPECT_EQ(v2, kCpuHeaderV3);
  EXPECT_EQ(kCpuSamplesFilename, "samples.csv");
  EXPECT_EQ(kCpuManifestFilename, "cpu_manifest.json");
}

// Every header the layout tables make is byte for byte the one written before they existed.
TEST(CsvLayouts, HeadersAreTheLiteralOnesOfEveryVersion) {
  const std::string gpu =
      "schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w";
  EXPECT_EQ(kGpuHeaderV1, gpu);
  EXPECT_EQ(kGpuHeaderV2, gpu + ",gpu_util_pct,sm_active");
  EXPECT_EQ(kGpuHeaderV3, gpu + ",gpu_util_pct,sm_active,temperature_c");
  EXPECT_EQ(kHostHeaderV1,
            "schema_version,timestamp_unix,hostname,source,sensor,socket_id,power_w,total_power_w");
  EXPECT_EQ(kHostHeaderV2,
            "schema_version,timestamp_unix,timestamp_local,hostname,source,sensor,socket_id,"
            "power_w,total_power_w");
  EXPECT_EQ(kHostHeaderV3,
            "schema_version,timestamp_unix,timestamp_local,hostname,source,sensor,socket_id,"
            "power_w,total_power_w,cpu_util_total,cpu_util_user,cpu_util_nice,cpu_util_sys,"
            "cpu_util_irq");
  EXPECT_EQ(kHostHeaderV4,
            "schema_version,timestamp_unix,timestamp_local,hostname,source,sensor,socket_id,"
            "power_w,cpu_rail_w,soc_w,dram_w,total_power_w,cpu_util_total,cpu_util_user,"
            "cpu_util_nice,cpu_util_sys,cpu_util_irq");
  EXPECT_EQ(kHostHeaderV5,
            "schema_version,timestamp_unix,timestamp_local,hostname,source,sensor,socket_id,"
            "power_w,cpu_rail_w,soc_w,dram_w,module_w,total_power_w,cpu_util_total,"
            "cpu_util_user,cpu_util_nice,cpu_util_sys,cpu_util_irq");
  EXPECT_EQ(newest_version(kGpuColumns), 3);
  EXPECT_EQ(newest_version(kCpuColumns), 3);
  EXPECT_EQ(newest_version(kHostColumns), 5);
  // Widths, and every version found again from its own header.
  for (const auto& [layout, widths] :
       {std::pair{CsvLayout(kGpuColumns), std::vector<std::size_t>{7, 9, 10}},
        {CsvLayout(kCpuColumns), {8, 11, 12}},
        {CsvLayout(kHostColumns), {8, 9, 14, 17, 18}}}) {
    for (int v = 1; v <= newest_version(layout); ++v) {
      EXPECT_EQ(csv_width(layout, v), widths[static_cast<std::size_t>(v - 1)]);
      EXPECT_EQ(header_version(layout, csv_header(layout, v)), v);
    }
    EXPECT_EQ(header_version(layout, csv_header(layout, 1) + ",extra"), 0);
  }
}

// A row of each version has the cells of that version's header, in its order.
// A column is one row of its layout's table: in a throwaway layout whose v2 adds `fake_w`,
// that row alone gives the new header, the writer's cell, the readers' look-up and the cell
// rule (docs/architecture.md, Add a CSV column).
TEST(CsvLayouts, AThrowawayColumnIsOneRowOfItsTable) {
  static constexpr CsvColumn kFake[] = {
      {"schema_version", 1, Cell::version},
      {"timestamp_unix", 1, Cell::finite, kKey},
      {"power_w", 1, Cell::watts, kKey, 0, kMaxSocketWatts},
      {"fake_w", 2, Cell::watts, kOptional, 0, kMaxSocketWatts},
  };
  static_assert(newest_version(kFake) == 2 && csv_width(kFake, 1) == 3 && csv_width(kFake, 2) == 4);
  EXPECT_EQ(csv_header(kFake, 1), "schema_version,timestamp_unix,power_w");
  EXPECT_EQ(csv_header(kFake, 2), "schema_version,timestamp_unix,power_w,fake_w");
  EXPECT_EQ(header_version(kFake, "schema_version,timestamp_unix,power_w,fake_w"), 2);
  std::string v1, v2;
  append_row(v1, kFake, 1, 1, 1.5, 100.0, std::optional<double>(7.25));
  append_row(v2, kFake, 2, 2, 1.5, 100.0, std::optional<double>(7.25));
  EXPECT_EQ(v1, "1,1.5,100\r\n");
  EXPECT_EQ(v2, "2,1.5,100,7.25\r\n");
  const std::vector<std::string> header = {"fake_w", "timestamp_unix", "power_w", "schema_version"};
  const auto found = find_columns(kFake, header);
  ASSERT_EQ(found.size(), 4u);
  EXPECT_EQ(found[column_of(kFake, "fake_w")], std::optional<std::size_t>(0));
  EXPECT_EQ(missing_key(kFake, found), std::nullopt);
  EXPECT_EQ(cell_problem(kFake[3], "", 2), std::nullopt);  // optional: empty is missing
  EXPECT_NE(cell_problem(kFake[3], "-1", 2).value_or("").find("fake_w"), std::string::npos);
  EXPECT_TRUE(in_bounds(kFake[3], 7.25));
  EXPECT_FALSE(in_bounds(kFake[3], 2 * kMaxSocketWatts));
}

TEST(CsvLayouts, RowsOfEveryVersionHaveTheirHeadersCells) {
  const auto cells = [](const std::string& line) {
    return static_cast<std::size_t>(std::count(line.begin(), line.end(), ',')) + 1;
  };
  for (int v : {2, 3}) {
    EXPECT_EQ(format_cpu_row(dcgm_row(), v),
              (v == 2 ? format_v2_row(dcgm_row()) : format_v3_row(dcgm_row())));
    EXPECT_EQ(cells(format_cpu_row(dcgm_row(), v)), csv_width(kCpuColumns, v));
  }
  GpuSampleOut gpu;
  gpu.hostname = "h";
  gpu.gpu_uuid = "GPU-1";
  gpu.power_w = 100;
  gpu.gpu_util_pct = 50;
  gpu.sm_active = 2;  // out of its range: an empty cell
  gpu.temperature_c = 40;
  EXPECT_EQ(format_gpu_row(gpu, 1), "1,0,0,h,0,GPU-1,100\r\n");
  EXPECT_EQ(format_gpu_row(gpu, 2), "2,0,0,h,0,GPU-1,100,50,\r\n");
  EXPECT_EQ(format_gpu_row(gpu, 3), "3,0,0,h,0,GPU-1,100,50,,40\r\n");
  HostSampleRow host;
  host.power_w = std::numeric_limits<double>::quiet_NaN();  // missing: an empty cell
  EXPECT_EQ(format_host_row(host), "5,0,,,,,0,,,,,,,,,,,\r\n");
  EXPECT_EQ(cells(format_host_row(host)), csv_width(kHostColumns, 5));
}

TEST(CpuSamplesFormat, AcpiComponentRailsLineIsExact) {
  EXPECT_EQ(format_v3_row(acpi_row()),
            "3,1788310143.461,node-a,acpi,CPU0:cpuSidePowerUsageW,0,94.29,49.023,5.1,,,"
            "189.002\r\n");
}

TEST(CpuSamplesFormat, ModuleLineIsExact) {
  CpuSampleRow row = acpi_row();
  row.cpu_rail_w.reset();
  row.soc_w.reset();
  row.module_w = 498.72;
  row.total_power_w = 96.228;
  EXPECT_EQ(format_v3_row(row),
            "3,1788310143.461,node-a,acpi,CPU0:cpuSidePowerUsageW,0,94.29,,,,498.72,96.228\r\n");
}

TEST(CpuSamplesFormat, MissingAndNonFiniteValuesAreEmptyCells) {
  CpuSampleRow row = dcgm_row();
  row.total_power_w.reset();
  row.dram_w = std::nan("");
  row.module_w = INFINITY;
  EXPECT_EQ(format_v3_row(row),
            "3,1788310143.461,node-a,dcgm,CPU0:cpuPowerUsageW,0,43.878,,,,,\r\n");
}

TEST(CpuSamplesFormat, ShortestRoundTripNumbers) {
  EXPECT_EQ(format_double(94.29), "94.29");
  EXPECT_EQ(format_double(43.878 + 52.35), "96.22800000000001");  // as Python repr
  EXPECT_EQ(format_double(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(format_double(1789416029.2655346), "1789416029.2655346");
  EXPECT_EQ(format_double(1e-05), "1e-05");
  EXPECT_EQ(format_double(94.0), "94");
}

TEST(CpuSamplesFormat, QuotesCellsHoldingCommaQuoteCrOrLf) {
  CpuSampleRow row = dcgm_row();
  row.hostname = "node,a";
  row.sensor = "say \"hi\"";
  EXPECT_EQ(format_v3_row(row),
            "3,1788310143.461,\"node,a\",dcgm,\"say \"\"hi\"\"\",0,43.878,,,,,96.228\r\n");
  row.hostname = "cr\rhost";
  row.sensor = "lf\nsensor";
  EXPECT_EQ(format_v3_row(row),
            "3,1788310143.461,\"cr\rhost\",dcgm,\"lf\nsensor\",0,43.878,,,,,96.228\r\n");
}

TEST(CpuSamplesFormat, V2LineIsTheV3LineWithoutModule) {
  CpuSampleRow row = acpi_row();
  row.module_w = 498.72;
  row.schema_version = 3;  // whatever the row says, the line says 2
  EXPECT_EQ(format_v2_row(row),
            "2,1788310143.461,node-a,acpi,CPU0:cpuSidePowerUsageW,0,94.29,49.023,5.1,,189.002\r\n");
  EXPECT_EQ(format_v3_row(row),
            "3,1788310143.461,node-a,acpi,CPU0:cpuSidePowerUsageW,0,94.29,49.023,5.1,,498.72,"
            "189.002\r\n");
  EXPECT_EQ(format_v2_row(dcgm_row()),
            "2,1788310143.461,node-a,dcgm,CPU0:cpuPowerUsageW,0,43.878,,,,96.228\r\n");
}

TEST(CpuSamplesFormat, HeaderByVersion) {
  EXPECT_EQ(cpu_header(1), kCpuHeaderV1);
  EXPECT_EQ(cpu_header(2), kCpuHeaderV2);
  EXPECT_EQ(cpu_header(3), kCpuHeaderV3);
  EXPECT_EQ(cpu_header(4), "");
  EXPECT_FALSE(is_writable_cpu_schema(1));
  EXPECT_TRUE(is_writable_cpu_schema(2));
  EXPECT_TRUE(is_writable_cpu_schema(3));
  EXPECT_FALSE(is_writable_cpu_schema(4));
}

// ---- writer ---------------------------------------------------------------------------

TEST(CpuSamplesWriter, WritesTheExactV3Bytes) {
  TempDir dir;
  const auto path = dir.file("samples.csv");
  auto opened = CpuSamplesWriter::open(path);
  ASSERT_TRUE(opened) << opened.error();
  auto& w = opened.value();
  CpuSampleRow module_row = acpi_row();
  module_row.cpu_rail_w.reset();
  module_row.soc_w.reset();
  module_row.module_w = 498.72;
  module_row.total_power_w = 96.228;
  const std::vector<CpuSampleRow> rows{acpi_row(), module_row};
  EXPECT_TRUE(w->append(rows));
  EXPECT_EQ(slurp(path), kHeaderV3 + "\r\n");  // nothing before flush but the header
  EXPECT_TRUE(w->flush());
  EXPECT_TRUE(w->close());
  EXPECT_FALSE(w->is_open());
  EXPECT_EQ(w->rows_written(), 2u);
  EXPECT_EQ(slurp(path), kHeaderV3 +
                             "\r\n"
                             "3,1788310143.461,node-a,acpi,CPU0:cpuSidePowerUsageW,0,94.29,"
                             "49.023,5.1,,,189.002\r\n"
                             "3,1788310143.461,node-a,acpi,CPU0:cpuSidePowerUsageW,0,94.29,,,,"
                             "498.72,96.228\r\n");
}

TEST(CpuSamplesWriter, RoundTripsThroughTheReader) {
  TempDir dir;
  const auto path = dir.file("samples.csv");
  auto opened = CpuSamplesWriter::open(path);
  ASSERT_TRUE(opened) << opened.error();
  auto& w = opened.value();
  CpuSampleRow second = dcgm_row();
  second.socket_id = 1;
  second.sensor = "CPU1:cpuPowerUsageW";
  second.power_w = 52.35;
  second.cpu_rail_w = 52.35;
  second.soc_w = 6.1;
  second.module_w = 470.5;
  second.hostname = "odd,\"host\"\nname";
  const std::vector<CpuSampleRow> rows{dcgm_row(), second, acpi_row()};
  ASSERT_TRUE(w->append(rows));
  ASSERT_TRUE(w->close());
  const auto file = testing::read_v3(path);
  EXPECT_EQ(file.bad + file.torn, 0u);
  EXPECT_EQ(file.schema_version, 3);
  EXPECT_EQ(file.rows, rows);
}

TEST(CpuSamplesWriter, ReopeningAppendsWithoutASecondHeader) {
  TempDir dir;
  const auto path = dir.file("samples.csv");
  for (int i = 0; i < 2; ++i) {
    auto opened = CpuSamplesWriter::open(path);
    ASSERT_TRUE(opened) << opened.error();
    auto& w = opened.value();
    const std::vector<CpuSampleRow> rows{dcgm_row()};
    ASSERT_TRUE(w->append(rows));
    ASSERT_TRUE(w->flush());
  }  // the destructor closes
  const auto text = slurp(path);
  EXPECT_EQ(text.find("schema_version"), text.rfind("schema_version"));
  const auto file = testing::parse_v3(text);
  EXPECT_EQ(file.bad + file.torn, 0u);
  EXPECT_EQ(file.rows.size(), 2u);
}

TEST(CpuSamplesWriter, ContinuesAfterATornLineWithoutCorruptingNewRows) {
  TempDir dir;
  const auto path = dir.file("samples.csv");
  // A killed writer's last row, cut inside its last cell: 12 cells, and a total that was
  // never measured. Terminated, it would read as a real row.
  const std::string whole = format_v3_row(acpi_row());
  spit(path, kHeaderV3 + "\r\n" + whole + whole.substr(0, whole.size() - 5));
  auto opened = CpuSamplesWriter::open(path);
  ASSERT_TRUE(opened) << opened.error();
  auto& w = opened.value();
  const std::vector<CpuSampleRow> rows{dcgm_row()};
  ASSERT_TRUE(w->append(rows));
  ASSERT_TRUE(w->close());
  // The cut row is gone, the whole one before it kept, the new one after it.
  EXPECT_EQ(slurp(path), kHeaderV3 + "\r\n" + whole + format_v3_row(dcgm_row()));
}

TEST(CpuSamplesWriter, RefusesAnExistingFileOfAnotherLayout) {
  TempDir dir;
  const auto path = dir.file("samples.csv");
  spit(path, std::string(kCpuHeaderV2) + "\r\n");
  const auto opened = CpuSamplesWriter::open(path);
  EXPECT_FALSE(opened);
  const std::string error = opened.error();
  EXPECT_NE(error.find("does not start with the expected header (schema_version,"),
            std::string::npos)
      << error;
  EXPECT_EQ(slurp(path), std::string(kCpuHeaderV2) + "\r\n");  // untouched
}

TEST(CpuSamplesWriter, WritesTheExactV2BytesAndTheReportReadsThem) {
  TempDir dir;
  const auto path = dir.file("samples.csv");
  auto opened = CpuSamplesWriter::open(path, 2);
  ASSERT_TRUE(opened) << opened.error();
  auto& w = opened.value();
  EXPECT_EQ(w->schema_version(), 2);
  CpuSampleRow module_row = acpi_row();
  module_row.socket_id = 1;
  module_row.module_w = 498.72;  // not a v2 column: dropped
  const std::vector<CpuSampleRow> rows{acpi_row(), module_row};
  ASSERT_TRUE(w->append(rows));
  ASSERT_TRUE(w->close());
  const std::string text = slurp(path);
  EXPECT_EQ(text, std::string(kCpuHeaderV2) +
                      "\r\n"
                      "2,1788310143.461,node-a,acpi,CPU0:cpuSidePowerUsageW,0,94.29,49.023,5.1,,"
                      "189.002\r\n"
                      "2,1788310143.461,node-a,acpi,CPU0:cpuSidePowerUsageW,1,94.29,49.023,5.1,,"
                      "189.002\r\n");
  const auto data = report::parse_cpu_samples_text(text);
  ASSERT_TRUE(data) << data.error();
  EXPECT_EQ(data.value().layout, "exporter v2");
  ASSERT_EQ(data.value().sockets.size(), 2u);
  EXPECT_FALSE(data.value().sockets[1].module);
  EXPECT_EQ(data.value().sockets[1].power.v, std::vector<double>{94.29});
}

TEST(CpuSamplesWriter, EachVersionContinuesOnlyItsOwnFile) {
  TempDir dir;
  const auto path = dir.file("samples.csv");
  {
    auto opened = CpuSamplesWriter::open(path, 2);
    ASSERT_TRUE(opened) << opened.error();
    const std::vector<CpuSampleRow> rows{dcgm_row()};
    ASSERT_TRUE(opened.value()->append(rows));
  }
  {
    auto opened = CpuSamplesWriter::open(path, 2);  // a restarted v2 collector continues it
    ASSERT_TRUE(opened) << opened.error();
    const std::vector<CpuSampleRow> rows{dcgm_row()};
    ASSERT_TRUE(opened.value()->append(rows));
  }
  const std::string v2_file =
      std::string(kCpuHeaderV2) + "\r\n" + format_v2_row(dcgm_row()) + format_v2_row(dcgm_row());
  EXPECT_EQ(slurp(path), v2_file);
  const auto as_v3 = CpuSamplesWriter::open(path, 3);
  ASSERT_FALSE(as_v3);
  EXPECT_NE(as_v3.error().find("does not start with the expected header (" +
                               std::string(kCpuHeaderV3) + ")"),
            std::string::npos)
      << as_v3.error();
  EXPECT_EQ(slurp(path), v2_file);  // untouched

  const auto v3_path = dir.file("v3.csv");
  spit(v3_path, kHeaderV3 + "\r\n");
  const auto as_v2 = CpuSamplesWriter::open(v3_path, 2);
  ASSERT_FALSE(as_v2);
  EXPECT_NE(as_v2.error().find("does not start with the expected header (" +
                               std::string(kCpuHeaderV2) + ")"),
            std::string::npos)
      << as_v2.error();
  EXPECT_EQ(slurp(v3_path), kHeaderV3 + "\r\n");
}

TEST(CpuSamplesWriter, RefusesVersionsItCannotWrite) {
  TempDir dir;
  for (const int version : {0, 1, 4}) {
    const auto path = dir.file("samples.csv");
    const auto opened = CpuSamplesWriter::open(path, version);
    ASSERT_FALSE(opened) << version;
    EXPECT_NE(opened.error().find("schema v" + std::to_string(version)), std::string::npos)
        << opened.error();
    EXPECT_FALSE(fs::exists(path)) << "nothing created for v" << version;
  }
}

TEST(CpuSamplesWriter, ReopenKeepsTheVersion) {
  TempDir dir;
  const auto path = dir.file("samples.csv");
  auto opened = CpuSamplesWriter::open(path, 2);
  ASSERT_TRUE(opened) << opened.error();
  auto& w = opened.value();
  fs::remove(path);
  ASSERT_TRUE(w->reopen());
  const std::vector<CpuSampleRow> rows{dcgm_row()};
  ASSERT_TRUE(w->append(rows));
  ASSERT_TRUE(w->close());
  EXPECT_EQ(slurp(path), std::string(kCpuHeaderV2) + "\r\n" + format_v2_row(dcgm_row()));
}

TEST(CpuSamplesWriter, OpenFailureIsReturnedNotThrown) {
  const auto opened = CpuSamplesWriter::open("/nonexistent-dir/samples.csv");
  EXPECT_FALSE(opened);
  const std::string error = opened.error();
  EXPECT_NE(error.find("/nonexistent-dir/samples.csv"), std::string::npos) << error;
}

TEST(CpuSamplesWriter, RefusesRowsItCannotWriteAndKeepsTheRest) {
  TempDir dir;
  const auto path = dir.file("samples.csv");
  auto opened = CpuSamplesWriter::open(path);
  ASSERT_TRUE(opened) << opened.error();
  auto& w = opened.value();
  CpuSampleRow nan_power = dcgm_row();
  nan_power.power_w = std::nan("");
  CpuSampleRow no_host = dcgm_row();
  no_host.hostname.clear();
  const std::vector<CpuSampleRow> rows{nan_power, dcgm_row(), no_host};
  EXPECT_FALSE(w->append(rows));
  EXPECT_TRUE(w->flush());
  EXPECT_EQ(w->rows_written(), 1u);
  EXPECT_EQ(w->rows_dropped(), 2u);
  EXPECT_NE(w->last_error().find("refused row"), std::string::npos);
}

TEST(CpuSamplesWriter, AppendAfterCloseFails) {
  TempDir dir;
  auto opened = CpuSamplesWriter::open(dir.file("samples.csv"));
  ASSERT_TRUE(opened) << opened.error();
  auto& w = opened.value();
  ASSERT_TRUE(w->close());
  const std::vector<CpuSampleRow> rows{dcgm_row()};
  EXPECT_FALSE(w->append(rows));
  EXPECT_FALSE(w->flush());
  EXPECT_NE(w->last_error().find("closed"), std::string::npos);
  EXPECT_TRUE(w->close());  // closing twice is harmless
}

TEST(CpuSamplesWriter, HeaderWriteFailureFailsTheOpen) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  // /dev/full accepts the open and fails every write with ENOSPC, like a full disk.
  const auto opened = CpuSamplesWriter::open("/dev/full");
  EXPECT_FALSE(opened);
  const std::string error = opened.error();
  EXPECT_NE(error.find("No space left on device"), std::string::npos) << error;
}

// Lowers the file size limit so that writes fail part-way (EFBIG), as on a full disk.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &saved_);
    old_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    rlimit lowered = saved_;
    lowered.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &lowered);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &saved_);
    std::signal(SIGXFSZ, old_handler_);
  }

 private:
  rlimit saved_{};
  void (*old_handler_)(int) = nullptr;
};

TEST(CpuSamplesWriter, WriteErrorsAreCountedAndLaterRowsStayIntact) {
  TempDir dir;
  const auto path = dir.file("samples.csv");
  auto opened = CpuSamplesWriter::open(path);
  ASSERT_TRUE(opened) << opened.error();
  auto& w = opened.value();
  const std::vector<CpuSampleRow> two{dcgm_row(), acpi_row()};
  ASSERT_TRUE(w->append(two));
  {
    const FileSizeLimit limit(fs::file_size(path) + 30);  // room for part of the first row
    EXPECT_FALSE(w->flush());
    EXPECT_EQ(slurp(path), kHeaderV3 + "\r\n") << "the partial row was left behind";
  }
  EXPECT_EQ(w->write_errors(), 1u);
  EXPECT_EQ(w->rows_written(), 0u);
  EXPECT_EQ(w->rows_dropped(), 2u);
  EXPECT_NE(w->last_error().find("File too large"), std::string::npos) << w->last_error();
  EXPECT_EQ(w->last_errno(), EFBIG);

  const std::vector<CpuSampleRow> one{dcgm_row()};
  ASSERT_TRUE(w->append(one));
  EXPECT_TRUE(w->flush());
  EXPECT_EQ(w->rows_written(), 1u);
  EXPECT_EQ(slurp(path), kHeaderV3 + "\r\n" + format_v3_row(dcgm_row()));
}

TEST(CpuSamplesWriter, AFailedWriteKeepsItsWholeRowsAndCutsThePartialOne) {
  TempDir dir;
  const auto path = dir.file("samples.csv");
  auto opened = CpuSamplesWriter::open(path);
  ASSERT_TRUE(opened) << opened.error();
  auto& w = opened.value();
  const std::string first = format_v3_row(dcgm_row());
  const std::vector<CpuSampleRow> three{dcgm_row(), acpi_row(), dcgm_row()};
  ASSERT_TRUE(w->append(three));
  {
    // Room for the first row and 10 bytes of the second: the disk filled mid-row.
    const FileSizeLimit limit(fs::file_size(path) + first.size() + 10);
    EXPECT_FALSE(w->flush());
  }
  EXPECT_EQ(w->rows_written(), 1u);
  EXPECT_EQ(w->rows_in_file(), 1u);
  EXPECT_EQ(w->rows_dropped(), 2u);
  EXPECT_EQ(slurp(path), kHeaderV3 + "\r\n" + first);
  const std::vector<CpuSampleRow> one{acpi_row()};
  ASSERT_TRUE(w->append(one));
  EXPECT_TRUE(w->flush());
  EXPECT_EQ(slurp(path), kHeaderV3 + "\r\n" + first + format_v3_row(acpi_row()));
}

TEST(RowAppender, AFreshFileStartsOverWithItsModeAndKeepsAFailedFlushAllOrNothing) {
  TempDir dir;
  const auto created = dir.file("created.csv");
  const mode_t saved_umask = ::umask(0002);
  EXPECT_TRUE(RowAppender::open(created, "h", 0664));
  ::umask(saved_umask);
  EXPECT_EQ(fs::status(created).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                fs::perms::group_write | fs::perms::others_read);
  const auto path = dir.file("node.csv");
  spit(path, "h\r\nan earlier run's row\r\n");
  auto opened = RowAppender::open(path, "h", 0664);
  ASSERT_TRUE(opened) << opened.error();
  auto& w = *opened.value();
  EXPECT_EQ(slurp(path), "h\r\n");
  w.append_rows("row one\r\nrow two\r\n", 2);
  {
    // Room for the first row: a plain appender keeps it, a fresh one keeps neither.
    const FileSizeLimit limit(fs::file_size(path) + 12);
    EXPECT_FALSE(w.flush());
  }
  EXPECT_EQ(slurp(path), "h\r\n");
  EXPECT_EQ(w.rows_dropped(), 2u);
  EXPECT_EQ(w.last_errno(), EFBIG);
  w.append_rows("row three\r\n", 1);
  EXPECT_TRUE(w.flush());
  EXPECT_EQ(slurp(path), "h\r\nrow three\r\n");
}

TEST(CpuSamplesWriter, AHeaderCutByAFullDiskIsNotLeftBehind) {
  TempDir dir;
  const auto path = dir.file("samples.csv");
  {
    const FileSizeLimit limit(20);
    const auto opened = CpuSamplesWriter::open(path);
    EXPECT_FALSE(opened);
    EXPECT_NE(opened.error().find("File too large"), std::string::npos) << opened.error();
  }
  EXPECT_EQ(fs::file_size(path), 0u) << "a later open would refuse the cut header as not ours";
  const auto opened = CpuSamplesWriter::open(path);
  ASSERT_TRUE(opened) << opened.error();
}

TEST(CpuSamplesWriter, TellsWhatBecameOfItsPath) {
  TempDir dir;
  const auto path = dir.file("samples.csv");
  auto opened = CpuSamplesWriter::open(path);
  ASSERT_TRUE(opened) << opened.error();
  auto& w = opened.value();
  const std::vector<CpuSampleRow> one{dcgm_row()};
  const auto write_one = [&] {
    ASSERT_TRUE(w->append(one));
    ASSERT_TRUE(w->flush());
  };
  write_one();
  EXPECT_EQ(w->check_path(), SamplesFileChange::none);

  fs::remove(path);
  EXPECT_EQ(w->check_path(), SamplesFileChange::deleted);
  ASSERT_TRUE(w->append(one));  // pending when the change is noticed: goes to the new file
  ASSERT_TRUE(w->reopen());
  EXPECT_EQ(w->rows_in_file(), 0u);
  ASSERT_TRUE(w->flush());
  EXPECT_EQ(slurp(path), kHeaderV3 + "\r\n" + format_v3_row(dcgm_row()));
  EXPECT_EQ(w->check_path(), SamplesFileChange::none);

  spit(dir.file("other.csv"), kHeaderV3 + "\r\n");
  fs::rename(dir.file("other.csv"), path);
  EXPECT_EQ(w->check_path(), SamplesFileChange::replaced);
  ASSERT_TRUE(w->reopen());  // continues the v3 file put there
  write_one();
  EXPECT_EQ(slurp(path), kHeaderV3 + "\r\n" + format_v3_row(dcgm_row()));

  fs::rename(path, dir.file("moved.csv"));
  EXPECT_EQ(w->check_path(), SamplesFileChange::moved);
  ASSERT_TRUE(w->reopen());
  write_one();

  fs::resize_file(path, 0);
  EXPECT_EQ(w->check_path(), SamplesFileChange::truncated);
  ASSERT_TRUE(w->reopen());  // an empty file: the header first
  write_one();
  EXPECT_EQ(slurp(path), kHeaderV3 + "\r\n" + format_v3_row(dcgm_row()));
  EXPECT_EQ(w->rows_written(), 5u);
  EXPECT_EQ(w->rows_in_file(), 1u);

  fs::remove(path);
  fs::remove_all(dir.path());
  EXPECT_EQ(w->check_path(), SamplesFileChange::deleted);
  ASSERT_TRUE(w->append(one));
  EXPECT_FALSE(w->reopen());  // no directory to create it in
  EXPECT_FALSE(w->is_open());
  EXPECT_EQ(w->discard_pending(), 1u);
  EXPECT_EQ(w->rows_dropped(), 1u);
}

// ---- manifest -------------------------------------------------------------------------

CpuManifest sample_manifest() {
  CpuManifest m;
  m.producer_git_commit = "abc123";
  m.started_at_unix = 1788310000.5;
  m.stopped_at_unix = 1788310143.461;
  CpuManifestNode b;
  b.resolved_mode = "dcgm";
  b.scrape_count = 10;
  b.error_count = 1;
  b.endpoint_url = "http://10.0.0.2:9405/metrics";
  b.last_error = "connect: Connection refused";
  b.missed_slots = 2;
  b.first_sample_unix = 1788310001.0;
  b.last_sample_unix = 1788310143.25;
  b.sockets_expected = {0, 1, 10};
  b.sockets_missing[10] = {3, 1788310100.0, 1788310102.5};
  b.sockets_missing[1] = {1, std::nullopt, std::nullopt};
  b.status = "degraded";
  b.duplicate_series = 2;
  b.average_interval_min_s = 0.05;
  b.average_interval_max_s = 1.0;
  m.nodes["node-b"] = b;
  CpuManifestNode a;
  a.endpoint_url = "http://10.0.0.1:9405/metrics";
  m.nodes["node-a"] = a;
  return m;
}

TEST(CpuManifest, RendersTheReferenceKeysInOrderThenTheExtras) {
  EXPECT_EQ(render_cpu_manifest(sample_manifest()),
            R"({
  "schema_version": 1,
  "producer": "srt-slurm.cpu-power",
  "producer_git_commit": "abc123",
  "started_at_unix": 1788310000.5,
  "stopped_at_unix": 1788310143.461,
  "nodes": {
    "node-a": {
      "resolved_mode": "unknown",
      "scrape_count": 0,
      "error_count": 0,
      "endpoint_url": "http://10.0.0.1:9405/metrics",
      "last_error": null,
      "missed_slots": 0,
      "first_sample_unix": null,
      "last_sample_unix": null,
      "sockets_expected": [],
      "sockets_missing": {},
      "status": "ok",
      "duplicate_series": 0,
      "average_interval_s": null
    },
    "node-b": {
      "resolved_mode": "dcgm",
      "scrape_count": 10,
      "error_count": 1,
      "endpoint_url": "http://10.0.0.2:9405/metrics",
      "last_error": "connect: Connection refused",
      "missed_slots": 2,
      "first_sample_unix": 1788310001.0,
      "last_sample_unix": 1788310143.25,
      "sockets_expected": [
        0,
        1,
        10
      ],
      "sockets_missing": {
        "1": {
          "rows": 1,
          "first_unix": null,
          "last_unix": null
        },
        "10": {
          "rows": 3,
          "first_unix": 1788310100.0,
          "last_unix": 1788310102.5
        }
      },
      "status": "degraded",
      "duplicate_series": 2,
      "average_interval_s": {
        "min": 0.05,
        "max": 1.0
      }
    }
  },
  "rows_written": 0,
  "rows_dropped": 0,
  "write_errors": [],
  "samples_file_changes": [],
  "samples_schema_version": 3
}
)");
}

TEST(CpuManifest, RendersSamplesCsvFailuresAfterTheNodes) {
  CpuManifest m;
  m.stopped_at_unix = 5;
  m.rows_written = 1200;
  m.rows_dropped = 2391;
  m.write_errors.push_back({"write /x/samples.csv: No space left on device", 37, 2.5, 4.5});
  m.samples_file_changes.push_back({3.0, "deleted", 42});
  const auto doc = nlohmann::ordered_json::parse(render_cpu_manifest(m));
  std::vector<std::string> keys;
  for (const auto& [k, v] : doc.items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"schema_version", "producer", "producer_git_commit",
                                            "started_at_unix", "stopped_at_unix", "nodes",
                                            "rows_written", "rows_dropped", "write_errors",
                                            "samples_file_changes", "samples_schema_version"}));
  EXPECT_EQ(doc["rows_dropped"], 2391);
  EXPECT_EQ(doc["write_errors"][0]["error"], "write /x/samples.csv: No space left on device");
  EXPECT_EQ(doc["write_errors"][0]["count"], 37);
  EXPECT_EQ(doc["write_errors"][0]["first_unix"], 2.5);
  EXPECT_EQ(doc["write_errors"][0]["last_unix"], 4.5);
  EXPECT_EQ(
      doc["samples_file_changes"][0],
      nlohmann::ordered_json({{"at_unix", 3.0}, {"change", "deleted"}, {"rows_in_old_file", 42}}));
}

TEST(CpuManifest, NullsForANeverStartedCollectorAndNoNodes) {
  CpuManifest m;
  m.stopped_at_unix = 5;
  const auto doc = nlohmann::json::parse(render_cpu_manifest(m));
  EXPECT_TRUE(doc["producer_git_commit"].is_null());
  EXPECT_TRUE(doc["started_at_unix"].is_null());
  EXPECT_EQ(doc["stopped_at_unix"], 5.0);
  EXPECT_TRUE(doc["nodes"].is_object());
  EXPECT_TRUE(doc["nodes"].empty());
}

TEST(CpuManifest, InvalidUtf8IsReplacedNotThrown) {
  CpuManifest m = sample_manifest();
  m.nodes["node-a"].last_error = std::string("bad \xff byte");
  std::string text;
  EXPECT_NO_THROW(text = render_cpu_manifest(m));
  EXPECT_NE(text.find("bad \xef\xbf\xbd byte"), std::string::npos);
}

TEST(CpuManifest, IsWrittenAtomicallyAndReadsBack) {
  TempDir dir;
  const auto path = dir.file("cpu_manifest.json");
  spit(path, "old");
  const Status written = write_cpu_manifest(path, sample_manifest());
  ASSERT_TRUE(written) << written.error();
  EXPECT_EQ(slurp(path), render_cpu_manifest(sample_manifest()));
  const auto doc = nlohmann::json::parse(slurp(path));
  EXPECT_EQ(doc["nodes"]["node-b"]["scrape_count"], 10);
  EXPECT_EQ(doc["nodes"]["node-b"]["resolved_mode"], "dcgm");
  // No temporary file is left behind.
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(fs::path(path).parent_path())) {
    ++entries;
  }
  EXPECT_EQ(entries, 1u);
}

TEST(CpuManifest, WriteFailureIsReturned) {
  const Status written =
      write_cpu_manifest("/nonexistent-dir/cpu_manifest.json", sample_manifest());
  EXPECT_FALSE(written);
  const std::string error = written.error();
  EXPECT_FALSE(error.empty());
}

}  // namespace
}  // namespace cpupower::artifacts
