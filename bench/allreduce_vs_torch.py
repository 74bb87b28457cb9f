#!/usr/bin/python3
"""Allreduce bus bandwidth: Cohort's cohort-bench vs torch.distributed (Gloo), side by side.

Runs, for every size and rank count, Cohort's `cohort-bench allreduce` (under cohort-launch
when it is next to cohort-bench, else with the worker environment set here and rank 0 hosting
the rendezvous store) and torch.distributed.all_reduce on the Gloo backend (one process per
rank, one compute thread each), with the same sizes and iteration counts. Both report the median
per-iteration time on rank 0. Prints an aligned table with both bus bandwidths and their ratio.

Run with Debian's Python (it has torch):
  /usr/bin/python3 bench/allreduce_vs_torch.py --bin-dir build/bin [--json results.json]
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def parse_size(text):
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    t = text.strip().lower().rstrip("ib")
    if t and t[-1] in units:
        return int(float(t[:-1]) * units[t[-1]])
    return int(t)


def human(nbytes):
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= size and nbytes % size == 0:
            return f"{nbytes // size} {unit}"
    return f"{nbytes} B"


def busbw(nbytes, ranks, seconds):
    return nbytes / seconds / 1e9 * 2 * (ranks - 1) / ranks


# --- Cohort -----------------------------------------------------------------------------------

def run_cohort(args, ranks, nbytes):
    bench = os.path.join(args.bin_dir, "cohort-bench")
    launch = os.path.join(args.bin_dir, "cohort-launch")
    cmd = [bench, "allreduce", "--bytes", str(nbytes), "--iters", str(args.iters),
           "--warmup", str(args.warmup), "--transport", args.transport, "--dtype", args.dtype]
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    if os.access(launch, os.X_OK) and not args.no_launcher:
        procs = [subprocess.Popen([launch, "--slots", str(ranks), "--"] + cmd, env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)]
    else:
        port = free_port()
        procs = []
        for rank in range(ranks):
            worker_env = dict(env, COHORT_RANK=str(rank), COHORT_SIZE=str(ranks),
                              COHORT_LOCAL_RANK=str(rank), COHORT_LOCAL_SIZE=str(ranks),
                              COHORT_CROSS_RANK="0", COHORT_CROSS_SIZE="1",
                              COHORT_CHIEF_ADDR="127.0.0.1", COHORT_RENDEZVOUS_PORT=str(port),
                              COHORT_HOST_STORE="1")
            procs.append(subprocess.Popen(cmd, env=worker_env, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True))
    outputs = [p.communicate(timeout=args.timeout) for p in procs]
    for p, (out, err) in zip(procs, outputs):
        if p.returncode != 0:
            raise RuntimeError(f"cohort-bench failed ({p.returncode}): {err.strip()}")
    for out, _ in outputs:
        for line in out.splitlines():
            start = line.find("{")
            if start >= 0 and '"op":"allreduce"' in line:
                return json.loads(line[start:])
    raise RuntimeError("cohort-bench printed no result line")


# --- torch.distributed (Gloo) -----------------------------------------------------------------

def torch_worker(rank, ranks, port, nbytes, iters, warmup, dtype, host="127.0.0.1"):
    """One rank of torch.distributed's Gloo allreduce; rank 0 prints {"time_s": median}. Also
    used by bench/netcluster_allreduce.py, whose ranks meet at machine 0's address (`host`)."""
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://{host}:{port}", rank=rank,
                            world_size=ranks)
    torch_dtype = torch.float16 if dtype == "fp16" else torch.float32
    element = 2 if dtype == "fp16" else 4
    tensor = torch.ones(nbytes // element, dtype=torch_dtype)
    dist.barrier()
    times = []
    for i in range(warmup + iters):
        start = time.perf_counter()
        dist.all_reduce(tensor)
        if i >= warmup:
            times.append(time.perf_counter() - start)
    dist.barrier()
    if rank == 0:
        print(json.dumps({"time_s": statistics.median(times)}), flush=True)
    dist.destroy_process_group()


def run_torch(args, ranks, nbytes):
    port = free_port()
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    procs = [subprocess.Popen([sys.executable, os.path.abspath(__file__), "--torch-worker",
                               str(rank), str(ranks), str(port), str(nbytes), str(args.iters),
                               str(args.warmup), args.dtype],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for rank in range(ranks)]
    outputs = [p.communicate(timeout=args.timeout) for p in procs]
    for p, (out, err) in zip(procs, outputs):
        if p.returncode != 0:
            raise RuntimeError(f"torch worker failed ({p.returncode}): {err.strip()[-2000:]}")
    seconds = json.loads(outputs[0][0].strip().splitlines()[-1])["time_s"]
    return {"time_ms": seconds * 1e3, "busbw_GBps": busbw(nbytes, ranks, seconds)}


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--torch-worker":
        rank, ranks, port, nbytes, iters, warmup = map(int, sys.argv[2:8])
        torch_worker(rank, ranks, port, nbytes, iters, warmup, sys.argv[8])
        return 0
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin-dir", default=os.path.join(here, "..", "build", "bin"),
                        help="directory holding cohort-bench (and cohort-launch)")
    parser.add_argument("--sizes", default="1M,16M,64M", help="comma-separated byte sizes")
    parser.add_argument("--ranks", default="2,4", help="comma-separated rank counts")
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--transport", default="auto", choices=["auto", "shm", "gloo"])
    parser.add_argument("--dtype", default="fp32", choices=["fp32", "fp16"])
    parser.add_argument("--no-launcher", action="store_true",
                        help="start Cohort's ranks here even when cohort-launch exists")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per run")
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()
    if not os.access(os.path.join(args.bin_dir, "cohort-bench"), os.X_OK):
        parser.error(f"no cohort-bench in {args.bin_dir}: build it or pass --bin-dir")

    rows = []
    for ranks in [int(r) for r in args.ranks.split(",")]:
        for nbytes in [parse_size(s) for s in args.sizes.split(",")]:
            cohort = run_cohort(args, ranks, nbytes)
            torch = run_torch(args, ranks, nbytes)
            rows.append({"ranks": ranks, "bytes": nbytes, "dtype": args.dtype,
                         "iters": args.iters, "warmup": args.warmup, "time_stat": "median",
                         "cohort_transport": cohort["transport"],
                         "cohort_time_ms": cohort["time_ms"],
                         "cohort_busbw_GBps": cohort["busbw_GBps"],
                         "torch_gloo_time_ms": torch["time_ms"],
                         "torch_gloo_busbw_GBps": torch["busbw_GBps"],
                         "ratio": cohort["busbw_GBps"] / torch["busbw_GBps"]})
            print(f"  done: {ranks} ranks {human(nbytes)}", file=sys.stderr, flush=True)

    header = ["ranks", "size", "cohort", "cohort busbw GB/s", "torch gloo busbw GB/s", "ratio"]
    table = [[str(r["ranks"]), human(r["bytes"]), r["cohort_transport"],
              f"{r['cohort_busbw_GBps']:.2f}", f"{r['torch_gloo_busbw_GBps']:.2f}",
              f"{r['ratio']:.1f}x"] for r in rows]
    widths = [max(len(h), *(len(row[i]) for row in table)) for i, h in enumerate(header)]
    print("  ".join(h.rjust(w) for h, w in zip(header, widths)))
    for row in table:
        print("  ".join(c.rjust(w) for c, w in zip(row, widths)))
    print(f"(median time per allreduce on rank 0 over {args.iters} iterations after "
          f"{args.warmup} warmup; busbw = bytes/time * 2(n-1)/n; {args.dtype})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
