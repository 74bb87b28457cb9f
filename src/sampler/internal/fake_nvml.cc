// A stand-in for libnvidia-ml.so.1 for nvml_reader_test.cc: the NVML functions NvmlReader
// uses, with two GPUs, plus controls the test finds with dlsym (FakeNvml*). Not thread-safe:
// one test drives it at a time.

#include <cstdio>
#include <cstring>

namespace {

struct Device {
  const char* uuid;
  unsigned int utilization;
  unsigned long long free_memory;
};

const Device kDevices[] = {
    {"GPU-11111111-2222-3333-4444-555555555555", 37, 1ull << 30},
    {"GPU-66666666-7777-8888-9999-000000000000", 80, 3ull << 30},
};

int init_result = 0;      // what nvmlInit_v2 returns
int failing_device = -1;  // whose utilization cannot be read
int initialized = 0;      // nvmlInit_v2 calls minus nvmlShutdown calls

struct nvmlUtilization_t {
  unsigned int gpu;
  unsigned int memory;
};
struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

}  // namespace

extern "C" {

void FakeNvmlSet(int init, int failing) {
  init_result = init;
  failing_device = failing;
}
int FakeNvmlInitialized() { return initialized; }

int nvmlInit_v2() {
  if (init_result == 0) ++initialized;
  return init_result;
}
int nvmlShutdown() {
  --initialized;
  return 0;
}
const char* nvmlErrorString(int code) { return code == 9 ? "Driver Not Loaded" : "Unknown Error"; }
int nvmlDeviceGetCount_v2(unsigned int* count) {
  *count = 2;
  return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned int index, const Device** device) {
  if (index >= 2) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  *device = &kDevices[index];
  return 0;
}
int nvmlDeviceGetUUID(const Device* device, char* uuid, unsigned int length) {
  if (std::strlen(device->uuid) >= length) return 7;  // NVML_ERROR_INSUFFICIENT_SIZE
  std::snprintf(uuid, length, "%s", device->uuid);
  return 0;
}
int nvmlDeviceGetUtilizationRates(const Device* device, nvmlUtilization_t* utilization) {
  if (device - kDevices == failing_device) return 15;  // NVML_ERROR_GPU_IS_LOST
  utilization->gpu = device->utilization;
  utilization->memory = 0;
  return 0;
}
int nvmlDeviceGetMemoryInfo(const Device* device, nvmlMemory_t* memory) {
  memory->total = 16ull << 30;
  memory->free = device->free_memory;
  memory->used = memory->total - memory->free;
  return 0;
}

}  // extern "C"
