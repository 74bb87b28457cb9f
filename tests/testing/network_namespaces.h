#pragma once
// NetworkNamespaces: two network namespaces joined by a veth pair, private to one test, so
// that multi-machine behaviour (rendezvous across hosts, traffic on a real interface) is tested
// with real processes on one machine: node 0 is 10.<subnet>.0.1/24, node 1 10.<subnet>.0.2/24,
// each with its loopback up. Exec(node) prefixes a command to run it inside a node's namespace
// (`ip netns exec NS ...`, which execs the command: its pid is the command's).
// Needs root (or CAP_NET_ADMIN) and iproute2: Setup() says why it could not, for GTEST_SKIP.
// The destructor removes what Setup created, whatever happened. Not thread-safe.
//
// Example:
//   NetworkNamespaces net("launch", 231);
//   if (std::string why = net.Setup(); !why.empty()) GTEST_SKIP() << why;
//   LauncherProcess node1(Concat(net.Exec(1), {BinaryPath("cohort-launch"), ...}));

#include <string>
#include <vector>

namespace cohort::testing {

class NetworkNamespaces {
 public:
  // `name` and the process id name the namespaces; `subnet` (1-254) keeps tests that run at
  // once on different addresses.
  NetworkNamespaces(const std::string& name, int subnet);
  ~NetworkNamespaces();
  NetworkNamespaces(const NetworkNamespaces&) = delete;
  NetworkNamespaces& operator=(const NetworkNamespaces&) = delete;

  // Creates both namespaces and the link; empty when done, else why not (for a skip message).
  std::string Setup();

  // Takes node `node`'s end of the link down (a partition: that node's packets to the other go
  // nowhere, its connections fail with "Network is unreachable", the other side hears nothing)
  // or up again. Empty when done, else what `ip` said.
  std::string SetLink(int node, bool up) const;

  std::vector<std::string> Exec(int node) const;  // {"ip", "netns", "exec", NS}
  std::string address(int node) const;            // "10.<subnet>.0.<node + 1>"
  const std::string& interface(int node) const { return veth_[node]; }

 private:
  // Runs `ip args...`; false with the output in *why when it fails.
  bool Ip(const std::vector<std::string>& args, std::string* why) const;

  int subnet_;
  std::string ip_;  // the ip binary
  std::vector<std::string> ns_;
  std::vector<std::string> veth_;
  bool created_ = false;
};

}  // namespace cohort::testing
