#include "sampler/internal/loopback_traffic.h"

#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "absl/time/clock.h"
#include "common/net.h"
#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace cohort::sampler::internal {

void SendOverLoopback(size_t bytes) {
  int port = 0;
  absl::StatusOr<int> listener = net::Listen("127.0.0.1", 0, &port);
  ASSERT_OK(listener);
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  absl::StatusOr<int> client = net::Connect({"127.0.0.1", port}, deadline, "loopback test");
  ASSERT_OK(client);
  const int server = accept(*listener, nullptr, nullptr);
  ASSERT_GE(server, 0);
  const std::string data(bytes, 'x');
  std::string received(bytes, '\0');
  std::thread sender([&] {
    absl::Status sent = net::SendAll(*client, data.data(), bytes, deadline);
    EXPECT_OK(sent);
  });
  absl::Status got = net::RecvAll(server, received.data(), bytes, deadline);
  EXPECT_OK(got);
  sender.join();
  EXPECT_EQ(received, data);
  close(server);
  close(*client);
  close(*listener);
}

}  // namespace cohort::sampler::internal
