// The GPU leg's artifact contract: status rules, device identity, publication, the strict
// samples reader, row formatting, window files and their audit, and the manifest.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "artifacts/gpu_contract.hpp"
#include "artifacts/gpu_manifest.hpp"
#include "artifacts/gpu_reasons.hpp"
#include "artifacts/gpu_samples.hpp"
#include "artifacts/gpu_samples_check.hpp"
#include "artifacts/gpu_samples_out.hpp"
#include "artifacts/gpu_windows.hpp"
#include "temp_dir.hpp"

namespace cpupower::artifacts {

// Readable failure messages for the records compared whole.
void PrintTo(const GpuReasons& r, std::ostream* os) {
  *os << "[";
  for (const auto& c : r) *os << (&c == &r.codes().front() ? "" : ", ") << c;
  *os << "]";
}
void PrintTo(const GpuArtifactError& e, std::ostream* os) {
  *os << e.path << ": ";
  PrintTo(e.reason_codes, os);
}

namespace {

namespace fs = std::filesystem;
namespace reason = gpu_reason;
namespace rule = gpu_publication_rule;
using cpupower::testing::slurp;
using cpupower::testing::spit;

class TempDir : public cpupower::testing::TempDir {
 public:
  TempDir() : cpupower::testing::TempDir("gpu_contract_test") {}
};

GpuReasons reasons(std::initializer_list<std::string_view> codes) {
  return GpuReasons(codes);
}

// ---- reason codes and status ------------------------------------------------------------

TEST(GpuReasons, KeepFirstSeenOrderWithoutRepeats) {
  GpuReasons r;
  EXPECT_TRUE(r.add(reason::kSampleGapExceeded));
  EXPECT_TRUE(r.add(reason::kExporterExited));
  EXPECT_FALSE(r.add(reason::kSampleGapExceeded));
  EXPECT_EQ(r.codes(), (std::vector<std::string>{"sample_gap_exceeded", "exporter_exited"}));
  EXPECT_TRUE(r.contains(reason::kExporterExited));
  EXPECT_FALSE(r.contains(reason::kCollectorException));
}

TEST(GpuRunStatus, NamesRoundTrip) {
  const std::vector<std::pair<GpuRunStatus, std::string>> all = {
      {GpuRunStatus::starting, "starting"}, {GpuRunStatus::running, "running"},
      {GpuRunStatus::complete, "complete"}, {GpuRunStatus::incomplete, "incomplete"},
      {GpuRunStatus::failed, "failed"},
  };
  for (const auto& [status, name] : all) {
    EXPECT_EQ(gpu_run_status_name(status), name);
    EXPECT_EQ(parse_gpu_run_status(name), status);
  }
  EXPECT_FALSE(parse_gpu_run_status("completed"));
}

const std::vector<std::string_view> kFatal = {
    reason::kExporterExited, reason::kCollectorException, reason::kCollectorInterrupted,
    reason::kCollectorJoinTimeout, reason::kBenchmarkChildReapTimeout};
const std::vector<std::string_view> kStartup = {reason::kExporterStartupTimeout,
                                                reason::kExporterLaunchFailed,
                                                reason::kEndpointResolutionFailed};

TEST(GpuTerminalStatus, FatalLifecycleReasonIsIncompleteInEitherMode) {
  for (auto code : kFatal) {
    EXPECT_TRUE(is_gpu_fatal_lifecycle_reason(code));
    EXPECT_EQ(gpu_terminal_status(reasons({code}), true), GpuRunStatus::incomplete) << code;
    EXPECT_EQ(gpu_terminal_status(reasons({code}), false), GpuRunStatus::incomplete) << code;
  }
}

TEST(GpuTerminalStatus, StartupReasonFailsOnlyWhenRequired) {
  for (auto code : kStartup) {
    EXPECT_TRUE(is_gpu_startup_reason(code));
    EXPECT_EQ(gpu_terminal_status(reasons({code}), true), GpuRunStatus::failed) << code;
    EXPECT_EQ(gpu_terminal_status(reasons({code}), false), GpuRunStatus::complete) << code;
  }
}

TEST(GpuTerminalStatus, IncompleteOutranksFailed) {
  for (auto fatal : kFatal) {
    for (auto startup : kStartup) {
      EXPECT_EQ(gpu_terminal_status(reasons({startup, fatal}), true), GpuRunStatus::incomplete);
    }
  }
}

TEST(GpuTerminalStatus, OtherReasonsAreComplete) {
  EXPECT_EQ(gpu_terminal_status({}, true), GpuRunStatus::complete);
  EXPECT_EQ(gpu_terminal_status(reasons({reason::kEndpointTimeout, reason::kSampleGapExceeded,
                                         reason::kSamplesCsvMalformed}),
                                true),
            GpuRunStatus::complete);
}

TEST(GpuExitNonzero, Table) {
  EXPECT_TRUE(gpu_exit_nonzero(reasons({reason::kBenchmarkChildReapTimeout}), false, true));
  EXPECT_TRUE(gpu_exit_nonzero(reasons({reason::kCollectorJoinTimeout}), false, true));
  EXPECT_TRUE(gpu_exit_nonzero(reasons({reason::kCollectorJoinTimeout}), true, true));
  EXPECT_TRUE(gpu_exit_nonzero({}, true, false));
  EXPECT_FALSE(gpu_exit_nonzero({}, true, true));
  EXPECT_FALSE(gpu_exit_nonzero({}, false, false));
  EXPECT_FALSE(gpu_exit_nonzero(reasons({reason::kExporterExited}), false, false));
  EXPECT_TRUE(is_gpu_operational_failure_reason(reason::kBenchmarkChildReapTimeout));
  EXPECT_FALSE(is_gpu_operational_failure_reason(reason::kExporterExited));
}

// ---- devices ----------------------------------------------------------------------------

GpuAssignment assignment(std::string role, std::optional<long long> het_group = std::nullopt) {
  return {std::move(role), 0, 0, het_group};
}

GpuExpectedDevice expected(std::string host, long long index,
                           std::vector<GpuAssignment> assignments = {assignment("prefill")}) {
  return {std::move(host), index, std::move(assignments)};
}

// Records one row of a device, as the strict samples reader derives it: its UUID (when new)
// and its time, the times kept sorted.
void observe(GpuObservedDevice& d, std::string_view gpu_uuid, double time_unix) {
  if (std::find(d.gpu_uuids.begin(), d.gpu_uuids.end(), gpu_uuid) == d.gpu_uuids.end()) {
    d.gpu_uuids.emplace_back(gpu_uuid);
  }
  if (d.sample_times_unix.empty() || time_unix < d.first_sample_time_unix) {
    d.first_sample_time_unix = time_unix;
  }
  if (d.sample_times_unix.empty() || time_unix > d.last_sample_time_unix) {
    d.last_sample_time_unix = time_unix;
  }
  const auto at =
      std::upper_bound(d.sample_times_unix.begin(), d.sample_times_unix.end(), time_unix);
  d.sample_times_unix.insert(at, time_unix);
}

GpuObservedDevice observed(std::string host, long long index, std::vector<std::string> uuids,
                           std::vector<double> times = {1000.0}) {
  GpuObservedDevice d;
  d.hostname = std::move(host);
  d.gpu_index = index;
  for (double t : times) observe(d, uuids.front(), t);
  d.gpu_uuids = std::move(uuids);
  return d;
}

struct Devices {
  std::vector<GpuExpectedDevice> want{expected("node-a", 0), expected("node-a", 1),
                                      expected("node-b", 0, {assignment("decode")})};
  std::vector<GpuObservedDevice> have{observed("node-a", 0, {"GPU-a0"}),
                                      observed("node-a", 1, {"GPU-a1"}),
                                      observed("node-b", 0, {"GPU-b0"})};
  GpuReasons check() const { return gpu_device_reasons(want, have); }
};

TEST(GpuDeviceReasons, MatchingDevicesHaveNone) {
  EXPECT_TRUE(Devices{}.check().empty());
}

TEST(GpuDeviceReasons, NoExpectedDeviceIsMissing) {
  Devices d;
  d.want.clear();
  d.have.clear();
  EXPECT_EQ(d.check(), reasons({reason::kExpectedDeviceMissing}));
}

TEST(GpuDeviceReasons, ExpectedWithoutSamples) {
  Devices d;
  d.have.pop_back();
  EXPECT_EQ(d.check(), reasons({reason::kExpectedDeviceMissing}));
}

TEST(GpuDeviceReasons, UnexpectedDevice) {
  Devices d;
  d.have.push_back(observed("node-c", 0, {"GPU-c0"}));
  EXPECT_EQ(d.check(), reasons({reason::kUnexpectedDevice}));
}

TEST(GpuDeviceReasons, DeviceWithTwoUuids) {
  Devices d;
  d.have[1].gpu_uuids.push_back("GPU-other");
  EXPECT_EQ(d.check(), reasons({reason::kGpuUuidChanged}));
}

TEST(GpuDeviceReasons, UuidSharedByTwoDevices) {
  Devices d;
  d.have[2].gpu_uuids = {"GPU-a0"};
  EXPECT_EQ(d.check(), reasons({reason::kGpuUuidChanged}));
}

TEST(GpuDeviceReasons, ConflictingWorkerRoles) {
  Devices d;
  d.want[0].assignments = {assignment("prefill"), assignment("decode")};
  EXPECT_EQ(d.check(), reasons({reason::kConflictingWorkerRoles}));
  d.want[0].assignments = {assignment("prefill"), assignment("prefill")};  // one role, twice
  EXPECT_TRUE(d.check().empty());
}

TEST(GpuDeviceReasons, ConflictingHetGroupsOnOneDevice) {
  Devices d;
  d.want[0].assignments = {assignment("prefill", 0), assignment("prefill", 1)};
  EXPECT_EQ(d.check(), reasons({reason::kConflictingHetGroups}));
  d.want[0].assignments = {assignment("prefill", 0), assignment("prefill")};  // null is a value
  EXPECT_EQ(d.check(), reasons({reason::kConflictingHetGroups}));
}

TEST(GpuDeviceReasons, ConflictingHetGroupsOnOneHost) {
  Devices d;
  d.want[0].assignments = {assignment("prefill", 0)};
  d.want[1].assignments = {assignment("prefill", 1)};
  d.want[2].assignments = {assignment("decode", 1)};  // another host may differ
  EXPECT_EQ(d.check(), reasons({reason::kConflictingHetGroups}));
  d.want[1].assignments = {assignment("prefill", 0)};
  EXPECT_TRUE(d.check().empty());
}

TEST(GpuDeviceReasons, NoAssignmentsConflictBoth) {
  Devices d;
  d.want[0].assignments.clear();
  EXPECT_EQ(d.check(), reasons({reason::kConflictingWorkerRoles, reason::kConflictingHetGroups}));
}

TEST(GpuDeviceReasons, Order) {
  Devices d;
  d.want.push_back(expected("node-z", 0, {assignment("agg", 1), assignment("decode", 2)}));
  d.have.push_back(observed("node-y", 0, {"GPU-y0", "GPU-y1"}));
  EXPECT_EQ(d.check(), reasons({reason::kExpectedDeviceMissing, reason::kUnexpectedDevice,
                                reason::kGpuUuidChanged, reason::kConflictingWorkerRoles,
                                reason::kConflictingHetGroups}));
}

TEST(GpuObservedDevice, ObserveKeepsUuidOrderAndTimeBounds) {
  GpuObservedDevice d;
  observe(d, "GPU-1", 5.0);
  observe(d, "GPU-2", 3.0);
  observe(d, "GPU-1", 9.0);
  EXPECT_EQ(d.gpu_uuids, (std::vector<std::string>{"GPU-1", "GPU-2"}));
  EXPECT_EQ(d.first_sample_time_unix, 3.0);
  EXPECT_EQ(d.last_sample_time_unix, 9.0);
  EXPECT_EQ(d.sample_times_unix, (std::vector<double>{3.0, 5.0, 9.0}));
}

// ---- publication ------------------------------------------------------------------------

struct Publishable {
  Devices devices;
  std::vector<GpuWindowKey> windows{{"sa-bench", 4}, {"sa-bench", 8}};
  std::vector<GpuWindowValidation> validations;
  GpuReasons samples_reasons;
  std::vector<GpuArtifactError> artifact_errors;
  GpuRunStatus status = GpuRunStatus::complete;

  Publishable() {
    for (const auto& w : windows) {
      GpuWindowValidation v;
      v.benchmark_type = w.benchmark_type;
      v.concurrency = w.concurrency;
      v.power_coverage_valid = true;
      validations.push_back(v);
    }
  }
  GpuPublication check() const {
    GpuPublicationInputs in;
    in.status = status;
    in.expected_devices = devices.want;
    in.observed_devices = devices.have;
    in.expected_windows = windows;
    in.window_validations = validations;
    in.samples_reasons = &samples_reasons;
    in.artifact_errors = artifact_errors;
    return gpu_publication_valid(in);
  }
};

void expect_fails_only(const Publishable& p, std::string_view rule_name) {
  const auto result = p.check();
  EXPECT_FALSE(result.valid);
  EXPECT_EQ(result.failed_rules, std::vector<std::string_view>{rule_name});
}

TEST(GpuPublication, AllRulesHold) {
  const auto result = Publishable{}.check();
  EXPECT_TRUE(result.valid);
  EXPECT_TRUE(result.failed_rules.empty());
}

TEST(GpuPublication, StatusNotComplete) {
  for (auto s : {GpuRunStatus::starting, GpuRunStatus::running, GpuRunStatus::incomplete,
                 GpuRunStatus::failed}) {
    Publishable p;
    p.status = s;
    expect_fails_only(p, rule::kStatusNotComplete);
  }
}

TEST(GpuPublication, ExpectedDevicesEmpty) {
  Publishable p;
  p.devices.want.clear();
  p.devices.have.clear();
  expect_fails_only(p, rule::kExpectedDevicesEmpty);
}

TEST(GpuPublication, DeviceKeysDiffer) {
  Publishable p;
  p.devices.have.pop_back();
  expect_fails_only(p, rule::kDeviceKeysMismatch);
  Publishable q;
  q.devices.have.push_back(observed("node-c", 0, {"GPU-c0"}));
  expect_fails_only(q, rule::kDeviceKeysMismatch);
}

TEST(GpuPublication, DeviceWithoutExactlyOneUuid) {
  Publishable p;
  p.devices.have[0].gpu_uuids.push_back("GPU-x");
  expect_fails_only(p, rule::kDeviceUuidNotSingle);
  Publishable q;
  q.devices.have[0].gpu_uuids.clear();
  expect_fails_only(q, rule::kDeviceUuidNotSingle);
}

TEST(GpuPublication, UuidNotUnique) {
  Publishable p;
  p.devices.have[1].gpu_uuids = {"GPU-a0"};
  expect_fails_only(p, rule::kDeviceUuidNotUnique);
}

TEST(GpuPublication, ConflictingRoles) {
  Publishable p;
  p.devices.want[0].assignments = {assignment("prefill"), assignment("agg")};
  expect_fails_only(p, rule::kConflictingWorkerRoles);
}

TEST(GpuPublication, ConflictingHetGroups) {
  Publishable p;
  p.devices.want[0].assignments = {assignment("prefill", 2), assignment("prefill", 3)};
  expect_fails_only(p, rule::kConflictingHetGroups);
}

TEST(GpuPublication, ExpectedWindowsEmpty) {
  Publishable p;
  p.windows.clear();
  expect_fails_only(p, rule::kExpectedWindowsEmpty);
}

TEST(GpuPublication, WindowWithoutCoverage) {
  Publishable p;
  p.validations[1].power_coverage_valid = false;
  expect_fails_only(p, rule::kWindowCoverageInvalid);
  Publishable q;
  q.validations.pop_back();  // an expected window without a validation
  expect_fails_only(q, rule::kWindowCoverageInvalid);
}

TEST(GpuPublication, SamplesReasons) {
  Publishable p;
  p.samples_reasons.add(reason::kDuplicateSampleRow);
  expect_fails_only(p, rule::kSamplesReasons);
}

TEST(GpuPublication, ArtifactErrors) {
  Publishable p;
  p.artifact_errors.push_back({"windows/x.txt", reasons({reason::kWindowArtifactPathInvalid})});
  expect_fails_only(p, rule::kArtifactErrors);
}

// The terminal manifest from its evidence: counts from the samples check, the reasons in
// their order (the producer's, the samples', the devices', the windows', the artifacts'),
// and the status and verdict they call for.
// --gpu-roles: an array, or a manifest's expected_devices; any element that is not a whole
// device refuses the file, naming the element.
TEST(GpuRolesFile, ArrayOrManifestAndTheFirstBadElement) {
  TempDir dir;
  const auto path = dir.path() + "/roles.json";
  spit(path, R"({"expected_devices": [{"hostname": "a", "gpu_index": 1, "assignments":
      [{"worker_role": "decode", "worker_index": 2, "het_group": 1}]}, {"hostname": "b",
      "gpu_index": 0}]})");
  const auto roles = read_gpu_roles_file(path);
  ASSERT_TRUE(roles) << roles.error();
  ASSERT_EQ(roles->size(), 2u);
  EXPECT_EQ((*roles)[0], (GpuExpectedDevice{"a", 1, {{"decode", 2, 0, 1}}}));
  EXPECT_EQ((*roles)[1], (GpuExpectedDevice{"b", 0, {}}));

  spit(path, R"([{"hostname": "a", "gpu_index": 0, "assignments": [{"worker_index": 0}]}])");
  EXPECT_EQ(read_gpu_roles_file(path).error(),
            path + ": expected_devices[0].assignments: each needs a string worker_role");
  spit(path, R"([{"hostname": "a", "gpu_index": 0}, {"hostname": "a"}])");
  EXPECT_EQ(read_gpu_roles_file(path).error(),
            path + ": expected_devices[1]: needs a string hostname and an integer gpu_index");
  spit(path, R"({"devices": []})");
  EXPECT_EQ(read_gpu_roles_file(path).error(),
            path + ": expected a JSON array of devices or an object with expected_devices");
}

TEST(GpuPublication, SettledManifest) {
  const Publishable p;
  GpuManifest m;
  m.required = true;
  m.expected_devices = p.devices.want;
  m.expected_windows = p.windows;
  m.window_validations = p.validations;
  GpuSamplesCheck samples;
  samples.devices = p.devices.have;
  samples.row_count = 12;
  samples.max_scrape_seq = 3;
  samples.sha256_hex = "ab";
  auto settled = m;
  EXPECT_TRUE(settle_gpu_manifest(settled, {}, samples).valid);
  EXPECT_EQ(settled.status, GpuRunStatus::complete);
  EXPECT_EQ(settled.publication_valid, true);
  EXPECT_EQ(settled.observed_devices, p.devices.have);
  EXPECT_EQ(settled.scrape_count, 4u);
  EXPECT_EQ(settled.sample_row_count, 12u);
  EXPECT_EQ(settled.samples_sha256, "ab");

  samples.reason_codes = reasons({reason::kSamplesCsvMalformed});
  samples.devices.pop_back();
  m.window_validations[1].reason_codes = reasons({reason::kSampleGapExceeded});
  m.artifact_errors.push_back({"windows/x.json", reasons({reason::kWindowMalformed})});
  const auto publication =
      settle_gpu_manifest(m, reasons({reason::kExporterStartupTimeout}), samples);
  EXPECT_FALSE(publication.valid);
  EXPECT_EQ(m.publication_valid, false);
  EXPECT_EQ(m.status, GpuRunStatus::failed);
  EXPECT_EQ(m.reason_codes, reasons({reason::kExporterStartupTimeout, reason::kSamplesCsvMalformed,
                                     reason::kExpectedDeviceMissing, reason::kSampleGapExceeded,
                                     reason::kWindowMalformed}));
}

// ---- samples.csv rows -------------------------------------------------------------------

GpuSampleOut sample(std::uint64_t seq, std::string host, long long index, std::string uuid,
                    double t, double watts = 100.25) {
  GpuSampleOut s;
  s.timestamp_unix = t;
  s.scrape_seq = seq;
  s.hostname = std::move(host);
  s.gpu_index = index;
  s.gpu_uuid = std::move(uuid);
  s.power_w = watts;
  return s;
}

TEST(GpuSampleRow, V3Row) {
  GpuSampleOut s = sample(7, "node-a", 3, "GPU-abc", 1795986923.4679544, 412.5);
  s.gpu_util_pct = 87;
  s.sm_active = 0.62;
  s.temperature_c = 54.0;
  EXPECT_EQ(format_gpu_v3_row(s), "3,1795986923.4679544,7,node-a,3,GPU-abc,412.5,87,0.62,54\r\n");
}

TEST(GpuSampleRow, MissingAndInvalidReadingsAreEmptyCells) {
  GpuSampleOut s = sample(0, "node-a", 0, "GPU-a", 1000.5, 0);
  EXPECT_EQ(format_gpu_v3_row(s), "3,1000.5,0,node-a,0,GPU-a,0,,,\r\n");
  s.gpu_util_pct = 100.5;
  s.sm_active = std::nan("");
  s.temperature_c = 200.5;
  EXPECT_EQ(format_gpu_v3_row(s), "3,1000.5,0,node-a,0,GPU-a,0,,,\r\n");
  s.gpu_util_pct = 100;
  s.sm_active = 1;
  s.temperature_c = -273.15;
  EXPECT_EQ(format_gpu_v3_row(s), "3,1000.5,0,node-a,0,GPU-a,0,100,1,-273.15\r\n");
}

TEST(GpuSampleRow, QuotesCellsLikeTheCsvModule) {
  const GpuSampleOut s = sample(1, "node,a", 0, "GPU-\"x\"\n", 2.0, 1.0);
  EXPECT_EQ(format_gpu_v3_row(s), "3,2,1,\"node,a\",0,\"GPU-\"\"x\"\"\n\",1,,,\r\n");
}

TEST(GpuSampleRow, OlderVersions) {
  GpuSampleOut s = sample(2, "h", 1, "U", 5.25, 7.5);
  s.gpu_util_pct = 10;
  s.sm_active = 0.25;
  s.temperature_c = 30;
  EXPECT_EQ(format_gpu_row(s, 1), "1,5.25,2,h,1,U,7.5\r\n");
  EXPECT_EQ(format_gpu_row(s, 2), "2,5.25,2,h,1,U,7.5,10,0.25\r\n");
  EXPECT_EQ(format_gpu_row(s, 9), format_gpu_row(s, 3));
}

TEST(GpuSampleRow, Headers) {
  EXPECT_EQ(gpu_samples_header(1), kGpuHeaderV1);
  EXPECT_EQ(gpu_samples_header(2), kGpuHeaderV2);
  EXPECT_EQ(gpu_samples_header(3), kGpuHeaderV3);
  EXPECT_FALSE(gpu_samples_header(4));
}

TEST(GpuSampleRow, Writable) {
  EXPECT_TRUE(gpu_sample_writable(sample(0, "h", 0, "U", 1.0, 0.0)));
  EXPECT_FALSE(gpu_sample_writable(sample(0, "", 0, "U", 1.0)));
  EXPECT_FALSE(gpu_sample_writable(sample(0, "h", 0, "", 1.0)));
  EXPECT_FALSE(gpu_sample_writable(sample(0, "h", -1, "U", 1.0)));
  EXPECT_FALSE(gpu_sample_writable(sample(0, "h", 0, "U", INFINITY)));
  EXPECT_FALSE(gpu_sample_writable(sample(0, "h", 0, "U", 1.0, -0.5)));
  EXPECT_FALSE(gpu_sample_writable(sample(0, "h", 0, "U", 1.0, NAN)));
}

// ---- the strict reader ------------------------------------------------------------------

const std::string kHeader = std::string(kGpuHeaderV3) + "\r\n";
const std::string kRow = "3,1000.5,0,node-a,0,GPU-aaa,100.25,50,0.5,40\r\n";

GpuSamplesCheck check_text(const std::string& text, std::optional<int> version = 3) {
  TempDir dir;
  const std::string path = dir.file("samples.csv");
  spit(path, text);
  return check_gpu_samples(path, version);
}

TEST(GpuSha256, KnownDigests) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  TempDir dir;
  spit(dir.file("s.csv"), kHeader + kRow);
  // printf '<the same bytes>' | sha256sum
  const auto digest = sha256_file_hex(dir.file("s.csv"));
  ASSERT_TRUE(digest.ok()) << digest.error();
  EXPECT_EQ(*digest, "b5962e5e87bff8fe7256400d8eac15da42c28577bf4f15f29d17e04e4d460a36");
  EXPECT_FALSE(sha256_file_hex(dir.file("absent")).ok());
}

TEST(GpuSamplesCheck, RoundTripOfFormattedRows) {
  std::string text = kHeader;
  GpuSampleOut a0 = sample(0, "node-a", 0, "GPU-a0", 1000.25);
  a0.gpu_util_pct = 12.5;
  a0.temperature_c = 40;
  text += format_gpu_v3_row(a0);
  text += format_gpu_v3_row(sample(0, "node,b", 1, "GPU-\"b1\"", 1000.5));
  text += format_gpu_v3_row(sample(1, "node-a", 0, "GPU-a0", 1001.25));
  text += format_gpu_v3_row(sample(1, "node,b", 1, "GPU-\"b1\"", 1001.5));
  text += format_gpu_v3_row(sample(2, "node-a", 0, "GPU-a0", 1002.25));
  const auto check = check_text(text);
  EXPECT_TRUE(check.reason_codes.empty()) << check.reason_codes.codes().front();
  EXPECT_EQ(check.schema_version, 3);
  EXPECT_EQ(check.row_count, 5u);
  EXPECT_EQ(check.max_scrape_seq, 2u);
  EXPECT_EQ(check.sha256_hex, sha256_hex(text));
  ASSERT_EQ(check.devices.size(), 2u);
  EXPECT_EQ(check.devices[0].key(), (GpuDeviceKey{"node,b", 1}));  // ',' sorts before '-'
  EXPECT_EQ(check.devices[0].gpu_uuids, std::vector<std::string>{"GPU-\"b1\""});
  EXPECT_EQ(check.devices[1].key(), (GpuDeviceKey{"node-a", 0}));
  EXPECT_EQ(check.devices[1].sample_times_unix, (std::vector<double>{1000.25, 1001.25, 1002.25}));
  EXPECT_EQ(check.devices[1].first_sample_time_unix, 1000.25);
  EXPECT_EQ(check.devices[1].last_sample_time_unix, 1002.25);
}

TEST(GpuSamplesCheck, HeaderOnlyIsEmptyAndClean) {
  const auto check = check_text(kHeader);
  EXPECT_TRUE(check.reason_codes.empty());
  EXPECT_EQ(check.row_count, 0u);
  EXPECT_TRUE(check.devices.empty());
}

TEST(GpuSamplesCheck, MissingFile) {
  TempDir dir;
  const auto check = check_gpu_samples(dir.file("samples.csv"));
  EXPECT_EQ(check.reason_codes, reasons({reason::kSamplesCsvMissing}));
  EXPECT_FALSE(check.sha256_hex);
}

TEST(GpuSamplesCheck, DirectoryIsMissingWithoutDigest) {
  TempDir dir;
  fs::create_directory(dir.file("samples.csv"));
  const auto check = check_gpu_samples(dir.file("samples.csv"));
  EXPECT_EQ(check.reason_codes,
            reasons({reason::kSamplesDigestUnavailable, reason::kSamplesCsvMissing}));
}

TEST(GpuSamplesCheck, UnreadableFile) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads any file";
  TempDir dir;
  spit(dir.file("samples.csv"), kHeader + kRow);
  ::chmod(dir.file("samples.csv").c_str(), 0);
  const auto check = check_gpu_samples(dir.file("samples.csv"));
  EXPECT_EQ(check.reason_codes,
            reasons({reason::kSamplesDigestUnavailable, reason::kSamplesCsvMalformed}));
}

TEST(GpuSamplesCheck, HeaderMismatch) {
  const std::string v2 = std::string(kGpuHeaderV2) + "\r\n";
  for (const std::string& text :
       {std::string(), v2, "\r\n" + kHeader, std::string(kGpuHeaderV3) + ",extra\r\n",
        std::string("schema_version\r\n")}) {
    const auto check = check_text(text + kRow);
    EXPECT_EQ(check.reason_codes, reasons({reason::kSamplesCsvHeaderMismatch})) << text;
    EXPECT_EQ(check.row_count, 0u);
    EXPECT_TRUE(check.sha256_hex);
  }
  EXPECT_EQ(check_text("").reason_codes, reasons({reason::kSamplesCsvHeaderMismatch}));
}

TEST(GpuSamplesCheck, AnyVersionByHeader) {
  const std::string v1 = std::string(kGpuHeaderV1) + "\r\n1,5,0,h,0,U,7\r\n";
  const std::string v2 = std::string(kGpuHeaderV2) + "\r\n2,5,0,h,0,U,7,,0.5\r\n";
  EXPECT_TRUE(check_text(v1, std::nullopt).reason_codes.empty());
  EXPECT_EQ(check_text(v1, std::nullopt).schema_version, 1);
  EXPECT_TRUE(check_text(v2, std::nullopt).reason_codes.empty());
  EXPECT_TRUE(check_text(v1, 1).reason_codes.empty());
  EXPECT_EQ(check_text(v1, 2).reason_codes, reasons({reason::kSamplesCsvHeaderMismatch}));
  // A row of another version under a header is malformed.
  EXPECT_EQ(
      check_text(std::string(kGpuHeaderV1) + "\r\n3,5,0,h,0,U,7\r\n", std::nullopt).reason_codes,
      reasons({reason::kSamplesCsvMalformed}));
}

TEST(GpuSamplesCheck, MalformedCells) {
  const std::vector<std::string> bad_rows = {
      "2,1000.5,0,node-a,0,GPU-aaa,100.25,,,\r\n",       // schema_version of another version
      "x,1000.5,0,node-a,0,GPU-aaa,100.25,,,\r\n",       // schema_version not an integer
      "3,nan,0,node-a,0,GPU-aaa,100.25,,,\r\n",          // timestamp not finite
      "3,inf,0,node-a,0,GPU-aaa,100.25,,,\r\n",          // timestamp not finite
      "3,,0,node-a,0,GPU-aaa,100.25,,,\r\n",             // timestamp blank
      "3,1000.5,-1,node-a,0,GPU-aaa,100.25,,,\r\n",      // scrape_seq negative
      "3,1000.5,1.5,node-a,0,GPU-aaa,100.25,,,\r\n",     // scrape_seq not an integer
      "3,1000.5,0,,0,GPU-aaa,100.25,,,\r\n",             // hostname empty
      "3,1000.5,0,node-a,-2,GPU-aaa,100.25,,,\r\n",      // gpu_index negative
      "3,1000.5,0,node-a,x,GPU-aaa,100.25,,,\r\n",       // gpu_index not an integer
      "3,1000.5,0,node-a,0,,100.25,,,\r\n",              // gpu_uuid empty
      "3,1000.5,0,node-a,0,GPU-aaa,-0.5,,,\r\n",         // power negative
      "3,1000.5,0,node-a,0,GPU-aaa,inf,,,\r\n",          // power not finite
      "3,1000.5,0,node-a,0,GPU-aaa,,,,\r\n",             // power blank
      "3,1000.5,0,node-a,0,GPU-aaa,100.25,101,,\r\n",    // gpu_util_pct above 100
      "3,1000.5,0,node-a,0,GPU-aaa,100.25,-1,,\r\n",     // gpu_util_pct below 0
      "3,1000.5,0,node-a,0,GPU-aaa,100.25,,1.5,\r\n",    // sm_active above 1
      "3,1000.5,0,node-a,0,GPU-aaa,100.25,, ,\r\n",      // sm_active blank but not empty
      "3,1000.5,0,node-a,0,GPU-aaa,100.25,,,200.5\r\n",  // temperature above 200
      "3,1000.5,0,node-a,0,GPU-aaa,100.25,,,-300\r\n",   // temperature below -273.15
      "3,1000.5,0,node-a,0,GPU-aaa,100.25,,,hot\r\n",    // temperature not a number
      "3,1000.5,0,node-a,0,GPU-aaa,100.25,,\r\n",        // a cell short
      "3,1000.5,0,node-a,0,GPU-aaa,100.25,,,,\r\n",      // a cell too many
      "3,1000.5,0,node-\xff,0,GPU-aaa,100.25,,,\r\n",    // invalid UTF-8
      "3,1000.5,0,\"node-a,0,GPU-aaa,100.25,,,\r\n",     // a quote never closed
  };
  for (const auto& bad : bad_rows) {
    const std::string good = "3,999.5,1,node-z,0,GPU-zzz,1,,,\r\n";
    const auto check = check_text(kHeader + good + bad);
    EXPECT_EQ(check.reason_codes, reasons({reason::kSamplesCsvMalformed})) << bad;
    EXPECT_EQ(check.row_count, 1u) << bad;
    EXPECT_EQ(check.malformed_rows, 1u) << bad;
    EXPECT_FALSE(check.problems.empty());
  }
}

TEST(GpuSamplesCheck, AcceptedCellForms) {
  // Python int() and float() forms: blanks around, a plus sign, exponents.
  const auto check = check_text(kHeader + "3, 1.0005e3 ,+0,node-a, 0 ,GPU-aaa,1e2,0,0,-273.15\r\n");
  EXPECT_TRUE(check.reason_codes.empty());
  EXPECT_EQ(check.row_count, 1u);
}

TEST(GpuSamplesCheck, BlankAndTornLinesAreMalformed) {
  const std::string row2 = "3,1001.5,1,node-a,0,GPU-aaa,100.25,,,\r\n";
  const auto blank_inside = check_text(kHeader + kRow + "\r\n" + row2);
  EXPECT_EQ(blank_inside.reason_codes, reasons({reason::kSamplesCsvMalformed}));
  EXPECT_EQ(blank_inside.row_count, 2u);
  const auto blank_after = check_text(kHeader + kRow + "\r\n");
  EXPECT_EQ(blank_after.reason_codes, reasons({reason::kSamplesCsvMalformed}));
  const auto torn = check_text(kHeader + kRow + "3,1001.5,1,node-a,0,GPU-aaa,100");
  EXPECT_EQ(torn.reason_codes, reasons({reason::kSamplesCsvMalformed}));
  EXPECT_EQ(torn.row_count, 1u);
  // LF line ends are read like CRLF.
  EXPECT_TRUE(check_text(std::string(kGpuHeaderV3) + "\n3,1,0,h,0,U,1,,,\n").reason_codes.empty());
}

TEST(GpuSamplesCheck, DuplicateKeyKeepsTheFirst) {
  const auto check = check_text(kHeader + "3,1000,0,node-a,0,GPU-first,1,,,\r\n" +
                                "3,1000.5,0,node-a,1,GPU-other,1,,,\r\n" +  // another GPU
                                "3,1001,0,node-a,0,GPU-second,1,,,\r\n");   // same key
  EXPECT_EQ(check.reason_codes, reasons({reason::kDuplicateSampleRow}));
  EXPECT_EQ(check.row_count, 2u);
  EXPECT_EQ(check.duplicate_rows, 1u);
  EXPECT_EQ(check.devices[0].gpu_uuids, std::vector<std::string>{"GPU-first"});
  EXPECT_EQ(check.devices[0].sample_times_unix, std::vector<double>{1000});
}

TEST(GpuSamplesCheck, TimestampsDecreasingInScrapeOrder) {
  const auto bad = check_text(kHeader + "3,1000,0,node-a,0,U,1,,,\r\n3,999,1,node-a,0,U,1,,,\r\n");
  EXPECT_EQ(bad.reason_codes, reasons({reason::kTimestampNonMonotonic}));
  // Equal times do not decrease; file order does not matter, scrape order does.
  EXPECT_TRUE(check_text(kHeader + "3,1000,0,node-a,0,U,1,,,\r\n3,1000,1,node-a,0,U,1,,,\r\n")
                  .reason_codes.empty());
  EXPECT_TRUE(check_text(kHeader + "3,1001,1,node-a,0,U,1,,,\r\n3,1000,0,node-a,0,U,1,,,\r\n")
                  .reason_codes.empty());
  // Devices are checked apart: another GPU's earlier time is no decrease.
  EXPECT_TRUE(check_text(kHeader + "3,1000,0,node-a,0,U,1,,,\r\n3,999,1,node-a,1,V,1,,,\r\n")
                  .reason_codes.empty());
}

TEST(GpuSamplesCheck, UuidsInScrapeOrder) {
  const auto check = check_text(
      kHeader +
      "3,1002,2,h,0,GPU-new,1,,,\r\n3,1000,0,h,0,GPU-old,1,,,\r\n3,1001,1,h,0,GPU-new,1,,,\r\n");
  EXPECT_TRUE(check.reason_codes.empty());
  EXPECT_EQ(check.devices[0].gpu_uuids, (std::vector<std::string>{"GPU-old", "GPU-new"}));
}

TEST(GpuSamplesCheck, ReasonsTogether) {
  const auto check = check_text(kHeader + "3,1000,0,h,0,U,1,,,\r\nbad\r\n3,1000,0,h,0,U,1,,,\r\n" +
                                "3,999,1,h,0,U,1,,,\r\n");
  EXPECT_EQ(check.reason_codes, reasons({reason::kSamplesCsvMalformed, reason::kDuplicateSampleRow,
                                         reason::kTimestampNonMonotonic}));
}

// ---- window files -----------------------------------------------------------------------

GpuWindowFile completed_window(double start = 1000.0, double end = 1020.0, double duration = 20.0) {
  GpuWindowFile w;
  w.benchmark_type = "sa-bench";
  w.result_path = "results/sa_c4.json";
  w.concurrency = 4;
  w.benchmark_start_time_unix = start;
  w.benchmark_end_time_unix = end;
  w.duration_s = duration;
  w.status = GpuWindowStatus::completed;
  return w;
}

TEST(GpuWindowStatus, Names) {
  for (auto s : {GpuWindowStatus::running, GpuWindowStatus::interrupted, GpuWindowStatus::completed,
                 GpuWindowStatus::failed}) {
    EXPECT_EQ(parse_gpu_window_status(gpu_window_status_name(s)), s);
  }
  EXPECT_FALSE(parse_gpu_window_status("complete"));
}

struct InvariantRow {
  GpuWindowStatus status;
  std::optional<double> end;
  std::optional<double> duration;
  std::optional<std::string> why;
  bool holds;
};

TEST(GpuWindowInvariants, Table) {
  const auto run = GpuWindowStatus::running;
  const auto intr = GpuWindowStatus::interrupted;
  const auto done = GpuWindowStatus::completed;
  const auto fail = GpuWindowStatus::failed;
  const std::string r = "killed";
  const std::vector<InvariantRow> rows = {
      {run, {}, {}, {}, true},         {run, 1020.0, {}, {}, false},
      {run, {}, 20.0, {}, false},      {run, {}, {}, r, false},
      {intr, {}, {}, r, true},         {intr, {}, {}, {}, false},
      {intr, {}, {}, "", false},       {intr, 1020.0, {}, r, false},
      {intr, {}, 20.0, r, false},      {done, 1020.0, 20.0, {}, true},
      {done, 1020.0, 20.0, r, false},  {done, {}, 20.0, {}, false},
      {done, 1020.0, {}, {}, false},   {done, 1020.0, 0.0, {}, false},
      {done, 1020.0, -1.0, {}, false}, {done, INFINITY, 20.0, {}, false},
      {done, 1020.0, NAN, {}, false},  {fail, 1020.0, 20.0, r, true},
      {fail, 1020.0, 20.0, {}, false}, {fail, 1020.0, 20.0, "", false},
      {fail, {}, 20.0, r, false},      {fail, 1020.0, 0.0, r, false},
  };
  for (std::size_t i = 0; i < rows.size(); ++i) {
    GpuWindowFile w = completed_window();
    w.status = rows[i].status;
    w.benchmark_end_time_unix = rows[i].end;
    w.duration_s = rows[i].duration;
    w.reason = rows[i].why;
    EXPECT_EQ(gpu_window_invariants_hold(w), rows[i].holds) << "row " << i;
    // The parser applies the same table to what it reads.
    const auto parsed = parse_gpu_window(gpu_window_json(w), "sa_c4");
    EXPECT_EQ(parsed.window.has_value(), rows[i].holds) << "row " << i;
    if (!rows[i].holds) {
      EXPECT_EQ(parsed.reason_codes, reasons({reason::kWindowMalformed})) << "row " << i;
    }
  }
}

TEST(GpuWindowFile, JsonKeysAndRoundTrip) {
  const GpuWindowFile w = completed_window(1000.25, 1020.5, 20.25);
  const auto doc = nlohmann::ordered_json::parse(gpu_window_json(w));
  std::vector<std::string> keys;
  for (const auto& [k, v] : doc.items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"schema_version", "benchmark_type", "result_path",
                                            "concurrency", "benchmark_start_time_unix",
                                            "benchmark_end_time_unix", "duration", "clock_source",
                                            "status", "reason"}));
  EXPECT_EQ(doc["schema_version"], 1);
  EXPECT_EQ(doc["clock_source"], "head_node_unix_clock");
  EXPECT_TRUE(doc["reason"].is_null());
  const auto parsed = parse_gpu_window(gpu_window_json(w), "sa_c4");
  ASSERT_TRUE(parsed.window);
  EXPECT_EQ(*parsed.window, w);
}

TEST(GpuWindowFile, RunningWithoutOptionalKeys) {
  const auto parsed = parse_gpu_window(
      R"({"schema_version":1,"benchmark_type":"sa-bench","result_path":"sa_c4.json",)"
      R"("concurrency":4,"benchmark_start_time_unix":1000,"clock_source":"head_node_unix_clock",)"
      R"("status":"running"})",
      "sa_c4");
  ASSERT_TRUE(parsed.window);
  EXPECT_EQ(parsed.window->status, GpuWindowStatus::running);
  EXPECT_EQ(parsed.window->benchmark_start_time_unix, 1000.0);
}

TEST(GpuWindowFile, WriteIsAtomicAndReadable) {
  TempDir dir;
  const GpuWindowFile w = completed_window();
  ASSERT_TRUE(write_gpu_window(dir.file("sa_c4.json"), w).ok());
  EXPECT_EQ(slurp(dir.file("sa_c4.json")), gpu_window_json(w));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1);
  EXPECT_FALSE(write_gpu_window(dir.file("absent/sa_c4.json"), w).ok());
}

// `key: value` spliced into a valid completed window's JSON (replacing the key).
std::string window_with(const std::string& key, const nlohmann::json& value) {
  auto doc = nlohmann::json::parse(gpu_window_json(completed_window()));
  if (value.is_discarded()) {
    doc.erase(key);
  } else {
    doc[key] = value;
  }
  return doc.dump();
}

TEST(GpuWindowFile, MalformedFields) {
  using J = nlohmann::json;
  const J absent = J(J::value_t::discarded);
  const std::vector<std::pair<std::string, J>> bad = {
      {"schema_version", 2},
      {"schema_version", 1.0},
      {"schema_version", "1"},
      {"schema_version", true},
      {"schema_version", absent},
      {"clock_source", "local"},
      {"clock_source", absent},
      {"status", "complete"},
      {"status", absent},
      {"benchmark_type", 4},
      {"benchmark_type", absent},
      {"concurrency", true},
      {"concurrency", 4.0},
      {"concurrency", "4"},
      {"concurrency", absent},
      {"benchmark_start_time_unix", "x"},
      {"benchmark_start_time_unix", false},
      {"benchmark_start_time_unix", absent},
      {"reason", 5},
  };
  for (const auto& [key, value] : bad) {
    const auto parsed = parse_gpu_window(window_with(key, value), "sa_c4");
    EXPECT_FALSE(parsed.window) << key << "=" << value.dump();
    EXPECT_EQ(parsed.reason_codes, reasons({reason::kWindowMalformed}))
        << key << "=" << value.dump();
  }
  for (const std::string text : {"", "[]", "{", "null", "{\"a\":NaN}"}) {
    EXPECT_EQ(parse_gpu_window(text, "sa_c4").reason_codes, reasons({reason::kWindowMalformed}));
  }
  EXPECT_TRUE(parse_gpu_window(window_with("concurrency", -3), "sa_c4").window);  // an integer
}

TEST(GpuWindowFile, ResultPathInvalid) {
  for (const nlohmann::json& path :
       {nlohmann::json(5), nlohmann::json(nullptr), nlohmann::json("/abs/sa_c4.json"),
        nlohmann::json("../sa_c4.json"), nlohmann::json("a/../sa_c4.json"),
        nlohmann::json("~/sa_c4.json"), nlohmann::json(""), nlohmann::json("."),
        nlohmann::json("results/sa_c8.json"), nlohmann::json("results/sa_c4.json/")}) {
    const auto parsed = parse_gpu_window(window_with("result_path", path), "sa_c4");
    if (path == "results/sa_c4.json/") {
      EXPECT_TRUE(parsed.window);  // a trailing slash names the same last component
      continue;
    }
    EXPECT_EQ(parsed.reason_codes, reasons({reason::kWindowResultPathInvalid})) << path.dump();
  }
  // The lexical checks come before the status table.
  auto doc = nlohmann::json::parse(window_with("result_path", "/abs/sa_c4.json"));
  doc["reason"] = "not allowed when completed";
  EXPECT_EQ(parse_gpu_window(doc.dump(), "sa_c4").reason_codes,
            reasons({reason::kWindowResultPathInvalid}));
}

TEST(GpuWindowPaths, SafeRelativeAndPythonStems) {
  EXPECT_TRUE(is_safe_relative_subpath("a.json"));
  EXPECT_TRUE(is_safe_relative_subpath("a/./b.json"));
  EXPECT_TRUE(is_safe_relative_subpath("a//b.json"));
  EXPECT_FALSE(is_safe_relative_subpath(""));
  EXPECT_FALSE(is_safe_relative_subpath("./"));
  EXPECT_FALSE(is_safe_relative_subpath("/a.json"));
  EXPECT_FALSE(is_safe_relative_subpath("~a.json"));
  EXPECT_FALSE(is_safe_relative_subpath("a/../b.json"));
  EXPECT_FALSE(is_safe_relative_subpath(std::string_view("a\0b", 3)));
  EXPECT_EQ(python_path_stem("results/sa_c4.json"), "sa_c4");
  EXPECT_EQ(python_path_stem("a.tar.gz"), "a.tar");
  EXPECT_EQ(python_path_stem(".json"), ".json");
  EXPECT_EQ(python_path_stem("name."), "name.");
  EXPECT_EQ(python_path_suffix("x.json"), ".json");
  EXPECT_EQ(python_path_suffix(".json"), "");
  EXPECT_EQ(python_path_suffix("x"), "");
}

// ---- a completed window against its result ----------------------------------------------

GpuWindowResult result_of(const GpuWindowFile& w) {
  return {true, true, w.benchmark_start_time_unix, w.benchmark_end_time_unix, w.duration_s};
}

TEST(GpuWindowResult, MatchingResultPasses) {
  const auto w = completed_window();
  EXPECT_TRUE(gpu_window_result_reasons(w, result_of(w)).empty());
}

TEST(GpuWindowResult, MissingOrMismatched) {
  const auto w = completed_window();
  EXPECT_EQ(gpu_window_result_reasons(w, {}), reasons({reason::kWindowResultMissing}));
  GpuWindowResult array{true, false, {}, {}, {}};
  EXPECT_EQ(gpu_window_result_reasons(w, array), reasons({reason::kWindowResultMismatch}));
  for (int field = 0; field < 3; ++field) {
    auto r = result_of(w);
    auto& value = field == 0 ? r.start_time_unix : field == 1 ? r.end_time_unix : r.duration_s;
    *value += 0.001;
    EXPECT_EQ(gpu_window_result_reasons(w, r), reasons({reason::kWindowResultMismatch})) << field;
    value.reset();
    EXPECT_EQ(gpu_window_result_reasons(w, r), reasons({reason::kWindowResultMismatch})) << field;
  }
}

TEST(GpuWindowResult, ClockTolerance) {
  // max(0.5 s, 1% of 20 s) = 0.5 s of disagreement between wall span and duration.
  for (const auto& [duration, ok] : {std::pair{19.5, true}, std::pair{19.49, false},
                                     std::pair{20.5, true}, std::pair{20.51, false}}) {
    const auto w = completed_window(1000.0, 1020.0, duration);
    EXPECT_EQ(gpu_window_result_reasons(w, result_of(w)).empty(), ok) << duration;
    if (!ok) {
      EXPECT_EQ(gpu_window_result_reasons(w, result_of(w)),
                reasons({reason::kWindowClockMismatch}));
    }
  }
  // 1% of 100 s = 1 s.
  EXPECT_TRUE(gpu_window_result_reasons(completed_window(0, 101, 100),
                                        result_of(completed_window(0, 101, 100)))
                  .empty());
  const auto far = completed_window(0, 101.01, 100);
  EXPECT_EQ(gpu_window_result_reasons(far, result_of(far)),
            reasons({reason::kWindowClockMismatch}));
  // No wall span at all.
  const auto backwards = completed_window(1000, 999, 0.4);
  EXPECT_EQ(gpu_window_result_reasons(backwards, result_of(backwards)),
            reasons({reason::kWindowClockMismatch}));
}

// ---- coverage ---------------------------------------------------------------------------

struct Coverage {
  std::vector<GpuExpectedDevice> want{expected("node-b", 0), expected("node-a", 1)};
  std::vector<GpuObservedDevice> have;
  std::optional<double> interval_s = 1.0;
  Coverage() {
    std::vector<double> every_second;
    for (int t = 990; t <= 1030; ++t) every_second.push_back(t);
    have = {observed("node-a", 1, {"GPU-a1"}, every_second),
            observed("node-b", 0, {"GPU-b0"}, every_second)};
  }
  GpuWindowCoverage check(double start, double end) const {
    return gpu_window_coverage(start, end, GpuCoverageInputs{want, have, interval_s});
  }
};

TEST(GpuCoverage, BracketedWithGapsPerDevice) {
  const auto c = Coverage{}.check(1000.5, 1020.5);
  EXPECT_TRUE(c.reason_codes.empty());
  using Gaps = std::vector<std::pair<std::string, double>>;
  EXPECT_EQ(c.per_device_max_sample_gap_seconds,
            (Gaps{{"node-a/GPU-a1", 1.0}, {"node-b/GPU-b0", 1.0}}));  // key order
}

TEST(GpuCoverage, NotBracketed) {
  Coverage c;
  c.have[0] = observed("node-a", 1, {"GPU-a1"}, {1001, 1002, 1003, 1010, 1020, 1021});
  EXPECT_EQ(c.check(1000.5, 1020.5).reason_codes, reasons({reason::kWindowNotBracketed}));
  c.have[0] = observed("node-a", 1, {"GPU-a1"}, {1000, 1001, 1002, 1003, 1004});
  EXPECT_TRUE(c.check(1000.5, 1003.5).reason_codes.empty());
  EXPECT_EQ(c.check(1000.5, 1005).reason_codes, reasons({reason::kWindowNotBracketed}));
  EXPECT_EQ(c.check(999.5, 1003).reason_codes, reasons({reason::kWindowNotBracketed}));
  c.have.erase(c.have.begin());
  const auto missing = c.check(1000.5, 1003.5);
  EXPECT_EQ(missing.reason_codes, reasons({reason::kWindowNotBracketed}));
  EXPECT_EQ(missing.per_device_max_sample_gap_seconds.size(), 1u);  // node-b only
}

TEST(GpuCoverage, SamplesOnTheEdgesBracket) {
  Coverage c;
  c.have[0] = observed("node-a", 1, {"GPU-a1"}, {1000, 1001, 1002, 1003});
  c.have[1] = c.have[0];
  c.have[1].hostname = "node-b";
  c.have[1].gpu_index = 0;
  c.have[1].gpu_uuids = {"GPU-b0"};
  EXPECT_TRUE(c.check(1000, 1003).reason_codes.empty());
  EXPECT_TRUE(c.check(1001, 1001).reason_codes.empty());  // one sample is both brackets
}

TEST(GpuCoverage, GapOfExactlyThreeSecondsPasses) {
  Coverage c;
  c.interval_s = 3.0;
  c.have[0] = observed("node-a", 1, {"GPU-a1"}, {994, 997, 1000, 1003, 1006});
  c.have[1] = observed("node-b", 0, {"GPU-b0"}, {994, 997, 1000, 1003.0001, 1006});
  Coverage only_a = c;
  only_a.want = {expected("node-a", 1)};
  const auto a = only_a.check(999, 1004);
  EXPECT_TRUE(a.reason_codes.empty());
  EXPECT_EQ(a.per_device_max_sample_gap_seconds.front().second, 3.0);
  Coverage only_b = c;
  only_b.want = {expected("node-b", 0)};
  const auto b = only_b.check(999, 1004);
  EXPECT_EQ(b.reason_codes, reasons({reason::kSampleGapExceeded}));
  EXPECT_GT(b.per_device_max_sample_gap_seconds.front().second, common::kMaxSampleGapS);
  EXPECT_EQ(common::kMaxSampleGapS, 3.0);
}

TEST(GpuCoverage, UuidChangedDevice) {
  Coverage c;
  c.have[1].gpu_uuids.push_back("GPU-b0-again");
  const auto r = c.check(1000.5, 1020.5);
  EXPECT_EQ(r.reason_codes, reasons({reason::kGpuUuidChanged}));
  EXPECT_EQ(r.per_device_max_sample_gap_seconds.size(), 1u);
}

TEST(GpuCoverage, SampleLoss) {
  // 1 s cadence over a 20 s bracket: 20 intervals expected.
  std::vector<double> times;
  for (int t = 1000; t <= 1020; ++t) times.push_back(t);
  Coverage c;
  c.want = {expected("node-a", 1)};
  const auto without = [&](std::vector<double> drop) {
    std::vector<double> kept;
    for (double t : times) {
      if (std::find(drop.begin(), drop.end(), t) == drop.end()) kept.push_back(t);
    }
    c.have = {observed("node-a", 1, {"GPU-a1"}, kept)};
    return c.check(1000, 1020).reason_codes;
  };
  EXPECT_TRUE(without({}).empty());
  EXPECT_TRUE(without({1010}).empty());  // 1 of 20 missing: 5%, not more
  EXPECT_EQ(without({1010, 1011}), reasons({reason::kSampleLossExceeded}));  // gap 3 s passes
  EXPECT_EQ(without({1005, 1015}), reasons({reason::kSampleLossExceeded}));
  // A row written twice counts once.
  c.have = {observed("node-a", 1, {"GPU-a1"}, times)};
  c.have[0].sample_times_unix.insert(c.have[0].sample_times_unix.begin() + 5, 1004.0);
  EXPECT_TRUE(c.check(1000, 1020).reason_codes.empty());
  // A cadence of 2 s against a recorded 1 s.
  std::vector<double> sparse;
  for (int t = 1000; t <= 1020; t += 2) sparse.push_back(t);
  c.have = {observed("node-a", 1, {"GPU-a1"}, sparse)};
  EXPECT_EQ(c.check(1000, 1020).reason_codes, reasons({reason::kSampleLossExceeded}));
  c.interval_s = 2.0;
  EXPECT_TRUE(c.check(1000, 1020).reason_codes.empty());
  // Without a usable interval the rule fails.
  for (auto bad :
       {std::optional<double>{}, std::optional<double>{0.0}, std::optional<double>{NAN}}) {
    c.interval_s = bad;
    EXPECT_EQ(c.check(1000, 1020).reason_codes, reasons({reason::kSampleLossExceeded}));
  }
}

// ---- one window's validation ------------------------------------------------------------

TEST(GpuWindowValidation, MissingAndDuplicate) {
  const Coverage c;
  const GpuCoverageInputs in{c.want, c.have, c.interval_s};
  const GpuWindowKey key{"sa-bench", 4};
  const auto missing = validate_gpu_window(key, nullptr, false, {}, in);
  EXPECT_EQ(missing.reason_codes, reasons({reason::kWindowMissing}));
  EXPECT_FALSE(missing.window_file);
  EXPECT_FALSE(missing.power_coverage_valid);
  EXPECT_EQ(missing.benchmark_type, "sa-bench");
  EXPECT_EQ(missing.concurrency, 4);
  EXPECT_EQ(validate_gpu_window(key, nullptr, true, {}, in).reason_codes,
            reasons({reason::kWindowDuplicate}));
}

TEST(GpuWindowValidation, NotCompletedIsIncomplete) {
  const Coverage c;
  const GpuCoverageInputs in{c.want, c.have, c.interval_s};
  for (auto status :
       {GpuWindowStatus::running, GpuWindowStatus::interrupted, GpuWindowStatus::failed}) {
    GpuScannedWindow found{"windows/sa_c4.json", completed_window()};
    found.window.status = status;
    const auto v = validate_gpu_window({"sa-bench", 4}, &found, false, {}, in);
    EXPECT_EQ(v.reason_codes, reasons({reason::kWindowIncomplete}));
    EXPECT_EQ(v.window_file, "windows/sa_c4.json");
  }
}

TEST(GpuWindowValidation, CompletedChecksResultThenCoverage) {
  Coverage c;
  const GpuCoverageInputs in{c.want, c.have, c.interval_s};
  const GpuScannedWindow found{"windows/sa_c4.json", completed_window(1000.5, 1020.5, 20)};
  const auto good =
      validate_gpu_window({"sa-bench", 4}, &found, false, result_of(found.window), in);
  EXPECT_TRUE(good.power_coverage_valid);
  EXPECT_TRUE(good.reason_codes.empty());
  EXPECT_EQ(good.per_device_max_sample_gap_seconds.size(), 2u);
  const auto no_result = validate_gpu_window({"sa-bench", 4}, &found, false, {}, in);
  EXPECT_EQ(no_result.reason_codes, reasons({reason::kWindowResultMissing}));
  EXPECT_TRUE(no_result.per_device_max_sample_gap_seconds.empty());  // coverage not looked at
  c.have.pop_back();
  const GpuCoverageInputs short_in{c.want, c.have, c.interval_s};
  const auto uncovered =
      validate_gpu_window({"sa-bench", 4}, &found, false, result_of(found.window), short_in);
  EXPECT_EQ(uncovered.reason_codes, reasons({reason::kWindowNotBracketed}));
  EXPECT_FALSE(uncovered.power_coverage_valid);
}

// ---- the windows directory --------------------------------------------------------------

class WindowsDir : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(power_dir() + "/windows");
    fs::create_directories(log_dir() + "/results");
  }
  std::string log_dir() const { return dir_.path(); }
  std::string power_dir() const { return dir_.file("power"); }
  std::string windows(const std::string& name) const { return power_dir() + "/windows/" + name; }

  // A completed window `stem` for (sa-bench, concurrency) and its result under results/.
  void add_window(const std::string& stem, long long concurrency, bool with_result = true) {
    GpuWindowFile w = completed_window(1000.5, 1020.5, 20);
    w.concurrency = concurrency;
    w.result_path = "results/" + stem + ".json";
    ASSERT_TRUE(write_gpu_window(windows(stem + ".json"), w).ok());
    if (with_result) {
      spit(log_dir() + "/" + w.result_path,
           R"({"benchmark_start_time_unix": 1000.5, "benchmark_end_time_unix": 1020.5,)"
           R"( "duration": 20, "other": [1, 2]})");
    }
  }

  std::vector<GpuWindowValidation> audit(std::vector<GpuWindowKey> expected_windows,
                                         std::vector<GpuArtifactError>& errors) const {
    return validate_gpu_windows(power_dir(), log_dir(), expected_windows,
                                GpuCoverageInputs{coverage_.want, coverage_.have, 1.0}, errors);
  }

  TempDir dir_;
  Coverage coverage_;
};

TEST_F(WindowsDir, AllExpectedWindowsValid) {
  add_window("sa_c4", 4);
  add_window("sa_c8", 8);
  std::vector<GpuArtifactError> errors;
  const auto v = audit({{"sa-bench", 8}, {"sa-bench", 4}}, errors);
  EXPECT_TRUE(errors.empty());
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].concurrency, 8);  // expected order
  EXPECT_EQ(v[0].window_file, "windows/sa_c8.json");
  EXPECT_TRUE(v[0].power_coverage_valid);
  EXPECT_TRUE(v[1].power_coverage_valid);
}

TEST_F(WindowsDir, NoWindowsDirectory) {
  fs::remove_all(power_dir() + "/windows");
  std::vector<GpuArtifactError> errors;
  const auto v = audit({{"sa-bench", 4}}, errors);
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ(v[0].reason_codes, reasons({reason::kWindowMissing}));
}

TEST_F(WindowsDir, ResultMissing) {
  add_window("sa_c4", 4, false);
  std::vector<GpuArtifactError> errors;
  EXPECT_EQ(audit({{"sa-bench", 4}}, errors)[0].reason_codes,
            reasons({reason::kWindowResultMissing}));
  spit(log_dir() + "/results/sa_c4.json", "[1, 2]");
  EXPECT_EQ(audit({{"sa-bench", 4}}, errors)[0].reason_codes,
            reasons({reason::kWindowResultMismatch}));
  spit(log_dir() + "/results/sa_c4.json", "{not json");
  EXPECT_EQ(audit({{"sa-bench", 4}}, errors)[0].reason_codes,
            reasons({reason::kWindowResultMissing}));
}

// An aiperf window points at a result derived from aiperf's files; its numbers round-trip
// exactly through the JSON, so the window check passes, and a derived file edited after
// the fact is caught like any result that disagrees with its window.
TEST_F(WindowsDir, DerivedResultRoundTripsExactly) {
  DerivedWindowResult r;
  r.benchmark_type = "aiperf";
  r.concurrency = 8;
  r.start_unix = 1000.1234567890123;
  r.end_unix = 1020.9876543210987;
  r.duration_s = 20.864197532109376;
  r.derived_from = "conc_8/aiperf_artifacts/profile_export.jsonl";
  r.derivation = "test";
  const std::string result_path = "power/aiperf/aiperf_conc_8.json";
  ASSERT_TRUE(write_derived_window_result(log_dir() + "/" + result_path, r).ok());
  GpuWindowFile w = completed_window(r.start_unix, r.end_unix, r.duration_s);
  w.benchmark_type = "aiperf";
  w.concurrency = 8;
  w.result_path = result_path;
  ASSERT_TRUE(write_gpu_window(windows("aiperf_conc_8.json"), w).ok());
  const auto read = read_gpu_window_result(log_dir() + "/" + result_path);
  EXPECT_EQ(read.start_time_unix, r.start_unix);
  EXPECT_EQ(read.end_time_unix, r.end_unix);
  EXPECT_EQ(read.duration_s, r.duration_s);
  std::vector<GpuArtifactError> errors;
  EXPECT_TRUE(audit({{"aiperf", 8}}, errors)[0].power_coverage_valid);
  EXPECT_TRUE(errors.empty());
  r.duration_s += 1e-9;
  ASSERT_TRUE(write_derived_window_result(log_dir() + "/" + result_path, r).ok());
  EXPECT_EQ(audit({{"aiperf", 8}}, errors)[0].reason_codes,
            reasons({reason::kWindowResultMismatch}));
}

TEST_F(WindowsDir, UnusableEntriesAreArtifactErrors) {
  add_window("sa_c4", 4);
  spit(windows("notes.txt"), "{}");
  spit(windows("broken.json"), "{");
  fs::create_directory(windows("sub.json"));
  fs::create_symlink(windows("sa_c4.json"), windows("link.json"));
  std::vector<GpuArtifactError> errors;
  const auto v = audit({{"sa-bench", 4}}, errors);
  EXPECT_TRUE(v[0].power_coverage_valid);
  const std::vector<GpuArtifactError> want = {
      {"windows/broken.json", reasons({reason::kWindowMalformed})},
      {"windows/link.json", reasons({reason::kWindowArtifactPathInvalid})},
      {"windows/notes.txt", reasons({reason::kWindowArtifactPathInvalid})},
      {"windows/sub.json", reasons({reason::kWindowArtifactPathInvalid})},
  };
  EXPECT_EQ(errors, want);
}

TEST_F(WindowsDir, DuplicateKeyInvalidatesEveryCopy) {
  add_window("sa_c4", 4);
  add_window("sa_c4_again", 4);
  add_window("sa_c4_third", 4);
  std::vector<GpuArtifactError> errors;
  const auto v = audit({{"sa-bench", 4}}, errors);
  EXPECT_EQ(v[0].reason_codes, reasons({reason::kWindowDuplicate}));
  EXPECT_FALSE(v[0].window_file);
  const std::vector<GpuArtifactError> want = {
      {"windows/sa_c4.json", reasons({reason::kWindowDuplicate})},
      {"windows/sa_c4_again.json", reasons({reason::kWindowDuplicate})},
      {"windows/sa_c4_third.json", reasons({reason::kWindowDuplicate})},
  };
  EXPECT_EQ(errors, want);
}

TEST_F(WindowsDir, UnexpectedWindow) {
  add_window("sa_c4", 4);
  add_window("sa_c16", 16);
  std::vector<GpuArtifactError> errors;
  const auto v = audit({{"sa-bench", 4}}, errors);
  EXPECT_TRUE(v[0].power_coverage_valid);
  EXPECT_EQ(errors, (std::vector<GpuArtifactError>{
                        {"windows/sa_c16.json", reasons({reason::kWindowUnexpected})}}));
}

TEST_F(WindowsDir, WindowsDirectoryOutsideThePowerDirectory) {
  add_window("sa_c4", 4);
  fs::rename(power_dir() + "/windows", log_dir() + "/elsewhere");
  fs::create_directory_symlink(log_dir() + "/elsewhere", power_dir() + "/windows");
  std::vector<GpuArtifactError> errors;
  const auto v = audit({{"sa-bench", 4}}, errors);
  EXPECT_EQ(v[0].reason_codes, reasons({reason::kWindowMissing}));
  EXPECT_EQ(
      errors,
      (std::vector<GpuArtifactError>{{"windows", reasons({reason::kWindowArtifactPathInvalid})}}));
}

TEST_F(WindowsDir, ResultPathThroughASymlinkOutsideTheLogDirectory) {
  TempDir outside;
  fs::create_directory_symlink(outside.path(), log_dir() + "/escape");
  GpuWindowFile w = completed_window(1000.5, 1020.5, 20);
  w.result_path = "escape/sa_c4.json";
  ASSERT_TRUE(write_gpu_window(windows("sa_c4.json"), w).ok());
  std::vector<GpuArtifactError> errors;
  const auto v = audit({{"sa-bench", 4}}, errors);
  EXPECT_EQ(v[0].reason_codes, reasons({reason::kWindowMissing}));
  EXPECT_EQ(errors, (std::vector<GpuArtifactError>{
                        {"windows/sa_c4.json", reasons({reason::kWindowResultPathInvalid})}}));
}

TEST_F(WindowsDir, ResultStemMustMatchTheWindowFile) {
  add_window("sa_c4", 4);
  fs::rename(windows("sa_c4.json"), windows("renamed.json"));
  std::vector<GpuArtifactError> errors;
  audit({{"sa-bench", 4}}, errors);
  EXPECT_EQ(errors, (std::vector<GpuArtifactError>{
                        {"windows/renamed.json", reasons({reason::kWindowResultPathInvalid})}}));
}

// ---- manifest.json ----------------------------------------------------------------------

GpuManifest full_manifest() {
  GpuManifest m;
  m.producer_version = "0.1.0";
  m.producer_git_commit = std::string(40, 'a');
  m.job_id = "12345";
  m.run_name = "run";
  m.sample_interval_seconds = 1.0;
  m.request_timeout_seconds = 2.0;
  m.max_scrape_duration_seconds = 0.25;
  m.required = true;
  m.started_at_unix = 990.0;
  m.stopped_at_unix = 1040.0;
  m.status = GpuRunStatus::complete;
  m.publication_valid = true;
  m.dcgm_exporter = {"/images/dcgm.sqsh", std::string(64, 'b'), 9401, "dcgm-exporter -f x"};
  m.expected_devices = {expected("node-a", 0, {{"prefill", 0, 0, std::nullopt}}),
                        expected("node-b", 0, {{"decode", 1, 0, 2}})};
  m.observed_devices = {observed("node-a", 0, {"GPU-a0"}, {995, 1030}),
                        observed("node-b", 0, {"GPU-b0"}, {995.5, 1030.5})};
  for (auto& d : m.observed_devices) d.sample_times_unix.clear();  // not in the manifest
  m.expected_windows = {{"sa-bench", 4}};
  m.scrape_count = 36;
  m.sample_row_count = 72;
  m.samples_sha256 = std::string(64, 'c');
  GpuWindowValidation v;
  v.benchmark_type = "sa-bench";
  v.concurrency = 4;
  v.window_file = "windows/sa_c4.json";
  v.power_coverage_valid = true;
  v.per_device_max_sample_gap_seconds = {{"node-a/GPU-a0", 1.25}, {"node-b/GPU-b0", 1.0}};
  m.window_validations = {v};
  m.artifact_errors = {};
  m.clock_sync_failures = {"node-c"};
  m.reason_codes = reasons({reason::kEndpointTimeout});
  m.clock_sync_check =
      ClockSyncCheck{1,
                     0.05,
                     {{"node-a", "yes", 1.25e-05, "chronyc", "clock_sync_node-a.out"},
                      {"node-c", "no", std::nullopt, "ntp_adjtime", "clock_sync_node-c.out"}}};
  return m;
}

std::vector<std::string> keys_of(const nlohmann::ordered_json& obj) {
  std::vector<std::string> out;
  for (const auto& [k, v] : obj.items()) out.push_back(k);
  return out;
}

TEST(GpuManifest, EveryKeyInOrder) {
  GpuManifest m = full_manifest();
  m.artifact_errors = {{"windows/x.txt", reasons({reason::kWindowArtifactPathInvalid})}};
  const auto doc = nlohmann::ordered_json::parse(gpu_manifest_json(m));
  EXPECT_EQ(keys_of(doc), (std::vector<std::string>{"schema_version",
                                                    "producer",
                                                    "producer_version",
                                                    "producer_git_commit",
                                                    "source_metric",
                                                    "unit",
                                                    "power_scope",
                                                    "samples_schema_version",
                                                    "utilization_metrics",
                                                    "timestamp_source",
                                                    "job_id",
                                                    "run_name",
                                                    "sample_interval_seconds",
                                                    "request_timeout_seconds",
                                                    "max_scrape_duration_seconds",
                                                    "required",
                                                    "started_at_unix",
                                                    "stopped_at_unix",
                                                    "status",
                                                    "publication_valid",
                                                    "dcgm_exporter",
                                                    "expected_devices",
                                                    "observed_devices",
                                                    "expected_windows",
                                                    "scrape_count",
                                                    "sample_row_count",
                                                    "samples_sha256",
                                                    "window_validations",
                                                    "artifact_errors",
                                                    "clock_sync_failures",
                                                    "reason_codes",
                                                    "clock_sync_check"}));
  EXPECT_EQ(keys_of(doc["utilization_metrics"][0]),
            (std::vector<std::string>{"column", "source_metric", "unit"}));
  EXPECT_EQ(keys_of(doc["dcgm_exporter"]),
            (std::vector<std::string>{"container_image_resolved", "container_image_sha256", "port",
                                      "command"}));
  EXPECT_EQ(keys_of(doc["expected_devices"][0]),
            (std::vector<std::string>{"hostname", "gpu_index", "assignments"}));
  EXPECT_EQ(
      keys_of(doc["expected_devices"][0]["assignments"][0]),
      (std::vector<std::string>{"worker_role", "worker_index", "worker_process", "het_group"}));
  EXPECT_EQ(keys_of(doc["observed_devices"][0]),
            (std::vector<std::string>{"hostname", "gpu_index", "gpu_uuids",
                                      "first_sample_time_unix", "last_sample_time_unix"}));
  EXPECT_EQ(keys_of(doc["expected_windows"][0]),
            (std::vector<std::string>{"benchmark_type", "concurrency"}));
  EXPECT_EQ(keys_of(doc["window_validations"][0]),
            (std::vector<std::string>{"benchmark_type", "concurrency", "window_file",
                                      "power_coverage_valid", "reason_codes",
                                      "per_device_max_sample_gap_seconds"}));
  EXPECT_EQ(keys_of(doc["window_validations"][0]["per_device_max_sample_gap_seconds"]),
            (std::vector<std::string>{"node-a/GPU-a0", "node-b/GPU-b0"}));
  EXPECT_EQ(keys_of(doc["artifact_errors"][0]), (std::vector<std::string>{"path", "reason_codes"}));
}

TEST(GpuManifest, ContractValues) {
  const auto doc = nlohmann::ordered_json::parse(gpu_manifest_json(GpuManifest{}));
  EXPECT_EQ(doc["schema_version"], 1);
  EXPECT_EQ(doc["producer"], "srt-slurm.dcgm-power");
  EXPECT_FALSE(doc["producer_version"].get<std::string>().empty());
  EXPECT_EQ(doc["source_metric"], "DCGM_FI_DEV_POWER_USAGE");
  EXPECT_EQ(doc["unit"], "W");
  EXPECT_EQ(doc["power_scope"], "gpu_device_board_as_reported_by_dcgm");
  EXPECT_EQ(doc["samples_schema_version"], 3);
  EXPECT_EQ(
      doc["utilization_metrics"],
      nlohmann::ordered_json::parse(
          R"([{"column":"gpu_util_pct","source_metric":"DCGM_FI_DEV_GPU_UTIL","unit":"percent"},)"
          R"({"column":"sm_active","source_metric":"DCGM_FI_PROF_SM_ACTIVE","unit":"fraction"}])"));
  EXPECT_EQ(doc["timestamp_source"], "head_node_unix_clock");
  EXPECT_EQ(doc["status"], "starting");
  // Unset values are null.
  for (const char* key : {"producer_git_commit", "max_scrape_duration_seconds", "stopped_at_unix",
                          "publication_valid", "samples_sha256", "clock_sync_check"}) {
    EXPECT_TRUE(doc[key].is_null()) << key;
  }
  EXPECT_TRUE(doc["dcgm_exporter"]["container_image_sha256"].is_null());
  EXPECT_TRUE(gpu_utilization_metrics(1).empty());
  EXPECT_EQ(gpu_utilization_metrics(2).size(), 2u);
}

TEST(GpuManifest, WriteReadRoundTrip) {
  TempDir dir;
  const GpuManifest m = full_manifest();
  ASSERT_TRUE(write_gpu_manifest(dir.file("manifest.json"), m).ok());
  const std::string text = slurp(dir.file("manifest.json"));
  EXPECT_EQ(text, gpu_manifest_json(m));
  EXPECT_EQ(text.back(), '\n');
  EXPECT_EQ(text.substr(0, 4), "{\n  ");  // 2-space indent
  const auto back = read_gpu_manifest(dir.file("manifest.json"));
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(*back, m);
  EXPECT_FALSE(read_gpu_manifest(dir.file("absent.json")).ok());
}

TEST(GpuManifest, ReaderNamesTheBadKey) {
  const auto with = [](const std::string& pointer, const nlohmann::json& value) {
    auto doc = nlohmann::json::parse(gpu_manifest_json(full_manifest()));
    if (value.is_discarded()) {
      doc.erase(pointer);
    } else {
      doc[nlohmann::json::json_pointer(pointer)] = value;
    }
    return parse_gpu_manifest(doc.dump());
  };
  const nlohmann::json absent(nlohmann::json::value_t::discarded);
  EXPECT_EQ(with("status", absent).error(), "status: missing");
  EXPECT_EQ(with("/status", "done").error(), "status: not a known status");
  EXPECT_EQ(with("/required", 1).error(), "required: not a boolean");
  EXPECT_EQ(with("/scrape_count", -1).error(), "scrape_count: not an integer >= 0");
  EXPECT_EQ(with("/sample_interval_seconds", "1").error(),
            "sample_interval_seconds: not a finite number");
  EXPECT_EQ(with("/expected_devices/0/gpu_index", 0.5).error(),
            "expected_devices[0].gpu_index: not an integer");
  EXPECT_EQ(with("/expected_devices/1/assignments/0/het_group", "2").error(),
            "expected_devices[1].assignments[0].het_group: not an integer");
  EXPECT_EQ(with("/reason_codes/0", 5).error(), "reason_codes: not an array of strings");
  EXPECT_EQ(with("/publication_valid", "yes").error(), "publication_valid: not a boolean or null");
  EXPECT_EQ(
      with("/window_validations/0/per_device_max_sample_gap_seconds/node-a~1GPU-a0", "x").error(),
      "window_validations[0].per_device_max_sample_gap_seconds.node-a/GPU-a0: not a finite "
      "number");
  EXPECT_TRUE(with("/publication_valid", nullptr).ok());
  EXPECT_TRUE(with("/extra_key", 1).ok());
  // clock_sync_check is ours, not the reference's: absent or null reads as none.
  EXPECT_FALSE(with("clock_sync_check", absent)->clock_sync_check);
  EXPECT_FALSE(with("/clock_sync_check", nullptr)->clock_sync_check);
  EXPECT_EQ(with("/clock_sync_check/nodes/1/synchronized", "maybe").error(),
            "clock_sync_check.nodes[1].synchronized: not yes, no or unknown");
  EXPECT_EQ(with("/clock_sync_check/nodes/0/offset_seconds", "0.1").error(),
            "clock_sync_check.nodes[0].offset_seconds: not a finite number");
  EXPECT_EQ(parse_gpu_manifest("[]").error(), "not a JSON object");
  EXPECT_EQ(parse_gpu_manifest("{").error(), "not JSON");
}

TEST(GpuManifest, PublicationRecomputedFromTheManifest) {
  const GpuManifest m = full_manifest();
  EXPECT_TRUE(gpu_manifest_publication(m, nullptr).valid);
  const GpuReasons samples = reasons({reason::kSamplesCsvMalformed});
  EXPECT_EQ(gpu_manifest_publication(m, &samples).failed_rules,
            std::vector<std::string_view>{rule::kSamplesReasons});
  GpuManifest incomplete = m;
  incomplete.status = GpuRunStatus::incomplete;
  EXPECT_FALSE(gpu_manifest_publication(incomplete, nullptr).valid);
}

// ---- the pieces together ----------------------------------------------------------------

TEST(GpuPackage, SamplesWindowsAndManifestFromFiles) {
  TempDir dir;
  const std::string power = dir.file("power");
  fs::create_directories(power + "/windows");
  fs::create_directories(dir.file("results"));
  // Two GPUs on two hosts, 1 s scrapes from 995 to 1030.
  std::string text = kHeader;
  for (int seq = 0; seq <= 35; ++seq) {
    text += format_gpu_v3_row(sample(seq, "node-a", 0, "GPU-a0", 995.0 + seq));
    text += format_gpu_v3_row(sample(seq, "node-b", 0, "GPU-b0", 995.25 + seq));
  }
  spit(power + "/samples.csv", text);
  GpuWindowFile w = completed_window(1000.5, 1020.5, 20);
  w.result_path = "results/sa_c4.json";
  ASSERT_TRUE(write_gpu_window(power + "/windows/sa_c4.json", w).ok());
  spit(dir.file("results/sa_c4.json"),
       R"({"benchmark_start_time_unix":1000.5,"benchmark_end_time_unix":1020.5,"duration":20.0})");

  GpuManifest m = full_manifest();
  m.observed_devices.clear();
  m.window_validations.clear();
  m.reason_codes = {};
  const auto samples = check_gpu_samples(power + "/samples.csv");
  ASSERT_TRUE(samples.reason_codes.empty());
  m.observed_devices = samples.devices;
  m.sample_row_count = samples.row_count;
  m.samples_sha256 = samples.sha256_hex;
  m.reason_codes.add_all(samples.reason_codes);
  m.reason_codes.add_all(gpu_device_reasons(m.expected_devices, m.observed_devices));
  m.window_validations = validate_gpu_windows(
      power, dir.path(), m.expected_windows,
      GpuCoverageInputs{m.expected_devices, m.observed_devices, m.sample_interval_seconds},
      m.artifact_errors);
  m.status = gpu_terminal_status(m.reason_codes, m.required);
  const auto publication = gpu_manifest_publication(m, &samples.reason_codes);
  EXPECT_TRUE(publication.valid);
  EXPECT_EQ(m.sample_row_count, 72u);
  EXPECT_EQ(m.window_validations[0].per_device_max_sample_gap_seconds.size(), 2u);
  EXPECT_FALSE(gpu_exit_nonzero(m.reason_codes, m.required, publication.valid));

  // A consumer re-reads the manifest and the samples and reaches the same verdict.
  m.publication_valid = publication.valid;
  ASSERT_TRUE(write_gpu_manifest(power + "/manifest.json", m).ok());
  const auto back = read_gpu_manifest(power + "/manifest.json");
  ASSERT_TRUE(back.ok()) << back.error();
  const auto again = check_gpu_samples(power + "/samples.csv");
  EXPECT_EQ(back->samples_sha256, again.sha256_hex);
  EXPECT_EQ(gpu_manifest_publication(*back, &again.reason_codes).valid, *back->publication_valid);
}

}  // namespace
}  // namespace cpupower::artifacts
