#pragma once
// The CheckpointStorage contract (checkpoint_storage.h) as one suite of tests that runs
// unchanged against every implementation: DirectoryStorage today (directory_storage_test.cc),
// an object store next. An implementation's test file provides a factory and instantiates it:
//
//   INSTANTIATE_TEST_SUITE_P(Directory, CheckpointStorageConformance,
//                            ::testing::Values(&MakeDirectoryStorage));
//
// where the factory returns a fresh, empty storage that lives as long as the returned holder.
// Test-only.

#include <fstream>
#include <functional>
#include <memory>
#include <string>

#include "common/testing/status_matchers.h"
#include "common/testing/temp_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/storage/checkpoint_storage.h"

namespace cohort::master::storage {

// A fresh, empty storage and whatever it needs to live (a server, a directory).
struct StorageUnderTest {
  std::shared_ptr<void> owner;
  CheckpointStorage* storage = nullptr;
};
using StorageFactory = StorageUnderTest (*)();

class CheckpointStorageConformance : public ::testing::TestWithParam<StorageFactory> {
 protected:
  void SetUp() override {
    held_ = GetParam()();
    ASSERT_NE(held_.storage, nullptr);
  }
  CheckpointStorage& storage() { return *held_.storage; }

  // A local checkpoint: model.pt (`bytes` bytes) and meta/step.json.
  std::string LocalCheckpoint(const std::string& name, size_t bytes) {
    const std::filesystem::path dir = local_.path() + "/" + name;
    std::filesystem::create_directories(dir / "meta");
    std::ofstream(dir / "model.pt", std::ios::binary) << std::string(bytes, 'w');
    std::ofstream(dir / "meta" / "step.json") << R"({"batch": 7})";
    return dir.string();
  }
  static std::string Read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  StorageUnderTest held_;
  testing_support::TempDir local_;
};

}  // namespace cohort::master::storage
