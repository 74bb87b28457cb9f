#!/usr/bin/python3
"""Training throughput: Cohort's `cohort-bench train` vs PyTorch DDP (Gloo, CPU), side by side.

For every model (cnn: Determined's MNIST net; mlp: 784-4096-4096-10) both implementations train
on Fashion-MNIST with SGD (lr 0.01, momentum 0.9), one compute thread per worker, the same
per-slot batch and the same data order: at step s the global batch is positions
(s*N*B + i) % 60000, i < N*B, of a fixed permutation (torch.Generator seeded 0), and worker r
takes the slice [r*B, (r+1)*B). Steps count from 0 at the first warmup step. Measured, one run
at a time: samples/s at 1 and 2 workers, and at 2 workers with aggregation frequency K (default
1000: K local passes accumulate gradients before one exchange, so a timed window of fewer than K
steps has no communication at all). Prints weak-scaling efficiency thr(2)/(2*thr(1)), the
communication overhead thr(K=1)/thr(K=1000), the Cohort/DDP ratios, and the targets.

The SGD arithmetic is the same on both sides; Cohort runs its FusedSGD by default (LibTorch's
SGD update, bit for bit, in one pass over memory that also zeros the gradients), the peer runs
torch.optim.SGD then zero_grad. --cohort-optimizer torch makes Cohort run LibTorch's SGD too.

Run with Debian's Python (it has torch):
  /usr/bin/python3 bench/train_vs_ddp.py --bin-dir build/bin [--models cnn,mlp] [--steps 50]
      [--warmup 5] [--per-slot-batch 64] [--repeats 3] [--only both] [--json results.json]
      [--cohort-optimizer fused|torch]
"""

import argparse
import gzip
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

# Where Fashion-MNIST is: COHORT_DATA_DIR, as the C++ side reads it (src/runtime/fashion_mnist.cc).
DATA_DIR = os.environ.get("COHORT_DATA_DIR", "/usr/share/datasets/fashion-mnist")
MEAN, STD = 0.2860, 0.3530
# Targets for Cohort: (minimum weak-scaling efficiency, minimum 2-worker throughput ratio vs DDP).
TARGETS = {"cnn": (0.95, 1.10), "mlp": (0.90, 1.25)}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_procs(cmds, env_list, timeout):
    """Runs the commands concurrently; returns [(returncode, stdout, stderr)]. Output goes to
    temporary files (no pipe can fill up), and once one process fails or the deadline passes the
    others are killed, so a dead peer never leaves a rank hanging in a collective."""
    files = [(tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")) for _ in cmds]
    procs = [subprocess.Popen(cmd, env=env, stdout=out, stderr=err, text=True)
             for cmd, env, (out, err) in zip(cmds, env_list, files)]
    deadline = time.monotonic() + timeout
    while any(p.poll() is None for p in procs):
        failed = any(p.returncode not in (None, 0) for p in procs)
        if failed or time.monotonic() > deadline:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
            if not failed:
                raise RuntimeError(f"timed out after {timeout:.0f} s")
            break
        time.sleep(0.05)
    results = []
    for p, (out, err) in zip(procs, files):
        out.seek(0)
        err.seek(0)
        results.append((p.returncode, out.read(), err.read()))
        out.close()
        err.close()
    return results


def check(results, what):
    for rc, _, err in results:
        if rc != 0:
            tail = err.strip()[-1500:] or "(no stderr)"
            raise RuntimeError(f"{what} failed (exit {rc}): {tail}")


def result_line(text):
    """The first JSON object on a line of `text` that has "samples_per_s"."""
    for line in text.splitlines():
        start = line.find("{")
        if start >= 0 and '"samples_per_s"' in line:
            return json.loads(line[start:])
    return None


# --- PyTorch DDP worker (this script, re-invoked with --ddp-worker) ---------------------------

def load_fashion_mnist():
    import numpy as np
    import torch

    with gzip.open(os.path.join(DATA_DIR, "train-images-idx3-ubyte.gz"), "rb") as f:
        raw = f.read()
    magic, n, rows, cols = (int.from_bytes(raw[i:i + 4], "big") for i in range(0, 16, 4))
    assert magic == 2051, "not an IDX image file"
    images = np.frombuffer(raw, np.uint8, offset=16).reshape(n, 1, rows, cols)
    with gzip.open(os.path.join(DATA_DIR, "train-labels-idx1-ubyte.gz"), "rb") as f:
        raw = f.read()
    assert int.from_bytes(raw[:4], "big") == 2049, "not an IDX label file"
    labels = np.frombuffer(raw, np.uint8, offset=8).astype(np.int64)
    x = (torch.from_numpy(images.astype(np.float32)) / 255.0 - MEAN) / STD
    return x, torch.from_numpy(labels)


def build_model(name):
    import torch.nn as nn

    if name == "cnn":
        return nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.Conv2d(32, 64, 3), nn.ReLU(),
                             nn.MaxPool2d(2), nn.Dropout(0.25), nn.Flatten(),
                             nn.Linear(9216, 128), nn.ReLU(), nn.Dropout(0.5),
                             nn.Linear(128, 10), nn.LogSoftmax(dim=1))
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 4096), nn.ReLU(),
                         nn.Linear(4096, 4096), nn.ReLU(), nn.Linear(4096, 10))


def ddp_worker(model_name, batch, steps, warmup, agg):
    import contextlib
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F

    torch.set_num_threads(1)
    rank, ranks = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group("gloo")  # env:// (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE)
    images, labels = load_fashion_mnist()
    perm = torch.randperm(len(images), generator=torch.Generator().manual_seed(0))
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(build_model(model_name))
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    # The cnn ends in LogSoftmax, so nll_loss; the mlp emits logits, so cross_entropy.
    loss_fn = F.nll_loss if model_name == "cnn" else F.cross_entropy
    offsets = torch.arange(batch) + rank * batch

    loss = None
    for step in range(warmup + steps):
        if step == warmup:
            dist.barrier()
            start = time.perf_counter()
        idx = perm[(step * ranks * batch + offsets) % len(images)]
        # Micro-step `step` opens an accumulation window when step % K == 0 and closes it
        # (gradient exchange + optimizer step) when (step + 1) % K == 0; K = 1 is plain DDP.
        if step % agg == 0:
            opt.zero_grad()
        sync = (step + 1) % agg == 0
        with contextlib.nullcontext() if sync else model.no_sync():
            loss = loss_fn(model(images[idx]), labels[idx])
            loss.backward()
        if sync:
            opt.step()
    dist.barrier()
    elapsed = time.perf_counter() - start
    if rank == 0:
        print(json.dumps({"impl": "ddp", "model": model_name, "ranks": ranks,
                          "per_slot_batch": batch, "steps": steps,
                          "samples_per_s": ranks * batch * steps / elapsed,
                          "step_ms": elapsed / steps * 1e3, "final_loss": loss.item(),
                          "aggregation_frequency": agg}), flush=True)
    dist.destroy_process_group()


# --- runners (parent process) -----------------------------------------------------------------

def thread_env(**extra):
    return dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", **extra)


def run_ddp(args, model, ranks, agg):
    port = free_port()
    cmd = [sys.executable, os.path.abspath(__file__), "--ddp-worker", model,
           str(args.per_slot_batch), str(args.steps), str(args.warmup), str(agg)]
    envs = [thread_env(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(r),
                       WORLD_SIZE=str(ranks), LOCAL_RANK=str(r)) for r in range(ranks)]
    results = run_procs([cmd] * ranks, envs, args.timeout)
    check(results, "DDP worker")
    found = result_line(results[0][1])
    if found is None:
        raise RuntimeError("DDP rank 0 printed no result line")
    return found


def run_cohort(args, model, ranks, agg):
    bench = os.path.join(args.bin_dir, "cohort-bench")
    launch = os.path.join(args.bin_dir, "cohort-launch")
    for path in (bench, launch):
        if not os.access(path, os.X_OK):
            raise RuntimeError(f"no executable {path}: build it or pass --bin-dir")
    cmd = [launch, "--slots", str(ranks), "--", bench, "train", "--model", model,
           "--per-slot-batch", str(args.per_slot_batch), "--steps", str(args.steps),
           "--warmup", str(args.warmup), "--optimizer", args.cohort_optimizer]
    if agg != 1:
        cmd += ["--aggregation-frequency", str(agg)]
    results = run_procs([cmd], [thread_env()], args.timeout)
    check(results, "cohort-bench train")
    found = result_line(results[0][1]) or result_line(results[0][2])
    if found is None:
        raise RuntimeError("cohort-bench train printed no result line")
    return found


def workers(n):
    return f"{n} worker{'s' if n != 1 else ''}"


def run_once(args, impl, model, ranks, agg, rep):
    """One run of one cell: its JSON result, or {"error": ...}."""
    runner = run_ddp if impl == "ddp" else run_cohort
    note = f" (round {rep + 1}/{args.repeats})" if args.repeats > 1 else ""
    print(f"running {impl} {model} {workers(ranks)} K={agg}{note} ...", file=sys.stderr,
          flush=True)
    try:
        return runner(args, model, ranks, agg)
    except (RuntimeError, OSError, ValueError) as e:
        print(f"  {impl} {model} {workers(ranks)} K={agg}: ERROR: {e}", file=sys.stderr,
              flush=True)
        return {"error": str(e)}


def summarize(impl, model, ranks, agg, runs):
    """One cell: the median over its runs, or {"error": ...} if a run failed."""
    cell = {"impl": impl, "model": model, "ranks": ranks, "aggregation_frequency": agg,
            "runs": runs}
    failed = [r for r in runs if "error" in r]
    if failed:
        cell["error"] = failed[0]["error"]
        return cell
    cell.update({"samples_per_s": statistics.median(r["samples_per_s"] for r in runs),
                 "step_ms": statistics.median(r["step_ms"] for r in runs),
                 "final_loss": runs[-1].get("final_loss")})
    return cell


# --- report -----------------------------------------------------------------------------------

def ratio(a, b):
    return a / b if a is not None and b else None


def fmt(value, spec, unit=""):
    return "n/a" if value is None else format(value, spec) + unit


def print_aligned(header, table):
    widths = [max(len(h), *(len(row[i]) for row in table)) for i, h in enumerate(header)]
    print("  ".join((h.ljust if i < 2 else h.rjust)(w)
                    for i, (h, w) in enumerate(zip(header, widths))))
    for row in table:
        print("  ".join((c.ljust if i < 2 else c.rjust)(w)
                        for i, (c, w) in enumerate(zip(row, widths))))


def report(args, models, impls, cells, big_k):
    thr = {key: cell.get("samples_per_s") for key, cell in cells.items()}
    summary, table = {}, []
    for model in models:
        for impl in impls:
            t1, t2 = thr[impl, model, 1, 1], thr[impl, model, 2, 1]
            t2k = thr[impl, model, 2, big_k]
            s = {"thr1": t1, "thr2": t2, "thr2_nocomm": t2k,
                 "scaling_eff": ratio(t2, None if t1 is None else 2 * t1),
                 "comm_ratio": ratio(t2, t2k)}
            summary[f"{model}/{impl}"] = s
            table.append([model, impl, fmt(t1, ".1f"), fmt(t2, ".1f"), fmt(s["scaling_eff"], ".3f"),
                          fmt(t2k, ".1f"), fmt(s["comm_ratio"], ".3f")])
    print_aligned(["model", "impl", "thr@1 (samples/s)", "thr@2 (samples/s)", "scaling eff",
                   f"thr@2 K={big_k}", f"K=1/K={big_k}"], table)
    print(f"(per-slot batch {args.per_slot_batch}; {args.steps} timed steps after {args.warmup} "
          f"warmup; median of {args.repeats} interleaved round(s); scaling eff = thr@2 / (2 * thr@1); "
          f"cohort optimizer: {args.cohort_optimizer})")

    errors = [c for c in cells.values() if "error" in c]
    for c in errors:
        print(f"ERROR {c['impl']} {c['model']} {workers(c['ranks'])} "
              f"K={c['aggregation_frequency']}: {c['error'].splitlines()[0][:300]}")
    if impls == ["ddp", "cohort"]:
        print()
        for model in models:
            d, c = summary[f"{model}/ddp"], summary[f"{model}/cohort"]
            r1, r2 = ratio(c["thr1"], d["thr1"]), ratio(c["thr2"], d["thr2"])
            summary[f"{model}/ratio"] = {"thr1": r1, "thr2": r2}
            print(f"{model}: cohort/ddp throughput  1 worker {fmt(r1, '.2f', 'x')}  "
                  f"2 workers {fmt(r2, '.2f', 'x')}")
        print("\ntargets (cohort):")
        for model in models:
            min_eff, min_ratio = TARGETS[model]
            checks = [("scaling eff", summary[f"{model}/cohort"]["scaling_eff"], min_eff, ""),
                      ("thr@2 cohort/ddp", summary[f"{model}/ratio"]["thr2"], min_ratio, "x")]
            for name, value, target, unit in checks:
                mark = "n/a" if value is None else ("PASS" if value >= target else "MISS")
                print(f"  {model:<4} {name:<17} {fmt(value, '.3f', unit):>7} >= "
                      f"{target:.2f}{unit:1}  {mark}")
    return summary


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--ddp-worker":  # hidden: one DDP rank
        model, batch, steps, warmup, agg = sys.argv[2], *map(int, sys.argv[3:7])
        ddp_worker(model, batch, steps, warmup, agg)
        return 0
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin-dir", default=os.path.join(here, "..", "build", "bin"),
                        help="directory holding cohort-bench and cohort-launch")
    parser.add_argument("--models", default="cnn,mlp", help="comma-separated: cnn, mlp")
    parser.add_argument("--per-slot-batch", type=int, default=64, help="batch per worker")
    parser.add_argument("--steps", type=int, default=50, help="timed steps (micro-batches)")
    parser.add_argument("--warmup", type=int, default=5, help="untimed steps first")
    parser.add_argument("--aggregation-frequency", type=int, default=1000, metavar="K",
                        help="K of the communication-free column (keep K > warmup + steps)")
    parser.add_argument("--repeats", type=int, default=1, help="rounds over all cells; each cell reports its median")
    parser.add_argument("--only", default="both", choices=["ddp", "cohort", "both"])
    parser.add_argument("--timeout", type=float, default=600, help="seconds per run")
    parser.add_argument("--json", help="also write all raw results to this file")
    parser.add_argument("--cohort-optimizer", default="fused", choices=["fused", "torch"],
                        help="Cohort's SGD: fused (FusedSGD, the default) or torch "
                             "(torch::optim::SGD then zero_grad, as the peer)")
    args = parser.parse_args()
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    for m in models:
        if m not in TARGETS:
            parser.error(f"unknown model {m!r} (choose from {', '.join(TARGETS)})")
    if min(args.per_slot_batch, args.steps, args.repeats, args.aggregation_frequency) < 1 \
            or args.warmup < 0:
        parser.error("--per-slot-batch, --steps, --repeats, --aggregation-frequency must be >= 1")
    impls = ["ddp", "cohort"] if args.only == "both" else [args.only]
    big_k = args.aggregation_frequency

    # Rounds are outermost and DDP and Cohort alternate cell by cell, so a burst of load on this
    # shared machine spoils one run of a cell (which the median drops), not all of them, and
    # slow drift hits both implementations alike.
    keys = [(impl, model, ranks, agg) for model in models
            for ranks, agg in dict.fromkeys(((1, 1), (2, 1), (2, big_k)))  # dedup when K = 1
            for impl in impls]
    runs = {key: [] for key in keys}
    for rep in range(args.repeats):
        for key in keys:
            if runs[key] and "error" in runs[key][-1]:
                continue  # a failed cell stays failed
            runs[key].append(run_once(args, *key, rep))
    cells = {key: summarize(*key, runs[key]) for key in keys}
    summary = report(args, models, impls, cells, big_k)
    if args.json:
        config = {k: v for k, v in vars(args).items() if k != "json"}
        with open(args.json, "w") as f:
            json.dump({"config": config, "results": list(cells.values()), "summary": summary},
                      f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
