#include "master/resource_pools.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "config/yaml_json.h"
#include "wire/limits.h"

namespace cohort::master {
namespace {

using Json = config::Json;

absl::Status Bad(const std::string& where, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(where, ": ", what));
}

// One entry of resource_pools (`where` names it: "pools.yaml: resource_pools[0]").
absl::StatusOr<std::pair<std::string, ResourcePool>> ParsePool(const Json& node,
                                                               const std::string& where) {
  if (!node.is_object()) return Bad(where, "must be a mapping with pool_name");
  const auto name = node.find("pool_name");
  if (name == node.end() || !name->is_string() || !wire::IsSafeName(name->get<std::string>())) {
    return Bad(where + ".pool_name",
               "must be a name of letters, digits, '-', '_' and '.' (it names the pool in "
               "resources.resource_pool and cohort-agent --resource-pool)");
  }
  ResourcePool pool;
  if (auto d = node.find("description"); d != node.end()) {
    if (!d->is_string()) return Bad(where + ".description", "must be a string");
    pool.description = d->get<std::string>();
  }
  if (auto s = node.find("scheduler"); s != node.end()) {
    if (!s->is_object()) return Bad(where + ".scheduler", "must be a mapping (type, preemption)");
    if (auto t = s->find("type"); t != s->end()) {
      const std::string type = t->is_string() ? t->get<std::string>() : t->dump();
      if (type == "fair_share") {
        pool.spec.policy = PoolPolicy::kFairShare;
      } else if (type != "priority") {
        return Bad(where + ".scheduler.type",
                   absl::StrCat("must be priority or fair_share, got '", type, "'"));
      }
    }
    if (auto p = s->find("preemption"); p != s->end()) {
      if (!p->is_boolean()) return Bad(where + ".scheduler.preemption", "must be true or false");
      pool.spec.preemption = p->get<bool>();
    }
  }
  return std::make_pair(name->get<std::string>(), std::move(pool));
}

}  // namespace

ResourcePools DefaultResourcePools() { return {{kDefaultPool, ResourcePool{}}}; }

absl::StatusOr<ResourcePools> ParseResourcePools(const std::string& yaml,
                                                 const std::string& source) {
  absl::StatusOr<Json> tree = config::ParseYaml(yaml);
  if (!tree.ok()) return Bad(source, std::string(tree.status().message()));
  const auto list = tree->is_object() ? tree->find("resource_pools") : tree->end();
  if (list == tree->end() || !list->is_array()) {
    return Bad(source, "must hold resource_pools: a list of pools (pool_name, description, "
                       "scheduler: {type: priority|fair_share, preemption: true|false})");
  }
  ResourcePools pools = DefaultResourcePools();
  std::set<std::string> seen;
  for (size_t i = 0; i < list->size(); ++i) {
    const std::string where = absl::StrCat(source, ": resource_pools[", i, "]");
    absl::StatusOr<std::pair<std::string, ResourcePool>> pool = ParsePool((*list)[i], where);
    if (!pool.ok()) return pool.status();
    if (!seen.insert(pool->first).second) {
      return Bad(where + ".pool_name", absl::StrCat("'", pool->first, "' is named twice"));
    }
    pools[pool->first] = std::move(pool->second);
  }
  return pools;
}

std::set<std::string> PoolNames(const ResourcePools& pools) {
  std::set<std::string> names;
  for (const auto& [name, pool] : pools) names.insert(name);
  return names;
}

}  // namespace cohort::master
