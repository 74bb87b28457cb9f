#include "common/context_archive.h"

#include <archive.h>
#include <archive_entry.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort {
namespace {

namespace fs = std::filesystem;
using ::cohort::testing_support::StatusIs;
using ::testing::HasSubstr;

la_ssize_t Append(archive*, void* client, const void* buffer, size_t length) {
  static_cast<std::string*>(client)->append(static_cast<const char*>(buffer), length);
  return static_cast<la_ssize_t>(length);
}

// Builds a tar.gz in memory with libarchive itself, entry by entry, as an attacker could.
class Builder {
 public:
  Builder() : a_(archive_write_new(), archive_write_free) {
    archive_write_add_filter_gzip(a_.get());
    archive_write_set_filter_option(a_.get(), "gzip", "compression-level", "1");
    archive_write_set_format_pax_restricted(a_.get());
    archive_write_open(a_.get(), &out_, nullptr, Append, nullptr);
  }
  Builder& Dir(const std::string& name) { return Add(name, AE_IFDIR, 0755, 0); }
  Builder& File(const std::string& name, const std::string& data) {
    Add(name, AE_IFREG, 0644, static_cast<int64_t>(data.size()));
    archive_write_data(a_.get(), data.data(), data.size());
    return *this;
  }
  // A file of `size` zero bytes, written in chunks (a 1 GiB one compresses to about 1 MB).
  Builder& Zeros(const std::string& name, int64_t size) {
    Add(name, AE_IFREG, 0644, size);
    const std::string chunk(1 << 20, '\0');
    for (int64_t left = size; left > 0; left -= static_cast<int64_t>(chunk.size())) {
      archive_write_data(a_.get(), chunk.data(),
                         static_cast<size_t>(std::min<int64_t>(left, chunk.size())));
    }
    return *this;
  }
  Builder& Link(const std::string& name, const std::string& target) {
    return Add(name, AE_IFLNK, 0777, 0,
               [&](archive_entry* e) { archive_entry_set_symlink(e, target.c_str()); });
  }
  Builder& HardLink(const std::string& name, const std::string& target) {
    return Add(name, AE_IFREG, 0644, 0,
               [&](archive_entry* e) { archive_entry_set_hardlink(e, target.c_str()); });
  }
  Builder& CharDevice(const std::string& name) {
    return Add(name, AE_IFCHR, 0644, 0,
               [](archive_entry* e) { archive_entry_set_rdev(e, 0x0103); });
  }
  std::string Finish() {
    archive_write_close(a_.get());
    return out_;
  }

 private:
  template <typename Extra = void (*)(archive_entry*)>
  Builder& Add(
      const std::string& name, mode_t type, mode_t perm, int64_t size,
      Extra extra = [](archive_entry*) {}) {
    std::unique_ptr<archive_entry, void (*)(archive_entry*)> e(archive_entry_new(),
                                                               archive_entry_free);
    archive_entry_set_pathname(e.get(), name.c_str());
    archive_entry_set_filetype(e.get(), type);
    archive_entry_set_perm(e.get(), perm);
    archive_entry_set_size(e.get(), size);
    extra(e.get());
    EXPECT_GE(archive_write_header(a_.get(), e.get()), ARCHIVE_WARN) << name;
    return *this;
  }

  std::unique_ptr<archive, int (*)(archive*)> a_;
  std::string out_;
};

std::string Read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class ContextArchiveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            absl::StrCat("context-archive-test-", ::getpid(), "-",
                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(dest());
    fs::create_directories(outside());
  }
  void TearDown() override { fs::remove_all(root_); }

  fs::path dest() const { return root_ / "dest"; }
  fs::path outside() const { return root_ / "outside"; }

  // Both the check and the extraction refuse `bytes` with `message`, and nothing is written
  // outside dest(): the test's root holds dest/ and an empty outside/ only.
  void ExpectRefused(const std::string& bytes, const std::string& message,
                     const ContextArchiveLimits& limits = {}) {
    absl::Status checked = CheckContext(bytes, limits);
    EXPECT_THAT(checked, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(message)));
    absl::Status extracted = ExtractContext(bytes, dest().string(), limits);
    EXPECT_THAT(extracted, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(message)));
    std::vector<std::string> top;
    for (const auto& e : fs::directory_iterator(root_)) top.push_back(e.path().filename());
    EXPECT_THAT(top, ::testing::UnorderedElementsAre("dest", "outside"));
    EXPECT_TRUE(fs::is_empty(outside())) << "something was written outside the destination";
    EXPECT_FALSE(fs::exists(fs::temp_directory_path() / "cohort-archive-evil"));
  }

  fs::path root_;
};

TEST_F(ContextArchiveTest, APackedContextChecksAndExtractsToTheSameFilesWithLinksKept) {
  const fs::path src = root_ / "src";
  fs::create_directories(src / "model");
  std::ofstream(src / "model" / "net.py") << "layers = 3\n";
  std::ofstream(src / "train.sh") << "#!/bin/sh\necho hi\n";
  fs::permissions(src / "train.sh", fs::perms::owner_exec, fs::perm_options::add);
  fs::create_symlink("model/net.py", src / "net-link.py");
  std::ofstream(src / "donn\xc3\xa9es \xe2\x9c\x93.txt") << "utf-8 name\n";
  absl::StatusOr<std::string> packed = PackContext(
      src.string(),
      {"model", "model/net.py", "net-link.py", "train.sh", "donn\xc3\xa9es \xe2\x9c\x93.txt"});
  ASSERT_OK(packed);
  ASSERT_OK(CheckContext(*packed));
  ASSERT_OK(ExtractContext(*packed, dest().string()));
  EXPECT_EQ(Read(dest() / "model" / "net.py"), "layers = 3\n");
  EXPECT_EQ(Read(dest() / "train.sh"), "#!/bin/sh\necho hi\n");
  EXPECT_EQ(Read(dest() / "donn\xc3\xa9es \xe2\x9c\x93.txt"), "utf-8 name\n");
  EXPECT_NE(fs::status(dest() / "train.sh").permissions() & fs::perms::owner_exec, fs::perms::none);
  EXPECT_TRUE(fs::is_symlink(dest() / "net-link.py"));
  EXPECT_EQ(fs::read_symlink(dest() / "net-link.py"), "model/net.py");
  EXPECT_TRUE(fs::is_empty(outside()));
}

// A directory listed for packing, then swapped for a link to elsewhere before it is packed (a
// trial rewriting its checkpoint while the master streams it): what lies behind the link is
// never read; a listed path with '..' is refused.
TEST_F(ContextArchiveTest, PackingNeverReadsThroughALinkSwappedInAfterTheListing) {
  const fs::path src = root_ / "src";
  fs::create_directories(src / "sub");
  std::ofstream(src / "sub" / "f") << "mine\n";
  std::ofstream(outside() / "f") << "secret\n";
  fs::remove_all(src / "sub");
  fs::create_directory_symlink(outside(), src / "sub");
  absl::StatusOr<std::string> packed = PackContext(src.string(), {"sub", "sub/f"});
  ASSERT_FALSE(packed.ok());
  EXPECT_THAT(packed.status().message(), HasSubstr("sub"));
  absl::StatusOr<std::string> dotted = PackContext(src.string(), {"../outside/f"});
  ASSERT_FALSE(dotted.ok());
  EXPECT_THAT(dotted.status().message(), HasSubstr("not a plain path"));
}

// Issue 44: a context unpacked onto a full disk. libarchive reports the short write as a mere
// warning and pads the file to its size, so before, the files came out whole-looking and full
// of zeros; now the unpacking fails naming the disk, the space needed and what is free.
TEST_F(ContextArchiveTest, UnpackingOntoAFullDiskFailsSayingSo) {
  const fs::path small = root_ / "small";
  fs::create_directories(small);
  if (::mount("tmpfs", small.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=1m") != 0) {
    GTEST_SKIP() << "mounting a tmpfs needs root: " << std::strerror(errno);
  }
  const fs::path src = root_ / "src";
  fs::create_directories(src);
  std::ofstream(src / "run.sh") << "#!/bin/sh\necho hi\n";
  std::ofstream(src / "weights.bin") << std::string(3 << 20, 'w');
  absl::StatusOr<std::string> packed = PackContext(src.string(), {"run.sh", "weights.bin"});
  ASSERT_OK(packed);
  absl::Status unpacked = ExtractContext(*packed, small.string());
  const std::string files = fs::exists(small / "weights.bin")
                                ? absl::StrCat(fs::file_size(small / "weights.bin"), " bytes")
                                : std::string("none");
  ::umount2(small.c_str(), MNT_DETACH);
  ASSERT_THAT(unpacked, StatusIs(absl::StatusCode::kResourceExhausted,
                                 HasSubstr("context entry 'weights.bin': no space left on device")))
      << "weights.bin: " << files;
  EXPECT_THAT(unpacked.message(), HasSubstr(absl::StrCat("needed ", 3 << 20, " bytes")));
  EXPECT_THAT(unpacked.message(), HasSubstr("free "));
}

TEST_F(ContextArchiveTest, AStreamedArchiveComesInBlocksAndExtractsFromAFile) {
  const fs::path src = root_ / "src";
  fs::create_directories(src);
  std::string big;
  for (int i = 0; big.size() < (3u << 20); ++i) absl::StrAppend(&big, "weight ", i, "\n");
  std::ofstream(src / "model.pt") << big;
  std::ofstream(src / "metadata.json") << "{\"steps_completed\": 5}";
  std::string streamed;
  int blocks = 0;
  ASSERT_OK(StreamPackedDirectory(src.string(), {"metadata.json", "model.pt"},
                                  [&](const char* data, size_t n) {
                                    EXPECT_LE(n, 64u << 10);
                                    streamed.append(data, n);
                                    ++blocks;
                                    return true;
                                  }));
  EXPECT_GT(blocks, 1) << "handed over as it is made, not at the end";
  const fs::path file = root_ / "checkpoint.tar.gz";
  std::ofstream(file, std::ios::binary) << streamed;
  ASSERT_OK(ExtractContextFile(file.string(), dest().string()));
  EXPECT_EQ(Read(dest() / "model.pt"), big);
  EXPECT_EQ(Read(dest() / "metadata.json"), "{\"steps_completed\": 5}");
  // A receiver that goes away stops the packing with an error.
  absl::Status stopped =
      StreamPackedDirectory(src.string(), {"model.pt"}, [](const char*, size_t) { return false; });
  EXPECT_FALSE(stopped.ok());
  EXPECT_THAT(stopped.message(), HasSubstr("stopped taking the archive"));
  // A cut archive (a download that broke off) is refused, not half-extracted silently.
  std::ofstream(file, std::ios::binary | std::ios::trunc)
      << streamed.substr(0, streamed.size() / 2);
  fs::remove_all(dest());
  fs::create_directories(dest());
  EXPECT_FALSE(ExtractContextFile(file.string(), dest().string()).ok());
}

TEST_F(ContextArchiveTest, AnEmptyContextDirectoryPacksToAnArchiveThatChecks) {
  absl::StatusOr<std::string> packed = PackContext(outside().string(), {});
  ASSERT_OK(packed);
  EXPECT_OK(CheckContext(*packed));
}

TEST_F(ContextArchiveTest, ADotDotEntryIsRefused) {
  ExpectRefused(Builder().Dir("./").File("../evil", "x").Finish(),
                "context entry '../evil': '..' is not allowed");
  ExpectRefused(Builder().File("a/../../outside/evil", "x").Finish(),
                "context entry 'a/../../outside/evil': '..' is not allowed");
}

TEST_F(ContextArchiveTest, AnAbsolutePathIsRefused) {
  const std::string target = (outside() / "evil").string();
  ExpectRefused(Builder().File("ok.txt", "fine").File(target, "x").Finish(),
                absl::StrCat("context entry '", target, "': absolute paths are not allowed"));
}

TEST_F(ContextArchiveTest, AFileWrittenThroughASymlinkEarlierInTheArchiveIsRefused) {
  ExpectRefused(Builder().Link("escape", outside().string()).File("escape/evil", "x").Finish(),
                "context entry 'escape/evil': writing through the symbolic link 'escape' "
                "earlier in the archive is not allowed");
  ExpectRefused(Builder().Link("same", "/tmp/cohort-archive-evil").File("same", "x").Finish(),
                "context entry 'same': writing through the symbolic link 'same'");
}

TEST_F(ContextArchiveTest, DeviceEntriesAndHardLinksAreRefused) {
  ExpectRefused(Builder().CharDevice("null").Finish(),
                "context entry 'null': only regular files, directories and symbolic links are "
                "allowed");
  ExpectRefused(Builder().HardLink("passwd", "/etc/passwd").Finish(),
                "context entry 'passwd': hard links are not allowed");
}

TEST_F(ContextArchiveTest, TooManyEntriesAreRefusedNamingTheLimit) {
  Builder many;
  for (int i = 0; i < 11; ++i) many.File(absl::StrCat("f", i), "x");
  const std::string bytes = many.Finish();
  ExpectRefused(bytes, "context: more than 10 entries (the limit)", {.max_entries = 10});
  EXPECT_OK(CheckContext(bytes, {.max_entries = 11}));
}

TEST_F(ContextArchiveTest, ADecompressionBombIsRefusedAtItsHeaderBeforeItIsInflated) {
  const std::string bomb = Builder().File("small", "x").Zeros("bomb", int64_t{1} << 30).Finish();
  EXPECT_LT(bomb.size(), 8u << 20) << "1 GiB of zeros compresses to a few MB";
  const auto start = std::chrono::steady_clock::now();
  ExpectRefused(bomb,
                "context entry 'bomb': its 1073741824 bytes take the context past 67108864 "
                "unpacked bytes (the limit",
                {.max_unpacked_bytes = 64 << 20});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_FALSE(fs::exists(dest() / "bomb"));
}

TEST_F(ContextArchiveTest, BytesThatAreNotAGzippedTarAreRefused) {
  absl::Status garbage = CheckContext("hello");
  EXPECT_THAT(garbage, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(garbage.message(), HasSubstr("context: not a valid tar.gz archive ("));
  EXPECT_THAT(ExtractContext("hello", dest().string()),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_TRUE(fs::is_empty(dest()));
}

}  // namespace
}  // namespace cohort
