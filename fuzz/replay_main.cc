// The fuzz targets' driver in the normal (g++) build: replays every file of a corpus directory
// through LLVMFuzzerTestOneInput, then a fixed number of seeded mutations of them, so the test
// suite runs each target on the same inputs every time, in a few seconds (fuzz/README.md says
// why). A crash or broken invariant fails the test; the input is written first to
// replay-crash-<target> in the working directory, so it can be run again and added to the corpus.
//
//   replay_main CORPUS_DIR [MUTATIONS] [SEED]     (defaults: 2000 mutations, seed 1)

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "common/split_mix64.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

constexpr size_t kMaxMutantBytes = 64 << 10;

// The input being run, for the crash handler (which may only call async-signal-safe functions).
const std::string* current_input = nullptr;
char crash_path[4096];

void OnCrash(int signal) {
  const int fd = ::open(crash_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0 && current_input != nullptr) {
    ssize_t ignored = ::write(fd, current_input->data(), current_input->size());
    (void)ignored;
    ::close(fd);
  }
  static const char kMessage[] = "replay: the input that crashed is in ";
  ssize_t ignored = ::write(2, kMessage, sizeof(kMessage) - 1);
  ignored = ::write(2, crash_path, strlen(crash_path));
  ignored = ::write(2, "\n", 1);
  (void)ignored;
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

void Run(const std::string& input) {
  current_input = &input;
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
  current_input = nullptr;
}

// Bytes that matter to the formats fuzzed here (JSON, YAML, tar headers).
constexpr char kInteresting[] = "[]{}\":,-*&!|>\n 0.e\\\0\377/";

// One to four random edits of `input`, some splicing in a piece of `other`.
std::string Mutate(std::string input, const std::string& other, cohort::SplitMix64& rng) {
  const int edits = 1 + static_cast<int>(rng.Below(4));
  for (int i = 0; i < edits; ++i) {
    const size_t at = input.empty() ? 0 : rng.Below(input.size());
    const size_t span = 1 + rng.Below(16);
    switch (rng.Below(6)) {
      case 0:
        if (!input.empty()) input[at] = static_cast<char>(input[at] ^ (1u << rng.Below(8)));
        break;
      case 1:
        input.insert(at, 1, kInteresting[rng.Below(sizeof(kInteresting) - 1)]);
        break;
      case 2:
        input.erase(at, span);
        break;
      case 3:
        input.insert(at, input.substr(at, span));
        break;
      case 4:
        if (!other.empty()) {
          const size_t from = rng.Below(other.size());
          input.insert(at, other.substr(from, 1 + rng.Below(64)));
        }
        break;
      default:
        if (!input.empty()) input[at] = static_cast<char>(rng.Next());
        break;
    }
  }
  if (input.size() > kMaxMutantBytes) input.resize(kMaxMutantBytes);
  return input;
}

std::vector<std::string> ReadCorpus(const fs::path& dir) {
  std::vector<fs::path> paths;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
    if (entry.is_regular_file()) paths.push_back(entry.path());
  }
  std::sort(paths.begin(), paths.end());
  std::vector<std::string> corpus;
  for (const fs::path& path : paths) {
    std::ifstream in(path, std::ios::binary);
    corpus.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return corpus;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 4) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR [MUTATIONS] [SEED]\n", argv[0]);
    return 2;
  }
  const fs::path dir = argv[1];
  const long mutations = argc > 2 ? std::strtol(argv[2], nullptr, 10) : 2000;
  cohort::SplitMix64 rng(argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    std::fprintf(stderr, "replay: %s is not a directory\n", dir.c_str());
    return 2;
  }
  const std::string target = fs::path(argv[0]).filename().string();
  std::snprintf(crash_path, sizeof(crash_path), "%s/replay-crash-%s", fs::current_path().c_str(),
                target.c_str());
  for (int signal : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) std::signal(signal, OnCrash);

  const std::vector<std::string> corpus = ReadCorpus(dir);
  if (corpus.empty()) {
    std::fprintf(stderr, "replay: %s holds no inputs\n", dir.c_str());
    return 2;
  }
  for (const std::string& input : corpus) Run(input);
  for (long i = 0; i < mutations; ++i) {
    const std::string& base = corpus[rng.Below(corpus.size())];
    const std::string& other = corpus[rng.Below(corpus.size())];
    Run(Mutate(base, other, rng));
  }
  std::printf("replay: %s: %zu corpus inputs and %ld mutations, all passed\n", target.c_str(),
              corpus.size(), mutations);
  return 0;
}
