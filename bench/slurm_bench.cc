// slurm_bench: the Slurm resource manager against the agents', side by side in one invocation
// on one machine: a real Slurm (munged, slurmctld and one slurmd per node on loopback, as the
// tests start it) and the same number of one-slot cohort-agents, each under a cohort-master of
// its own. Two measures per resource manager:
//   * create to first batch: `cohort experiment create` of a one-trial experiment until its
//     trial's first line runs (the script stamps the time), --repeat times;
//   * scheduling overhead per trial: a grid of --trials one-slot trials that do nothing, from
//     `experiment create` to COMPLETED, divided by the trials (what placing, starting and
//     ending a trial costs when the trial itself costs nothing), with --nodes nodes.
// Prints each side's figures and the Slurm / agents ratio.
//
//   build/bench/slurm_bench --nodes 2 --trials 20 --repeat 5
//
// Needs slurm-wlm and munge (scripts/install.sh --test) and the built cohort programs
// (build/bin); runs as any user that may start the daemons (root here).

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/subprocess.h"
#include "common/testing/temp_dir.h"
#include "slurm/testing/slurm_cluster.h"

namespace {

namespace fs = std::filesystem;
using cohort::Subprocess;

// Cohort's program `name` in the build's bin/ (this bench lives in bench/ beside it).
std::string Bin(const std::string& name) {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return (self.parent_path().parent_path() / "bin" / name).string();
}

struct Flags {
  int nodes = 2;
  int trials = 20;
  int repeat = 5;
};

// A running program and what it printed so far.
struct Process {
  std::unique_ptr<Subprocess> child;
  std::string out;
};

std::optional<Process> Launch(std::vector<std::string> argv,
                              std::map<std::string, std::optional<std::string>> env = {}) {
  absl::StatusOr<std::unique_ptr<Subprocess>> child =
      Subprocess::Start({.argv = std::move(argv), .env = std::move(env)});
  if (!child.ok()) {
    std::fprintf(stderr, "slurm_bench: %s\n", std::string(child.status().message()).c_str());
    return std::nullopt;
  }
  return Process{std::move(*child), ""};
}

// Runs `argv` to its end (at most 10 minutes); what it printed, and whether it exited 0.
std::pair<bool, std::string> RunToEnd(std::vector<std::string> argv,
                                      std::map<std::string, std::optional<std::string>> env) {
  std::optional<Process> p = Launch(std::move(argv), std::move(env));
  if (!p) return {false, ""};
  const absl::Time deadline = absl::Now() + absl::Minutes(10);
  while (p->child->ReadAvailable(&p->out, absl::Milliseconds(100)) && absl::Now() < deadline) {
  }
  absl::StatusOr<int> status = p->child->Wait(absl::Seconds(5));
  return {status.ok() && *status == 0, p->out};
}

// A cohort-master on `data_dir` (with `extra` flags) and the CLI's view of it.
class Master {
 public:
  bool Start(const fs::path& data_dir, const std::vector<std::string>& extra) {
    std::vector<std::string> argv = {Bin("cohort-master"), "--port", "0",
                                     "--data-dir", data_dir.string(), "--agent-timeout", "5"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    std::optional<Process> p = Launch(argv);
    if (!p) return false;
    process_ = std::move(*p);
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    size_t at = std::string::npos;
    while ((at = process_.out.find("listening on ")) == std::string::npos &&
           absl::Now() < deadline) {
      process_.child->ReadAvailable(&process_.out, absl::Milliseconds(100));
    }
    if (at == std::string::npos) return false;
    url_ = process_.out.substr(at + 13, process_.out.find(' ', at + 13) - at - 13);
    std::ifstream password(data_dir / "admin-password");
    std::getline(password, password_);
    config_home_ = (data_dir.parent_path() / (data_dir.filename().string() + "-cli")).string();
    return !password_.empty();
  }
  const std::string& url() const { return url_; }
  // `cohort ARGS` against this master; its output, or nullopt when it failed.
  std::optional<std::string> Cohort(std::vector<std::string> args) {
    args.insert(args.begin(), {Bin("cohort"), "-m", url_});
    auto [ok, out] = RunToEnd(std::move(args), {{"XDG_CONFIG_HOME", config_home_},
                                                {"COHORT_USER", "admin"},
                                                {"COHORT_PASSWORD", password_}});
    if (!ok) std::fprintf(stderr, "slurm_bench: cohort: %s\n", out.c_str());
    return ok ? std::optional<std::string>(out) : std::nullopt;
  }
  void Drain() { process_.child->ReadAvailable(&process_.out, absl::ZeroDuration(), 1 << 20); }

 private:
  Process process_;
  std::string url_, password_, config_home_;
};

// Creates the experiment of `config` on `master`; its id, or -1.
int64_t Create(Master& master, const fs::path& config, const fs::path& context) {
  std::optional<std::string> out =
      master.Cohort({"experiment", "create", config.string(), context.string()});
  const size_t at = out ? out->find("created experiment ") : std::string::npos;
  int64_t id = -1;
  if (at != std::string::npos) {
    std::string digits = out->substr(at + 19);
    digits = digits.substr(0, digits.find_first_not_of("0123456789"));
    if (!absl::SimpleAtoi(digits, &id)) id = -1;
  }
  return id;
}

// Waits (at most 10 minutes) until experiment `id` ends; whether it COMPLETED.
bool WaitCompleted(Master& master, int64_t id) {
  const absl::Time deadline = absl::Now() + absl::Minutes(10);
  while (absl::Now() < deadline) {
    master.Drain();
    std::optional<std::string> out = master.Cohort({"experiment", "describe", std::to_string(id)});
    if (out && out->find("COMPLETED") != std::string::npos) return true;
    if (out && (out->find("ERROR") != std::string::npos ||
                out->find("CANCELED") != std::string::npos)) {
      return false;
    }
    absl::SleepFor(absl::Milliseconds(200));
  }
  return false;
}

struct Figures {
  std::vector<double> first_batch_s;
  double per_trial_s = 0;
};

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The two measures on `master`, with the files in `dir`.
std::optional<Figures> Measure(Master& master, const fs::path& dir, const Flags& flags) {
  const fs::path context = dir / "context";
  fs::create_directories(context);
  const fs::path stamp = dir / "stamp";
  {
    std::ofstream script(context / "first.sh");
    script << "#!/bin/sh\ndate +%s.%N > " << stamp.string() << "\n";
  }
  fs::permissions(context / "first.sh", fs::perms::owner_all);
  {
    std::ofstream script(context / "nothing.sh");
    script << "#!/bin/sh\nexit 0\n";
  }
  fs::permissions(context / "nothing.sh", fs::perms::owner_all);
  const std::string common = "max_restarts: 0\nhyperparameters: {global_batch_size: 16";
  std::ofstream(dir / "first.yaml")
      << "name: first\nentrypoint: ./first.sh\n" << common << "}\n"
      << "searcher: {name: single, metric: loss, max_length: {batches: 1}}\n";
  std::ofstream(dir / "grid.yaml")
      << "name: grid\nentrypoint: ./nothing.sh\n" << common << ", x: {type: int, minval: 1, "
      << "maxval: " << flags.trials << ", count: " << flags.trials << "}}\n"
      << "searcher: {name: grid, metric: loss, max_length: {batches: 1}}\n";
  Figures figures;
  for (int r = 0; r < flags.repeat; ++r) {
    fs::remove(stamp);
    const double t0 = absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch());
    const int64_t id = Create(master, dir / "first.yaml", context);
    if (id < 0 || !WaitCompleted(master, id)) return std::nullopt;
    double stamped = 0;
    std::ifstream in(stamp);
    if (!(in >> stamped)) return std::nullopt;
    figures.first_batch_s.push_back(stamped - t0);
  }
  const absl::Time t0 = absl::Now();
  const int64_t grid = Create(master, dir / "grid.yaml", context);
  if (grid < 0 || !WaitCompleted(master, grid)) return std::nullopt;
  figures.per_trial_s = absl::ToDoubleSeconds(absl::Now() - t0) / flags.trials;
  return figures;
}

void Print(const char* name, const Figures& f) {
  std::printf("%-8s create to first batch: median %.2f s (min %.2f, max %.2f, %zu runs); "
              "per trial of a %s: %.2f s\n",
              name, Median(f.first_batch_s),
              *std::min_element(f.first_batch_s.begin(), f.first_batch_s.end()),
              *std::max_element(f.first_batch_s.begin(), f.first_batch_s.end()),
              f.first_batch_s.size(), "grid", f.per_trial_s);
}

int RunBench(const Flags& flags) {
  cohort::testing_support::TempDir dir("slurm_bench");
  const fs::path root = dir.path();
  // The agents' side.
  Master agents_master;
  if (!agents_master.Start(root / "agents-master", {})) return 1;
  std::vector<Process> agents;
  for (int k = 1; k <= flags.nodes; ++k) {
    std::optional<Process> agent = Launch(
        {Bin("cohort-agent"), "--master", agents_master.url(), "--id",
         absl::StrCat("a", k), "--slots", "1", "--work-dir", (root / absl::StrCat("a", k)).string(),
         "--secret-file", (root / "agents-master" / "agent-secret").string()});
    if (!agent) return 1;
    agents.push_back(std::move(*agent));
  }
  absl::SleepFor(absl::Seconds(2));  // the agents register
  std::optional<Figures> on_agents = Measure(agents_master, root / "agents", flags);
  if (!on_agents) return 1;
  agents.clear();
  // Slurm's side: as many one-CPU nodes.
  absl::StatusOr<std::unique_ptr<cohort::slurm::testing::SlurmCluster>> cluster =
      cohort::slurm::testing::SlurmCluster::Start(flags.nodes, 1);
  if (!cluster.ok()) {
    std::fprintf(stderr, "slurm_bench: %s\n", std::string(cluster.status().message()).c_str());
    return 1;
  }
  for (const auto& [name, value] : (*cluster)->env()) setenv(name.c_str(), value.c_str(), 1);
  Master slurm_master;
  if (!slurm_master.Start(root / "slurm-master",
                          {"--resource-manager", "slurm", "--slurm-node-work-dir",
                           (root / "nodes").string()})) {
    return 1;
  }
  std::optional<Figures> on_slurm = Measure(slurm_master, root / "slurm", flags);
  if (!on_slurm) return 1;
  Print("agents", *on_agents);
  Print("slurm", *on_slurm);
  std::printf("slurm / agents: create to first batch %.2fx, per trial %.2fx\n",
              Median(on_slurm->first_batch_s) / Median(on_agents->first_batch_s),
              on_slurm->per_trial_s / on_agents->per_trial_s);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  CLI::App app{"slurm_bench: Slurm's resource manager against the agents', side by side"};
  app.add_option("--nodes", flags.nodes, "Slurm nodes, and agents (default 2)")
      ->check(CLI::Range(1, 8));
  app.add_option("--trials", flags.trials, "Trials of the grid (default 20)")
      ->check(CLI::Range(1, 1000));
  app.add_option("--repeat", flags.repeat, "One-trial experiments timed (default 5)")
      ->check(CLI::Range(1, 100));
  CLI11_PARSE(app, argc, argv);
  return RunBench(flags);
}
