#include "master/slurm/slurm_flags.h"

#include "absl/time/time.h"
#include "common/sibling_program.h"
#include "master/slurm/slurm_manager.h"

namespace cohort::master::slurm_rm {

void AddSlurmFlags(CLI::App& app, SlurmFlags& f) {
  const char* group = "Slurm (docs/slurm.md)";
  app.add_option("--resource-manager", f.resource_manager,
                 "Where trials run: 'agents' (cohort-agent processes, the default) or 'slurm' "
                 "(each allocation a Slurm batch job; no agent needed). Slurm is found through "
                 "SLURM_CONF and the sbatch, squeue, scancel, scontrol and sinfo on the PATH "
                 "(or --slurm-bin-dir)")
      ->check(CLI::IsMember({"agents", "slurm"}))
      ->group(group);
  app.add_option("--slurm-partition", f.partition,
                 "The partition jobs go to (default: Slurm's default partition); an "
                 "experiment's resources.resource_pool names another")
      ->group(group);
  app.add_option("--slurm-slots-per-node", f.slots_per_node,
                 "Slots of one Slurm node (default 1): a trial of more slots takes "
                 "slots / this whole nodes")
      ->check(CLI::Range(1, 4096))
      ->group(group);
  app.add_option("--slurm-slot-type", f.slot_type,
                 "What a slot is: 'cpu' (a task's CPUs: --cpus-per-task) or 'cuda' (a GPU: "
                 "--gres=gpu:N)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->group(group);
  app.add_option("--slurm-node-program", f.node_program,
                 "The path of cohort-slurm-node on the nodes, cohort-launch beside it "
                 "(default: beside cohort-master, so install Cohort at the same path on every "
                 "node or on a shared filesystem)")
      ->group(group);
  app.add_option("--slurm-master-url", f.master_url,
                 "How the nodes reach this master (default: the address and port it listens "
                 "on; with --host 0.0.0.0 give this)")
      ->group(group);
  app.add_option("--slurm-node-work-dir", f.node_work_dir,
                 "The nodes' directory for the allocations' files (default: the job's $TMPDIR, "
                 "else /tmp)")
      ->group(group);
  app.add_option("--slurm-job-prefix", f.job_prefix,
                 "Job names are PREFIX-ALLOCATION (default 'cohort'); give each master sharing "
                 "a Slurm cluster its own: a master cancels live jobs of its prefix it does not "
                 "own")
      ->group(group);
  app.add_option("--slurm-bin-dir", f.slurm_bin_dir,
                 "Where Slurm's commands are (default: the PATH)")
      ->group(group);
}

std::function<absl::StatusOr<std::unique_ptr<rm::ResourceManager>>(rm::Events&)>
ResourceManagerFrom(const SlurmFlags& f, const std::string& listen_url,
                    const std::string& tls_ca_file) {
  if (f.resource_manager != "slurm") return nullptr;
  SlurmManagerOptions options;
  options.slurm.bin_dir = f.slurm_bin_dir;
  // A controller that does not answer holds a call this long (and the master's stop with it).
  options.slurm.timeout = absl::Seconds(10);
  options.partition = f.partition;
  options.slots_per_node = f.slots_per_node;
  options.slot_type = f.slot_type == "cuda" ? SlotType::kCuda : SlotType::kCpu;
  options.node_program =
      f.node_program.empty() ? SiblingProgram("cohort-slurm-node") : f.node_program;
  options.master_url = f.master_url.empty() ? listen_url : f.master_url;
  options.tls_ca_file = tls_ca_file;
  options.node_work_dir = f.node_work_dir;
  options.job_prefix = f.job_prefix;
  options.poll_interval = absl::Seconds(f.poll_seconds);
  return [options](rm::Events& events)
             -> absl::StatusOr<std::unique_ptr<rm::ResourceManager>> {
    absl::StatusOr<std::unique_ptr<SlurmManager>> manager = SlurmManager::Create(options, events);
    if (!manager.ok()) return manager.status();
    return std::unique_ptr<rm::ResourceManager>(std::move(*manager));
  };
}

}  // namespace cohort::master::slurm_rm
