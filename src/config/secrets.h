#pragma once
// The secrets an experiment config or a template may hold, and the one function that masks
// them for whoever may not read them (docs/security.md, "Secrets"). The master masks what it
// answers with it, so the CLI and the web interface, which show what the REST API answers,
// show the masks too. Masked fields (a value that is a secret is replaced by "***"; a KEY=VALUE
// keeps its KEY):
//   * environment.environment_variables: every value (a list, or Determined's map of lists by
//     device type);
//   * environment.registry_auth: password, auth, identitytoken, registrytoken;
//   * checkpoint_storage and data_layer: access_key, secret_key, connection_string, credential.
// Pure; thread-safe.
//
// Example:
//   std::string shown = viewer_is_owner ? yaml : MaskSecretsInYaml(yaml);

#include <string>

#include "config/yaml_json.h"

namespace cohort::config {

// The mask a secret value is shown as.
inline constexpr char kSecretMask[] = "***";

// Masks every secret field of `tree` (an experiment config or a template) in place; anything
// else is left as it is.
void MaskSecrets(Json& tree);

// MaskSecrets of the YAML text `yaml`, as YAML (the text itself, comments kept, when it holds no
// secret); YAML that does not parse is shown as a comment saying it is hidden (it may hold
// secrets the masks cannot find).
std::string MaskSecretsInYaml(const std::string& yaml);

}  // namespace cohort::config
