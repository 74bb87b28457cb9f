#include "comm/internal/gloo_transport.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

#include "absl/strings/match.h"
#include "comm/internal/gloo_store_adapter.h"
#include "comm/tcp_store.h"
#include "common/testing/status_matchers.h"
#include "gloo/barrier.h"
#include "gloo/broadcast.h"
#include "gloo/common/error.h"
#include "gloo/rendezvous/context.h"
#include "gtest/gtest.h"

namespace cohort::comm::internal {
namespace {

TEST(LocalAddressTowardTest, LoopbackIsReachedFromLoopback) {
  auto address = LocalAddressToward("127.0.0.1", 29500);
  ASSERT_OK(address);
  EXPECT_EQ(*address, "127.0.0.1");
}

TEST(LocalAddressTowardTest, AnUnresolvableHostIsAnErrorNamingIt) {
  auto address = LocalAddressToward("no-such-host.invalid", 29500);
  ASSERT_FALSE(address.ok());
  EXPECT_TRUE(absl::StrContains(address.status().message(), "no-such-host.invalid:29500"))
      << address.status();
}

TEST(CreateGlooTcpDeviceTest, AnUnknownInterfaceIsAnErrorNamingIt) {
  auto device = CreateGlooTcpDevice("nosuchif0", "127.0.0.1", 29500);
  ASSERT_FALSE(device.ok());
  EXPECT_TRUE(absl::StrContains(device.status().message(), "nosuchif0")) << device.status();
}

TEST(CreateGlooTcpDeviceTest, TheLoopbackInterfaceCanBeNamed) {
  auto device = CreateGlooTcpDevice("lo", "127.0.0.1", 29500);
  ASSERT_OK(device);
}

// Two ranks of one Gloo context, connected over loopback in this process.
struct Pair2 {
  std::unique_ptr<TcpStoreServer> server = TcpStoreServer::Start("127.0.0.1", 0).value();
  std::shared_ptr<gloo::rendezvous::Context> contexts[2];
  std::shared_ptr<Store> stores[2];

  Pair2() {
    std::thread threads[2];
    for (int rank = 0; rank < 2; ++rank) {
      threads[rank] = std::thread([this, rank] {
        stores[rank] =
            TcpStore::Connect({"127.0.0.1", server->port()}, TcpStore::Options()).value();
        GlooStoreAdapter adapter(stores[rank], GlooStoreAdapter::Options());
        auto device = CreateGlooTcpDevice("", "127.0.0.1", server->port()).value();
        auto context = std::make_shared<gloo::rendezvous::Context>(rank, 2);
        context->setTimeout(std::chrono::seconds(30));
        context->connectFullMesh(adapter, device);
        contexts[rank] = context;
      });
    }
    for (auto& t : threads) t.join();
  }
};

TEST(GlooPairSocketsTest, FindsEveryConnectionAndNamesThePeers) {
  Pair2 pair;
  auto sockets = GlooPairSockets::Find(*pair.contexts[0], *pair.stores[0]);
  ASSERT_OK(sockets);
  EXPECT_EQ(sockets->found(), 1);
  auto other = GlooPairSockets::Find(*pair.contexts[1], *pair.stores[1]);
  ASSERT_OK(other);
  EXPECT_EQ(other->found(), 1);
  const std::vector<std::string>& addresses = sockets->peer_addresses();
  ASSERT_EQ(addresses.size(), 2u);
  EXPECT_TRUE(addresses[0].empty());
  EXPECT_TRUE(absl::StrContains(addresses[1], "127.0.0.1")) << addresses[1];
}

TEST(IgnoreSigpipeTest, WritingToAClosedConnectionReturnsEpipe) {
  IgnoreSigpipe();
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  ::close(fds[1]);
  char byte = 0;
  EXPECT_EQ(::write(fds[0], &byte, 1), -1);
  EXPECT_EQ(errno, EPIPE);
  ::close(fds[0]);
}

TEST(GlooPairSocketsTest, ShutDownMakesBlockedOperationsOnBothSidesFailPromptly) {
  IgnoreSigpipe();  // as GlooCommunicator does: Gloo writes to the shut-down sockets
  Pair2 pair;
  auto sockets = GlooPairSockets::Find(*pair.contexts[0], *pair.stores[0]);
  ASSERT_OK(sockets);
  absl::Time start = absl::Now();
  // Rank 0 waits for a broadcast that rank 1 never sends; rank 1 waits in a barrier.
  std::thread receiver([&] {
    char byte = 0;
    gloo::BroadcastOptions options(pair.contexts[0]);
    options.setOutput(&byte, 1);
    options.setRoot(1);
    options.setTimeout(std::chrono::seconds(30));
    EXPECT_THROW(gloo::broadcast(options), gloo::IoException);
  });
  std::thread waiter([&] {
    gloo::BarrierOptions options(pair.contexts[1]);
    options.setTimeout(std::chrono::seconds(30));
    EXPECT_THROW(gloo::barrier(options), gloo::IoException);
  });
  sockets->ShutDown();
  receiver.join();
  waiter.join();
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  // Later operations fail at once.
  gloo::BarrierOptions options(pair.contexts[0]);
  options.setTimeout(std::chrono::seconds(30));
  EXPECT_THROW(gloo::barrier(options), gloo::IoException);
}

}  // namespace
}  // namespace cohort::comm::internal
