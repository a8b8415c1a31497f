// The store report's counter math on hand-made samples: unwrapping resets, the value at a
// time, the increase over a window with its error bound, missing edges, re-dating by the
// sample age, NVML's gpus-label series as one counter, and the GPU power gauge's trapezoid.

#include <gtest/gtest.h>

#include <cmath>

#include "store/counter.hpp"
#include "store/series.hpp"

namespace cpupower::store {
namespace {

Samples samples(std::vector<double> t, std::vector<double> v) {
  return {std::move(t), std::move(v)};
}

// Linear interpolation between the samples around a time, and its bound: the counter never
// decreases, so its true value lies between them, at most max(f, 1 - f) of the gain away.
TEST(StoreCounter, InterpolatesBetweenTheSamplesAroundATime) {
  const Unwrapped c = unwrap(samples({0, 10, 20}, {0, 100, 300}));
  const auto at5 = value_at(c, 5, 30, "m", Edge::start);
  ASSERT_TRUE(at5) << at5.error();
  EXPECT_DOUBLE_EQ(at5->value, 50);
  EXPECT_EQ(at5->before, 0u);
  EXPECT_EQ(at5->after, 1u);
  EXPECT_DOUBLE_EQ(at5->fraction, 0.5);
  EXPECT_DOUBLE_EQ(at5->bracket_gain, 100);
  EXPECT_DOUBLE_EQ(at5->error_bound(), 50);
  const auto at18 = value_at(c, 18, 30, "m", Edge::end);
  ASSERT_TRUE(at18);
  EXPECT_DOUBLE_EQ(at18->value, 260);
  EXPECT_DOUBLE_EQ(at18->error_bound(), 0.8 * 200);
}

// A sample on the time is the value itself, with no error.
TEST(StoreCounter, ASampleOnTheTimeIsUsedAsItIs) {
  const Unwrapped c = unwrap(samples({0, 10, 20}, {0, 100, 300}));
  const auto at = value_at(c, 10, 1, "m", Edge::start);
  ASSERT_TRUE(at);
  EXPECT_DOUBLE_EQ(at->value, 100);
  EXPECT_EQ(at->before, 1u);
  EXPECT_EQ(at->after, 1u);
  EXPECT_DOUBLE_EQ(at->error_bound(), 0);
}

TEST(StoreCounter, IncreaseAddsBothEdgesBounds) {
  const Unwrapped c = unwrap(samples({0, 10, 20}, {1000, 1100, 1300}));
  const auto inc = increase(c, 2, 18, 30, "m");
  ASSERT_TRUE(inc) << inc.error();
  EXPECT_DOUBLE_EQ(inc->gain, 260 - 20);
  EXPECT_DOUBLE_EQ(inc->error_bound, 0.8 * 100 + 0.8 * 200);
  EXPECT_EQ(inc->resets, 0u);
  EXPECT_DOUBLE_EQ(inc->lost_s, 0);
}

// A value below its predecessor: the counter restarted from 0. The new value counts (it was
// all gained after the restart); the stretch between the two samples is lost.
TEST(StoreCounter, ResetsCarryOnFromTheNewValue) {
  const Unwrapped c = unwrap(samples({0, 10, 20, 30}, {0, 100, 20, 120}));
  EXPECT_EQ(c.u, (std::vector<double>{0, 100, 120, 220}));
  EXPECT_EQ(c.resets, (std::vector<std::size_t>{2}));
  EXPECT_TRUE(c.reset_before(2));
  EXPECT_FALSE(c.reset_before(1));
  const auto inc = increase(c, 5, 25, 30, "m");
  ASSERT_TRUE(inc);
  EXPECT_DOUBLE_EQ(inc->gain, 170 - 50);
  EXPECT_EQ(inc->resets, 1u);
  EXPECT_DOUBLE_EQ(inc->lost_s, 10);
  EXPECT_DOUBLE_EQ(inc->lost_from, 10);
  EXPECT_DOUBLE_EQ(inc->lost_to, 20);
  // An edge inside the lost stretch says so; its bound is the new counter's gain there.
  const auto at = value_at(c, 15, 30, "m", Edge::start);
  ASSERT_TRUE(at);
  EXPECT_TRUE(at->across_reset);
  EXPECT_DOUBLE_EQ(at->value, 110);
  EXPECT_DOUBLE_EQ(at->error_bound(), 10);
  // A window after the reset has none.
  const auto after = increase(c, 21, 29, 30, "m");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->resets, 0u);
  EXPECT_DOUBLE_EQ(after->gain, 80);
}

TEST(StoreCounter, SeveralResetsAndNonFiniteSamples) {
  const Unwrapped c = unwrap(samples({0, 1, 2, 3, 4}, {5, 7, NAN, 1, 0.5}));
  EXPECT_EQ(c.t, (std::vector<double>{0, 1, 3, 4}));
  EXPECT_EQ(c.u, (std::vector<double>{0, 2, 3, 3.5}));
  EXPECT_EQ(c.resets, (std::vector<std::size_t>{2, 3}));
}

// An edge without a sample within the lookback on one side is an error naming the series,
// the side and the edge, never a value.
TEST(StoreCounter, MissingEdgesAreErrors) {
  const Unwrapped c = unwrap(samples({100, 110}, {0, 10}));
  const std::string name = "m{a=\"b\"}";
  EXPECT_EQ(value_at(c, 50, 30, name, Edge::start).error(),
            "no sample of m{a=\"b\"} within 30 s before the window's start (50.000)");
  EXPECT_EQ(value_at(c, 200, 30, name, Edge::end).error(),
            "no sample of m{a=\"b\"} within 30 s after the window's end (200.000)");
  EXPECT_EQ(
      value_at(unwrap(samples({100, 110, 200}, {0, 10, 20})), 150, 30, name, Edge::end).error(),
      "no sample of m{a=\"b\"} within 30 s before the window's end (150.000); the nearest "
      "is 40.000 s before");
  EXPECT_EQ(value_at(c, 104, 5, name, Edge::start).error(),
            "no sample of m{a=\"b\"} within 5 s after the window's start (104.000); the nearest "
            "is 6.000 s after");
  EXPECT_EQ(value_at(unwrap({}), 1, 300, name, Edge::start).error(),
            "no sample of m{a=\"b\"} within 300 s before the window's start (1.000); the series "
            "has no sample");
  // The lookback itself is within.
  EXPECT_TRUE(value_at(c, 105, 5, name, Edge::start));
  // increase() fails on the first edge that has no value.
  EXPECT_EQ(increase(c, 90, 105, 30, name).error(),
            "no sample of m{a=\"b\"} within 30 s before the window's start (90.000)");
}

TEST(StoreCounter, IntervalRatesLeaveOutRestarts) {
  const Unwrapped c = unwrap(samples({0, 10, 20, 30}, {0, 100, 20, 120}));
  const IntervalRates r = interval_rates(c, 0, 3);
  EXPECT_EQ(r.mid, (std::vector<double>{5, 25}));
  EXPECT_EQ(r.rate, (std::vector<double>{10, 10}));
  EXPECT_EQ(r.dt, (std::vector<double>{10, 10}));
}

// Each counter sample moves back by the age served in the same scrape; a sample that would not
// come after the previous one (a stale sensor: the same reading) is dropped; one without an
// age keeps its time.
TEST(StoreCounter, RedatesBySampleAge) {
  const Redated r = redate(samples({10, 11, 12, 13, 14}, {0, 1, 2, 2, 3}),
                           samples({10, 11, 12, 13}, {0.05, 0.05, 0.05, 1.05}));
  EXPECT_EQ(r.samples.t, (std::vector<double>{9.95, 10.95, 11.95, 14}));
  EXPECT_EQ(r.samples.v, (std::vector<double>{0, 1, 2, 3}));
  EXPECT_EQ(r.without_age, 1u);
  // A negative or missing age is no age.
  const Redated n = redate(samples({1, 2}, {0, 1}), samples({1, 1.5}, {-1, 0.5}));
  EXPECT_EQ(n.samples.t, (std::vector<double>{1, 2}));
  EXPECT_EQ(n.without_age, 2u);
}

// NVML's module counter starts a new series when its gpus label changes and carries on the
// same value: the series are one counter, by time.
TEST(StoreCounter, SeriesDifferingOnlyInGpusAreOneCounter) {
  std::vector<RawSeries> in = {
      {{{"__name__", "m"}, {"socket", "0"}, {"gpus", "0,1"}}, samples({0, 1, 2}, {0, 10, 20})},
      {{{"__name__", "m"}, {"socket", "1"}, {"gpus", "2"}}, samples({0}, {5})},
      {{{"__name__", "m"}, {"socket", "0"}, {"gpus", "0"}}, samples({2, 3, 4}, {21, 30, 40})},
  };
  const auto out = merge_ignoring(std::move(in), "gpus");
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].metric, (Labels{{"__name__", "m"}, {"socket", "0"}}));
  EXPECT_EQ(out[0].samples.t, (std::vector<double>{0, 1, 2, 3, 4}));
  // At t = 2 both members have a sample: the first member's is kept.
  EXPECT_EQ(out[0].samples.v, (std::vector<double>{0, 10, 20, 30, 40}));
  EXPECT_EQ(out[1].metric, (Labels{{"__name__", "m"}, {"socket", "1"}}));
  EXPECT_EQ(out[1].samples.v, (std::vector<double>{5}));
  const auto inc = increase(unwrap(out[0].samples), 0.5, 3.5, 5, "m");
  ASSERT_TRUE(inc);
  EXPECT_DOUBLE_EQ(inc->gain, 35 - 5);
  EXPECT_EQ(inc->resets, 0u);
}

TEST(StoreCounter, GaugeTrapezoidWithInterpolatedEdges) {
  const auto g = gauge_integral(samples({0, 10, 20}, {100, 200, 100}), 5, 15, 30, "p");
  ASSERT_TRUE(g) << g.error();
  EXPECT_DOUBLE_EQ(g->joules, 5 * (150 + 200) / 2.0 + 5 * (200 + 150) / 2.0);
  EXPECT_EQ(g->first, 0u);
  EXPECT_EQ(g->last, 2u);
  // Edges on samples.
  const auto on = gauge_integral(samples({0, 10, 20}, {100, 200, 100}), 0, 20, 1, "p");
  ASSERT_TRUE(on);
  EXPECT_DOUBLE_EQ(on->joules, 3000);
  EXPECT_FALSE(gauge_integral(samples({0, 10}, {1, 1}), 0, 20, 5, "p"));
}

TEST(StoreCounter, MedianSpacing) {
  EXPECT_DOUBLE_EQ(median_spacing({0, 1, 3, 6}), 2);
  EXPECT_DOUBLE_EQ(median_spacing({0, 1, 2, 4, 8}), 1.5);
  EXPECT_DOUBLE_EQ(median_spacing({5}), 0);
}

TEST(StoreSeries, NodeAndNames) {
  EXPECT_EQ(instance_host("10.0.0.7:9405"), "10.0.0.7");
  EXPECT_EQ(instance_host("[fd00::7]:9405"), "fd00::7");
  EXPECT_EQ(instance_host("fd00::7"), "fd00::7");
  EXPECT_EQ(instance_host("n1"), "n1");
  EXPECT_EQ(node_of({{"node", "n1"}, {"instance", "10.0.0.7:9405"}}), "n1");
  EXPECT_EQ(node_of({{"instance", "n2.cluster:9405"}}), "n2.cluster");
  EXPECT_EQ(gpu_node_of({{"Hostname", "n3"}, {"instance", "x:9400"}}), "n3");
  EXPECT_EQ(gpu_node_of({{"node", "n1"}, {"Hostname", "n3"}}), "n1");
  EXPECT_EQ(series_name({{"__name__", "m"}, {"b", "2"}, {"a", "1"}}), "m{a=\"1\", b=\"2\"}");
}

}  // namespace
}  // namespace cpupower::store
