#pragma once
// The subcommands of cohort-bench. Each Add*Command registers its flags on `app` and returns
// the options it fills; Run*Command runs it after parsing and returns the process exit code.
// Adding a benchmark: declare its pair here, implement it in <name>_bench.cc, wire it in
// cohort_bench.cc.

#include <cstddef>
#include <memory>
#include <string>

#include "CLI/CLI.hpp"

namespace cohort::bench {

struct AllreduceOptions {
  size_t bytes = 16u << 20;
  int iters = 20;
  int warmup = 5;
  std::string transport = "auto";
  std::string dtype = "fp32";
  bool check = false;
};

CLI::App* AddAllreduceCommand(CLI::App& app, AllreduceOptions& options);
int RunAllreduceCommand(const AllreduceOptions& options);

}  // namespace cohort::bench
