#include "sampler/nvml_reader.h"

#include <dlfcn.h>

#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace cohort::sampler {
namespace {

// The few NVML declarations used here, from NVIDIA's nvml.h (stable ABI since the _v2 entry
// points of CUDA 5.5); declared here so that no NVIDIA header is needed to build.
using nvmlReturn_t = int;  // an enum; 0 is NVML_SUCCESS
using nvmlDevice_t = struct nvmlDevice_st*;
struct nvmlUtilization_t {
  unsigned int gpu;     // % of time a kernel ran over the last sample period
  unsigned int memory;  // % of time device memory was read or written
};
struct nvmlMemory_t {
  unsigned long long total;  // bytes
  unsigned long long free;
  unsigned long long used;
};
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr unsigned int kUuidBufferSize = 96;  // NVML_DEVICE_UUID_V2_BUFFER_SIZE

}  // namespace

namespace internal {

struct NvmlApi {
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  nvmlReturn_t (*device_count)(unsigned int*) = nullptr;
  nvmlReturn_t (*handle_by_index)(unsigned int, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned int) = nullptr;
  nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;  // optional: else the number is shown

  std::string Error(nvmlReturn_t code) const {
    if (error_string != nullptr) return absl::StrCat(error_string(code), " (", code, ")");
    return absl::StrCat("NVML error ", code);
  }
};

}  // namespace internal

namespace {

// Resolves every function the reader needs from `library`, or NotFound naming the first one
// missing.
absl::Status ResolveAll(void* library, const std::string& path, internal::NvmlApi* api) {
  const char* missing = nullptr;
  auto need = [&](const char* name, auto* function) {
    using Function = std::remove_pointer_t<decltype(function)>;
    *function = reinterpret_cast<Function>(dlsym(library, name));
    if (*function == nullptr && missing == nullptr) missing = name;
  };
  need("nvmlInit_v2", &api->init);
  need("nvmlShutdown", &api->shutdown);
  need("nvmlDeviceGetCount_v2", &api->device_count);
  need("nvmlDeviceGetHandleByIndex_v2", &api->handle_by_index);
  need("nvmlDeviceGetUUID", &api->uuid);
  need("nvmlDeviceGetUtilizationRates", &api->utilization);
  need("nvmlDeviceGetMemoryInfo", &api->memory);
  if (missing != nullptr) return absl::NotFoundError(absl::StrCat(path, " has no ", missing));
  api->error_string =
      reinterpret_cast<const char* (*)(nvmlReturn_t)>(dlsym(library, "nvmlErrorString"));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<NvmlReader>> NvmlReader::Load(const std::string& library) {
  // RTLD_LOCAL: NVML's symbols stay out of the global namespace.
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = dlerror();
    return absl::NotFoundError(
        absl::StrCat("cannot load ", library, ": ", error != nullptr ? error : "unknown error"));
  }
  auto api = std::make_unique<internal::NvmlApi>();
  if (absl::Status status = ResolveAll(handle, library, api.get()); !status.ok()) {
    dlclose(handle);
    return status;
  }
  if (nvmlReturn_t code = api->init(); code != kNvmlSuccess) {
    const std::string error = api->Error(code);
    dlclose(handle);
    return absl::UnavailableError(absl::StrCat("nvmlInit_v2 failed: ", error));
  }
  unsigned int count = 0;
  if (nvmlReturn_t code = api->device_count(&count); code != kNvmlSuccess) {
    const std::string error = api->Error(code);
    api->shutdown();
    dlclose(handle);
    return absl::UnavailableError(absl::StrCat("nvmlDeviceGetCount_v2 failed: ", error));
  }
  return std::unique_ptr<NvmlReader>(
      new NvmlReader(handle, std::move(api), static_cast<int>(count)));
}

NvmlReader::NvmlReader(void* library, std::unique_ptr<internal::NvmlApi> api, int device_count)
    : library_(library), api_(std::move(api)), device_count_(device_count) {}

NvmlReader::~NvmlReader() {
  api_->shutdown();
  dlclose(library_);
}

std::vector<GpuReading> NvmlReader::Read() const {
  std::vector<GpuReading> readings;
  for (int i = 0; i < device_count_; ++i) {
    nvmlDevice_t device = nullptr;
    char uuid[kUuidBufferSize] = {};
    nvmlUtilization_t utilization{};
    nvmlMemory_t memory{};
    if (api_->handle_by_index(static_cast<unsigned int>(i), &device) != kNvmlSuccess ||
        api_->uuid(device, uuid, kUuidBufferSize) != kNvmlSuccess ||
        api_->utilization(device, &utilization) != kNvmlSuccess ||
        api_->memory(device, &memory) != kNvmlSuccess) {
      continue;
    }
    uuid[kUuidBufferSize - 1] = '\0';
    readings.push_back({.uuid = uuid,
                        .utilization = static_cast<double>(utilization.gpu),
                        .free_memory = static_cast<uint64_t>(memory.free)});
  }
  return readings;
}

}  // namespace cohort::sampler
