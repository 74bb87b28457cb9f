// Fuzz target: experiment configs as `cohort experiment validate` and the master's experiment
// routes read them: YAML text -> ParseYaml -> MergeTemplate -> ParseExperimentConfig ->
// SampleHyperparameters.
//
// Input: the config's YAML text; when it holds a NUL byte, the text before the first NUL is a
// template merged under the config after it.
// Invariants: a refusal says what is wrong; an accepted config's effective tree, written as
// YAML and read again, parses to the same effective tree; the hyperparameters of an accepted
// config that Cohort can run (CheckRunnable) can be sampled (the parser checks the grid's rules).

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "config/config_parser.h"
#include "config/creation_check.h"
#include "config/error_list.h"
#include "config/hparam_sampler.h"
#include "config/template_merge.h"
#include "config/yaml_json.h"
#include "fuzz/fuzz_check.h"

namespace cohort::config {
namespace {

constexpr uint32_t kSeed = 7;

// The config in `text` (with its template, if any) as a tree, or the refusal.
absl::StatusOr<Json> ReadTree(absl::string_view text) {
  const size_t nul = text.find('\0');
  if (nul == absl::string_view::npos) return ParseYaml(text);
  absl::StatusOr<Json> tmpl = ParseYaml(text.substr(0, nul));
  if (!tmpl.ok()) return tmpl.status();
  absl::StatusOr<Json> config = ParseYaml(text.substr(nul + 1));
  if (!config.ok()) return config.status();
  return MergeTemplate(*tmpl, *config);
}

void CheckAccepted(const ExperimentConfig& config) {
  const std::string yaml = ToYaml(config.effective);
  absl::StatusOr<Json> reread = ParseYaml(yaml);
  FUZZ_CHECK(reread.ok(), "the effective config does not read back: " + reread.status().ToString() +
                              "\n" + yaml);
  absl::StatusOr<ExperimentConfig> again = ParseExperimentConfig(*reread, {.seed_if_absent = 1});
  FUZZ_CHECK(again.ok(),
             "the effective config is refused: " + again.status().ToString() + "\n" + yaml);
  FUZZ_CHECK(again->effective.dump() == config.effective.dump(),
             "the effective config changes when parsed again:\n" + yaml + "---\n" +
                 ToYaml(again->effective));
  if (!CheckRunnable(config).ok()) return;  // validated only (pbt, custom, s3, ...)
  absl::StatusOr<std::vector<Json>> samples =
      SampleHyperparameters(config.hyperparameters, config.searcher, config.experiment_seed);
  FUZZ_CHECK(samples.ok(), "an accepted config's hyperparameters cannot be sampled: " +
                               samples.status().ToString() + "\n" + yaml);
}

}  // namespace
}  // namespace cohort::config

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cohort::config;
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<Json> tree = ReadTree(text);
  if (!tree.ok()) {
    FUZZ_CHECK_REFUSAL(tree.status());
    return 0;
  }
  absl::StatusOr<ExperimentConfig> config = ParseExperimentConfig(*tree, {.seed_if_absent = kSeed});
  if (!config.ok()) {
    FUZZ_CHECK_REFUSAL(config.status());
    FUZZ_CHECK(!ConfigErrors(config.status()).empty(), config.status().ToString());
    return 0;
  }
  CheckAccepted(*config);
  return 0;
}
