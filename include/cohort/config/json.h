#pragma once
// Json: the tree type of experiment configs (nlohmann's insertion-ordered JSON), so that an
// effective config reads in the order it was written. Used by ExperimentConfig's free-form
// sections (`data`, hyperparameter values) and by the config library's YAML <-> JSON helpers.

#include "nlohmann/json.hpp"

namespace cohort::config {

using Json = nlohmann::ordered_json;

}  // namespace cohort::config
