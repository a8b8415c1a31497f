// The energy arithmetic against the reference report's worked examples, carried here as
// fixtures: snapping, interpolation, statistics and numpy's summation and percentiles.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <random>

#include "report/integrate.hpp"
#include "report/numeric.hpp"

namespace cpupower::report {
namespace {

Track track(std::vector<double> t, std::vector<double> w) {
  return make_track(t, w);
}

Breakdown ok(const Track& tr, double s, double e, Edges edges) {
  Integration in = integrate_window(tr, s, e, edges, "x");
  EXPECT_TRUE(in.row) << in.error;
  return in.row.value_or(Breakdown{});
}

std::string err(const Track& tr, double s, double e, Edges edges) {
  Integration in = integrate_window(tr, s, e, edges, "gpu/n/gpu0");
  EXPECT_FALSE(in.row);
  return in.error;
}

// Snap mode integrates the trapezoids between the samples nearest to each edge.
TEST(ReportIntegrate, ManualTrapezoidOverSnappedSamples) {
  const Breakdown b = ok(track({0, 1, 2, 3, 4}, {10, 20, 20, 10, 10}), 1, 3, Edges::snap);
  EXPECT_DOUBLE_EQ(b.stats.joules, 35.0);
  EXPECT_DOUBLE_EQ(b.stats.avg_power_w, 17.5);
}

// Each edge snaps to its nearest sample, which may lie outside the window.
TEST(ReportIntegrate, SnapsToNearestSampleOnEachSide) {
  const Breakdown b = ok(track({0, .9, 2.1, 3}, {10, 10, 10, 10}), 1, 2, Edges::snap);
  EXPECT_DOUBLE_EQ(b.stats.joules, 12.0);
  EXPECT_DOUBLE_EQ(b.stats.sample_start_unix, .9);
  EXPECT_DOUBLE_EQ(b.stats.sample_end_unix, 2.1);
  EXPECT_EQ(b.stats.samples, 2u);
}

// Snap mode refuses a window whose nearest samples are too far, one narrower than the sample
// spacing, and a series without samples.
TEST(ReportIntegrate, SnapErrors) {
  const Track far = track({100, 101, 102}, {1, 1, 1});
  EXPECT_NE(err(far, 0, 101, Edges::snap).find("window start"), std::string::npos);
  EXPECT_NE(err(far, 100, 500, Edges::snap).find("window end"), std::string::npos);
  EXPECT_EQ(err(track({0, .1, .2}, {1, 1, 1}), .04, .05, Edges::snap),
            "gpu/n/gpu0: window narrower than the sample spacing");
  EXPECT_EQ(err(track({}, {}), 0, 1, Edges::snap), "gpu/n/gpu0: no power samples available");
}

// integrate_samples has only the samples the caller gathered: its snap error names the
// nearest of those. It read an empty optional here (undefined behaviour, found by the fuzz
// target cpu_samples).
TEST(ReportIntegrate, SnapErrorOverGatheredSamplesNamesTheNearestOfThem) {
  Series s;
  s.t = {95, 104};
  s.w = {1, 1};
  Integration in = integrate_samples(s, 100, 101, Edges::snap, "module/n");
  EXPECT_FALSE(in.row);
  EXPECT_EQ(in.error, "module/n: nearest sample to window start is 4.000s away, no coverage");
  // Here the gathered samples are the whole series: the same text as over the track.
  EXPECT_EQ(in.error, integrate_window(track(s.t, s.w), 100, 101, Edges::snap, "module/n").error);
  s.t = {100, 101, 104.5};
  s.w = {1, 1, 1};
  in = integrate_samples(s, 100, 108, Edges::snap, "module/n");
  EXPECT_EQ(in.error, "module/n: nearest sample to window end is 3.500s away, no coverage");
}

// Snapped to samples 12 s apart, a 10 s window integrates 510 J: an average of 51 W, above
// every sample, because the energy is divided by the window, not by the samples' span.
TEST(ReportIntegrate, WorkedExample510JoulesAt51Watts) {
  const Breakdown b = ok(track({9, 15, 21}, {40, 44, 42}), 10, 20, Edges::snap);
  EXPECT_DOUBLE_EQ(b.stats.joules, 510.0);
  EXPECT_DOUBLE_EQ(b.stats.avg_power_w, 51.0);  // above every sample: the window is 10 s
  EXPECT_DOUBLE_EQ(b.stats.mean_w, 42.0);
  EXPECT_DOUBLE_EQ(b.stats.min_w, 40.0);
  EXPECT_DOUBLE_EQ(b.stats.max_w, 44.0);
  EXPECT_DOUBLE_EQ(b.stats.p50_w, 42.0);
  EXPECT_NEAR(b.stats.p5_w, 40.2, 1e-12);
  EXPECT_NEAR(b.stats.p95_w, 43.8, 1e-12);
  EXPECT_NEAR(b.stats.p99_w, 43.96, 1e-12);
  EXPECT_EQ(b.stats.samples, 3u);
  EXPECT_DOUBLE_EQ(b.stats.sample_start_unix, 9.0);
  EXPECT_DOUBLE_EQ(b.stats.sample_end_unix, 21.0);
}

TEST(ReportIntegrate, InterpolationIntegratesExactlyOverTheWindow) {
  // 41 W at t=10 and 42.5 W at t=20 by interpolation; nothing outside [10, 20] counts.
  const Breakdown b =
      ok(track({9, 11, 15, 19, 21}, {40, 42, 44, 43, 42}), 10, 20, Edges::interpolate);
  EXPECT_DOUBLE_EQ(b.stats.joules, 430.25);
  EXPECT_DOUBLE_EQ(b.stats.avg_power_w, 43.025);
  EXPECT_EQ(b.stats.samples, 5u);  // the samples the integral rests on: 9 .. 21
  // The 510 J example's samples are 5 s from the start on one side: no bracketing there.
  EXPECT_NE(err(track({9, 15, 21}, {40, 44, 42}), 10, 20, Edges::interpolate)
                .find("window start at 10.000 is not bracketed"),
            std::string::npos);
}

// A flat 100 W over a 10 s window: snapping to samples 11 s apart gives 1100 J, interpolating
// the edges gives the exact 1000 J.
TEST(ReportIntegrate, IncrementalFixtureSnapsTo1100Joules) {
  const Track gpu = track({999.5, 1002, 1005, 1008, 1010.5}, {100, 100, 100, 100, 100});
  const Breakdown snapped = ok(gpu, 1000, 1010, Edges::snap);
  EXPECT_DOUBLE_EQ(snapped.stats.joules, 1100.0);
  EXPECT_DOUBLE_EQ(snapped.stats.avg_power_w, 110.0);
  const Breakdown exact = ok(gpu, 1000, 1010, Edges::interpolate);
  EXPECT_DOUBLE_EQ(exact.stats.joules, 1000.0);
  EXPECT_DOUBLE_EQ(exact.stats.avg_power_w, 100.0);
}

// A window edge more than 3 s from any sample has no coverage, in either edge mode.
TEST(ReportIntegrate, SixSecondEndGapIsNoCoverage) {
  const Track gpu = track({998, 1000, 1002, 1004}, {100, 100, 100, 100});
  EXPECT_EQ(err(gpu, 1000, 1010, Edges::snap),
            "gpu/n/gpu0: nearest sample to window end is 6.000s away, no coverage");
  EXPECT_EQ(err(gpu, 1000, 1010, Edges::interpolate),
            "gpu/n/gpu0: window end at 1010.000 is not bracketed by samples within 3.0s (previous "
            "sample 6.000s before, next sample none), no coverage");
}

TEST(ReportIntegrate, InterpolationNeedsSamplesOnBothSidesOfAnEdge) {
  const Track tr = track({10, 11, 12, 13}, {1, 1, 1, 1});
  EXPECT_NE(err(tr, 9.5, 12, Edges::interpolate).find("window start"), std::string::npos);
  EXPECT_TRUE(integrate_window(tr, 10, 13, Edges::interpolate, "x").row);  // samples on edges
  EXPECT_TRUE(integrate_window(tr, 9.5, 12, Edges::snap, "x").row);        // snap accepts it
}

// min, max, mean and the percentiles are over the samples the integral rests on.
TEST(ReportIntegrate, SampleStatisticsOverTheIntegratedSamples) {
  const Breakdown b = ok(track({0, 1, 2, 3, 4, 5}, {100, 10, 20, 30, 40, 100}), 1, 4, Edges::snap);
  EXPECT_EQ(b.stats.samples, 4u);
  EXPECT_DOUBLE_EQ(b.stats.min_w, 10);
  EXPECT_DOUBLE_EQ(b.stats.max_w, 40);
  EXPECT_DOUBLE_EQ(b.stats.mean_w, 25);
  EXPECT_DOUBLE_EQ(b.stats.avg_power_w, 25);
  EXPECT_DOUBLE_EQ(b.stats.p5_w, 11.5);  // np.percentile([10,20,30,40], 5)
  EXPECT_DOUBLE_EQ(b.stats.p50_w, 25.0);
  EXPECT_DOUBLE_EQ(b.stats.p95_w, 38.5);
  EXPECT_DOUBLE_EQ(b.stats.p99_w, 39.7);
}

// avg_power_w is joules over seconds (time-weighted); mean_w is the plain mean of the samples.
TEST(ReportIntegrate, TimeWeightedAverageAndSampleMeanDiverge) {
  const Breakdown b = ok(track({0, 1, 2, 10}, {10, 10, 10, 100}), 0, 10, Edges::snap);
  EXPECT_DOUBLE_EQ(b.stats.mean_w, 32.5);
  EXPECT_DOUBLE_EQ(b.stats.avg_power_w, 46.0);
  EXPECT_DOUBLE_EQ(b.stats.largest_gap_s, 8.0);  // our interior-gap check
  EXPECT_DOUBLE_EQ(b.stats.largest_gap_at_unix, 2.0);
}

TEST(ReportIntegrate, BlankValuesAreMissingSamplesNotZeros) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Breakdown b = ok(track({0, 1, 2, 3, 4}, {10, nan, 10, nan, 10}), 0, 4, Edges::snap);
  EXPECT_DOUBLE_EQ(b.stats.joules, 40.0);
  EXPECT_EQ(b.stats.samples, 3u);
}

double repr_double(const nlohmann::json& text) {
  const std::string s = text.get<std::string>();
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  EXPECT_TRUE(ec == std::errc() && end == s.data() + s.size()) << s;
  return v;
}

std::vector<double> repr_doubles(const nlohmann::json& list) {
  std::vector<double> out;
  for (const auto& v : list) out.push_back(repr_double(v));
  return out;
}

// Equal as doubles, bit for bit (so -0 and +0 differ), printed with every digit.
::testing::AssertionResult same_bits(double got, double want) {
  if (std::memcmp(&got, &want, sizeof got) == 0) return ::testing::AssertionSuccess();
  char buf[96];
  std::snprintf(buf, sizeof buf, "%.17g, numpy %.17g (%.3g ulp)", got, want,
                (got - want) / (std::nextafter(want, INFINITY) - want));
  return ::testing::AssertionFailure() << buf;
}

// numpy's own results, bit for bit: tests/fixtures/report/numpy/cases.json, written by
// make_cases.py beside it with numpy 1.24 (np.add.reduce, np.trapz, np.percentile). The arrays
// are ill-conditioned so that a left-to-right loop, or a percentile that always interpolates
// from the lower neighbour, gives other doubles in many of the cases (the script checks that).
TEST(ReportNumeric, SumsTrapezoidsAndPercentilesEqualNumpysBitForBit) {
  std::ifstream in(std::string(CPUPOWER_FIXTURES) + "/report/numpy/cases.json");
  const nlohmann::json fixture = nlohmann::json::parse(in);
  ASSERT_GE(fixture["cases"].size(), 40u);
  for (const auto& c : fixture["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const std::vector<double> v = repr_doubles(c["values"]);
    const std::vector<double> t = repr_doubles(c["times"]);
    EXPECT_TRUE(same_bits(numpy_sum(v), repr_double(c["sum"]))) << "sum";
    EXPECT_TRUE(same_bits(numpy_trapezoid(t, v), repr_double(c["trapz"]))) << "trapezoid";
    const Percentiles p = numpy_percentiles(v);
    const std::vector<double> want = repr_doubles(c["percentiles"]);
    EXPECT_TRUE(same_bits(p.p5, want[0])) << "p5";
    EXPECT_TRUE(same_bits(p.p50, want[1])) << "p50";
    EXPECT_TRUE(same_bits(p.p95, want[2])) << "p95";
    EXPECT_TRUE(same_bits(p.p99, want[3])) << "p99";
    EXPECT_TRUE(same_bits(p.min, repr_double(c["min"]))) << "min";
    EXPECT_TRUE(same_bits(p.max, repr_double(c["max"]))) << "max";
  }
}

TEST(ReportNumeric, SmallSumsAndTrapezoids) {
  EXPECT_EQ(numpy_sum(std::vector<double>{}), 0.0);
  EXPECT_EQ(numpy_sum(std::vector<double>{1, 2, 3}), 6);
  EXPECT_EQ(numpy_trapezoid(std::vector<double>{0, 2}, std::vector<double>{1, 3}), 4);
  EXPECT_EQ(numpy_trapezoid(std::vector<double>{5}, std::vector<double>{1}), 0);
}

TEST(ReportNumeric, PercentilesUseNumpysLerpBranches) {
  std::vector<double> v = {5, 1, 4, 2, 3};
  const Percentiles p = numpy_percentiles(v);
  EXPECT_DOUBLE_EQ(p.p5, 1.2);
  EXPECT_DOUBLE_EQ(p.p50, 3.0);
  EXPECT_DOUBLE_EQ(p.p95, 4.8);
  EXPECT_DOUBLE_EQ(p.p99, 4.96);
  std::vector<double> one = {7};
  EXPECT_DOUBLE_EQ(numpy_percentiles(one).p99, 7);
}

// Selection must give exactly what interpolating over a fully sorted copy gives (numpy sorts),
// for every length, with ties and signed zeros.
// Against a full sort: every length up to 400 (selection) and longer arrays (buckets over
// the range of the values, then selection inside the buckets the ranks fall in), with many
// ties, signed zeros, power-like values, wide ranges with infinities, and all-equal arrays.
TEST(ReportNumeric, PercentilesEqualAFullSort) {
  std::mt19937_64 rng(11);
  const auto uniform = [&] { return static_cast<double>(rng() % 1000000) / 1000000.0; };
  std::vector<std::size_t> lengths;
  for (std::size_t n = 1; n < 400; ++n) lengths.push_back(n);
  for (const std::size_t n : {511, 512, 513, 700, 1000, 4999, 5000, 20011}) lengths.push_back(n);
  for (const std::size_t n : lengths) {
    for (int shape = 0; shape < (n < 400 ? 1 : 4); ++shape) {
      std::vector<double> v(n);
      for (auto& x : v) {
        switch (shape) {
          case 0:  // small integers and halves: ties everywhere
            x = static_cast<double>(rng() % 50) - 25.0 + (rng() % 3 == 0 ? 0.5 : 0.0);
            break;
          case 1:  // watts with three decimals
            x = 95 + std::round(uniform() * 20000) / 1000;
            break;
          case 2:  // signs, magnitudes and infinities all over
            x = (rng() % 2 ? -1 : 1) * std::ldexp(uniform(), static_cast<int>(rng() % 200) - 100);
            if (rng() % 97 == 0) x = (rng() % 2 ? -1 : 1) * std::numeric_limits<double>::infinity();
            break;
          default:
            x = 7.25;
        }
      }
      if (n % 7 == 0) v[0] = -0.0;
      std::vector<double> sorted = v;
      std::sort(sorted.begin(), sorted.end());
      const auto expect = [&](double q) {
        const double pos = static_cast<double>(n - 1) * q;
        if (pos >= static_cast<double>(n - 1)) return sorted[n - 1];
        const auto k = static_cast<std::size_t>(std::floor(pos));
        const double g = pos - std::floor(pos);
        const double a = sorted[k], b = sorted[k + 1], d = b - a;
        return g >= 0.5 ? b - d * (1.0 - g) : a + d * g;
      };
      const Percentiles p = numpy_percentiles(v);
      const auto same = [](double x, double y) {
        return (x == y && std::signbit(x) == std::signbit(y)) || (std::isnan(x) && std::isnan(y));
      };
      EXPECT_TRUE(same(p.p5, expect(0.05))) << n << " shape " << shape;
      EXPECT_TRUE(same(p.p50, expect(0.50))) << n << " shape " << shape;
      EXPECT_TRUE(same(p.p95, expect(0.95))) << n << " shape " << shape;
      EXPECT_TRUE(same(p.p99, expect(0.99))) << n << " shape " << shape;
      const auto [mn, mx] = std::minmax_element(v.begin(), v.end());
      EXPECT_TRUE(same(p.min, *mn)) << n << " shape " << shape;
      EXPECT_TRUE(same(p.max, *mx)) << n << " shape " << shape;
    }
  }
}

// The extremes come from the selection's key range above 512 values, where -0 and +0 share a
// key: they must still be minmax_element's (the first smallest, the last largest).
TEST(ReportNumeric, PercentilesCarryMinmaxElementsExtremes) {
  std::mt19937_64 rng(5);
  for (const std::size_t n : {3, 100, 511, 512, 600, 5000}) {
    for (int shape = 0; shape < 4; ++shape) {
      std::vector<double> v(n);
      for (auto& x : v) x = static_cast<double>(rng() % 1000) / 8.0 + 1.0;
      if (shape == 1) {  // zeros of both signs are the smallest values
        v[n / 3] = -0.0;
        v[n / 2] = 0.0;
      }
      if (shape == 2) {  // ... and the largest
        for (auto& x : v) x = -x;
        v[n / 3] = 0.0;
        v[n - 1] = -0.0;
      }
      if (shape == 3) v[n / 4] = -std::numeric_limits<double>::infinity();
      const Percentiles p = numpy_percentiles(v);
      const auto [mn, mx] = std::minmax_element(v.begin(), v.end());
      EXPECT_EQ(p.min, *mn) << n << " shape " << shape;
      EXPECT_EQ(std::signbit(p.min), std::signbit(*mn)) << n << " shape " << shape;
      EXPECT_EQ(p.max, *mx) << n << " shape " << shape;
      EXPECT_EQ(std::signbit(p.max), std::signbit(*mx)) << n << " shape " << shape;
    }
  }
}

TEST(ReportNumeric, PythonCommaFormatting) {
  EXPECT_EQ(py_fixed_commas(1000, 2), "1,000.00");
  EXPECT_EQ(py_fixed_commas(1234567.891, 2), "1,234,567.89");
  EXPECT_EQ(py_fixed_commas(-1234.5, 0), "-1,234");
  EXPECT_EQ(py_fixed_commas(999.999, 2), "1,000.00");
  EXPECT_EQ(py_fixed_commas(12.5, 0), "12");  // round half to even on the exact binary value
}

// ---- coverage and uncertainty (report/uncertainty.hpp) -----------------------------------

namespace uncertainty_cases {

Integration at(const Track& tr, double s, double e, Edges edges, const Averaging& a) {
  return integrate_window(tr, s, e, edges, "cpu/n/socket0", true, a);
}

// Readings once a second that average half a second each, 100 W stepping to 300 W at `step`.
Track stepped(double step) {
  std::vector<double> t, w;
  for (int i = 0; i <= 10; ++i) {
    t.push_back(i);
    w.push_back(i < step ? 100 : 300);
  }
  return make_track(t, w);
}

}  // namespace uncertainty_cases

// Readings every 0.1 s averaging 1 s cover the whole window; a constant power has nothing
// to be uncertain about.
TEST(ReportUncertainty, FullCoverageOfAConstantPower) {
  std::vector<double> t, w;
  for (int i = 0; i <= 100; ++i) {
    t.push_back(i * 0.1);
    w.push_back(250);
  }
  const auto in = uncertainty_cases::at(make_track(t, w), 1, 9, Edges::interpolate, {1.0, 1.0});
  ASSERT_TRUE(in.row) << in.error;
  ASSERT_TRUE(in.row->stats.coverage);
  EXPECT_DOUBLE_EQ(*in.row->stats.coverage, 1.0);
  EXPECT_DOUBLE_EQ(in.row->stats.uncertainty_j, 0.0);
}

// Half-second averages once a second cover half the window; a step in the uncovered half of
// one gap is known only to lie there: its bound, in quadrature with k = 2, holds the true
// error wherever in that stretch the step falls.
TEST(ReportUncertainty, ASingleGapBoundsAStepAnywhereInsideIt) {
  const Averaging half{0.5, 0.5};
  const auto in =
      uncertainty_cases::at(uncertainty_cases::stepped(4.5), 0, 10, Edges::interpolate, half);
  ASSERT_TRUE(in.row) << in.error;
  ASSERT_TRUE(in.row->stats.coverage);
  EXPECT_NEAR(*in.row->stats.coverage, 0.5, 1e-12);
  // The gap from 4 to 5: 0.5 s uncovered (200 W x 0.5 / 2) and 0.5 s averaged (200 W x 0.5
  // / 8); no change near the edges; the dates' resolution, 10 ms x 200 W across; and the
  // staleness of the two readings the step lies between, each with a slope of 100 W a reading.
  const double bound = 200 * 0.5 / 2 + 200 * 0.5 / 8, dates = kDateResolutionS * 200;
  const double stale = kDateResolutionS * kDateResolutionS / 12 * 2 * 100 * 100;
  EXPECT_NEAR(in.row->stats.uncertainty_j,
              kCoverageFactor * std::sqrt((bound * bound + dates * dates) / 3 + stale), 1e-9);
  for (const double step : {4.25, 4.4, 4.5, 4.6, 4.75}) {
    // The readings are the same wherever in the uncovered stretch the step falls.
    const double truth = 100 * step + 300 * (10 - step);
    EXPECT_LE(std::abs(in.row->stats.joules - truth), in.row->stats.uncertainty_j) << step;
  }
}

// An edge inside the rise a 1 s average makes of a step: the integral misses up to tau x
// step / 8 of energy, which the edge term states.
TEST(ReportUncertainty, AnEdgeInsideAnAveragingIntervalIsCounted) {
  std::vector<double> t, w;
  for (int i = 0; i <= 100; ++i) {
    const double x = i * 0.1;
    t.push_back(x);
    w.push_back(100 * std::clamp(x - 4.5, 0.0, 1.0));  // 1 s mean of a 0 -> 100 W step at 5
  }
  const auto in =
      uncertainty_cases::at(make_track(t, w), 5, 10, Edges::interpolate, Averaging{1.0, 1.0});
  ASSERT_TRUE(in.row) << in.error;
  const double truth = 500;
  EXPECT_NEAR(truth - in.row->stats.joules, 12.5, 1e-9);  // tau x 100 W / 8
  EXPECT_GE(in.row->stats.uncertainty_j, 12.5);
  EXPECT_LE(in.row->stats.uncertainty_j, 2 * 12.5);
  EXPECT_DOUBLE_EQ(*in.row->stats.coverage, 1.0);
}

// Readings that trace the rise (0.1 s apart under a 1 s average) show how far a change had
// gone at the edge, and the edge term states what that leaves: past nine tenths of the rise,
// tau (1 - f)^2 / 2 x 100 W = 0.5 J is misplaced, and the term is tau / 4 x the smaller of
// the readings' moves on either side (10 W), not the worst case of a change at the edge
// (tau / 8 x 100 W). Before the rise nothing is misplaced. Readings 0.5 s apart say little of
// f: the worst case stays.
TEST(ReportUncertainty, AnEdgeTheReadingsPlaceInTheRiseIsCountedForWhatItMisplaces) {
  const auto rise = [](double step) {
    std::vector<double> t, w;
    for (int i = 0; i * step <= 10 + 1e-9; ++i) {
      t.push_back(i * step);
      w.push_back(100 * std::clamp(i * step - 4.5, 0.0, 1.0));  // 1 s mean of a step at 5
    }
    return make_track(t, w);
  };
  const Averaging tau{1.0, 1.0};
  const auto late = uncertainty_cases::at(rise(0.1), 5.4, 10, Edges::interpolate, tau);
  ASSERT_TRUE(late.row) << late.error;
  EXPECT_NEAR(460 - late.row->stats.joules, 0.5, 1e-9);
  EXPECT_GE(late.row->stats.uncertainty_j, 0.5);
  // Added in full (the readings go one way: one change, nearly the error itself), beside the
  // dates' term of the 10 W across the window.
  const double late_dates = kDateResolutionS * 10;
  EXPECT_NEAR(late.row->stats.uncertainty_j, 2.5 + kCoverageFactor * late_dates / std::sqrt(3.0),
              0.05);

  const auto before = uncertainty_cases::at(rise(0.1), 4.4, 10, Edges::interpolate, tau);
  ASSERT_TRUE(before.row) << before.error;
  EXPECT_NEAR(before.row->stats.joules, 500, 1e-9);
  const double dates = kDateResolutionS * 100;
  EXPECT_NEAR(before.row->stats.uncertainty_j, kCoverageFactor * dates / std::sqrt(3.0), 0.05);

  const auto sparse = uncertainty_cases::at(rise(0.5), 5.4, 10, Edges::interpolate, tau);
  ASSERT_TRUE(sparse.row) << sparse.error;
  EXPECT_GE(sparse.row->stats.uncertainty_j, kCoverageFactor * 12.5 / std::sqrt(3.0));
}

// An unknown averaging interval (older files, DCGM, the GPU leg): no coverage, and the
// uncertainty of instantaneous samples, whose every gap is uncovered.
TEST(ReportUncertainty, AnUnknownIntervalStatesNoCoverageAndTakesPointSamples) {
  const auto in = uncertainty_cases::at(uncertainty_cases::stepped(4.5), 0, 10, Edges::interpolate,
                                        Averaging{});
  ASSERT_TRUE(in.row) << in.error;
  EXPECT_FALSE(in.row->stats.coverage);
  const double gap = 200 * 1.0 / 2, dates = kDateResolutionS * 200;
  const double stale = kDateResolutionS * kDateResolutionS / 12 * 2 * 100 * 100;
  EXPECT_NEAR(in.row->stats.uncertainty_j,
              kCoverageFactor * std::sqrt((gap * gap + dates * dates) / 3 + stale), 1e-9);
  // Without an interval, a plain integral (the callers that never ask) gets the same.
  const Integration plain =
      integrate_window(uncertainty_cases::stepped(4.5), 0, 10, Edges::interpolate, "x");
  ASSERT_TRUE(plain.row);
  EXPECT_DOUBLE_EQ(plain.row->stats.uncertainty_j, in.row->stats.uncertainty_j);
}

// Snapped edges count the energy between each edge and its sample whole: the bound is the
// error itself on a constant power, with the two edges' signs.
TEST(ReportUncertainty, SnappedEdgesCountTheStretchToTheirSample) {
  std::vector<double> t, w;
  for (int i = 0; i <= 10; ++i) {
    t.push_back(i);
    w.push_back(100);
  }
  const auto in =
      uncertainty_cases::at(make_track(t, w), 0.4, 9.6, Edges::snap, Averaging{1.0, 1.0});
  ASSERT_TRUE(in.row) << in.error;
  EXPECT_DOUBLE_EQ(in.row->stats.joules, 1000);  // from 0 to 10
  EXPECT_NEAR(in.row->stats.uncertainty_j, 0.4 * 100 + 0.4 * 100, 1e-9);
  EXPECT_NEAR(in.row->stats.joules - 920, in.row->stats.uncertainty_j, 1e-9);

  // Both samples before their edges: the stretch the start counts is the one the end leaves
  // out, and on a constant power the two cancel. The error is 0, and so is the bound (counting
  // each stretch whole on its own, as the bound did before, stated 80 J).
  const auto level =
      uncertainty_cases::at(make_track(t, w), 0.4, 9.4, Edges::snap, Averaging{1.0, 1.0});
  ASSERT_TRUE(level.row) << level.error;
  EXPECT_DOUBLE_EQ(level.row->stats.joules, 900);  // from 0 to 9, as from 0.4 to 9.4
  EXPECT_NEAR(level.row->stats.uncertainty_j, 0, 1e-9);
  // On a power that differs at the two edges they do not: 0.4 s of 100 W counted at the start
  // and 0.4 s of 300 W left out at the end.
  std::vector<double> higher = w;
  for (std::size_t i = 6; i < higher.size(); ++i) higher[i] = 300;
  const auto step =
      uncertainty_cases::at(make_track(t, higher), 0.4, 9.4, Edges::snap, Averaging{1.0, 1.0});
  ASSERT_TRUE(step.row) << step.error;
  EXPECT_GE(step.row->stats.uncertainty_j, 0.4 * 300 - 0.4 * 100);
}

// Bursts shorter than the uncovered stretches: readings that catch some of them go back and
// forth, and each uncovered stretch may hide as much again; a series of steps that all go one
// way gives no such term.
TEST(ReportUncertainty, PowerThatGoesBackAndForthStatesWhatTheGapsMayHide) {
  std::vector<double> t, bursty, rising;
  for (int i = 0; i <= 20; ++i) {
    t.push_back(i * 0.25);
    bursty.push_back(i % 2 ? 400 : 150);
    rising.push_back(150 + 12.5 * i);  // the same total variation, one way
  }
  const Averaging short_means{0.05, 0.05};
  const auto b =
      uncertainty_cases::at(make_track(t, bursty), 0, 5, Edges::interpolate, short_means);
  const auto r =
      uncertainty_cases::at(make_track(t, rising), 0, 5, Edges::interpolate, short_means);
  ASSERT_TRUE(b.row && r.row);
  EXPECT_NEAR(*b.row->stats.coverage, 0.2, 1e-9);
  // Per pair: 0.2 s uncovered; the step term 250 W x (0.1 + 0.05 / 8), 27 J, and the hidden
  // term 2 x 0.2 s x the back-and-forth per pair (about 214 W seven pairs from the ends: a
  // total variation of 1,750 W less a net 250 W, over 7), 86 J; at least 80 J on each of 20.
  EXPECT_GT(b.row->stats.uncertainty_j, 2 * r.row->stats.uncertainty_j);
  EXPECT_GT(b.row->stats.uncertainty_j, kCoverageFactor * std::sqrt(20 * 80.0 * 80.0 / 3));
}

namespace uncertainty_cases {

// 150 W with 40 ms bursts of +250 W, 120 to 400 ms apart (a fixed pseudo-random spacing).
std::vector<double> burst_starts(double until) {
  std::vector<double> starts;
  std::uint32_t x = 12345;
  for (double t = 0.5; t < until; t += 0.04 + 0.12 + 0.28 * ((x >> 8) % 1000) / 1000.0) {
    starts.push_back(t);
    x = x * 1664525u + 1013904223u;
  }
  return starts;
}

// The exact energy of that power over [a, b].
double burst_energy(const std::vector<double>& starts, double a, double b) {
  double j = 150 * (b - a);
  for (const double s : starts) j += 250 * std::max(0.0, std::min(b, s + 0.04) - std::max(a, s));
  return j;
}

}  // namespace uncertainty_cases

// Bursts shorter than a 1 s average, read every 250 ms: the readings tile the time axis, and
// the error is what the average smears across each window edge, the bursts within half a
// second of it, each moved by up to half its energy. The readings' changes say how much the
// power goes back and forth at the scale of their spacing, and that bounds the smear: the
// stated uncertainty holds the true error of most windows (one change's smear alone, the
// readings' total variation near the edge times tau / 8, held 8 of these 20; the smear
// without its high-frequency floor and the run's usual smear, 18).
TEST(ReportUncertainty, BurstsUnderALongAverageAreSmearedAcrossTheEdge) {
  using uncertainty_cases::burst_energy;
  const auto starts = uncertainty_cases::burst_starts(70);
  std::vector<double> t, w;
  for (int i = 0; i <= 260; ++i) {
    const double x = 1 + i * 0.25;
    t.push_back(x);
    w.push_back(burst_energy(starts, x - 0.5, x + 0.5));  // the mean of the second around x
  }
  const auto track = make_track(t, w);
  int inside = 0;
  for (int k = 0; k < 20; ++k) {
    const double s = 5 + 2.9 * k + 0.037 * k, e = s + 2 + 0.15 * k;
    const auto in = uncertainty_cases::at(track, s, e, Edges::interpolate, {1.0, 1.0});
    ASSERT_TRUE(in.row) << in.error;
    if (std::abs(in.row->stats.joules - burst_energy(starts, s, e)) <= in.row->stats.uncertainty_j)
      ++inside;
  }
  EXPECT_GE(inside, 19) << inside;  // 20 measured
}

// Half-second averages read once a second (half the window covered) of bursty power: around
// this window no reading caught a burst, so its readings and their neighbours go neither up
// nor down, yet bursts hide in its uncovered stretches as they do where the readings caught
// some. The track's wider stretch says so; the window's own samples could not (and the
// neighbours alone stated 0 J).
TEST(ReportUncertainty, ReadingsThatCaughtNoBurstNearTheWindowStillStateWhatTheRunShows) {
  std::vector<double> t, w;
  for (int i = 0; i <= 50; ++i) {  // all within kRoughnessMarginS of the window
    t.push_back(i);
    w.push_back(i % 15 == 0 ? 400 : 150);  // one reading in fifteen caught a burst
  }
  const Averaging half{0.5, 0.5};
  const auto in = uncertainty_cases::at(make_track(t, w), 20.2, 22.8, Edges::interpolate, half);
  ASSERT_TRUE(in.row) << in.error;
  // Three pairs, each with 0.5 s uncovered hiding 2 x 0.5 s times the run's usual back and
  // forth per pair; nothing else (no reading changes near the window).
  const double usual = typical_roughness(Series{t, w});
  EXPECT_GT(usual, 10);
  const double hidden = 2 * 0.5 * usual;
  const double expected = kCoverageFactor * std::sqrt(3 * hidden * hidden / 3);
  EXPECT_NEAR(in.row->stats.uncertainty_j, expected, 1e-9);
  // The same window from its own samples (what a caller without the track passes).
  Series local;
  for (int i = 17; i <= 26; ++i) {
    local.t.push_back(i);
    local.w.push_back(150);
  }
  const auto alone = integrate_samples(local, 20.2, 22.8, Edges::interpolate, "x", true, half);
  ASSERT_TRUE(alone.row) << alone.error;
  EXPECT_DOUBLE_EQ(alone.row->stats.uncertainty_j, 0.0);
}

// The readings' departures from the line through their neighbours: a reading that caught a
// burst its neighbours missed departs by it, one on a step or a flat stretch by nothing.
TEST(ReportUncertainty, SamplingErrorIsTheStandardErrorOfTheReadingsDepartures) {
  std::vector<double> t, alternating, rising, stepped;
  for (int i = 0; i <= 40; ++i) {
    t.push_back(i * 0.25);
    alternating.push_back(i % 2 ? 400 : 150);
    rising.push_back(150 + 12.5 * i);
    stepped.push_back(i < 20 ? 150 : 400);
  }
  // Readings 1 to 39 have a neighbour on either side: 20 depart by +250 W, 19 by -250 W.
  const double mean = 250.0 / 39, var = 250.0 * 250.0 - mean * mean;
  EXPECT_NEAR(sampling_error(Series{t, alternating}, 0, 10), std::sqrt(var / 39), 1e-9);
  EXPECT_DOUBLE_EQ(sampling_error(Series{t, rising}, 0, 10), 0.0);
  EXPECT_DOUBLE_EQ(sampling_error(Series{t, stepped}, 0, 10), 0.0);
  // Only the readings within [lo, hi] count, and fewer than two give 0.
  const double m3 = 250.0 / 3;  // readings at 0.25, 0.5, 0.75 s: +250, -250, +250 W
  EXPECT_NEAR(sampling_error(Series{t, alternating}, 0.2, 0.8),
              std::sqrt((250.0 * 250.0 - m3 * m3) / 3), 1e-9);
  EXPECT_DOUBLE_EQ(sampling_error(Series{t, alternating}, 0.2, 0.3), 0.0);
}

// 50 ms averages of bursty power read on a regular 147 ms grid (a 150 ms firmware round
// trip), a third of the time covered: the readings catch a burst or miss it according to
// where their instants fall, and each window's energy rests on those instants. The stated
// uncertainty holds the true error of nearly every window, without being many times wider
// (the median stated figure against the median true error). These exact readings are held
// without the uncovered seconds' sampling term too (39 of 40, 40 with it); the replays
// through the real processes, where it is needed, are in docs/performance.md.
TEST(ReportUncertainty, ReadingsOnAGridStateWhatTheirInstantsMayHaveMissed) {
  using uncertainty_cases::burst_energy;
  const auto starts = uncertainty_cases::burst_starts(440);
  std::vector<double> t, w;
  for (double x = 1; x < 425; x += 0.147) {
    // Dated at the centre of the 50 ms before the read; the value is the mean of the 50 ms
    // before the meter's last update, every 10 ms.
    const double update = std::floor(x * 100) / 100;
    t.push_back(x - 0.025);
    w.push_back(burst_energy(starts, update - 0.05, update) / 0.05);
  }
  const auto track = make_track(t, w);
  const Averaging short_means{0.05, 0.05};
  int inside = 0;
  std::vector<double> true_error, stated;
  for (int k = 0; k < 40; ++k) {
    const double s = 5 + 10 * k + 0.013 * k, e = s + 9;
    const auto in = uncertainty_cases::at(track, s, e, Edges::interpolate, short_means);
    ASSERT_TRUE(in.row) << in.error;
    const double error = std::abs(in.row->stats.joules - burst_energy(starts, s, e));
    if (error <= in.row->stats.uncertainty_j) ++inside;
    true_error.push_back(error);
    stated.push_back(in.row->stats.uncertainty_j);
  }
  EXPECT_GE(inside, 37) << inside;
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  };
  EXPECT_LE(median(stated), 8 * median(true_error))  // 6.5 measured, 4.0 without the term
      << median(stated) << " J against " << median(true_error) << " J";
}

namespace uncertainty_cases {

// 1 s means of the bursty power, dated at the centre of each second they average.
Track one_second_means(const std::vector<double>& starts, const std::vector<double>& dates) {
  std::vector<double> w;
  for (const double x : dates) w.push_back(burst_energy(starts, x - 0.5, x + 0.5));
  return make_track(dates, w);
}

// How many of `windows` hold their true error within the stated uncertainty.
int held(const Track& track, const std::vector<double>& starts,
         const std::vector<std::pair<double, double>>& windows) {
  int inside = 0;
  for (const auto& [s, e] : windows) {
    const auto in = at(track, s, e, Edges::interpolate, {1.0, 1.0});
    if (!in.row) return -1;
    if (std::abs(in.row->stats.joules - burst_energy(starts, s, e)) <= in.row->stats.uncertainty_j)
      ++inside;
  }
  return inside;
}

}  // namespace uncertainty_cases

// Readings the power goes one way through, a ramp (a change smeared by the average) or a
// flat stretch, show no burst: the run's usual smear is then 0, however large the steps.
// Bursts read under the same average go back and forth and give one.
TEST(ReportUncertainty, TheUsualSmearIsNothingWhereThePowerStepsOneWayAtATime) {
  std::vector<double> t, steps;
  for (int i = 0; i <= 600; ++i) {
    const double x = i * 0.1;
    t.push_back(x);
    // The 1 s mean of a power that alternates between 150 and 400 W every 3 s.
    const double phase = std::fmod(x + 0.5, 6.0);
    const double into = std::clamp(phase - 2.5, 0.0, 1.0) - std::clamp(phase - 5.5, 0.0, 1.0);
    steps.push_back(150 + 250 * into);
  }
  const Averaging second{1.0, 1.0};
  EXPECT_DOUBLE_EQ(usual_around(Series{t, steps}, second).smear_sd, 0.0);
  const auto starts = uncertainty_cases::burst_starts(70);
  std::vector<double> bursty;
  for (const double x : t)
    bursty.push_back(uncertainty_cases::burst_energy(starts, x - 0.5, x + 0.5));
  EXPECT_GT(usual_around(Series{t, bursty}, second).smear_sd, 1.0);
  // Without a known interval there is no smear to state.
  EXPECT_DOUBLE_EQ(usual_around(Series{t, bursty}, Averaging{}).smear_sd, 0.0);

  // A stretch that is bursty for the last 40 % of its readings and flat before: the usual
  // smear is the kUsualSmearQuantile (65th percentile) of the readings' figures, so bursts
  // over 40 % of it count (a median would give 0), over 30 % they do not.
  const auto partly = [&](double share) {
    std::vector<double> w;
    for (std::size_t i = 0; i < t.size(); ++i)
      w.push_back(static_cast<double>(i) < (1 - share) * static_cast<double>(t.size()) ? 150
                                                                                       : bursty[i]);
    return usual_around(Series{t, w}, second).smear_sd;
  };
  EXPECT_GT(partly(0.4), 1.0);
  EXPECT_DOUBLE_EQ(partly(0.3), 0.0);
}

// Averages of 1 s read every 0.25 s count every instant once (each is held by four, each
// weighted 0.25 s). Read every 1.054 s (a 150 ms read cycle seen once a second) they leave
// 54 ms of each period out and count the rest 1.054 times; every 0.301 s, 3.3 per second,
// some instants three times and others four. Readings farther apart than two intervals do
// not overlap and are left to the uncovered stretches' terms.
TEST(ReportUncertainty, UnevenTilingIsNothingOnAnEvenGridAndCountsWhatDriftingReadsMiss) {
  const auto grid = [](double spacing, int n) {
    Series s;
    for (int i = 0; i < n; ++i) {
      s.t.push_back(i * spacing);
      s.w.push_back(100);
    }
    return s;
  };
  const Series even = grid(0.25, 201);
  EXPECT_NEAR(uneven_tiling(even, 0, 200, 0, 50, false, 1.0), 0.0, 1e-12);
  const Series drifting = grid(1.054, 60);
  // Interior [0.5, 58.5] of the samples 0..58 (snapped): per period 1.054 s, 1 s counted
  // 1.054 times and 0.054 s not at all.
  const double per_period = 1.0 * 0.054 * 0.054 + 0.054 * 1.0;
  const double tiled = uneven_tiling(drifting, 0, 58, 0, 58 * 1.054, true, 1.0);
  EXPECT_NEAR(tiled, per_period * (58 * 1.054 - 1.0) / 1.054, 0.06);
  const Series uneven = grid(0.301, 200);
  EXPECT_GT(uneven_tiling(uneven, 0, 199, 0, 199 * 0.301, true, 1.0), 0.1);
  EXPECT_DOUBLE_EQ(uneven_tiling(grid(2.5, 20), 0, 19, 0, 19 * 2.5, true, 1.0), 0.0);
}

// Bursts shorter than a 1 s average read once a second on a drifting grid: the readings'
// differences are those of independent seconds, whose sums of regular bursts vary less than
// where in each second the bursts fall, and every period leaves 54 ms uncounted. Both the
// edges' smear (at least the high-frequency limit of the readings' differences) and the
// uneven tiling inside the window are stated: the short windows and the long ones hold.
TEST(ReportUncertainty, BurstsReadOnceASecondUnderASecondsAverageHold) {
  const auto starts = uncertainty_cases::burst_starts(440);
  std::vector<double> dates;
  for (double x = 1; x < 425; x += 1.054) dates.push_back(x);
  const auto track = uncertainty_cases::one_second_means(starts, dates);
  std::vector<std::pair<double, double>> short_windows, long_windows;
  for (int k = 0; k < 40; ++k) {
    const double s = 5 + 10 * k + 0.013 * k;
    short_windows.emplace_back(s, s + 2 + 0.075 * k);
  }
  for (int k = 0; k < 12; ++k) long_windows.emplace_back(5 + 33 * k, 5 + 33 * k + 30);
  const int shorts = uncertainty_cases::held(track, starts, short_windows);
  const int longs = uncertainty_cases::held(track, starts, long_windows);
  // 37 of 40 and 11 of 12 measured; 19 and 7 without the smear's floor, the run's usual
  // smear and the tiling term.
  EXPECT_GE(shorts, 35) << shorts;
  EXPECT_GE(longs, 10) << longs;
}

TEST(ReportUncertainty, PercentOfNoEnergyIsUnset) {
  EXPECT_FALSE(uncertainty_pct(1, 0));
  EXPECT_DOUBLE_EQ(*uncertainty_pct(1, 200), 0.5);
}

}  // namespace
}  // namespace cpupower::report
