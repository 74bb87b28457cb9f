#include "master/http/admission_gate.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort::master::http {
namespace {

// Spins (with a deadline) until `gate` has `n` waiters.
bool WaitForWaiters(const AdmissionGate& gate, int64_t n) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (gate.waiting() != n) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

TEST(AdmissionGateTest, NoMoreThanItsSlotsRunAtOnce) {
  AdmissionGate gate(2);
  std::atomic<int> running{0}, most{0}, done{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      AdmissionGate::Ticket ticket(gate);
      const int now = ++running;
      int seen = most.load();
      while (now > seen && !most.compare_exchange_weak(seen, now)) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      --running;
      ++done;
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(done.load(), 8);
  EXPECT_EQ(most.load(), 2);
  EXPECT_EQ(gate.waiting(), 0);
}

TEST(AdmissionGateTest, WaitersAreAdmittedInArrivalOrder) {
  AdmissionGate gate(1);
  std::vector<int> order;  // written by the one admitted thread at a time
  std::vector<std::thread> threads;
  {
    AdmissionGate::Ticket held(gate);
    for (int i = 0; i < 6; ++i) {
      threads.emplace_back([&gate, &order, i] {
        AdmissionGate::Ticket ticket(gate);
        order.push_back(i);
      });
      const bool arrived = WaitForWaiters(gate, i + 1);
      EXPECT_TRUE(arrived) << "thread " << i << " never reached the gate";
      if (!arrived) break;
    }
  }  // the held slot passes to thread 0, then on in order
  for (std::thread& t : threads) t.join();
  EXPECT_THAT(order, ::testing::ElementsAre(0, 1, 2, 3, 4, 5));
}

TEST(AdmissionGateTest, ASlotLeftWithNobodyWaitingIsFreeAgain) {
  AdmissionGate gate(1);
  { AdmissionGate::Ticket first(gate); }
  std::atomic<bool> entered{false};
  std::thread second([&] {
    AdmissionGate::Ticket ticket(gate);
    entered = true;
  });
  second.join();
  EXPECT_TRUE(entered.load());
  EXPECT_EQ(gate.slots(), 1);
  EXPECT_EQ(AdmissionGate(0).slots(), 1) << "a gate has at least one slot";
}

}  // namespace
}  // namespace cohort::master::http
