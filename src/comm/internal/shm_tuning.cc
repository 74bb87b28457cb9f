#include "comm/internal/shm_tuning.h"

#include <sys/utsname.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "common/env.h"
#include "common/json_bounded.h"
#include "common/private_file.h"
#include "common/small_file.h"

#ifndef COHORT_VERSION
#define COHORT_VERSION "unknown"
#endif

namespace cohort::comm::internal {
namespace {

using nlohmann::json;

// Bumped whenever the candidates or the paths' code change what a measurement means, so that
// older caches are measured again.
constexpr int kTuningFormat = 1;
constexpr uint32_t kMinChunkBytes = 4096;
constexpr uint32_t kMaxCmaChunkBytes = 4 << 20;
constexpr uint32_t kMaxWaitIterations = 1 << 20;
constexpr size_t kMaxCacheFileBytes = 1 << 20;

std::string Bytes(size_t bytes) {
  if (bytes >= (1 << 20) && bytes % (1 << 20) == 0) return absl::StrCat(bytes >> 20, " MiB");
  if (bytes >= 1024 && bytes % 1024 == 0) return absl::StrCat(bytes >> 10, " KiB");
  return absl::StrCat(bytes, " B");
}

std::string Seconds(double s) {
  if (s < 1e-3) return absl::StrFormat("%.1f us", s * 1e6);
  return absl::StrFormat("%.2f ms", s * 1e3);
}

absl::string_view PathName(ShmPath path) {
  return path == ShmPath::kCma ? "single-copy" : "staged";
}

// The first line of /proc/cpuinfo naming the processor (x86: "model name"; Arm: "CPU part").
std::string CpuModel() {
  absl::StatusOr<std::string> info = ReadSmallFile("/proc/cpuinfo", 8 << 20);
  if (!info.ok()) return "unknown";
  for (absl::string_view line : absl::StrSplit(*info, '\n')) {
    for (absl::string_view field : {"model name", "CPU part", "cpu model", "Processor"}) {
      if (!absl::StartsWith(line, field)) continue;
      const size_t colon = line.find(':');
      if (colon != absl::string_view::npos) {
        return std::string(absl::StripAsciiWhitespace(line.substr(colon + 1)));
      }
    }
  }
  return "unknown";
}

absl::Status CheckChoice(const ShmChoice& c, const ShmMachine& machine, int size_class) {
  const std::string where = absl::StrCat("size class ", Bytes(kShmClassBytes[size_class]));
  if (c.path != ShmPath::kStaged && c.path != ShmPath::kCma) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": unknown path ", int(c.path)));
  }
  if (c.path == ShmPath::kCma && !machine.cma_ok) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": single-copy chosen, but cross-memory attach does not work here"));
  }
  const size_t most = c.path == ShmPath::kStaged ? machine.slot_bytes : kMaxCmaChunkBytes;
  if (c.chunk_bytes < kMinChunkBytes || c.chunk_bytes > most || c.chunk_bytes % 4096 != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": chunk of ", c.chunk_bytes, " bytes is not a multiple of 4096 between ",
        kMinChunkBytes, " and ", most));
  }
  return absl::OkStatus();
}

absl::Status CheckTuning(const ShmTuning& t, const ShmMachine& machine) {
  for (int c = 0; c < kShmSizeClasses; ++c) {
    if (absl::Status s = CheckChoice(t.classes[c], machine, c); !s.ok()) return s;
  }
  if (t.wait.spin_iterations > kMaxWaitIterations || t.wait.yield_iterations > kMaxWaitIterations) {
    return absl::InvalidArgumentError(absl::StrCat("wait policy (", ShmWaitName(t.wait),
                                                   ") above ", kMaxWaitIterations, " iterations"));
  }
  return absl::OkStatus();
}

json ChoiceJson(const ShmChoice& c) {
  return {{"path", PathName(c.path)}, {"chunk_bytes", c.chunk_bytes}};
}

ShmChoice ChoiceFromJson(const json& j) {
  const std::string path = j.at("path").get<std::string>();
  if (path != "staged" && path != "single-copy") {
    throw std::invalid_argument(absl::StrCat("path \"", path, "\" is not staged or single-copy"));
  }
  return {path == "staged" ? ShmPath::kStaged : ShmPath::kCma,
          j.at("chunk_bytes").get<uint32_t>()};
}

ShmTuning TuningFromJson(const json& j) {
  ShmTuning t;
  const json& classes = j.at("classes");
  if (!classes.is_array() || classes.size() != kShmSizeClasses) {
    throw std::invalid_argument(absl::StrCat("classes is not an array of ", kShmSizeClasses));
  }
  for (int c = 0; c < kShmSizeClasses; ++c) t.classes[c] = ChoiceFromJson(classes[c]);
  t.wait = {j.at("wait").at("spin").get<uint32_t>(), j.at("wait").at("yield").get<uint32_t>()};
  t.calibration_seconds = j.at("calibration_seconds").get<double>();
  for (const json& m : j.at("measurements")) {
    t.measurements.push_back({m.at("size_class").get<int>(), m.at("candidate").get<std::string>(),
                              m.at("seconds").get<double>(), m.at("chosen").get<bool>()});
    if (t.measurements.back().size_class < -1 ||
        t.measurements.back().size_class >= kShmSizeClasses) {
      throw std::invalid_argument("a measurement's size_class is out of range");
    }
  }
  return t;
}

}  // namespace

std::string ShmChoiceName(const ShmChoice& choice) {
  return absl::StrCat(PathName(choice.path), " ", Bytes(choice.chunk_bytes));
}

std::string ShmWaitName(const ShmWait& wait) {
  return absl::StrCat("spin ", wait.spin_iterations, ", yield ", wait.yield_iterations);
}

int ShmSizeClass(size_t bytes) {
  if (bytes < (16 << 10)) return 0;
  if (bytes < (256 << 10)) return 1;
  if (bytes < (4 << 20)) return 2;
  return 3;
}

absl::string_view ShmTuningSourceName(ShmTuningSource source) {
  switch (source) {
    case ShmTuningSource::kConstants: return "constants";
    case ShmTuningSource::kEnvironment: return "environment";
    case ShmTuningSource::kMeasured: return "measured";
    case ShmTuningSource::kCache: return "cache";
  }
  return "unknown";
}

ShmTuning ConstantShmTuning(const ShmMachine& machine) {
  const bool oversubscribed = machine.ranks > machine.usable_cores;
  ShmTuning t = ShmTuningFromCmaMinBytes(machine, oversubscribed ? 0 : (1 << 20));
  t.source = ShmTuningSource::kConstants;
  return t;
}

ShmTuning ShmTuningFromCmaMinBytes(const ShmMachine& machine, int64_t min_bytes) {
  ShmTuning t;
  t.source = ShmTuningSource::kEnvironment;
  const bool oversubscribed = machine.ranks > machine.usable_cores;
  t.wait = oversubscribed ? ShmWait{64, 16} : ShmWait{1024, 1024};
  for (int c = 0; c < kShmSizeClasses; ++c) {
    // A class takes single-copy when its measured size reaches the threshold: with the
    // threshold at 1 MiB, the class from 256 KiB measured at 1 MiB.
    const bool cma = machine.cma_ok && min_bytes > 0 &&
                     kShmClassBytes[c] >= static_cast<size_t>(min_bytes);
    t.classes[c] = cma ? ShmChoice{ShmPath::kCma, 256 << 10}
                       : ShmChoice{ShmPath::kStaged, static_cast<uint32_t>(machine.slot_bytes)};
  }
  return t;
}

std::vector<ShmChoice> ShmPathCandidates(const ShmMachine& machine, int size_class) {
  const size_t bytes = kShmClassBytes[size_class];
  std::vector<ShmChoice> all = {ConstantShmTuning(machine).classes[size_class]};
  for (uint32_t slot : {uint32_t{256 << 10}, static_cast<uint32_t>(machine.slot_bytes)}) {
    if (slot <= machine.slot_bytes) all.push_back({ShmPath::kStaged, slot});
  }
  if (machine.cma_ok) {
    for (uint32_t chunk : {64u << 10, 256u << 10, 1u << 20}) all.push_back({ShmPath::kCma, chunk});
  }
  // Chunks larger than what one rank handles at this size all behave alike: keep the first.
  const size_t per_rank = std::max<size_t>(bytes / std::max(machine.ranks, 1), kMinChunkBytes);
  auto effective = [&](const ShmChoice& c) {
    return std::make_pair(c.path, std::min<size_t>(c.chunk_bytes,
                                                   c.path == ShmPath::kCma ? per_rank : bytes));
  };
  std::vector<ShmChoice> out;
  for (const ShmChoice& c : all) {
    bool seen = false;
    for (const ShmChoice& o : out) seen = seen || effective(o) == effective(c);
    if (!seen) out.push_back(c);
  }
  return out;
}

std::vector<ShmWait> ShmWaitCandidates(const ShmMachine& machine) {
  std::vector<ShmWait> out = {ConstantShmTuning(machine).wait};
  for (ShmWait w : {ShmWait{1024, 1024}, ShmWait{64, 16}, ShmWait{0, 0}}) {
    if (!(w == out.front())) out.push_back(w);
  }
  return out;
}

size_t PickShmCandidate(const std::vector<double>& seconds, double margin) {
  size_t best = 0;
  for (size_t i = 1; i < seconds.size(); ++i) {
    if (seconds[i] < seconds[best]) best = i;
  }
  if (best != 0 && !seconds.empty() && seconds[best] * (1 + margin) >= seconds[0]) return 0;
  return best;
}

std::string EncodeShmTuning(const ShmTuning* tuning) {
  std::string wire(kShmTuningWireBytes, '\0');
  if (tuning == nullptr) return wire;
  wire[0] = 1;
  wire[1] = static_cast<char>(tuning->source);
  for (int c = 0; c < kShmSizeClasses; ++c) {
    wire[4 + 8 * c] = static_cast<char>(tuning->classes[c].path);
    std::memcpy(&wire[8 + 8 * c], &tuning->classes[c].chunk_bytes, 4);
  }
  std::memcpy(&wire[36], &tuning->wait.spin_iterations, 4);
  std::memcpy(&wire[40], &tuning->wait.yield_iterations, 4);
  return wire;
}

absl::StatusOr<std::optional<ShmTuning>> DecodeShmTuning(absl::string_view wire,
                                                         const ShmMachine& machine) {
  if (wire.size() != kShmTuningWireBytes || (wire[0] != 0 && wire[0] != 1) ||
      static_cast<uint8_t>(wire[1]) > static_cast<uint8_t>(ShmTuningSource::kCache)) {
    return absl::InvalidArgumentError(
        "rank 0's allreduce tuning is malformed: do all ranks run the same Cohort build?");
  }
  if (wire[0] == 0) return std::nullopt;
  ShmTuning t;
  t.source = static_cast<ShmTuningSource>(wire[1]);
  for (int c = 0; c < kShmSizeClasses; ++c) {
    t.classes[c].path = static_cast<ShmPath>(wire[4 + 8 * c]);
    std::memcpy(&t.classes[c].chunk_bytes, &wire[8 + 8 * c], 4);
  }
  std::memcpy(&t.wait.spin_iterations, &wire[36], 4);
  std::memcpy(&t.wait.yield_iterations, &wire[40], 4);
  if (absl::Status s = CheckTuning(t, machine); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("rank 0's allreduce tuning: ", s.message()));
  }
  return t;
}

absl::StatusOr<ShmCalibrateMode> ShmCalibrateModeFromEnv() {
  const std::string value = absl::AsciiStrToLower(env::GetOr("COHORT_COMM_CALIBRATE", "auto"));
  if (value == "auto" || value == "1" || value == "on") return ShmCalibrateMode::kAuto;
  if (value == "force") return ShmCalibrateMode::kForce;
  if (value == "off" || value == "0") return ShmCalibrateMode::kOff;
  return absl::InvalidArgumentError(absl::StrCat(
      "COHORT_COMM_CALIBRATE=", value, " is not one of auto, force, off"));
}

std::string ShmMachineKey(const ShmMachine& machine) {
  struct utsname u {};
  ::uname(&u);
  return absl::StrCat("kernel=", u.release, " ", u.version, ";cpu=", CpuModel(),
                      ";cpus=", std::thread::hardware_concurrency(),
                      ";cores=", machine.usable_cores, ";ranks=", machine.ranks,
                      ";cma=", machine.cma_ok ? 1 : 0, ";slot=", machine.slot_bytes,
                      ";version=", COHORT_VERSION, "/", kTuningFormat);
}

ShmTuningCache ShmTuningCacheFor(const ShmMachine& machine) {
  ShmTuningCache cache{ShmMachineKey(machine), ""};
  std::string dir = env::GetOr("COHORT_COMM_CACHE_DIR", "");
  if (dir.empty() && !env::GetOr("XDG_CACHE_HOME", "").empty()) {
    dir = env::GetOr("XDG_CACHE_HOME", "") + "/cohort";
  }
  if (dir.empty() && !env::GetOr("HOME", "").empty()) dir = env::GetOr("HOME", "") + "/.cache/cohort";
  if (dir.empty()) return cache;
  uint64_t hash = 14695981039346656037ull;  // FNV-1a 64: stable across runs and builds
  for (unsigned char ch : cache.key) hash = (hash ^ ch) * 1099511628211ull;
  cache.path = absl::StrFormat("%s/shm-%016x.json", dir, hash);
  return cache;
}

absl::StatusOr<ShmTuning> LoadShmTuning(const ShmTuningCache& cache, const ShmMachine& machine) {
  const std::string& path = cache.path;
  absl::StatusOr<std::string> text = ReadSmallFile(path, kMaxCacheFileBytes);
  if (!text.ok()) return text.status();
  absl::StatusOr<json> j = ParseJsonBounded(*text);
  if (!j.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", j.status().message()));
  }
  try {
    if (j->at("key").get<std::string>() != cache.key) {
      return absl::FailedPreconditionError(
          absl::StrCat(path, " was measured on another machine, kernel or Cohort version"));
    }
    ShmTuning t = TuningFromJson(*j);
    if (absl::Status s = CheckTuning(t, machine); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": ", s.message()));
    }
    t.source = ShmTuningSource::kCache;
    t.cache_path = path;
    return t;
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(path, " is not a Cohort tuning: ", e.what()));
  }
}

absl::Status SaveShmTuning(const ShmTuningCache& cache, const ShmTuning& tuning) {
  const std::string& path = cache.path;
  json j = {{"key", cache.key},
            {"calibration_seconds", tuning.calibration_seconds},
            {"wait", {{"spin", tuning.wait.spin_iterations}, {"yield", tuning.wait.yield_iterations}}}};
  j["classes"] = json::array();
  for (const ShmChoice& c : tuning.classes) j["classes"].push_back(ChoiceJson(c));
  j["measurements"] = json::array();
  for (const ShmMeasurement& m : tuning.measurements) {
    j["measurements"].push_back({{"size_class", m.size_class}, {"candidate", m.candidate},
                                 {"seconds", m.seconds}, {"chosen", m.chosen}});
  }
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  if (ec) {
    return absl::FailedPreconditionError(absl::StrCat(
        "creating ", std::filesystem::path(path).parent_path().string(), ": ", ec.message()));
  }
  return WritePrivateFile(path, j.dump(1) + "\n");
}

std::string ExplainShmTuning(const ShmTuning& t, int ranks) {
  std::string out = absl::StrCat("shared-memory allreduce, ", ranks, " ranks: ");
  switch (t.source) {
    case ShmTuningSource::kMeasured:
      absl::StrAppend(&out, "measured at setup in ", Seconds(t.calibration_seconds));
      break;
    case ShmTuningSource::kCache:
      absl::StrAppend(&out, "from the cache (measured in ", Seconds(t.calibration_seconds), ")");
      break;
    case ShmTuningSource::kEnvironment:
      absl::StrAppend(&out, "fixed by COHORT_SHM_CMA_MIN_BYTES");
      break;
    case ShmTuningSource::kConstants:
      absl::StrAppend(&out, "built-in constants (COHORT_COMM_CALIBRATE=off)");
      break;
  }
  if (!t.cache_path.empty()) absl::StrAppend(&out, "; cache ", t.cache_path);
  absl::StrAppend(&out, "\n", absl::StrFormat("%-22s %-22s %12s\n", "size class", "candidate",
                                              "median"));
  for (int c = -1; c < kShmSizeClasses; ++c) {
    const std::string label =
        c < 0 ? "waiting (64 KiB)" : absl::StrCat(Bytes(kShmClassBytes[c]), " class");
    const std::string chosen = c < 0 ? ShmWaitName(t.wait) : ShmChoiceName(t.classes[c]);
    bool any = false;
    for (const ShmMeasurement& m : t.measurements) {
      if (m.size_class != c) continue;
      absl::StrAppend(&out, absl::StrFormat("%-22s %-22s %12s%s\n", any ? "" : label, m.candidate,
                                            Seconds(m.seconds), m.chosen ? "  chosen" : ""));
      any = true;
    }
    if (!any) absl::StrAppend(&out, absl::StrFormat("%-22s %-22s %12s  chosen\n", label, chosen, "-"));
  }
  return out;
}

}  // namespace cohort::comm::internal
