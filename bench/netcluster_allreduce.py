#!/usr/bin/python3
"""Allreduce across an emulated cluster network: Cohort vs torch.distributed (Gloo), side by side.

For each layout (machines x ranks per machine) and size, runs both on the same bench/netcluster
network (namespaces joined by shaped links, issue 18): Cohort's `cohort-bench allreduce` under
one cohort-launch per machine (hierarchical: shared memory inside a machine, the network between
machines), torch.distributed.all_reduce on Gloo with one process per rank (a flat ring over
TCP), and OpenMPI's MPI_Allreduce (bench/mpi_allreduce.c; TCP between machines, shared memory
inside one; mpirun on machine 0 starts the ranks through bench/netcluster_rsh). Both report rank 0's median time per allreduce. The link is measured first (iperf3, one
TCP stream), and every algorithm bandwidth is also shown as a fraction of it and of the best
schedule's bound for the layout.

  /usr/bin/python3 bench/netcluster_allreduce.py --bin-dir build/bin --rate 5gbit \\
      --layouts 2x1,2x2 --sizes 1M,16M,64M

Needs root (network namespaces), iproute2, iperf3, Debian's python3-torch and, for the OpenMPI
column, openmpi-bin and libopenmpi-dev.
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

def machine_env():
    """Inside a bench/netcluster machine: (its index, the machines, machine 0's address, the
    environment for its ranks: one compute thread each, Gloo on the machine's interface).
    bench/netcluster_train.py uses it too."""
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               GLOO_SOCKET_IFNAME=os.environ.get("NETCLUSTER_IFACE", "eth0"))
    return (int(os.environ["NETCLUSTER_MACHINE"]), int(os.environ["NETCLUSTER_MACHINES"]),
            os.environ["NETCLUSTER_CHIEF"], env)


def machine_main(args):
    machine, machines, chief, env = machine_env()
    if args.machine == "openmpi":
        if machine != 0:
            return 0  # mpirun on machine 0 starts every rank (through bench/netcluster_rsh)
        prefix = chief.rsplit(".", 1)[0]
        hosts = ",".join(f"{prefix}.{m + 1}:{args.ranks}" for m in range(machines))
        cmd = ["mpirun", "--allow-run-as-root", "--mca", "plm_rsh_agent",
               os.path.join(HERE, "netcluster_rsh"), "-x", "NETCLUSTER_NAMESPACE_PREFIX",
               "-x", "OMP_NUM_THREADS=1", "--mca", "btl", "tcp,vader,self", "--mca",
               "btl_tcp_if_include", "eth0", "--mca", "oob_tcp_if_include", "eth0", "-H", hosts,
               "-np", str(machines * args.ranks), "--bind-to", "none", args.mpi_program,
               str(args.bytes), str(args.iters), str(args.warmup)]
        return subprocess.call(cmd, env=env)
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
           str(args.warmup), "--bin-dir", args.bin_dir, "--mpi-program", args.mpi_program or ""]
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


def build_mpi_program():
    """bench/mpi_allreduce.c built with mpicc (Debian's openmpi-bin, libopenmpi-dev), or "" when
    OpenMPI is not installed (its column then says so)."""
    out = os.path.join("/tmp", f"cohort-mpi-allreduce-{os.getpid()}")
    try:
        subprocess.run(["mpicc", "-O2", os.path.join(HERE, "mpi_allreduce.c"), "-o", out],
                       check=True, capture_output=True)
        return out
    except (OSError, subprocess.CalledProcessError):
        print("OpenMPI not found (mpicc): its column is left out", file=sys.stderr)
        return ""


def link_gbps(args):
    r = subprocess.run([NETCLUSTER, "--machines", "2", "--rate", args.rate, "--measure-link",
                        "--no-command"], capture_output=True, text=True, timeout=120)
    return json.loads(r.stdout.strip().splitlines()[-1])["link_gbps_1_stream"]


def mpi_gbs(args, machines, ranks, nbytes):
    """OpenMPI's algorithm bandwidth, NaN without OpenMPI. Its TCP transport now and then fails
    to connect at start (connect() "Operation now in progress", then a crash): tried 3 times."""
    if not args.mpi_program:
        return float("nan")
    for attempt in range(3):
        try:
            return nbytes / netcluster(args, machines, "openmpi", ranks, nbytes) / 1e9
        except RuntimeError as e:
            print(f"OpenMPI {machines}x{ranks} {nbytes} B, attempt {attempt + 1}: "
                  f"{str(e).splitlines()[0][:200]}", file=sys.stderr)
    return float("nan")


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
    parser.add_argument("--mpi-program", default="", help=argparse.SUPPRESS)
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
    args.mpi_program = build_mpi_program()
    link = link_gbps(args) / 8  # GB/s
    print(f"link {args.rate}: one TCP stream {link:.3f} GB/s")
    header = (f"{'layout':>7} {'size':>6} {'cohort GB/s':>12} {'torch GB/s':>11} "
              f"{'openmpi GB/s':>13} {'cohort/torch':>13} {'cohort/mpi':>11} "
              f"{'cohort/bound':>13} {'torch/bound':>12} {'mpi/bound':>10}")
    print(header)
    for layout in args.layouts.split(","):
        machines, ranks = (int(x) for x in layout.split("x"))
        for size in args.sizes.split(","):
            nbytes = parse_size(size)
            cohort = nbytes / netcluster(args, machines, "cohort", ranks, nbytes) / 1e9
            torch = nbytes / netcluster(args, machines, "torch", ranks, nbytes) / 1e9
            mpi = mpi_gbs(args, machines, ranks, nbytes)
            bound = bound_gbs(link, machines, ranks)
            print(f"{layout:>7} {size:>6} {cohort:12.3f} {torch:11.3f} {mpi:13.3f} "
                  f"{cohort / torch:13.2f} {cohort / mpi:11.2f} {cohort / bound:13.2f} "
                  f"{torch / bound:12.2f} {mpi / bound:10.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main() or 0)
