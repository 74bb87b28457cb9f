// Determined's experiment config, field by field: each case is a config (a fragment appended to a
// minimal valid config) with the exact errors it must produce, or, when valid, the exact warnings.
// The cases follow Determined's JSON schemas (schemas/expconf/v0/*.json in determined-ai/
// determined): types, enums, minimums, required fields and union members.
//
// Real configs from Determined's examples (examples/ in determined-ai/determined) checked to
// validate, rewritten here as test inputs (RealDeterminedConfigsValidate):
//   tutorials/mnist_pytorch/const.yaml; adaptive.yaml with distributed.yaml's slots_per_trial: 8
//   (entrypoint model_def:MNistTrial); deepspeed/deepspeed_dcgan/mnist.yaml (image map with the
//   legacy `gpu` key, bind mounts, no global_batch_size); deepspeed/gpt_neox/zero1.yaml
//   (force_pull_image, profiling, debug) with deepspeed/cifar10_moe/moe.yaml's checkpoint_policy:
//   none, records_per_epoch and scheduling_unit; computer_vision/cifar10_pytorch/adaptive.yaml
//   (a searched global_batch_size, lengths in epochs); computer_vision/mmdetection_pytorch/
//   maskrcnn.yaml (a checkpoint_storage with only save_trial_latest). On 2026-11-28, 91 of
//   examples/' configs went through `cohort experiment validate`: 79 passed then, and of the 12
//   refused, 7 were Cohort's mistakes (these two forms), since fixed; the rest Determined
//   refuses too or are not experiment configs.

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/testing/status_matchers.h"
#include "config/config_parser.h"
#include "config/creation_check.h"
#include "config/error_list.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort::config {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr char kBase[] = R"(entrypoint: ./trial
hyperparameters: {global_batch_size: 32}
)";
constexpr char kSearcher[] = "searcher: {metric: loss}\n";

struct Case {
  const char* name;
  std::string yaml;                   // appended to kBase (and kSearcher unless it has one)
  std::vector<std::string> errors;    // exactly these, in order; empty: valid
  std::vector<std::string> warnings;  // exactly these when valid
};

absl::StatusOr<ExperimentConfig> ParseCase(const std::string& fragment) {
  std::string yaml = kBase;
  if (fragment.find("searcher:") == std::string::npos) yaml += kSearcher;
  yaml += fragment;
  absl::StatusOr<Json> tree = ParseYaml(yaml);
  if (!tree.ok()) return tree.status();
  return ParseExperimentConfig(*tree, {.seed_if_absent = 1});
}

void Check(const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    SCOPED_TRACE(absl::StrCat(c.name, ":\n", c.yaml));
    absl::StatusOr<ExperimentConfig> config = ParseCase(c.yaml);
    if (!c.errors.empty()) {
      EXPECT_EQ(ConfigErrors(config.status()), c.errors);
      continue;
    }
    ASSERT_OK(config);
    EXPECT_EQ(config->warnings, c.warnings);
    // What is accepted reads again to the same config (the master stores the effective config).
    absl::StatusOr<Json> again = ParseYaml(ToYaml(config->effective));
    ASSERT_OK(again);
    absl::StatusOr<ExperimentConfig> reparsed =
        ParseExperimentConfig(*again, {.seed_if_absent = 1});
    ASSERT_OK(reparsed);
    EXPECT_EQ(reparsed->effective, config->effective);
  }
}

constexpr char kImageWhy[] =
    "ignored: Cohort runs trials as processes on the agent's host, not in containers";

TEST(DeterminedConfigTest, Environment) {
  Check({
      {"image as a name",
       "environment: {image: my/image:1}\n",
       {},
       {absl::StrCat("environment.image: ", kImageWhy)}},
      {"image as a map with the legacy gpu key",
       "environment: {image: {cpu: a, gpu: b, rocm: c}}\n",
       {},
       {absl::StrCat("environment.image: ", kImageWhy)}},
      {"image of the wrong type",
       "environment: {image: 3}\n",
       {"environment.image: expected an image name or a map {cpu, cuda, rocm} of image names, "
        "got integer 3"}},
      {"image map with an unknown key",
       "environment: {image: {cpus: a}}\n",
       {"environment.image.cpus: unknown field; did you mean cpu?"}},
      {"variables as a map",
       "environment: {environment_variables: {cpu: [A=1], cuda: [B=2]}}\n",
       {},
       {}},
      {"variables map with a bad entry",
       "environment: {environment_variables: {cuda: [B]}}\n",
       {"environment.environment_variables.cuda[0]: expected KEY=VALUE, got 'B'"}},
      {"variables of the wrong type",
       "environment: {environment_variables: 3}\n",
       {"environment.environment_variables: expected a list of strings, got integer 3"}},
      {"force_pull_image false asks for nothing",
       "environment: {force_pull_image: false}\n",
       {},
       {}},
      {"force_pull_image true",
       "environment: {force_pull_image: true}\n",
       {},
       {absl::StrCat("environment.force_pull_image: ", kImageWhy)}},
      {"force_pull_image not a boolean",
       "environment: {force_pull_image: 1}\n",
       {"environment.force_pull_image: expected a boolean (true or false), got integer 1"}},
      {"ports",
       "environment: {ports: {tb: 6006}}\n",
       {},
       {absl::StrCat("environment.ports: ", kImageWhy)}},
      {"ports must be integers",
       "environment: {ports: {tb: x}}\n",
       {"environment.ports.tb: expected an integer, got string \"x\""}},
      {"capabilities",
       "environment: {add_capabilities: [SYS_ADMIN], drop_capabilities: []}\n",
       {},
       {absl::StrCat("environment.add_capabilities: ", kImageWhy)}},
      {"registry_auth",
       "environment: {registry_auth: {username: u, password: p}}\n",
       {},
       {absl::StrCat("environment.registry_auth: ", kImageWhy)}},
      {"registry_auth unknown field",
       "environment: {registry_auth: {user: u}}\n",
       {"environment.registry_auth.user: unknown field (known fields: username, password, auth, "
        "email, serveraddress, identitytoken, registrytoken)"}},
      {"pod_spec",
       "environment: {pod_spec: {spec: {containers: [{name: determined-container}]}}}\n",
       {},
       {"environment.pod_spec: ignored: Cohort does not run trials on Kubernetes"}},
      {"pod_spec may not set the container image",
       "environment: {pod_spec: {spec: {containers: [{image: x}]}}}\n",
       {"environment.pod_spec.spec.containers[0].image: container Image is not configurable, set "
        "it in the experiment config"}},
      {"proxy_ports",
       "environment: {proxy_ports: [{proxy_port: 8888, proxy_tcp: true}]}\n",
       {},
       {"environment.proxy_ports: ignored: Cohort does not proxy ports to trials"}},
      {"proxy_ports needs proxy_port",
       "environment: {proxy_ports: [{proxy_tcp: true}]}\n",
       {"environment.proxy_ports[0].proxy_port: required field is missing"}},
      {"slurm belongs at the top level",
       "environment: {slurm: {}}\n",
       {"environment.slurm: unknown field (known fields: image, environment_variables, ports, "
        "force_pull_image, pod_spec, registry_auth, add_capabilities, drop_capabilities, "
        "proxy_ports)"}},
  });
}

TEST(DeterminedConfigTest, Resources) {
  Check({
      {"shm_size in bytes",
       "resources: {shm_size: 4294967296}\n",
       {},
       {absl::StrCat("resources.shm_size: ", kImageWhy)}},
      {"shm_size as a size",
       "resources: {shm_size: 4.5 GiB}\n",
       {},
       {absl::StrCat("resources.shm_size: ", kImageWhy)}},
      {"shm_size not a size",
       "resources: {shm_size: 4 gigs}\n",
       {"resources.shm_size: must be a valid memory size (such as 4G or 512MiB), got '4 gigs'"}},
      {"agent_label",
       "resources: {agent_label: fast}\n",
       {},
       {"resources.agent_label: ignored: Determined removed agent labels in 0.20 and ignores "
        "them too"}},
      {"resource_pool", "resources: {resource_pool: gpu-pool}\n", {}, {}},
      {"native_parallel",
       "resources: {native_parallel: true}\n",
       {},
       {"resources.native_parallel: ignored: Determined's native parallelism has no meaning in "
        "Cohort"}},
      {"slots_per_trial 0 runs on one slot",
       "resources: {slots_per_trial: 0}\n",
       {},
       {"resources.slots_per_trial: 0 (in Determined a trial that takes no GPU) runs on "
        "1 slot: a Cohort slot is a GPU or a share of an agent's cores"}},
      {"max_slots", "resources: {max_slots: 8}\n", {}, {}},
      {"is_single_node",
       "resources: {is_single_node: true}\n",
       {},
       {"resources.is_single_node: ignored: Cohort's scheduler does not honour it yet: a trial "
        "larger than one agent spans whole agents"}},
      {"weight 1 is the default", "resources: {weight: 1}\n", {}, {}},
      {"weight", "resources: {weight: 0.5}\n", {}, {}},
      {"priority is bounded",
       "resources: {priority: 100}\n",
       {"resources.priority: must be <= 99, got 100"}},
      {"devices",
       "resources: {devices: [/dev/fuse:/dev/fuse]}\n",
       {},
       {"resources.devices: ignored: Cohort's trials see the host's devices directly (no "
        "container)"}},
  });
}

TEST(DeterminedConfigTest, CheckpointStorageMembers) {
  Check({
      {"shared_fs",
       "checkpoint_storage: {type: shared_fs, host_path: /ckpt, storage_path: a}\n",
       {},
       {}},
      {"shared_fs storage_path outside host_path",
       "checkpoint_storage: {type: shared_fs, host_path: /ckpt, storage_path: /other}\n",
       {"checkpoint_storage.storage_path: must be a relative directory or a subdirectory of "
        "host_path (/ckpt), got '/other'"}},
      {"shared_fs container_path",
       "checkpoint_storage: {type: shared_fs, host_path: /ckpt, container_path: /c}\n",
       {},
       {"checkpoint_storage.container_path: ignored: Cohort's trials see host_path itself (no "
        "container)"}},
      {"directory", "checkpoint_storage: {type: directory, container_path: /ckpt}\n", {}, {}},
      {"directory needs container_path",
       "checkpoint_storage: {type: directory}\n",
       {"checkpoint_storage.container_path: required field is missing"}},
      {"s3",
       "checkpoint_storage: {type: s3, bucket: b, prefix: p, endpoint_url: http://x}\n",
       {},
       {}},
      {"s3 needs a bucket",
       "checkpoint_storage: {type: s3, access_key: k}\n",
       {"checkpoint_storage.bucket: required field is missing"}},
      {"s3 has no host_path",
       "checkpoint_storage: {type: s3, bucket: b, host_path: /x}\n",
       {"checkpoint_storage.host_path: unknown field (known fields: type, bucket, prefix, "
        "access_key, secret_key, endpoint_url, save_experiment_best, save_trial_best, "
        "save_trial_latest)"}},
      {"gcs",
       "checkpoint_storage: {type: gcs, bucket: b}\n",
       {},
       {"checkpoint_storage.type: checkpoint storage type gcs is not supported by "
        "Cohort: experiment create refuses it (use s3, shared_fs or directory)"}},
      {"azure with a connection string",
       "checkpoint_storage: {type: azure, container: c, connection_string: s}\n",
       {},
       {"checkpoint_storage.type: checkpoint storage type azure is not supported by "
        "Cohort: experiment create refuses it (use s3, shared_fs or directory)"}},
      {"azure needs one of connection_string and account_url",
       "checkpoint_storage: {type: azure, container: c}\n",
       {"checkpoint_storage: exactly one of connection_string or account_url must be set"}},
      {"azure credential with a connection string",
       "checkpoint_storage: {type: azure, container: c, connection_string: s, credential: k}\n",
       {"checkpoint_storage: credential and connection_string must not both be set"}},
      {"save counts on every member",
       "checkpoint_storage: {type: gcs, bucket: b, save_trial_best: -1}\n",
       {"checkpoint_storage.save_trial_best: must be >= 0, got -1"}},
      {"without a type, the default storage's save counts",
       "checkpoint_storage: {save_trial_latest: 5, save_experiment_best: 2}\n",
       {},
       {}},
      {"a member's field needs its type",
       "checkpoint_storage: {host_path: /ckpt, save_trial_latest: 5}\n",
       {"checkpoint_storage.type: required field is missing"}},
      {"unknown type",
       "checkpoint_storage: {type: hdfs}\n",
       {"checkpoint_storage.type: must be one of shared_fs, directory, s3, gcs, azure, got "
        "'hdfs'"}},
      {"checkpoint_policy best is the default", "checkpoint_policy: best\n", {}, {}},
      {"checkpoint_policy all", "checkpoint_policy: all\n", {}, {}},
      {"checkpoint_policy none", "checkpoint_policy: none\n", {}, {}},
      {"save counts other than the defaults (honoured by the checkpoint GC)",
       "checkpoint_storage: {type: directory, container_path: /c, save_experiment_best: 0, "
       "save_trial_best: 3}\n",
       {},
       {}},
      {"checkpoint_policy enum",
       "checkpoint_policy: some\n",
       {"checkpoint_policy: must be one of best, all, none, got 'some'; did you mean none?"}},
  });
}

TEST(DeterminedConfigTest, Searchers) {
  const char* kNotRun =
      " searcher is not implemented by Cohort: experiment create refuses it (use single, "
      "random, grid, adaptive_asha or async_halving)";
  Check({
      {"warm start (honoured on a cluster)",
       "searcher: {metric: l, source_trial_id: 7, source_checkpoint_uuid: abc}\n",
       {},
       {}},
      {"source_trial_id must be an integer",
       "searcher: {metric: l, source_trial_id: x}\n",
       {"searcher.source_trial_id: expected an integer, got string \"x\""}},
      {"max_length as a bare integer", "searcher: {metric: l, max_length: 100}\n", {}, {}},
      {"asha bracket_rungs and max_time (Determined 0.38) over max_length",
       "searcher: {name: adaptive_asha, metric: l, max_trials: 4, time_metric: batches, "
       "max_time: 100, bracket_rungs: [3, 2], max_length: 100}\n",
       {},
       {"searcher.max_length: ignored: max_time and time_metric give the length (Determined "
        "0.38 deprecates max_length)"}},
      {"asha with max_time only (Determined 0.38)",
       "records_per_epoch: 6000\n"
       "searcher: {name: adaptive_asha, metric: l, max_trials: 4, time_metric: epochs, "
       "max_time: 100}\n",
       {},
       {}},
      {"asha max_time in epochs needs records_per_epoch",
       "searcher: {name: adaptive_asha, metric: l, max_trials: 4, time_metric: epochs, "
       "max_time: 100}\n",
       {"searcher.time_metric: a length in epochs needs records_per_epoch (> 0) at the top "
        "level"}},
      {"asha max_time needs time_metric",
       "searcher: {name: adaptive_asha, metric: l, max_trials: 4, max_time: 100}\n",
       {"searcher.time_metric: required with the other: max_time counts units of the metric "
        "time_metric (for example time_metric: batches, max_time: 10000)"}},
      {"asha time_metric names a length unit",
       "searcher: {name: adaptive_asha, metric: l, max_trials: 4, time_metric: tokens, "
       "max_time: 100}\n",
       {"searcher.time_metric: Cohort's rungs are lengths its trials train to: time_metric must "
        "be batches, records or epochs, got 'tokens'"}},
      {"asha needs max_length or max_time",
       "searcher: {name: adaptive_asha, metric: l, max_trials: 4}\n",
       {"searcher.max_length: required field is missing"}},
      {"async_halving",
       "searcher: {name: async_halving, metric: l, num_rungs: 3, max_trials: 8, "
       "max_length: {batches: 90}}\n",
       {},
       {}},
      {"async_halving with max_time (Determined 0.38)",
       "searcher: {name: async_halving, metric: l, num_rungs: 3, max_trials: 8, "
       "time_metric: batches, max_time: 90}\n",
       {},
       {}},
      {"async_halving needs num_rungs",
       "searcher: {name: async_halving, metric: l, max_trials: 8, max_length: 9}\n",
       {"searcher.num_rungs: required field is missing"}},
      {"pbt",
       "searcher: {name: pbt, metric: l, population_size: 4, num_rounds: 2, "
       "length_per_round: {batches: 10}, replace_function: {truncate_fraction: 0.25}, "
       "explore_function: {resample_probability: 0.2, perturb_factor: 0.1}}\n",
       {},
       {absl::StrCat("searcher.name: the pbt", kNotRun)}},
      {"pbt truncate_fraction is at most 0.5",
       "searcher: {name: pbt, metric: l, population_size: 4, num_rounds: 2, "
       "length_per_round: {batches: 10}, replace_function: {truncate_fraction: 0.75}, "
       "explore_function: {resample_probability: 0.2, perturb_factor: 0.1}}\n",
       {"searcher.replace_function.truncate_fraction: must be <= 0.5, got 0.75"}},
      {"custom",
       "searcher: {name: custom, metric: l, unit: batches}\n",
       {},
       {absl::StrCat("searcher.name: the custom", kNotRun)}},
      {"removed searcher",
       "searcher: {name: adaptive_simple, metric: l}\n",
       {"searcher.name: the adaptive_simple searcher was removed from Determined; use "
        "adaptive_asha"}},
  });
}

TEST(DeterminedConfigTest, LogPolicies) {
  Check({
      {"current form",
       "log_policies: [{name: OOM, pattern: '.*OOM.*', action: cancel_retries}, "
       "{name: ECC, pattern: ECC, action: exclude_node}, {name: label-only, pattern: x}]\n",
       {},
       {}},
      {"legacy form",
       "log_policies: [{pattern: '.*ECC.*', action: {type: exclude_node}}]\n",
       {},
       {}},
      {"signal action", "log_policies: [{pattern: x, action: {signal: S}}]\n", {}, {}},
      {"an empty list keeps the defaults", "log_policies: []\n", {}, {}},
      {"a default turned off by its name", "log_policies: [{name: CUDA OOM}]\n", {}, {}},
      {"unknown action",
       "log_policies: [{pattern: x, action: restart}]\n",
       {"log_policies[0].action: must be one of cancel_retries, exclude_node, got 'restart'"}},
      {"legacy action needs a type",
       "log_policies: [{pattern: x, action: {}}]\n",
       {"log_policies[0].action.type: required field is missing"}},
      {"a policy needs a name or a pattern",
       "log_policies: [{action: cancel_retries}]\n",
       {"log_policies[0]: needs a name or a pattern"}},
      {"a legacy policy needs an action",
       "log_policies: [{pattern: x}]\n",
       {"log_policies[0]: a policy without a name (the legacy form) needs an action"}},
      {"names are unique",
       "log_policies: [{name: a, pattern: x}, {name: b, pattern: y}, {name: a, pattern: z}]\n",
       {"log_policies[2].name: duplicate name 'a' (also log_policies[0])"}},
      {"a pattern is a regular expression",
       "log_policies: [{name: a, pattern: 'out of (memory'}]\n",
       {"log_policies[0].pattern: not a valid regular expression (RE2 syntax): missing ): out of "
        "(memory"}},
      {"not a list", "log_policies: {pattern: x}\n", {"log_policies: expected a list, got map"}},
  });
}

TEST(DeterminedConfigTest, LogPoliciesKeepDeterminedsDefaultsUnlessNamed) {
  absl::StatusOr<ExperimentConfig> config = ParseCase(
      "log_policies: [{name: CUDA OOM}, {name: mine, pattern: boom, action: "
      "cancel_retries}]\n");
  ASSERT_OK(config);
  ASSERT_EQ(config->log_policies.size(), 3u);
  EXPECT_EQ(config->log_policies[0].name, "CUDA OOM");
  EXPECT_FALSE(config->log_policies[0].pattern.has_value());  // turned off
  EXPECT_EQ(config->log_policies[1].action, LogPolicy::Action::kCancelRetries);
  EXPECT_EQ(config->log_policies[2].name, "ECC Error");
  EXPECT_EQ(config->effective["log_policies"].size(), 3u);
}

TEST(DeterminedConfigTest, TopLevelSectionsCohortIgnores) {
  Check({
      {"workspace, project, labels", "workspace: w\nproject: p\nlabels: [a, b]\n", {}, {}},
      {"perform_initial_validation (honoured: the Trial API validates before training)",
       "perform_initial_validation: true\n",
       {},
       {}},
      {"data_layer",
       "data_layer: {type: s3, bucket: b, bucket_directory_path: d}\n",
       {},
       {"data_layer: ignored: Cohort has no data layer; a trial reads its data itself (see "
        "`data`)"}},
      {"data_layer's default asks for nothing", "data_layer: {type: shared_fs}\n", {}, {}},
      {"data_layer s3 needs a bucket",
       "data_layer: {type: s3, bucket_directory_path: d}\n",
       {"data_layer.bucket: required field is missing"}},
      {"slurm",
       "slurm: {slots_per_node: 4, gpu_type: a100, sbatch_args: [--exclusive]}\n",
       {},
       {"slurm: ignored: used only by a master that runs trials through Slurm (cohort-master "
        "--resource-manager slurm: sbatch_args and gpu_type); there, slots_per_node is the "
        "master's --slurm-slots-per-node"}},
      {"slurm slots_per_node minimum",
       "slurm: {slots_per_node: 0}\n",
       {"slurm.slots_per_node: must be >= 1, got 0"}},
      {"pbs",
       "pbs: {pbsbatch_args: [-l, select=1]}\n",
       {},
       {"pbs: ignored: Cohort runs trials on its own agents or through Slurm, not PBS"}},
      {"pbs has no gpu_type",
       "pbs: {gpu_type: a100}\n",
       {"pbs.gpu_type: unknown field (known fields: slots_per_node, pbsbatch_args)"}},
      {"tensorboard_storage",
       "tensorboard_storage: {type: shared_fs, host_path: /tb}\n",
       {},
       {"tensorboard_storage: ignored: Determined itself ignores it; TensorBoard files stay with "
        "the trial's files"}},
      {"security",
       "security: {authentication: {}}\n",
       {},
       {"security: ignored: Determined itself ignores it; the master's users decide access"}},
      {"integrations",
       "integrations: {pachyderm: {}}\n",
       {},
       {"integrations: ignored: Cohort has no integrations (Pachyderm)"}},
      {"internal must be a map", "internal: 3\n", {"internal: expected a map, got integer 3"}},
      {"bind_mounts",
       "bind_mounts: [{host_path: /data, container_path: /data}]\n",
       {},
       {"bind_mounts: ignored: Cohort's trials run on the host, where host_path is already "
        "visible at its own path"}},
      {"optimizations.grad_updates_size_file",
       "optimizations: {grad_updates_size_file: f}\n",
       {},
       {"optimizations.grad_updates_size_file: ignored: Cohort does not write Horovod's "
        "gradient-size file"}},
      {"data must be a map", "data: [1]\n", {"data: expected a map, got list"}},
  });
}

TEST(DeterminedConfigTest, Entrypoint) {
  const char* kClassWhy =
      "entrypoint: 'model_def:MNistTrial' names a Python trial class (Determined's module:Class "
      "form); Cohort runs the entrypoint as a command, so the context must hold a program of "
      "that name";
  for (const auto& [entry, warnings] :
       std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"model_def:MNistTrial", {kClassWhy}},
           {"python3 train.py", {}},
           {"[python3, -m, determined.launch.torch_distributed, python3, train.py]", {}},
           {"./trial --config a:b", {}}}) {
    absl::StatusOr<Json> tree =
        ParseYaml(absl::StrCat("entrypoint: ", entry, "\nsearcher: {metric: l}\n"));
    ASSERT_OK(tree);
    absl::StatusOr<ExperimentConfig> config = ParseExperimentConfig(*tree);
    ASSERT_OK(config);
    EXPECT_EQ(config->warnings, warnings) << entry;
  }
  EXPECT_THAT(ConfigErrors(ParseExperimentConfig(*ParseYaml("entrypoint: []\nsearcher: {metric: "
                                                            "l}\n"))
                               .status()),
              ElementsAre("entrypoint: expected a command (a non-empty string or list of "
                          "strings), got list"));
}

TEST(DeterminedConfigTest, DefaultsAreDetermineds) {
  absl::StatusOr<ExperimentConfig> config = ParseCase("");
  ASSERT_OK(config);
  EXPECT_THAT(config->warnings, IsEmpty());
  EXPECT_EQ(config->checkpoint_policy, ExperimentConfig::CheckpointPolicy::kBest);
  EXPECT_EQ(config->effective["checkpoint_policy"], "best");
  ASSERT_EQ(config->log_policies.size(), 2u);
  EXPECT_EQ(config->log_policies[0].name, "CUDA OOM");
  EXPECT_EQ(config->log_policies[1].pattern, ".*uncorrectable ECC error encountered.*");
  EXPECT_EQ(config->log_policies[1].action, LogPolicy::Action::kNone);
  EXPECT_FALSE(config->perform_initial_validation);
  EXPECT_FALSE(config->searcher.source_trial_id.has_value());
}

TEST(DeterminedConfigTest, TypedFieldsAreStored) {
  absl::StatusOr<ExperimentConfig> config = ParseCase(
      "searcher: {metric: l, source_trial_id: 7, source_checkpoint_uuid: abc, max_length: 50}\n"
      "log_policies: [{pattern: '.*ECC.*', action: {type: exclude_node}}, {name: n, action: "
      "cancel_retries}]\n"
      "environment: {environment_variables: {cpu: [A=1, A=2], cuda: [B=2]}}\n"
      "checkpoint_storage: {type: s3, bucket: b, prefix: p}\n"
      "workspace: w\nproject: p\nlabels: [x]\n");
  ASSERT_OK(config);
  EXPECT_EQ(config->searcher.source_trial_id, 7);
  EXPECT_EQ(config->searcher.source_checkpoint_uuid, "abc");
  ASSERT_TRUE(config->searcher.max_length.has_value());
  EXPECT_EQ(config->searcher.max_length->unit, Length::Unit::kBatches);
  EXPECT_EQ(config->searcher.max_length->value, 50);
  ASSERT_EQ(config->log_policies.size(), 4u);
  EXPECT_EQ(config->log_policies[0].action, LogPolicy::Action::kExcludeNode);
  EXPECT_EQ(config->log_policies[1].action, LogPolicy::Action::kCancelRetries);
  using Var = std::pair<std::string, std::string>;
  EXPECT_THAT(config->environment_variables, ElementsAre(Var{"A", "2"}));
  EXPECT_EQ(config->checkpoint_storage->bucket, "b");
  EXPECT_EQ(config->workspace, "w");
  EXPECT_THAT(config->labels, ElementsAre("x"));
}

TEST(DeterminedConfigTest, GlobalBatchSizeIsOptional) {
  absl::StatusOr<Json> tree = ParseYaml("entrypoint: x\nsearcher: {metric: l}\n");
  ASSERT_OK(tree);
  absl::StatusOr<ExperimentConfig> config = ParseExperimentConfig(*tree);
  ASSERT_OK(config);
  EXPECT_EQ(config->global_batch_size, 0);
}

TEST(DeterminedConfigTest, CreationRefusesWhatCohortCannotRun) {
  absl::StatusOr<ExperimentConfig> s3 = ParseCase("checkpoint_storage: {type: s3, bucket: b}\n");
  ASSERT_OK(s3);
  EXPECT_OK(CheckRunnable(*s3)) << "s3 is written by the chief, read and deleted by the master";
  absl::StatusOr<ExperimentConfig> azure = ParseCase(
      "checkpoint_storage: {type: azure, container: c, connection_string: x}\n");
  ASSERT_OK(azure);
  EXPECT_THAT(ConfigErrors(CheckRunnable(*azure)),
              ElementsAre("checkpoint_storage.type: checkpoint storage type azure is not "
                          "supported by Cohort: use s3, shared_fs or directory"));
  absl::StatusOr<ExperimentConfig> pbt = ParseCase("searcher: {name: custom, metric: l}\n");
  ASSERT_OK(pbt);
  EXPECT_THAT(ConfigErrors(CheckRunnable(*pbt)),
              ElementsAre("searcher.name: the custom searcher is not supported by Cohort: use "
                          "single, random, grid, adaptive_asha or async_halving"));
  absl::StatusOr<ExperimentConfig> timed = ParseCase(
      "searcher: {name: async_halving, metric: l, max_trials: 2, num_rungs: 2, "
      "time_metric: records, max_time: 9}\n");
  ASSERT_OK(timed);
  EXPECT_OK(CheckRunnable(*timed));
  ASSERT_TRUE(timed->searcher.max_length.has_value());
  EXPECT_EQ(timed->searcher.max_length->unit, Length::Unit::kRecords);
  EXPECT_EQ(timed->searcher.max_length->value, 9);
  absl::StatusOr<ExperimentConfig> ok =
      ParseCase("checkpoint_storage: {type: directory, container_path: /c}\n");
  ASSERT_OK(ok);
  EXPECT_OK(CheckRunnable(*ok));
}

// The configs named at the top of this file, as Determined's examples write them.
TEST(DeterminedConfigTest, RealDeterminedConfigsValidate) {
  const std::string kMnistClass =
      "entrypoint: 'model_def:MNistTrial' names a Python trial class (Determined's module:Class "
      "form); Cohort runs the entrypoint as a command, so the context must hold a program of "
      "that name";
  const std::vector<std::pair<std::string, std::vector<std::string>>> configs = {
      {R"(description: mnist_pytorch_const
data:
  url: https://example.com/pytorch_mnist.tar.gz
hyperparameters:
  learning_rate: 1.0
  global_batch_size: 64
  n_filters1: 32
  dropout1: 0.25
searcher:
  name: single
  metric: validation_loss
  max_length:
      batches: 937
  smaller_is_better: true
entrypoint: model_def:MNistTrial
)",
       {kMnistClass}},
      {R"(description: mnist_pytorch_adaptive_search
hyperparameters:
  global_batch_size: 64
  learning_rate: {type: double, minval: .0001, maxval: 1.0}
  n_filters1: {type: int, minval: 8, maxval: 64}
resources:
  slots_per_trial: 8
searcher:
  name: adaptive_asha
  metric: validation_loss
  smaller_is_better: true
  max_trials: 16
  max_length: {batches: 937}
entrypoint: model_def:MNistTrial
)",
       {kMnistClass}},
      {R"(name: dcgan_deepspeed_mnist
data: {dataroot: /data, dataset: mnist, image_size: 64}
hyperparameters:
  deepspeed_config: ds_config.json
  noise_length: 100
environment:
  environment_variables:
    - NCCL_DEBUG=INFO
    - NCCL_SOCKET_IFNAME=ens,eth,ib
  image:
    gpu: determinedai/environments:cuda-11.3-pytorch-1.10-deepspeed-0.8.3-gpu-0.23.3
bind_mounts:
  - host_path: /tmp
    container_path: /data
resources:
  slots_per_trial: 2
searcher:
  name: single
  metric: no_validation_metric
  max_length: {batches: 100000}
min_validation_period: {batches: 0}
entrypoint: [python3, -m, determined.launch.deepspeed, --trial, model_def:DCGANTrial]
max_restarts: 0
)",
       {absl::StrCat("environment.image: ", kImageWhy),
        "bind_mounts: ignored: Cohort's trials run on the host, where host_path is already "
        "visible at its own path"}},
      {R"(name: gpt-neox-zero1-2-7B
debug: false
profiling: {enabled: false, begin_on_batch: 50, end_after_batch: 100, sync_timings: false}
hyperparameters:
  conf_file: [2-7B.yml, determined_cluster.yml]
  overwrite_values: {pipe_parallel_size: 2, train_batch_size: 512}
  wandb_group: null
environment:
  environment_variables: [NCCL_DEBUG=INFO]
  force_pull_image: true
  image: {gpu: determinedai/gpt-neox:4850e79}
resources: {slots_per_trial: 16}
searcher: {name: single, metric: lm_loss, smaller_is_better: false, max_length: {batches: 10000}}
min_validation_period: {batches: 5000}
records_per_epoch: 50000
checkpoint_policy: none
scheduling_unit: 2000
max_restarts: 0
entrypoint: [python3, -m, determined.launch.deepspeed, --trial, gpt2_trial:GPT2Trial]
)",
       {absl::StrCat("environment.image: ", kImageWhy),
        absl::StrCat("environment.force_pull_image: ", kImageWhy)}},
      {R"(description: cifar10_pytorch_adaptive_search
hyperparameters:
  learning_rate: {type: log, minval: -5.0, maxval: 1.0, base: 10.0}
  layer1_dropout: {type: double, minval: 0.2, maxval: 0.5}
  global_batch_size: {type: int, minval: 16, maxval: 64}
records_per_epoch: 50000
searcher:
  name: adaptive_asha
  metric: validation_error
  max_length: {epochs: 32}
  max_trials: 16
min_validation_period: {epochs: 1}
entrypoint: [python3, model_def.py]
)",
       {}},
      {R"(name: mmdet_maskrcnn
hyperparameters: {global_batch_size: 16, config_file: mask_rcnn_r50_fpn_1x_coco.py}
searcher: {name: single, metric: bbox_mAP, smaller_is_better: false, max_length: {batches: 200}}
checkpoint_storage: {save_trial_latest: 5}
resources: {slots_per_trial: 8}
entrypoint: [python3, -m, determined.launch.torch_distributed, python3, train.py]
)",
       {}},
  };
  for (const auto& [yaml, warnings] : configs) {
    SCOPED_TRACE(yaml);
    absl::StatusOr<Json> tree = ParseYaml(yaml);
    ASSERT_OK(tree);
    absl::StatusOr<ExperimentConfig> config = ParseExperimentConfig(*tree);
    ASSERT_OK(config);
    EXPECT_EQ(config->warnings, warnings);
    EXPECT_OK(CheckRunnable(*config));
  }
}

}  // namespace
}  // namespace cohort::config
