// Distributed batch inference over Fashion-MNIST's 10,000 test images: each worker classifies its
// shard (images r, r + N, ...), the chief gathers every worker's predictions, writes them in
// image order as CSV (index,label,prediction,confidence) and prints the accuracy. The result is
// the same whatever the number of workers.
//
//   cohort-launch --slots 2 -- build/bin/fashion_mnist_inference
//       --checkpoint cohort-run/checkpoints/STORAGE_ID --out predictions.csv   (one line)
//
// Without --checkpoint the network keeps its seeded initial weights (a smoke test).

#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cohort/comm/comm_factory.h"
#include "cohort/fashion_mnist.h"
#include "cohort/status.h"
#include "fashion_mnist/net.h"

namespace {

struct Flags {
  std::string checkpoint;
  std::string out = "predictions.csv";
  int64_t batch = 500;
};

// Loads `dir`/model.pt (fashion_mnist_trial's checkpoint) into `net`; InvalidArgument naming the
// directory when it holds none or the file is not such a model.
absl::Status LoadWeights(const std::string& dir, cohort::examples::Net& net) {
  const std::string file = dir + "/model.pt";
  if (!std::ifstream(file)) {
    return absl::InvalidArgumentError(
        "--checkpoint " + dir +
        ": no model.pt in it; give a checkpoint directory of fashion_mnist_trial "
        "(cohort-run/checkpoints/STORAGE_ID, the storage_id of a \"checkpoint\" line of "
        "metrics.jsonl)");
  }
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(file);
    net.load(archive);
  } catch (const c10::Error& e) {
    const std::string what = e.what_without_backtrace();
    return absl::InvalidArgumentError(
        absl::StrCat(file, ": not the weights of this network: ", what.substr(0, what.find('\n'))));
  }
  return absl::OkStatus();
}

absl::Status Run(const Flags& flags) {
  torch::set_num_threads(1);
  torch::manual_seed(0);
  COHORT_ASSIGN_OR_RETURN(auto comm, cohort::comm::CreateCommunicatorFromEnv({}));
  COHORT_ASSIGN_OR_RETURN(auto test, cohort::runtime::LoadFashionMnist(
                                         cohort::runtime::FashionMnistDir(), /*train=*/false));
  cohort::examples::Net net(nlohmann::json::object());
  if (!flags.checkpoint.empty()) COHORT_RETURN_IF_ERROR(LoadWeights(flags.checkpoint, net));
  net.eval();
  torch::NoGradGuard no_grad;
  const int64_t n = test.images.size(0);
  std::ostringstream mine;  // "index label prediction confidence" lines of this worker's shard
  std::vector<int64_t> shard;
  for (int64_t i = comm->rank(); i < n; i += comm->size()) shard.push_back(i);
  for (size_t at = 0; at < shard.size(); at += static_cast<size_t>(flags.batch)) {
    std::vector<int64_t> ids(shard.begin() + at,
                             shard.begin() + std::min(shard.size(), at + flags.batch));
    torch::Tensor idx = torch::tensor(ids, torch::kInt64);
    torch::Tensor probs = net.Forward(test.images.index_select(0, idx)).exp();
    auto [confidence, prediction] = probs.max(1);
    for (size_t k = 0; k < ids.size(); ++k) {
      mine << ids[k] << ' ' << test.labels[ids[k]].item<int64_t>() << ' '
           << prediction[k].item<int64_t>() << ' '
           << absl::StrFormat("%.4f", confidence[k].item<double>()) << '\n';
    }
  }
  COHORT_ASSIGN_OR_RETURN(std::vector<std::string> all, comm->Gather(mine.str(), /*root=*/0));
  if (comm->rank() != 0) return absl::OkStatus();
  std::vector<std::string> rows(n);
  int64_t correct = 0, seen = 0;
  for (const std::string& part : all) {
    std::istringstream in(part);
    int64_t index, label, prediction;
    std::string confidence;
    while (in >> index >> label >> prediction >> confidence) {
      rows[index] = absl::StrFormat("%d,%d,%d,%s", index, label, prediction, confidence);
      correct += label == prediction;
      ++seen;
    }
  }
  if (seen != n) {
    return absl::InternalError(absl::StrFormat("gathered %d predictions for %d images", seen, n));
  }
  std::ofstream out(flags.out);
  out << "index,label,prediction,confidence\n";
  for (const std::string& row : rows) out << row << '\n';
  if (!out) return absl::UnavailableError("writing " + flags.out);
  std::printf("inference: %lld images on %d worker(s), accuracy %.4f, predictions in %s\n",
              static_cast<long long>(n), comm->size(), static_cast<double>(correct) / n,
              flags.out.c_str());
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  CLI::App app{"Distributed batch inference on Fashion-MNIST's test set (one process per slot, "
               "under cohort-launch)."};
  app.add_option("--checkpoint", flags.checkpoint,
                 "Checkpoint directory of fashion_mnist_trial (holding model.pt)");
  app.add_option("--out", flags.out, "CSV written by the chief")->capture_default_str();
  app.add_option("--batch", flags.batch, "Images per forward pass")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  app.footer(
      "Example:\n  cohort-launch --slots 2 -- build/bin/fashion_mnist_inference "
      "--checkpoint cohort-run/checkpoints/STORAGE_ID --out predictions.csv");
  CLI11_PARSE(app, argc, argv);
  absl::Status status = Run(flags);
  if (!status.ok()) {
    std::fprintf(stderr, "inference: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
