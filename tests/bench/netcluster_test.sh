#!/usr/bin/env bash
# bench/netcluster end to end (issue 18): a 2-machine emulated network at 1 Gbit/s, a 2-rank
# allreduce across it through cohort-launch on each machine (checked result), and nothing left
# behind afterwards (no namespace of the run), also when the command fails. Exit 77 (skipped,
# with the reason) where network namespaces cannot be made.
#   tests/bench/netcluster_test.sh BIN_DIR
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${1:?usage: netcluster_test.sh BIN_DIR}
NETCLUSTER="$ROOT/bench/netcluster"
fail() { echo "FAIL: $*" >&2; exit 1; }

out=$(timeout 180 "$NETCLUSTER" --machines 2 --rate 1gbit --timeout 150 -- sh -c \
  "exec $BIN/cohort-launch --slots 1 --nnodes \$NETCLUSTER_MACHINES \
   --node-rank \$NETCLUSTER_MACHINE --chief-addr \$NETCLUSTER_CHIEF --job-id t -- \
   $BIN/cohort-bench allreduce --bytes 4194304 --iters 3 --warmup 1 --check" 2>&1)
status=$?
if [ $status -eq 77 ]; then echo "$out" >&2; echo "SKIPPED: no network namespaces here"; exit 77; fi
echo "$out"
[ $status -eq 0 ] || fail "netcluster exited $status"
line=$(echo "$out" | grep '"op":"allreduce"') || fail "no allreduce result in the output"
echo "$line" | grep -q '"ranks":2' || fail "the allreduce did not span both machines: $line"
echo "$line" | grep -q '^\[machine=0\] ' || fail "machine 0's lines are not prefixed: $line"
gbps=$(echo "$line" | sed 's/.*"algbw_GBps":\([0-9.]*\).*/\1/')
# 1 Gbit/s is 0.125 GB/s: a 2-rank allreduce cannot beat the link (it would mean the traffic
# did not cross it), and must move something.
python3 -c "import sys; g = float('$gbps'); sys.exit(0 if 0.01 < g <= 0.14 else 1)" ||
  fail "algbw $gbps GB/s is not what a 1 Gbit/s link allows"
[ -z "$(ip netns list | grep -E '^cnc[0-9]+-')" ] || fail "namespaces left behind: $(ip netns list)"

# A machine whose command fails stops the run with its status, and the network is removed.
timeout 60 "$NETCLUSTER" --machines 2 --rate 1gbit -- sh -c \
  '[ "$NETCLUSTER_MACHINE" = 1 ] && exit 7; sleep 30' >/dev/null 2>&1
status=$?
[ $status -eq 7 ] || fail "a failing machine should end the run with its status 7, got $status"
[ -z "$(ip netns list | grep -E '^cnc[0-9]+-')" ] || fail "namespaces left behind after a failure"
echo "PASS: netcluster ran a 2-machine allreduce at $gbps GB/s and cleaned up"
