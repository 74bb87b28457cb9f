#pragma once
// cohort-master's Slurm flags (--resource-manager slurm, --slurm-*) and the resource manager
// they make (slurm_manager.h). Kept beside the manager so main.cc only wires them in.

#include <functional>
#include <memory>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "master/rm/resource_manager.h"

namespace cohort::master::slurm_rm {

struct SlurmFlags {
  std::string resource_manager = "agents";  // "agents" or "slurm"
  std::string partition;
  int slots_per_node = 1;
  std::string slot_type = "cpu";
  std::string node_program;  // default: cohort-slurm-node beside cohort-master
  std::string master_url;    // default: http(s)://HOST:PORT as the master listens
  std::string node_work_dir;
  std::string job_prefix = "cohort";
  std::string slurm_bin_dir;
  double poll_seconds = 2;
};

void AddSlurmFlags(CLI::App& app, SlurmFlags& flags);

// Null for the agents; for Slurm, what MasterOptions::resource_manager takes.
// `listen_url`: how the master listens (the nodes' default way to reach it); `tls_ca_file`:
// passed to the nodes for an https master.
std::function<absl::StatusOr<std::unique_ptr<rm::ResourceManager>>(rm::Events&)>
ResourceManagerFrom(const SlurmFlags& flags, const std::string& listen_url,
                    const std::string& tls_ca_file);

}  // namespace cohort::master::slurm_rm
