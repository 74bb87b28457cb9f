#include "master/searcher/searcher.h"

#include <algorithm>

#include "cohort/status.h"
#include "config/hparam_sampler.h"
#include "config/asha.h"
#include "master/searcher/asha_searcher.h"
#include "master/searcher/non_adaptive_searcher.h"

namespace cohort::master::searcher {

absl::StatusOr<std::unique_ptr<Searcher>> NewSearcher(const config::ExperimentConfig& config,
                                                      const SearcherOptions& options) {
  COHORT_ASSIGN_OR_RETURN(std::vector<config::Json> samples,
                          config::SampleHyperparameters(config.hyperparameters, config.searcher,
                                                        config.experiment_seed));
  if (options.max_trials) {
    samples.resize(
        std::min(samples.size(), static_cast<size_t>(std::max<int64_t>(0, *options.max_trials))));
  }
  if (config::HasRungs(config.searcher)) {
    return std::make_unique<AshaSearcher>(config.searcher, std::move(samples),
                                          config.experiment_seed);
  }
  return std::make_unique<NonAdaptiveSearcher>(std::move(samples), config.experiment_seed);
}

}  // namespace cohort::master::searcher
