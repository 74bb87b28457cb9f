// The `environment` section. Cohort runs a trial as a process on the agent's host, so of
// Determined's environment only the variables are honoured; the container settings (image, pod
// spec, registry, capabilities, ports) are type-checked as Determined does and ignored with a
// warning.

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "config/internal/object_reader.h"
#include "config/internal/section_parsers.h"

namespace cohort::config::internal {
namespace {

using Vars = std::vector<std::pair<std::string, std::string>>;

constexpr char kNoContainer[] =
    "Cohort runs trials as processes on the agent's host, not in containers";
constexpr char kNoProxy[] = "Cohort does not proxy ports to trials";
// Determined's per-accelerator keys; `gpu` is its legacy name for `cuda`.
const std::vector<std::string> kAcceleratorKeys = {"cpu", "cuda", "rocm", "gpu"};

// What Determined refuses inside pod_spec.spec.containers[i], with its reasons.
const std::vector<std::pair<std::string, std::string>> kFixedContainerFields = {
    {"image", "container Image is not configurable, set it in the experiment config"},
    {"command", "container Command is not configurable"},
    {"args", "container Args are not configurable"},
    {"working_dir", "container WorkingDir is not configurable"},
    {"ports", "container Ports are not configurable"},
    {"env_from", "container EnvFrom is not configurable"},
    {"env", "container Env is not configurable, set it in the experiment config"},
    {"liveness_probe", "container LivenessProbe is not configurable"},
    {"readiness_probe", "container ReadinessProbe is not configurable"},
    {"startup_probe", "container StartupProbe is not configurable"},
    {"lifecycle", "container Lifecycle is not configurable"},
    {"termination_message_path", "container TerminationMessagePath is not configurable"},
    {"termination_message_policy", "container TerminationMessagePolicy is not configurable"},
    {"image_pull_policy",
     "container ImagePullPolicy is not configurable, set it in the experiment config"},
    {"security_context",
     "container SecurityContext is not configurable, set it in the experiment config"},
};

// KEY=VALUE strings into `vars`; a key given twice (a template's list followed by the config's)
// takes the later value, as it would in a shell environment.
void AddVars(const std::vector<std::string>& list, const std::string& path, ErrorList* errors,
             Vars* vars) {
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string& kv = list[i];
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      errors->Add(absl::StrCat(path, "[", i, "]"),
                  absl::StrCat("expected KEY=VALUE, got '", kv, "'"));
      continue;
    }
    std::string key = kv.substr(0, eq);
    auto same =
        std::find_if(vars->begin(), vars->end(), [&](const auto& var) { return var.first == key; });
    if (same != vars->end()) {
      same->second = kv.substr(eq + 1);
    } else {
      vars->emplace_back(std::move(key), kv.substr(eq + 1));
    }
  }
}

// environment_variables: a list of KEY=VALUE, or the map {cpu, cuda, rocm, gpu} of such lists.
// Cohort's slots take the `cpu` list (the others are checked and kept).
Vars ReadVariables(ObjectReader& r, ErrorList* errors, Json* effective) {
  Vars vars;
  const Json* value = r.Get("environment_variables");
  if (value == nullptr) {
    r.Set("environment_variables", Json::array());
  } else if (value->is_object()) {
    ObjectReader m(*value, r.PathOf("environment_variables"), errors,
                   &(*effective)["environment_variables"]);
    for (const std::string& key : kAcceleratorKeys) {
      Vars ignored;
      if (auto list = m.StringList(key)) {
        AddVars(*list, m.PathOf(key), errors, key == "cpu" ? &vars : &ignored);
      }
    }
    m.Finish();
  } else if (auto list = r.StringList("environment_variables")) {
    AddVars(*list, r.PathOf("environment_variables"), errors, &vars);
  }
  return vars;
}

// image: a name, or the map {cpu, cuda, rocm, gpu} of names.
void ReadImage(ObjectReader& r, ErrorList* errors, Json* effective) {
  const Json* image = r.Get("image");
  if (image == nullptr) return;
  if (image->is_object()) {
    ObjectReader m(*image, r.PathOf("image"), errors, &(*effective)["image"]);
    for (const std::string& key : kAcceleratorKeys) m.String(key);
    m.Finish();
  } else if (image->is_string()) {
    r.Set("image", *image);
  } else {
    errors->Add(r.PathOf("image"),
                absl::StrCat("expected an image name or a map {cpu, cuda, rocm} of image names, "
                             "got ",
                             DescribeValue(*image)));
    return;
  }
  r.Warn("image", kNoContainer);
}

// pod_spec: a Kubernetes pod, free-form except for what Determined itself sets.
void CheckPodSpec(const Json& pod, const std::string& path, ErrorList* errors) {
  for (const char* key : {"name", "name_space"}) {
    if (pod.contains(key)) {
      errors->Add(JoinPath(path, key),
                  absl::StrCat("pod ", key == std::string("name") ? "Name" : "NameSpace",
                               " is not a configurable option"));
    }
  }
  const Json* spec = pod.contains("spec") ? &pod.at("spec") : nullptr;
  if (spec == nullptr || spec->is_null()) return;
  if (!spec->is_object()) {
    errors->Add(JoinPath(path, "spec"), absl::StrCat("expected a map, got ", DescribeValue(*spec)));
    return;
  }
  const Json* containers = spec->contains("containers") ? &spec->at("containers") : nullptr;
  if (containers == nullptr || containers->is_null()) return;
  const std::string containers_path = JoinPath(path, "spec.containers");
  if (!containers->is_array()) {
    errors->Add(containers_path, absl::StrCat("expected a list, got ", DescribeValue(*containers)));
    return;
  }
  for (size_t i = 0; i < containers->size(); ++i) {
    const Json& c = (*containers)[i];
    const std::string item_path = absl::StrCat(containers_path, "[", i, "]");
    if (!c.is_object()) {
      errors->Add(item_path, absl::StrCat("expected a map, got ", DescribeValue(c)));
      continue;
    }
    for (const auto& [key, why] : kFixedContainerFields) {
      if (c.contains(key)) errors->Add(JoinPath(item_path, key), why);
    }
  }
}

void ReadPorts(ObjectReader& r, ErrorList* errors) {
  if (const Json* ports = r.Map("ports")) {
    for (const auto& [name, port] : ports->items()) {
      if (!port.is_number_integer()) {
        errors->Add(JoinPath(r.PathOf("ports"), name),
                    absl::StrCat("expected an integer, got ", DescribeValue(port)));
      }
    }
  }
  r.Warn("ports", kNoContainer);
}

void ReadRegistryAuth(ObjectReader& r, ErrorList* errors, Json* effective) {
  const Json* auth = r.Get("registry_auth");
  if (auth == nullptr) return;
  ObjectReader a(*auth, r.PathOf("registry_auth"), errors, &(*effective)["registry_auth"]);
  for (const char* key : {"username", "password", "auth", "email", "serveraddress", "identitytoken",
                          "registrytoken"}) {
    a.String(key);
  }
  a.Finish();
  r.Warn("registry_auth", kNoContainer);
}

void ReadProxyPorts(ObjectReader& r, ErrorList* errors) {
  r.ForEachItem("proxy_ports", [&](const Json& item, const std::string& path, Json* out) {
    ObjectReader p(item, path, errors, out);
    p.Require("proxy_port");
    p.Number("proxy_port");
    p.Bool("proxy_tcp", false);
    p.Bool("unauthenticated", false);
    p.Bool("default_service_id", false);
    p.Finish();
  });
  r.Warn("proxy_ports", kNoProxy);
}

}  // namespace

Vars ParseEnvironment(const Json& node, ErrorList* errors, Json* effective) {
  ObjectReader r(node, "environment", errors, effective);
  ReadImage(r, errors, effective);
  Vars vars = ReadVariables(r, errors, effective);
  ReadPorts(r, errors);
  r.Ignored("force_pull_image", kNoContainer, [&] { return r.Bool("force_pull_image"); });
  if (const Json* pod = r.Map("pod_spec")) CheckPodSpec(*pod, r.PathOf("pod_spec"), errors);
  r.Warn("pod_spec", "Cohort does not run trials on Kubernetes");
  ReadRegistryAuth(r, errors, effective);
  for (const char* key : {"add_capabilities", "drop_capabilities"}) {
    r.Ignored(key, kNoContainer, [&] { return r.StringList(key); });
  }
  ReadProxyPorts(r, errors);
  r.Finish();
  return vars;
}

}  // namespace cohort::config::internal
