#include "config/secrets.h"

namespace cohort::config {
namespace {

// "KEY=VALUE" as "KEY=***" (a bare KEY, which only passes the agent's value on, as it is);
// anything else as "***".
Json MaskAssignment(const Json& entry) {
  if (!entry.is_string()) return kSecretMask;
  const std::string text = entry.get<std::string>();
  const size_t eq = text.find('=');
  return eq == std::string::npos ? Json(text) : Json(text.substr(0, eq + 1) + kSecretMask);
}

void MaskEnvironmentVariables(Json& env) {
  if (env.is_array()) {
    for (Json& entry : env) entry = MaskAssignment(entry);
  } else if (env.is_object()) {
    for (auto& [device, list] : env.items()) {
      if (list.is_array()) {
        for (Json& entry : list) entry = MaskAssignment(entry);
      } else {
        list = kSecretMask;
      }
    }
  } else if (!env.is_null()) {
    env = kSecretMask;
  }
}

// Masks the fields `keys` of the object `section` that are present and not null.
void MaskFields(Json& section, std::initializer_list<const char*> keys) {
  if (!section.is_object()) return;
  for (const char* key : keys) {
    auto it = section.find(key);
    if (it != section.end() && !it->is_null()) *it = kSecretMask;
  }
}

}  // namespace

void MaskSecrets(Json& tree) {
  if (!tree.is_object()) return;
  if (auto environment = tree.find("environment");
      environment != tree.end() && environment->is_object()) {
    if (auto env = environment->find("environment_variables"); env != environment->end()) {
      MaskEnvironmentVariables(*env);
    }
    if (auto auth = environment->find("registry_auth"); auth != environment->end()) {
      MaskFields(*auth, {"password", "auth", "identitytoken", "registrytoken"});
    }
  }
  for (const char* section : {"checkpoint_storage", "data_layer"}) {
    if (auto it = tree.find(section); it != tree.end()) {
      MaskFields(*it, {"access_key", "secret_key", "connection_string", "credential"});
    }
  }
}

std::string MaskSecretsInYaml(const std::string& yaml) {
  absl::StatusOr<Json> tree = ParseYaml(yaml);
  if (!tree.ok()) return "# the config is hidden: it does not parse, and may hold secrets\n";
  if (!tree->is_object()) return yaml;
  Json masked = *tree;
  MaskSecrets(masked);
  return masked == *tree ? yaml : ToYaml(masked);  // no secret: the text as written
}

}  // namespace cohort::config
