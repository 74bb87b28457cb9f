#include "tests/testing/network_namespaces.h"

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tests/launch/launcher_process.h"

namespace cohort::testing {

NetworkNamespaces::NetworkNamespaces(const std::string& name, int subnet) : subnet_(subnet) {
  for (const char* candidate : {"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"}) {
    if (::access(candidate, X_OK) == 0) {
      ip_ = candidate;
      break;
    }
  }
  const std::string id = absl::StrCat(::getpid() % 100000);
  ns_ = {absl::StrCat("cohort-", name, "-", id, "-0"),
         absl::StrCat("cohort-", name, "-", id, "-1")};
  // Interface names have at most 15 characters.
  veth_ = {absl::StrCat("cv", subnet, "x", id, "a"), absl::StrCat("cv", subnet, "x", id, "b")};
}

NetworkNamespaces::~NetworkNamespaces() {
  if (!created_) return;
  std::string ignored;
  Ip({"link", "del", veth_[0]}, &ignored);  // only left here when setup stopped early
  for (const std::string& ns : ns_) Ip({"netns", "del", ns}, &ignored);
}

std::string NetworkNamespaces::Setup() {
  if (ip_.empty()) return "iproute2 (ip) is not installed";
  std::string why;
  if (!Ip({"netns", "add", ns_[0]}, &why)) {
    return "cannot create network namespaces here (needs root/CAP_NET_ADMIN): " + why;
  }
  created_ = true;
  const std::vector<std::vector<std::string>> steps = {
      {"netns", "add", ns_[1]},
      {"link", "add", veth_[0], "type", "veth", "peer", "name", veth_[1]},
      {"link", "set", veth_[0], "netns", ns_[0]},
      {"link", "set", veth_[1], "netns", ns_[1]},
      {"-n", ns_[0], "addr", "add", address(0) + "/24", "dev", veth_[0]},
      {"-n", ns_[1], "addr", "add", address(1) + "/24", "dev", veth_[1]},
      {"-n", ns_[0], "link", "set", veth_[0], "up"},
      {"-n", ns_[1], "link", "set", veth_[1], "up"},
      {"-n", ns_[0], "link", "set", "lo", "up"},
      {"-n", ns_[1], "link", "set", "lo", "up"},
  };
  for (const auto& step : steps) {
    if (!Ip(step, &why)) return "network namespace setup failed: " + why;
  }
  return "";
}

std::string NetworkNamespaces::SetLink(int node, bool up) const {
  std::string why;
  if (Ip({"-n", ns_[node], "link", "set", veth_[node], up ? "up" : "down"}, &why)) return "";
  return why;
}

std::vector<std::string> NetworkNamespaces::Exec(int node) const {
  return {ip_, "netns", "exec", ns_[node]};
}

std::string NetworkNamespaces::address(int node) const {
  return absl::StrCat("10.", subnet_, ".0.", node + 1);
}

bool NetworkNamespaces::Ip(const std::vector<std::string>& args, std::string* why) const {
  std::vector<std::string> argv = {ip_};
  argv.insert(argv.end(), args.begin(), args.end());
  LaunchResult r = RunToCompletion(argv, {}, absl::Seconds(30));
  if (r.exited && r.status == 0) return true;
  *why = absl::StrCat(absl::StrJoin(argv, " "), ": ", r.err, r.out);
  return false;
}

}  // namespace cohort::testing
