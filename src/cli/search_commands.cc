#include "cli/search_commands.h"

#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/exit_codes.h"
#include "cli/table.h"
#include "wire/trial_bodies.h"

namespace cohort::cli {
namespace {

using wire::Json;

// A table cell for `value`: numbers with six significant digits, strings as they are, "-" for
// none.
std::string Cell(const Json& value) {
  if (value.is_null()) return "-";
  if (value.is_number()) return FormatQuantity(value.get<double>(), wire::SeriesUnit::kNone);
  if (value.is_string()) return value.get<std::string>();
  return value.dump();
}

// Every column of one trial by name, as values (the cells and the sort read them).
std::map<std::string, Json> Columns(const wire::TrialTableRow& row) {
  std::map<std::string, Json> out = {{"trial", row.trial_id},
                                     {"state", wire::Name(row.state)},
                                     {"batches", row.batches},
                                     {"restarts", row.restarts},
                                     {"checkpoints", row.checkpoints}};
  for (const auto& [name, value] : wire::FlattenHparams(row.hparams)) out[name] = value;
  if (row.best_validation && row.best_validation->metrics.is_object()) {
    for (auto it = row.best_validation->metrics.begin(); it != row.best_validation->metrics.end();
         ++it) {
      out[it.key()] = *it;
    }
  }
  return out;
}

// The column names: fixed ones, the hyperparameters, the searcher metric, the other metrics.
std::vector<std::string> Header(const wire::TrialTable& table) {
  std::set<std::string> hparams;
  std::set<std::string> metrics;
  for (const wire::TrialTableRow& row : table.trials) {
    for (const auto& [name, value] : wire::FlattenHparams(row.hparams)) hparams.insert(name);
    if (!row.best_validation || !row.best_validation->metrics.is_object()) continue;
    for (auto it = row.best_validation->metrics.begin(); it != row.best_validation->metrics.end();
         ++it) {
      if (it.key() != table.metric) metrics.insert(it.key());
    }
  }
  std::vector<std::string> header = {"trial", "state", "batches", "restarts"};
  header.insert(header.end(), hparams.begin(), hparams.end());
  if (!table.metric.empty()) header.push_back(table.metric);
  header.insert(header.end(), metrics.begin(), metrics.end());
  header.push_back("checkpoints");
  return header;
}

// Whether row a comes before row b by `column` (numbers by value, text by text); rows without
// a value go last whatever the direction.
bool Before(const std::map<std::string, Json>& a, const std::map<std::string, Json>& b,
            const std::string& column, bool descending) {
  const auto x = a.find(column);
  const auto y = b.find(column);
  const bool has_x = x != a.end() && !x->second.is_null();
  const bool has_y = y != b.end() && !y->second.is_null();
  if (has_x != has_y) return has_x;
  if (!has_x) return false;
  if (x->second.is_number() && y->second.is_number()) {
    const double u = x->second.get<double>(), v = y->second.get<double>();
    return descending ? u > v : u < v;
  }
  const std::string u = Cell(x->second), v = Cell(y->second);
  return descending ? u > v : u < v;
}

}  // namespace

absl::StatusOr<TextTable> TrialTableText(const wire::TrialTable& table, const std::string& sort,
                                         bool reverse) {
  TextTable out;
  out.header = Header(table);
  const std::string column = sort.empty() ? table.metric : sort;
  if (!column.empty() &&
      std::find(out.header.begin(), out.header.end(), column) == out.header.end()) {
    return absl::InvalidArgumentError(absl::StrCat("--sort ", column, ": no such column (",
                                                   absl::StrJoin(out.header, ", "), ")"));
  }
  std::vector<std::map<std::string, Json>> rows;
  for (const wire::TrialTableRow& row : table.trials) rows.push_back(Columns(row));
  // The searcher metric sorts best first; any other column ascending.
  bool descending = column == table.metric && !table.smaller_is_better;
  if (reverse) descending = !descending;
  if (!column.empty()) {
    std::stable_sort(rows.begin(), rows.end(), [&](const auto& a, const auto& b) {
      return Before(a, b, column, descending);
    });
  }
  for (const std::map<std::string, Json>& row : rows) {
    std::vector<std::string> cells;
    for (const std::string& name : out.header) {
      const auto it = row.find(name);
      cells.push_back(it == row.end() ? "-" : Cell(it->second));
    }
    if (table.best_trial && row.at("trial") == *table.best_trial) cells[0] += "*";
    out.rows.push_back(std::move(cells));
  }
  return out;
}

TextTable CompareText(const std::vector<int64_t>& experiments,
                      const std::vector<wire::TrialTableRow>& rows, const std::string& metric) {
  TextTable out;
  out.header = {"field"};
  for (const wire::TrialTableRow& r : rows) out.header.push_back(absl::StrCat("trial ", r.trial_id));
  std::vector<std::map<std::string, Json>> columns;
  std::set<std::string> hparams;
  for (const wire::TrialTableRow& r : rows) {
    columns.push_back(Columns(r));
    for (const auto& [name, value] : wire::FlattenHparams(r.hparams)) hparams.insert(name);
  }
  const auto add = [&](const std::string& label, const std::function<Json(size_t)>& value,
                       bool mark_differences) {
    std::vector<std::string> cells = {label};
    std::set<std::string> distinct;
    for (size_t i = 0; i < rows.size(); ++i) {
      cells.push_back(Cell(value(i)));
      distinct.insert(cells.back());
    }
    if (mark_differences && distinct.size() > 1) cells[0] += " *";
    out.rows.push_back(std::move(cells));
  };
  add("experiment", [&](size_t i) { return Json(experiments[i]); }, false);
  for (const char* field : {"state", "batches", "restarts", "checkpoints"}) {
    add(field, [&](size_t i) { return columns[i][field]; }, false);
  }
  for (const std::string& name : hparams) {
    add(name, [&](size_t i) { return columns[i].count(name) ? columns[i][name] : Json(); }, true);
  }
  const auto point = [&](size_t i, bool best) -> const std::optional<wire::ValidationPoint>& {
    return best ? rows[i].best_validation : rows[i].latest_validation;
  };
  for (bool best : {true, false}) {
    const std::string which = best ? "best " : "latest ";
    add(which + "validation at batch", [&](size_t i) {
      return point(i, best) ? Json(point(i, best)->batches) : Json();
    }, false);
    add(which + metric, [&](size_t i) {
      const auto& p = point(i, best);
      return p && p->metrics.contains(metric) ? p->metrics[metric] : Json();
    }, false);
  }
  return out;
}

}  // namespace cohort::cli

namespace cohort::cli {
namespace {

absl::StatusOr<wire::TrialTable> FetchTable(client::MasterClient& client, int64_t experiment) {
  return GetAs(client, absl::StrCat("/api/v1/experiments/", experiment, "/trials"),
               wire::ParseTrialTable);
}

struct TrialsArgs {
  int64_t id = 0;
  std::string sort;
  bool reverse = false;
};

int PrintTrialTable(const CommandContext& context, const TrialsArgs& args) {
  client::MasterClient client = context.Client();
  absl::StatusOr<wire::TrialTable> table = FetchTable(client, args.id);
  if (!table.ok()) return Fail(table.status());
  if (context.json()) return PrintJson(table->ToJson());
  absl::StatusOr<TextTable> text = TrialTableText(*table, args.sort, args.reverse);
  if (!text.ok()) return Fail(text.status());
  PrintTable(std::cout, text->header, text->rows);
  if (table->best_trial) {
    std::cout << "\n* best " << table->metric << " ("
              << (table->smaller_is_better ? "lowest" : "highest") << "): trial "
              << *table->best_trial << "\n";
  }
  return kExitOk;
}

int Compare(const CommandContext& context, const std::vector<int64_t>& ids) {
  client::MasterClient client = context.Client();
  std::map<int64_t, wire::TrialTable> tables;  // by experiment
  std::vector<int64_t> experiments;
  std::vector<wire::TrialTableRow> rows;
  std::string metric;
  for (int64_t id : ids) {
    absl::StatusOr<wire::TrialDescription> t =
        GetAs(client, absl::StrCat("/api/v1/trials/", id),
              [](const Json& j) { return wire::ParseTrialDescription(j); });
    if (!t.ok()) return Fail(t.status());
    if (tables.count(t->experiment_id) == 0) {
      absl::StatusOr<wire::TrialTable> table = FetchTable(client, t->experiment_id);
      if (!table.ok()) return Fail(table.status());
      tables[t->experiment_id] = *std::move(table);
    }
    const wire::TrialTable& table = tables[t->experiment_id];
    if (metric.empty()) metric = table.metric;
    const auto row = std::find_if(table.trials.begin(), table.trials.end(),
                                  [&](const wire::TrialTableRow& r) { return r.trial_id == id; });
    if (row == table.trials.end()) {
      return Fail(absl::NotFoundError(absl::StrCat("trial ", id, " is not in experiment ",
                                                   t->experiment_id, "'s table")));
    }
    experiments.push_back(t->experiment_id);
    rows.push_back(*row);
  }
  if (context.json()) {
    Json out = Json::array();
    for (size_t i = 0; i < rows.size(); ++i) {
      wire::TrialTable one{.metric = metric, .trials = {rows[i]}};
      Json row = one.ToJson()["trials"][0];
      row["experiment_id"] = experiments[i];
      out.push_back(std::move(row));
    }
    return PrintJson(Json{{"metric", metric}, {"trials", out}});
  }
  const TextTable text = CompareText(experiments, rows, metric);
  PrintTable(std::cout, text.header, text.rows);
  std::cout << "\n* the trials' values differ\n";
  return kExitOk;
}

}  // namespace

void AddExperimentTrials(CLI::App* experiment, CommandContext* context) {
  auto args = std::make_shared<TrialsArgs>();
  CLI::App* trials = experiment->add_subcommand(
      "trials", "The trials as one table: hyperparameters beside their best validation");
  trials->add_option("id", args->id, "Experiment id")->required();
  trials->add_option("--sort", args->sort,
                     "Sort by this column (a hyperparameter, a metric, batches, ...; default: "
                     "the searcher's metric, best first)");
  trials->add_flag("--reverse", args->reverse, "Reverse the order");
  context->AddJsonFlag(trials);
  trials->footer(
      "Each trial's best validation is its report with the best searcher metric; the best trial "
      "is marked '*'.\nExamples:\n  cohort experiment trials 7\n"
      "  cohort experiment trials 7 --sort lr --reverse\n  cohort experiment trials 7 --json");
  context->OnRun(trials, [context, args] { return PrintTrialTable(*context, *args); });
}

void AddTrialCompare(CLI::App* trial, CommandContext* context) {
  auto ids = std::make_shared<std::vector<int64_t>>();
  CLI::App* compare = trial->add_subcommand(
      "compare", "Two to ten trials side by side: hyperparameters (differences marked), "
                 "best and latest validation, progress");
  compare->add_option("ids", *ids, "Trial ids (2 to 10; of one experiment or several)")
      ->required()
      ->expected(2, 10);
  context->AddJsonFlag(compare);
  compare->footer("Example:\n  cohort trial compare 3 7 9");
  context->OnRun(compare, [context, ids] { return Compare(*context, *ids); });
}

}  // namespace cohort::cli
