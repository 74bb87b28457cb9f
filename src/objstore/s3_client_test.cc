// S3Client: the signatures libcurl makes for it against AWS's published SigV4 examples (a
// loopback socket records the request), then every call against a real S3-compatible server
// (npm's s3rver, started per test), its failures included: a store that is down, a key the
// store refuses, an upload cut off by the server's death.
#include "objstore/s3_client.h"

#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/net.h"
#include "common/testing/status_matchers.h"
#include "common/testing/temp_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "objstore/s3_xml.h"
#include "objstore/testing/s3rver.h"

namespace cohort::objstore {
namespace {

using ::cohort::testing_support::StatusIs;
using ::testing::HasSubstr;
using ::testing::Not;

// AWS's example credentials and date (the S3 documentation's "Signature Calculations for the
// Authorization Header: Transferring Payload in a Single Chunk").
constexpr char kExampleKey[] = "AKIAIOSFODNN7EXAMPLE";
constexpr char kExampleSecret[] = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
constexpr char kEmptyHash[] =
    "x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

// Accepts one connection on loopback, keeps the request's head, answers 200 with no body.
class RecordingServer {
 public:
  RecordingServer() {
    fd_ = net::Listen("127.0.0.1", 0, &port_).value();
    thread_ = std::thread([this] {
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      char buf[8192];
      std::string head;
      while (head.find("\r\n\r\n") == std::string::npos) {
        const ssize_t n = ::read(c, buf, sizeof buf);
        if (n <= 0) break;
        head.append(buf, static_cast<size_t>(n));
      }
      request_.set_value(head);
      const std::string ok = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
      (void)::write(c, ok.data(), ok.size());
      ::close(c);
    });
  }
  ~RecordingServer() {
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
  }
  int port() const { return port_; }
  std::string Request() {
    std::future<std::string> f = request_.get_future();
    return f.wait_for(std::chrono::seconds(10)) == std::future_status::ready ? f.get() : "";
  }

 private:
  int fd_ = -1;
  int port_ = 0;
  std::promise<std::string> request_;
  std::thread thread_;
};

// A client of AWS's example bucket whose connections go to `server`.
std::unique_ptr<S3Client> ExampleClient(const RecordingServer& server) {
  S3Options o;
  o.bucket = "examplebucket";
  o.endpoint_url = "http://s3.amazonaws.com";
  o.virtual_hosted = true;
  o.credentials = {kExampleKey, kExampleSecret, "", "AWS's example"};
  o.fixed_amz_date = "20130524T000000Z";
  o.connect_to = absl::StrCat("examplebucket.s3.amazonaws.com:80:127.0.0.1:", server.port());
  return S3Client::Create(o).value();
}

std::string SignatureOf(const std::string& request) {
  const size_t at = request.find("Signature=");
  return at == std::string::npos ? "" : request.substr(at + 10, 64);
}

TEST(S3SigningTest, GetObjectWithARangeMatchesAwsExample) {
  RecordingServer server;
  ASSERT_OK(ExampleClient(server)->Send("GET", "test.txt", {}, {"Range: bytes=0-9", kEmptyHash}));
  const std::string request = server.Request();
  SCOPED_TRACE(request);
  EXPECT_THAT(request, HasSubstr("GET /test.txt HTTP/1.1"));
  EXPECT_THAT(request, HasSubstr("Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/"
                                 "aws4_request, SignedHeaders=host;range;x-amz-content-sha256;"
                                 "x-amz-date"));
  EXPECT_EQ(SignatureOf(request),
            "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  EXPECT_THAT(request, Not(HasSubstr(kExampleSecret))) << "the secret is never sent";
}

TEST(S3SigningTest, ListObjectsQueryMatchesAwsExample) {
  RecordingServer server;
  ASSERT_OK(ExampleClient(server)->Send("GET", "", {{"prefix", "J"}, {"max-keys", "2"}}, {}));
  const std::string request = server.Request();
  EXPECT_THAT(request, HasSubstr("GET /?max-keys=2&prefix=J HTTP/1.1")) << "sorted";
  EXPECT_EQ(SignatureOf(request),
            "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
}

TEST(S3SigningTest, ASubresourceWithoutValueIsSignedWithItsEqualsSignAsAwsExample) {
  RecordingServer server;
  ASSERT_OK(ExampleClient(server)->Send("GET", "", {{"lifecycle", ""}}, {}));
  EXPECT_EQ(SignatureOf(server.Request()),
            "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543");
}

// Accepts connections on loopback and never answers (a store that hangs).
class StallingServer {
 public:
  StallingServer() {
    fd_ = net::Listen("127.0.0.1", 0, &port_).value();
    thread_ = std::thread([this] {
      while (true) {
        const int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) return;
        held_.push_back(c);
      }
    });
  }
  ~StallingServer() {
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
    for (int c : held_) ::close(c);
  }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
  std::vector<int> held_;  // the accepting thread's only
  std::thread thread_;
};

TEST(S3ClientTest, AStoreThatStallsIsGivenUpAfterTheStallTimeoutOfEachAttempt) {
  StallingServer server;
  S3Options o;
  o.bucket = "b";
  o.endpoint_url = absl::StrCat("http://127.0.0.1:", server.port());
  o.credentials = {"K", "S", "", "test"};
  o.stall_timeout = absl::Seconds(1);
  o.max_attempts = 2;
  o.first_backoff = absl::Milliseconds(10);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<S3Client> client, S3Client::Create(o));
  const absl::Time start = absl::Now();
  const absl::Status s = client->PutString("k", "v");
  const absl::Duration took = absl::Now() - start;
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kUnavailable, HasSubstr("PUT s3://b/k")));
  EXPECT_THAT(s.message(), HasSubstr("after 2 attempts"));
  EXPECT_LT(took, absl::Seconds(20)) << "every wait has a deadline";
}

TEST(S3ClientTest, KeysArePercentEncodedAsSigV4Wants) {
  EXPECT_EQ(UriEncode("a/b c$d~e.f_g-h", true), "a/b%20c%24d~e.f_g-h");
  EXPECT_EQ(UriEncode("a/b", false), "a%2Fb");
  EXPECT_EQ(UriEncode("\xc3\xa9", true), "%C3%A9");
}

TEST(S3ClientTest, OptionsOutOfRangeAreRefusedNamingThem) {
  S3Options o;
  EXPECT_THAT(S3Client::Create(o).status(), StatusIs(absl::StatusCode::kInvalidArgument,
                                                     HasSubstr("no bucket")));
  o.bucket = "b";
  o.endpoint_url = "ftp://host";
  EXPECT_THAT(S3Client::Create(o).status(), StatusIs(absl::StatusCode::kInvalidArgument,
                                                     HasSubstr("http://")));
  o.endpoint_url = "";
  o.part_bytes = 1024;
  EXPECT_THAT(S3Client::Create(o).status(), StatusIs(absl::StatusCode::kInvalidArgument,
                                                     HasSubstr("part size")));
}

class S3ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(server_, testing::S3rver::Start("cohort-test"));
    ASSERT_OK_AND_ASSIGN(client_, S3Client::Create(server_->ClientOptions()));
  }
  // A local file of `bytes` random bytes; its content in `*content`.
  std::string RandomFile(const std::string& name, size_t bytes, std::string* content) {
    std::mt19937_64 rng(bytes);
    content->resize(bytes);
    for (char& c : *content) c = static_cast<char>(rng());
    const std::string path = dir_.path() + "/" + name;
    std::ofstream(path, std::ios::binary) << *content;
    return path;
  }
  static std::string Read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  testing_support::TempDir dir_{"s3_client"};
  std::unique_ptr<testing::S3rver> server_;
  std::unique_ptr<S3Client> client_;
};

TEST_F(S3ServerTest, ObjectsGoInComeBackAreListedByPrefixAndDeleted) {
  ASSERT_OK(client_->PutString("ck/a.txt", "alpha"));
  ASSERT_OK(client_->PutString("ck/sub dir/b.txt", "bravo!"));
  ASSERT_OK(client_->PutString("other/c.txt", "c"));
  ASSERT_OK_AND_ASSIGN(std::string a, client_->GetString("ck/a.txt", 100));
  EXPECT_EQ(a, "alpha");
  ASSERT_OK_AND_ASSIGN(std::optional<int64_t> size, client_->Head("ck/sub dir/b.txt"));
  EXPECT_EQ(size, 6);
  ASSERT_OK_AND_ASSIGN(std::vector<ObjectInfo> listed, client_->List("ck/", 10));
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].key, "ck/a.txt");
  EXPECT_EQ(listed[1].key, "ck/sub dir/b.txt");
  EXPECT_EQ(listed[1].size, 6);
  EXPECT_THAT(client_->List("", 2).status(), StatusIs(absl::StatusCode::kFailedPrecondition,
                                                      HasSubstr("more than 2")));
  ASSERT_OK(client_->Delete("ck/a.txt"));
  ASSERT_OK(client_->Delete("ck/a.txt")) << "deleting what is gone is done";
  ASSERT_OK_AND_ASSIGN(size, client_->Head("ck/a.txt"));
  EXPECT_FALSE(size.has_value());
  EXPECT_THAT(client_->GetString("ck/a.txt", 100).status(),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("s3://cohort-test/ck/a.txt")));
  EXPECT_THAT(client_->GetString("ck/sub dir/b.txt", 3).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("larger than 3")));
}

TEST_F(S3ServerTest, ALargeFileGoesInPartsAndComesBackInRangesByteForByte) {
  std::string content;
  const std::string path = RandomFile("big.bin", (12 << 20) + 12345, &content);  // 3 parts
  ASSERT_OK(client_->PutFile("ck/big.bin", path));
  ASSERT_OK_AND_ASSIGN(std::optional<int64_t> size, client_->Head("ck/big.bin"));
  EXPECT_EQ(size, static_cast<int64_t>(content.size()));
  const std::string back = dir_.path() + "/back.bin";
  ASSERT_OK(client_->GetFile("ck/big.bin", back));
  EXPECT_TRUE(Read(back) == content) << "the bytes differ";
  // An empty file too.
  const std::string empty = RandomFile("empty", 0, &content);
  ASSERT_OK(client_->PutFile("ck/empty", empty));
  ASSERT_OK(client_->GetFile("ck/empty", back));
  EXPECT_EQ(Read(back), "");
}

TEST_F(S3ServerTest, AStoreThatIsDownIsRetriedThenNamedWithoutTheKeys) {
  server_->Kill();
  const absl::Status s = client_->PutString("ck/a.txt", "alpha");
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kUnavailable,
                          HasSubstr("PUT s3://cohort-test/ck/a.txt: cannot reach the store")));
  EXPECT_THAT(s.message(), HasSubstr("after 3 attempts"));
  EXPECT_THAT(s.message(), Not(HasSubstr("S3RVER")));
  ASSERT_OK(server_->Restart());
  EXPECT_OK(client_->PutString("ck/a.txt", "alpha")) << "back up, it works again";
}

TEST_F(S3ServerTest, AKeyTheStoreRefusesIsPermissionDeniedWithTheStoresWords) {
  S3Options o = server_->ClientOptions();
  o.credentials = {"NOT-A-KEY", "very-secret", "", "test"};
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<S3Client> stranger, S3Client::Create(o));
  const absl::Status s = stranger->PutString("ck/a.txt", "alpha");
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("403")));
  EXPECT_THAT(s.message(), HasSubstr("s3://cohort-test/ck/a.txt"));
  EXPECT_THAT(s.message(), Not(HasSubstr("very-secret")));
}

TEST_F(S3ServerTest, AnUploadCutOffByTheStoresDeathLeavesNoObject) {
  std::string content;
  // 32 parts, one at a time: the kill lands among the parts, not in the completion (s3rver,
  // unlike S3, writes a completed object in place, so a kill there can leave half of one).
  const std::string path = RandomFile("big.bin", 160 << 20, &content);
  S3Options o = server_->ClientOptions();
  o.parallel = 1;
  o.max_attempts = 1;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<S3Client> slow, S3Client::Create(o));
  auto upload = std::async(std::launch::async, [&] { return slow->PutFile("ck/big.bin", path); });
  absl::SleepFor(absl::Milliseconds(300));
  server_->Kill();
  ASSERT_EQ(upload.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  const absl::Status cut = upload.get();
  EXPECT_FALSE(cut.ok()) << "the store died during the upload";
  ASSERT_OK(server_->Restart());
  ASSERT_OK_AND_ASSIGN(std::optional<int64_t> size, client_->Head("ck/big.bin"));
  EXPECT_FALSE(size.has_value()) << "no half object is visible";
}

TEST(S3XmlTest, AnswersAreReadByPathAndHostileOnesRefused) {
  ASSERT_OK_AND_ASSIGN(
      XmlFields fields,
      ParseXmlFields(R"(<?xml version="1.0"?><Error xmlns="http://s3.amazonaws.com/doc/2006-03-01/">)"
                     "<Code>NoSuchKey</Code><Message>gone &amp; away</Message></Error>"));
  EXPECT_EQ(FirstField(fields, "Error/Code"), "NoSuchKey");
  EXPECT_EQ(FirstField(fields, "Error/Message"), "gone & away");
  EXPECT_THAT(ParseXmlFields("<a><b></a>").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not well-formed")));
  EXPECT_THAT(ParseXmlFields(R"(<!DOCTYPE x [<!ENTITY e "boom">]><x>&e;</x>)").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("DOCTYPE")));
  std::string deep;
  for (int i = 0; i < 40; ++i) deep += "<a>";
  EXPECT_THAT(ParseXmlFields(deep).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("deeper")));
  EXPECT_EQ(XmlEscape("<a&'\">"), "&lt;a&amp;&apos;&quot;&gt;");
}

}  // namespace
}  // namespace cohort::objstore
