#pragma once
// Reading a search from the CLI (issue 38): `cohort experiment trials ID` prints the trials
// table (wire/trial_table.h: hyperparameters beside the best validation, the best trial marked)
// and `cohort trial compare ID ID...` puts two to ten trials side by side (their hparams, with
// the differing ones marked, best and latest validation, progress and checkpoints). Both take
// --json. The formatting is pure (TrialTableText, CompareText) so it is unit-tested; the
// commands only fetch and print.

#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "cli/command_context.h"
#include "wire/trial_table.h"

namespace cohort::cli {

// A table as the CLI prints it (PrintTable).
struct TextTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

// The trials table: TRIAL (the best marked '*'), STATE, BATCHES, RESTARTS, one column per
// hyperparameter, the searcher metric and every other metric of the best validations, and
// CHECKPOINTS. Rows sorted by `sort` (a column's name; empty: the searcher metric, best first),
// trials without a value last; `reverse` flips the order of those with one. InvalidArgument
// naming the columns for an unknown `sort`.
absl::StatusOr<TextTable> TrialTableText(const wire::TrialTable& table, const std::string& sort,
                                         bool reverse);

// Two to ten trials side by side: one column per trial, one row per field; a hyperparameter
// whose values differ is marked " *". `rows[i]` is trial i's row of its experiment's table.
TextTable CompareText(const std::vector<int64_t>& experiments,
                      const std::vector<wire::TrialTableRow>& rows, const std::string& metric);

// `experiment trials` under `experiment`, `trial compare` under `trial`.
void AddExperimentTrials(CLI::App* experiment, CommandContext* context);
void AddTrialCompare(CLI::App* trial, CommandContext* context);

}  // namespace cohort::cli
