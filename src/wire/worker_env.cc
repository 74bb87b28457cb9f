#include "wire/worker_env.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/env.h"
#include "common/json_bounded.h"

namespace cohort::wire {
namespace {

constexpr size_t kShownBytes = 200;

std::optional<std::string> Set(const std::string& value) {
  return value.empty() ? std::nullopt : std::optional<std::string>(value);
}

std::string Shown(const std::string& value) { return value.substr(0, kShownBytes); }

absl::StatusOr<std::optional<int64_t>> ParseInt(const char* name, const std::string& text,
                                                int64_t min) {
  if (text.empty()) return std::optional<int64_t>();
  int64_t value = 0;
  if (!absl::SimpleAtoi(text, &value) || value < min) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, " must be an integer >= ", min, ", got '", Shown(text), "'"));
  }
  return std::optional<int64_t>(value);
}

}  // namespace

std::string FormatSearcherOps(const std::vector<int64_t>& ops) { return absl::StrJoin(ops, ","); }

absl::StatusOr<std::vector<int64_t>> ParseSearcherOps(const std::string& text) {
  std::vector<int64_t> out;
  if (text.empty()) return out;
  for (absl::string_view piece : absl::StrSplit(text, ',')) {
    int64_t v = 0;
    if (!absl::SimpleAtoi(piece, &v) || v <= 0 || (!out.empty() && v <= out.back())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "COHORT_SEARCHER_OPS must be ascending lengths >= 1 separated by commas, got '",
          Shown(text), "'"));
    }
    out.push_back(v);
  }
  return out;
}

std::map<std::string, std::optional<std::string>> WorkerEnv::ToEnv() const {
  std::map<std::string, std::optional<std::string>> env;
  env["COHORT_CONFIG"] = Set(config_path);
  env["COHORT_RUN_DIR"] = Set(run_dir);
  env["COHORT_HPARAMS"] =
      hparams ? std::optional<std::string>(hparams->dump()) : std::optional<std::string>();
  env["COHORT_TRIAL_SEED"] =
      trial_seed ? std::optional<std::string>(absl::StrCat(*trial_seed)) : std::nullopt;
  env["COHORT_TRIAL_ID"] =
      trial_id ? std::optional<std::string>(absl::StrCat(*trial_id)) : std::nullopt;
  env["COHORT_LATEST_CHECKPOINT"] = Set(latest_checkpoint);
  env["COHORT_WARM_START"] = Set(warm_start);
  env["COHORT_SEARCHER_OPS"] = Set(FormatSearcherOps(searcher_ops));
  env["COHORT_MASTER_URL"] = Set(master_url);
  env["COHORT_ALLOCATION_TOKEN"] = Set(allocation_token);
  if (num_threads) {
    for (const char* var : kThreadVariables) env[var] = absl::StrCat(*num_threads);
  }
  return env;
}

absl::StatusOr<WorkerEnv> WorkerEnv::FromEnv(
    const std::function<std::optional<std::string>(const char*)>& lookup) {
  auto get = [&](const char* name) { return lookup(name).value_or(""); };
  WorkerEnv env;
  env.config_path = get("COHORT_CONFIG");
  env.run_dir = get("COHORT_RUN_DIR");
  if (const std::string text = get("COHORT_HPARAMS"); !text.empty()) {
    if (absl::Status depth = CheckJsonDepth(text); !depth.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("COHORT_HPARAMS is refused: ", depth.message()));
    }
    Json hparams = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (hparams.is_discarded() || !hparams.is_object()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "COHORT_HPARAMS must be a JSON object of hyperparameters, got '", Shown(text), "'"));
    }
    env.hparams = std::move(hparams);
  }
  auto seed = ParseInt("COHORT_TRIAL_SEED", get("COHORT_TRIAL_SEED"), 0);
  if (!seed.ok()) return seed.status();
  env.trial_seed = *seed;
  auto id = ParseInt("COHORT_TRIAL_ID", get("COHORT_TRIAL_ID"), 1);
  if (!id.ok()) return id.status();
  env.trial_id = *id;
  env.latest_checkpoint = get("COHORT_LATEST_CHECKPOINT");
  env.warm_start = get("COHORT_WARM_START");
  absl::StatusOr<std::vector<int64_t>> ops = ParseSearcherOps(get("COHORT_SEARCHER_OPS"));
  if (!ops.ok()) return ops.status();
  env.searcher_ops = *std::move(ops);
  env.master_url = get("COHORT_MASTER_URL");
  env.allocation_token = get("COHORT_ALLOCATION_TOKEN");
  auto threads = ParseInt("COHORT_NUM_THREADS", get("COHORT_NUM_THREADS"), 1);
  if (!threads.ok()) return threads.status();
  if (*threads) {
    if (**threads > (1 << 16)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "COHORT_NUM_THREADS must be at most 65536, got '", get("COHORT_NUM_THREADS"), "'"));
    }
    env.num_threads = static_cast<int>(**threads);
  }
  return env;
}

absl::StatusOr<WorkerEnv> WorkerEnv::FromProcessEnv() {
  return FromEnv([](const char* name) { return env::Get(name); });
}

}  // namespace cohort::wire
