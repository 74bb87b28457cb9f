// adaptive_asha: brackets per mode, stop and promote decisions against hand-computed
// expectations (the seed-5 experiment of tests/cluster and tests/cli, with and without
// stop_once), missing metrics, repeated reports, and Restore after a restart.

#include "master/searcher/asha_searcher.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/testing/status_matchers.h"
#include "config/config_parser.h"
#include "config/hparam_sampler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort::master::searcher {
namespace {

using ::cohort::testing_support::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using wire::TrialState;

const double kNaN = std::nan("");

// x = increment_by * batches is the searcher metric (smaller is better); seed 5 draws the
// increments 12, 21, 23, 20. Rungs 200 and 400 batches.
config::ExperimentConfig Seed5(bool stop_once) {
  auto tree = config::ParseYaml(absl::StrCat(
      "entrypoint: ./trial\nreproducibility: {experiment_seed: 5}\n"
      "hyperparameters:\n  global_batch_size: 16\n"
      "  increment_by: {type: int, minval: 1, maxval: 50}\n"
      "searcher: {name: adaptive_asha, metric: x, max_length: {batches: 400}, max_trials: 4,\n"
      "  max_rungs: 2, divisor: 2, mode: aggressive, stop_once: ",
      stop_once ? "true" : "false", "}\n"));
  EXPECT_OK(tree);
  auto cfg = config::ParseExperimentConfig(*tree);
  EXPECT_OK(cfg);
  return cfg.ok() ? *cfg : config::ExperimentConfig();
}

config::ExperimentConfig Asha(const std::string& searcher_fields) {
  auto tree =
      config::ParseYaml(absl::StrCat("entrypoint: ./trial\nreproducibility: {experiment_seed: 1}\n"
                                     "hyperparameters: {global_batch_size: 16}\n"
                                     "searcher: {name: adaptive_asha, metric: loss, ",
                                     searcher_fields, "}\n"));
  EXPECT_OK(tree);
  auto cfg = config::ParseExperimentConfig(*tree);
  EXPECT_OK(cfg);
  return cfg.ok() ? *cfg : config::ExperimentConfig();
}

std::unique_ptr<Searcher> Started(const config::ExperimentConfig& cfg) {
  auto s = NewSearcher(cfg);
  EXPECT_OK(s);
  if (!s.ok()) return nullptr;
  (*s)->Start();
  return *std::move(s);
}

// "Continue 0", "Stop 1", "Stop 1 final", "Promote 1", "Complete 2", "Create 3"; RecordMetric
// operations are left out (RecordsTheFirstMetricOfEveryLength checks them).
std::vector<std::string> Kinds(const std::vector<Operation>& ops) {
  std::vector<std::string> out;
  for (const Operation& op : ops) {
    if (std::holds_alternative<RecordMetric>(op)) continue;
    const char* names[] = {"Create", "RecordMetric", "Continue", "Stop", "Promote", "Complete"};
    std::string kind = absl::StrCat(names[op.index()], " ", TrialOf(op));
    if (const Stop* stop = std::get_if<Stop>(&op); stop != nullptr && stop->final) {
      kind += " final";
    }
    out.push_back(kind);
  }
  return out;
}

std::vector<std::string> Reported(Searcher& s, int64_t trial, int64_t length, double metric) {
  auto ops = s.ValidationReported(trial, length, metric);
  EXPECT_OK(ops);
  return ops.ok() ? Kinds(*ops) : std::vector<std::string>{"error"};
}

std::vector<std::string> Exited(Searcher& s, int64_t trial, TrialState state) {
  auto ops = s.TrialExited(trial, state);
  EXPECT_OK(ops);
  return ops.ok() ? Kinds(*ops) : std::vector<std::string>{"error"};
}

// The trial's decisions: the operations of its report but the RecordMetric.
std::vector<Operation> Decide(Searcher& s, int64_t trial, int64_t length, double metric) {
  auto ops = s.ValidationReported(trial, length, metric);
  EXPECT_OK(ops);
  std::vector<Operation> out;
  if (!ops.ok()) return out;
  for (const Operation& op : *ops) {
    if (!std::holds_alternative<RecordMetric>(op)) out.push_back(op);
  }
  return out;
}

// The standing carried by the first operation of `ops` (a Continue, Stop or Promote).
Standing StandingOf(const Operation& op) {
  if (const auto* c = std::get_if<Continue>(&op)) return c->standing;
  if (const auto* s = std::get_if<Stop>(&op)) return s->standing;
  if (const auto* p = std::get_if<Promote>(&op)) return p->standing;
  ADD_FAILURE() << "no standing in " << LogLine(op);
  return {};
}

TEST(AshaSearcherTest, CreatesMaxTrialsSamplesWithTheirBracketsRungs) {
  auto s = NewSearcher(Seed5(false));
  ASSERT_OK(s);
  std::vector<Operation> ops = (*s)->Start();
  ASSERT_EQ(ops.size(), 4u);
  std::vector<int64_t> increments;
  for (size_t i = 0; i < ops.size(); ++i) {
    const Create& c = std::get<Create>(ops[i]);
    EXPECT_EQ(c.trial, static_cast<int64_t>(i));
    EXPECT_EQ(c.seed, config::TrialSeed(5, i));
    EXPECT_EQ(c.rungs, (std::vector<int64_t>{200, 400}));
    increments.push_back(c.hparams["increment_by"].get<int64_t>());
  }
  EXPECT_EQ(increments, (std::vector<int64_t>{12, 21, 23, 20})) << "the sampler changed";
}

TEST(AshaSearcherTest, ModesSetTheBracketsAndTrialsTakeThemInTurn) {
  const std::string common = "max_length: {batches: 64}, max_trials: 4, max_rungs: 3, divisor: 4";
  auto aggressive = NewSearcher(Asha(common + ", mode: aggressive"));
  auto standard = NewSearcher(Asha(common + ", mode: standard"));
  auto conservative = NewSearcher(Asha(common + ", mode: conservative"));
  ASSERT_OK(aggressive);
  ASSERT_OK(standard);
  ASSERT_OK(conservative);
  using R = std::vector<int64_t>;
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ((*aggressive)->Rungs(i), (R{4, 16, 64}));
  EXPECT_EQ((*standard)->Rungs(0), (R{4, 16, 64}));
  EXPECT_EQ((*standard)->Rungs(1), (R{16, 64}));
  EXPECT_EQ((*standard)->Rungs(2), (R{4, 16, 64}));
  EXPECT_EQ((*conservative)->Rungs(1), (R{16, 64}));
  EXPECT_EQ((*conservative)->Rungs(2), (R{64}));
  EXPECT_EQ((*conservative)->Rungs(3), (R{4, 16, 64}));
  EXPECT_TRUE((*conservative)->Rungs(4).empty()) << "no trial 4";
}

TEST(AshaSearcherTest, TrialsAreRankedOnlyAgainstTheirOwnBracket) {
  // standard, max_rungs 3: brackets {4, 16, 64} (trials 0, 2) and {16, 64} (trials 1, 3).
  std::unique_ptr<Searcher> s =
      Started(Asha("max_length: {batches: 64}, max_trials: 4, max_rungs: 3, divisor: 4"));
  EXPECT_THAT(Reported(*s, 0, 4, 1.0), ElementsAre("Continue 0"));
  EXPECT_THAT(Reported(*s, 0, 16, 1.0), ElementsAre("Continue 0"));
  // Trial 1 is the first of its bracket at 16, whatever trial 0 had there.
  std::vector<Operation> ops = Decide(*s, 1, 16, 9.0);
  ASSERT_THAT(Kinds(ops), ElementsAre("Continue 1"));
  EXPECT_EQ(StandingOf(ops[0]).reached, 1);
  EXPECT_EQ(StandingOf(ops[0]).rung, 1);
  EXPECT_EQ(StandingOf(ops[0]).rungs, 2);
  // Trial 3 (bracket 1) at 16 with 10: worse than trial 1's 9, keep ceil(2/4) = 1: it stops.
  EXPECT_THAT(Reported(*s, 3, 16, 10.0), ElementsAre("Stop 3"));
}

TEST(AshaSearcherTest, WithoutStopOnceAStoppedTrialIsPromotedWhenLaterTrialsArrive) {
  std::unique_ptr<Searcher> s = Started(Seed5(/*stop_once=*/false));
  // Trial 0: first at rung 200, best 1 of 1.
  std::vector<Operation> first = Decide(*s, 0, 200, 2400);
  ASSERT_THAT(Kinds(first), ElementsAre("Continue 0"));
  EXPECT_EQ(LogLine(first[0]),
            "adaptive_asha rung 1 of 2 (200 batches): searcher metric 2400 is among the best 1 "
            "of 1 trials of its bracket there; it goes on");
  EXPECT_THAT(Reported(*s, 0, 400, 4800), ElementsAre()) << "the last rung decides nothing";
  EXPECT_THAT(Exited(*s, 0, TrialState::kCompleted), ElementsAre());
  // Trial 1: 4200 against 2400, keep ceil(2/2) = 1: it stops, STOPPED.
  std::vector<Operation> second = Decide(*s, 1, 200, 4200);
  ASSERT_THAT(Kinds(second), ElementsAre("Stop 1"));
  EXPECT_EQ(LogLine(second[0]),
            "adaptive_asha rung 1 of 2 (200 batches): searcher metric 4200 is not among the best "
            "1 of 2 trials of its bracket there; the trial stops (it resumes if later trials "
            "promote it)");
  EXPECT_THAT(Exited(*s, 1, TrialState::kStopped), ElementsAre());
  // Trial 2: 4600, keep ceil(3/2) = 2, two better: it stops. Trial 1 is now second of 3.
  std::vector<Operation> third = Decide(*s, 2, 200, 4600);
  ASSERT_THAT(Kinds(third), ElementsAre("Stop 2", "Promote 1"));
  EXPECT_EQ(LogLine(third[1]),
            "adaptive_asha promotes the trial at 200 batches: it is now among the best 2 of 3 "
            "trials of its bracket there; it resumes from its checkpoint");
  EXPECT_THAT(Exited(*s, 2, TrialState::kStopped), ElementsAre());
  // Trial 1 resumes from its checkpoint: its repeated rung report keeps its first decision.
  EXPECT_THAT(Reported(*s, 1, 200, 1.0), ElementsAre());
  EXPECT_THAT(Reported(*s, 1, 400, 8400), ElementsAre());
  EXPECT_THAT(Exited(*s, 1, TrialState::kCompleted), ElementsAre());
  // Trial 3: 4000, keep ceil(4/2) = 2, one better: it goes on. Trial 2 (3 better) stays.
  std::vector<Operation> fourth = Decide(*s, 3, 200, 4000);
  ASSERT_THAT(Kinds(fourth), ElementsAre("Continue 3"));
  EXPECT_EQ(StandingOf(fourth[0]).keep, 2);
  EXPECT_EQ(StandingOf(fourth[0]).reached, 4);
  EXPECT_THAT(Reported(*s, 3, 400, 8000), ElementsAre());
  // Nothing goes on any more: the STOPPED trial completes.
  auto last = s->TrialExited(3, TrialState::kCompleted);
  ASSERT_OK(last);
  ASSERT_THAT(Kinds(*last), ElementsAre("Complete 2"));
  EXPECT_EQ(LogLine((*last)[0]), "adaptive_asha promoted no further trial; the trial is COMPLETED");
}

TEST(AshaSearcherTest, WithStopOnceAStoppedTrialIsStoppedForGood) {
  std::unique_ptr<Searcher> s = Started(Seed5(/*stop_once=*/true));
  EXPECT_THAT(Reported(*s, 0, 200, 2400), ElementsAre("Continue 0"));
  EXPECT_THAT(Exited(*s, 0, TrialState::kCompleted), ElementsAre());
  std::vector<Operation> stop = Decide(*s, 1, 200, 4200);
  ASSERT_THAT(Kinds(stop), ElementsAre("Stop 1 final"));
  EXPECT_THAT(LogLine(stop[0]), ::testing::EndsWith("; the trial stops"));
  EXPECT_THAT(Exited(*s, 1, TrialState::kCompleted), ElementsAre());
  // Trial 1 would be second of 3 now, but it is not promoted.
  EXPECT_THAT(Reported(*s, 2, 200, 4600), ElementsAre("Stop 2 final"));
  EXPECT_THAT(Exited(*s, 2, TrialState::kCompleted), ElementsAre());
  EXPECT_THAT(Reported(*s, 3, 200, 4000), ElementsAre("Continue 3"));
  EXPECT_THAT(Exited(*s, 3, TrialState::kCompleted), ElementsAre());
}

TEST(AshaSearcherTest, AStoppedTrialIsPromotedAtItsExitWhenOthersOvertookItMeanwhile) {
  // Trials 1 and 2 run at the same time: trial 1 is stopped, then trial 2's worse metric
  // arrives before trial 1 has exited. Promotion waits for the exit (STOPPED).
  std::unique_ptr<Searcher> s = Started(Seed5(false));
  EXPECT_THAT(Reported(*s, 0, 200, 2400), ElementsAre("Continue 0"));
  EXPECT_THAT(Reported(*s, 1, 200, 4200), ElementsAre("Stop 1"));
  EXPECT_THAT(Reported(*s, 2, 200, 4600), ElementsAre("Stop 2"));
  EXPECT_THAT(Exited(*s, 1, TrialState::kStopped), ElementsAre("Promote 1"));
}

TEST(AshaSearcherTest, AMissingMetricRanksLast) {
  std::unique_ptr<Searcher> s = Started(Seed5(false));
  std::vector<Operation> missing = Decide(*s, 0, 200, kNaN);
  ASSERT_THAT(Kinds(missing), ElementsAre("Continue 0")) << "the first at a rung goes on";
  EXPECT_THAT(LogLine(missing[0]), HasSubstr("searcher metric missing is among"));
  // Any metric beats the missing one (keep 1 of 2).
  EXPECT_THAT(Reported(*s, 1, 200, 1e9), ElementsAre("Continue 1"));
  // And a missing one loses to any metric.
  std::unique_ptr<Searcher> later = Started(Seed5(false));
  EXPECT_THAT(Reported(*later, 0, 200, 1e9), ElementsAre("Continue 0"));
  std::vector<Operation> stop = Decide(*later, 1, 200, kNaN);
  ASSERT_THAT(Kinds(stop), ElementsAre("Stop 1"));
  EXPECT_THAT(LogLine(stop[0]), HasSubstr("searcher metric missing is not among the best 1 of 2"));
  // Larger is better: a missing metric still ranks last.
  config::ExperimentConfig larger = Seed5(false);
  larger.searcher.smaller_is_better = false;
  std::unique_ptr<Searcher> l = Started(larger);
  EXPECT_THAT(Reported(*l, 0, 200, -1e9), ElementsAre("Continue 0"));
  EXPECT_THAT(Reported(*l, 1, 200, kNaN), ElementsAre("Stop 1"));
}

TEST(AshaSearcherTest, OnlyTheFirstReportOfARungCounts) {
  std::unique_ptr<Searcher> s = Started(Seed5(false));
  EXPECT_THAT(Reported(*s, 0, 200, 2400), ElementsAre("Continue 0"));
  EXPECT_THAT(Reported(*s, 0, 200, 99999), ElementsAre()) << "repeated: no operation";
  // Trial 1 is compared with trial 0's first 2400, not its later 99999.
  EXPECT_THAT(Reported(*s, 1, 200, 3000), ElementsAre("Stop 1"));
}

TEST(AshaSearcherTest, RecordsTheFirstMetricOfEveryLengthForRestore) {
  std::unique_ptr<Searcher> s = Started(Seed5(false));
  auto first = s->ValidationReported(0, 200, 2400);
  ASSERT_OK(first);
  ASSERT_EQ(first->size(), 2u);
  const RecordMetric* record = std::get_if<RecordMetric>(&(*first)[0]);
  ASSERT_NE(record, nullptr) << "recorded before the decision";
  EXPECT_EQ(record->trial, 0);
  EXPECT_EQ(record->length, 200);
  EXPECT_EQ(record->metric, 2400);
  EXPECT_EQ(LogLine(*record), "");
  auto repeated = s->ValidationReported(0, 200, 1);
  ASSERT_OK(repeated);
  EXPECT_TRUE(repeated->empty()) << "nothing to record again";
  // The last rung decides nothing but is recorded, a missing metric as NaN.
  auto last = s->ValidationReported(0, 400, kNaN);
  ASSERT_OK(last);
  ASSERT_EQ(last->size(), 1u);
  EXPECT_TRUE(std::isnan(std::get<RecordMetric>((*last)[0]).metric));
}

TEST(AshaSearcherTest, RestoreAfterARestartEmitsNothingAlreadyCarriedOut) {
  // The master restarted after trial 2 stopped and promoted trial 1 (QUEUED again).
  auto s = NewSearcher(Seed5(false));
  ASSERT_OK(s);
  auto restored = (*s)->Restore(
      {TrialState::kCompleted, TrialState::kQueued, TrialState::kStopped, TrialState::kQueued},
      {{0, 200, 2400}, {0, 400, 4800}, {1, 200, 4200}, {2, 200, 4600}});
  ASSERT_OK(restored);
  EXPECT_THAT(Kinds(*restored), ElementsAre());
  EXPECT_TRUE((*s)->Start().empty()) << "every trial exists";
  // Trial 1 resumes: its rung was decided before the restart.
  EXPECT_THAT(Reported(**s, 1, 200, 1.0), ElementsAre());
  EXPECT_THAT(Exited(**s, 1, TrialState::kCompleted), ElementsAre());
  std::vector<Operation> fourth = Decide(**s, 3, 200, 4000);
  ASSERT_THAT(Kinds(fourth), ElementsAre("Continue 3"));
  EXPECT_EQ(StandingOf(fourth[0]).reached, 4);
  EXPECT_THAT(Exited(**s, 3, TrialState::kCompleted), ElementsAre("Complete 2"));
}

TEST(AshaSearcherTest, RestoreEmitsWhatTheStoredStateStillCallsFor) {
  // Stopped before trial 1's promotion was carried out, and before trial 3 was created.
  auto s = NewSearcher(Seed5(false));
  ASSERT_OK(s);
  auto restored =
      (*s)->Restore({TrialState::kCompleted, TrialState::kStopped, TrialState::kRunning},
                    {{0, 200, 2400}, {1, 200, 4200}, {2, 200, 4600}});
  ASSERT_OK(restored);
  EXPECT_THAT(Kinds(*restored), ElementsAre("Create 3", "Promote 1"));
  // Nothing goes on any more: the STOPPED ones complete.
  auto settled = NewSearcher(Seed5(false));
  ASSERT_OK(settled);
  auto done = (*settled)->Restore(
      {TrialState::kCompleted, TrialState::kStopped, TrialState::kStopped, TrialState::kCompleted},
      {{0, 200, 2400}, {1, 200, 4200}, {2, 200, 4600}, {3, 200, 2000}});
  ASSERT_OK(done);
  EXPECT_THAT(Kinds(*done), ElementsAre("Complete 1", "Complete 2"));
}

TEST(AshaSearcherTest, RestoreRejectsReportsOfUnknownTrials) {
  auto s = NewSearcher(Seed5(false));
  ASSERT_OK(s);
  auto restored = (*s)->Restore({TrialState::kRunning}, {{1, 200, 4200}});
  EXPECT_THAT(restored, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("trial 1")));
}

TEST(AshaSearcherTest, EventsForATrialNeverCreatedAreRejected) {
  auto s = NewSearcher(Seed5(false));
  ASSERT_OK(s);
  EXPECT_THAT((*s)->ValidationReported(0, 200, 1), StatusIs(absl::StatusCode::kInvalidArgument))
      << "not started";
  (*s)->Start();
  EXPECT_THAT((*s)->TrialExited(4, TrialState::kCompleted),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace cohort::master::searcher
