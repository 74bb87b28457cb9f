#!/usr/bin/python3
"""Allreduce across an emulated cluster network: Cohort vs torch.distributed (Gloo), side by side.

For each layout (machines x ranks per machine) and size, runs both on the same bench/netcluster
network (namespaces joined by shaped links, issue 18): Cohort's `cohort-bench allreduce` under
one cohort-launch per machine (hierarchical: shared memory inside a machine, the network between
machines), and torch.distributed.all_reduce on Gloo with one process per rank (a flat ring over
TCP). Both report rank 0's median time per allreduce. The link is measured first (iperf3, one
TCP stream), and every algorithm bandwidth is also shown as a fraction of it and of the best
schedule's bound for the layout.

  /usr/bin/python3 bench/netcluster_allreduce.py --bin-dir build/bin --rate 5gbit \\
      --layouts 2x1,2x2 --sizes 1M,16M,64M

Needs root (network namespaces), iproute2, iperf3 and Debian's python3-torch.
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
NETCLUSTER = os.path.join(HERE, "netcluster")
PORT = 29511


def parse_size(text):
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    t = text.strip().lower().rstrip("ib")
    return int(float(t[:-1]) * units[t[-1]]) if t and t[-1] in units else int(t)


# --- inside a machine (run by bench/netcluster) -------------------------------------------------

def machine_main(args):
    machine = int(os.environ["NETCLUSTER_MACHINE"])
    machines = int(os.environ["NETCLUSTER_MACHINES"])
    chief = os.environ["NETCLUSTER_CHIEF"]
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               GLOO_SOCKET_IFNAME="eth0")
    if args.machine == "cohort":
        cmd = [os.path.join(args.bin_dir, "cohort-launch"), "--slots", str(args.ranks),
               "--nnodes", str(machines), "--node-rank", str(machine), "--chief-addr", chief,
               "--job-id", "ar", "--", os.path.join(args.bin_dir, "cohort-bench"), "allreduce",
               "--bytes", str(args.bytes), "--iters", str(args.iters), "--warmup",
               str(args.warmup)]
        return subprocess.call(cmd, env=env)
    world = machines * args.ranks
    procs = [subprocess.Popen([sys.executable, os.path.abspath(__file__), "--torch-rank",
                               str(machine * args.ranks + i), str(world), chief, str(args.bytes),
                               str(args.iters), str(args.warmup)], env=env)
             for i in range(args.ranks)]
    return max(p.wait() for p in procs)


# --- on the host ---------------------------------------------------------------------------------

def netcluster(args, machines, what, ranks, nbytes):
    cmd = [NETCLUSTER, "--machines", str(machines), "--rate", args.rate, "--timeout", "300",
           "--", sys.executable, os.path.abspath(__file__), "--machine", what, "--ranks",
           str(ranks), "--bytes", str(nbytes), "--iters", str(args.iters), "--warmup",
           str(args.warmup), "--bin-dir", args.bin_dir]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=400)
    if r.returncode != 0:
        raise RuntimeError(f"{what} {machines}x{ranks} failed ({r.returncode}): "
                           f"{(r.stdout + r.stderr)[-2000:]}")
    for line in r.stdout.splitlines():
        at = line.find("{")
        if at >= 0 and ('"op":"allreduce"' in line or '"time_s"' in line):
            record = json.loads(line[at:])
            return record["time_ms"] / 1e3 if "time_ms" in record else record["time_s"]
    raise RuntimeError(f"{what}: no result in {r.stdout[-1000:]}")


def link_gbps(args):
    r = subprocess.run([NETCLUSTER, "--machines", "2", "--rate", args.rate, "--measure-link",
                        "--no-command"], capture_output=True, text=True, timeout=120)
    return json.loads(r.stdout.strip().splitlines()[-1])["link_gbps_1_stream"]


def bound_gbs(link_gbs, machines, ranks):
    """The best schedule's algorithm bandwidth: a ring over the machines (each sends and receives
    2(M-1)/M of the data over its link), the ranks inside a machine reducing in memory first."""
    if machines < 2:
        return float("inf")
    return link_gbs * machines / (2 * (machines - 1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin-dir", default=os.path.join(HERE, "..", "build", "bin"))
    parser.add_argument("--rate", default="5gbit")
    parser.add_argument("--layouts", default="2x1,2x2", help="MACHINESxRANKS, comma-separated")
    parser.add_argument("--sizes", default="1M,16M,64M")
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--machine", help=argparse.SUPPRESS)
    parser.add_argument("--ranks", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--bytes", type=int, default=0, help=argparse.SUPPRESS)
    if len(sys.argv) > 1 and sys.argv[1] == "--torch-rank":
        a = sys.argv[2:]
        sys.path.insert(0, HERE)
        from allreduce_vs_torch import torch_worker  # the one-host benchmark's rank
        return torch_worker(int(a[0]), int(a[1]), PORT, int(a[3]), int(a[4]), int(a[5]), "fp32",
                            host=a[2])
    args = parser.parse_args()
    args.bin_dir = os.path.abspath(args.bin_dir)
    if args.machine:
        return machine_main(args)
    link = link_gbps(args) / 8  # GB/s
    print(f"link {args.rate}: one TCP stream {link:.3f} GB/s")
    header = (f"{'layout':>7} {'size':>6} {'cohort GB/s':>12} {'torch GB/s':>11} "
              f"{'cohort/torch':>13} {'cohort/bound':>13} {'torch/bound':>12}")
    print(header)
    for layout in args.layouts.split(","):
        machines, ranks = (int(x) for x in layout.split("x"))
        for size in args.sizes.split(","):
            nbytes = parse_size(size)
            cohort = nbytes / netcluster(args, machines, "cohort", ranks, nbytes) / 1e9
            torch = nbytes / netcluster(args, machines, "torch", ranks, nbytes) / 1e9
            bound = bound_gbs(link, machines, ranks)
            print(f"{layout:>7} {size:>6} {cohort:12.3f} {torch:11.3f} {cohort / torch:13.2f} "
                  f"{cohort / bound:13.2f} {torch / bound:12.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main() or 0)
