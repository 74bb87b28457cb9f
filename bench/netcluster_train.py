#!/usr/bin/python3
"""Training across an emulated cluster network: Cohort's `cohort-bench train` vs PyTorch DDP.

On a bench/netcluster network (namespaces joined by shaped links, issue 18), one rank per
machine (or --ranks-per-machine), trains each model with both implementations exactly as bench/train_vs_ddp.py does on
one host (Fashion-MNIST, SGD lr 0.01 momentum 0.9, one compute thread per rank, the same data
order; DDP on Gloo), on 1 machine and on N machines: samples/s, weak-scaling efficiency
thr(N)/(N*thr(1)), and Cohort / DDP. Extra Cohort variants (--variants) measure the seed's
levers on the network: fp16 compression, no overlap.

  /usr/bin/python3 bench/netcluster_train.py --bin-dir build/bin --rate 5gbit \\
      --machines 2 --models cnn,mlp --variants compression

Needs root (network namespaces), iproute2 and Debian's python3-torch.
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
NETCLUSTER = os.path.join(HERE, "netcluster")
DDP = os.path.join(HERE, "train_vs_ddp.py")
PORT = 29512
PROFILE_ROOT = "/tmp/netcluster-profile"


def machine_main(args):
    sys.path.insert(0, HERE)
    from netcluster_allreduce import machine_env  # one definition of a machine's setup
    machine, machines, chief, env = machine_env()
    ranks = args.ranks_per_machine
    if args.impl == "ddp":
        procs = []
        for local in range(ranks):
            rank_env = dict(env, MASTER_ADDR=chief, MASTER_PORT=str(PORT),
                            RANK=str(machine * ranks + local), WORLD_SIZE=str(machines * ranks),
                            LOCAL_RANK=str(local))
            procs.append(subprocess.Popen(
                [sys.executable, DDP, "--ddp-worker", args.model, str(args.per_slot_batch),
                 str(args.steps), str(args.warmup), "1"], env=rank_env))
        return max(p.wait() for p in procs)
    cmd = [os.path.join(args.bin_dir, "cohort-launch"), "--slots", str(ranks), "--nnodes",
           str(machines), "--node-rank", str(machine), "--chief-addr", chief, "--job-id", "tr",
           "--", os.path.join(args.bin_dir, "cohort-bench"), "train", "--model", args.model,
           "--per-slot-batch", str(args.per_slot_batch), "--steps", str(args.steps),
           "--warmup", str(args.warmup)]
    cmd += variant_args(args.impl.removeprefix("cohort").removeprefix("-"), args.model)
    return subprocess.call(cmd, env=env)


def variant_args(variant, model):
    """cohort-bench train's flags for a Cohort variant ("" is the plain run; "a+b" both)."""
    if "+" in variant:
        return [arg for part in variant.split("+") for arg in variant_args(part, model)]
    fixed = {"": [], "compression": ["--compression"], "no-overlap": ["--no-overlap"],
             "auto-tune": ["--auto-tune"],
             "profile": ["--profile-dir", os.path.join(PROFILE_ROOT, model)]}
    if variant in fixed:
        return fixed[variant]
    if variant.startswith("agg") and variant[3:].isdigit():
        return ["--aggregation-frequency", variant[3:]]
    if variant.startswith("fusion") and variant[6:].replace(".", "", 1).isdigit():
        return ["--fusion-mb", variant[6:]]
    raise ValueError(f"unknown variant {variant!r}: expected one of {sorted(fixed)}, aggK "
                     "(aggregation_frequency K) or fusionMB (tensor fusion threshold)")


def run(args, machines, impl, model):
    cmd = [NETCLUSTER, "--machines", str(machines), "--rate", args.rate, "--timeout", "600",
           "--", sys.executable, os.path.abspath(__file__), "--impl", impl, "--model", model,
           "--per-slot-batch", str(args.per_slot_batch), "--steps", str(args.steps),
           "--warmup", str(args.warmup), "--bin-dir", args.bin_dir,
           "--ranks-per-machine", str(args.ranks_per_machine)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=700)
    if r.returncode != 0:
        raise RuntimeError(f"{impl} {model} on {machines} failed ({r.returncode}): "
                           f"{(r.stdout + r.stderr)[-2000:]}")
    for line in (r.stdout + r.stderr).splitlines():
        at = line.find("{")
        if at >= 0 and "samples_per_s" in line:
            return json.loads(line[at:])
    raise RuntimeError(f"{impl}: no result line in {r.stdout[-1500:]}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin-dir", default=os.path.join(HERE, "..", "build", "bin"))
    parser.add_argument("--rate", default="5gbit")
    parser.add_argument("--machines", type=int, default=2)
    parser.add_argument("--models", default="cnn,mlp")
    parser.add_argument("--variants", default="",
                        help="extra Cohort runs: compression, no-overlap, auto-tune, aggK "
                        "(aggregation_frequency K), fusionMB (fusion threshold), profile (the "
                        f"step timeline, written to {PROFILE_ROOT}/MODEL/trace.json); a+b "
                        "combines two, e.g. compression+profile")
    parser.add_argument("--ranks-per-machine", type=int, default=1,
                        help="ranks on each machine: Cohort's hierarchical exchange (shared "
                        "memory inside a machine) against DDP's flat Gloo ring")
    parser.add_argument("--per-slot-batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--impl", help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.bin_dir = os.path.abspath(args.bin_dir)
    if args.impl:
        return machine_main(args)
    variants = [v for v in args.variants.split(",") if v]
    for v in variants:
        variant_args(v, "mlp")  # an unknown variant fails before any run
    impls = ["cohort", "ddp"] + [f"cohort-{v}" for v in variants]
    print(f"{args.rate} links, {args.ranks_per_machine} rank(s) per machine, per-slot batch "
          f"{args.per_slot_batch}, {args.steps} timed steps (efficiency against 1 machine with "
          f"as many ranks)")
    print(f"{'model':>5} {'impl':>19} {'1 machine':>10} {f'{args.machines} machines':>11} "
          f"{'efficiency':>10} {'vs DDP':>7} {'fusion MB':>9} {'overlap':>7}")
    for model in args.models.split(","):
        single = {impl: run(args, 1, impl, model)["samples_per_s"] for impl in ("cohort", "ddp")}
        multi = {impl: run(args, args.machines, impl, model) for impl in impls}
        for impl in impls:
            one = single.get(impl, single["cohort"])
            thr = multi[impl]["samples_per_s"]
            fusion = multi[impl].get("fusion_mb")
            overlap = multi[impl].get("overlap_fraction")
            print(f"{model:>5} {impl:>19} {one:10.0f} {thr:11.0f} "
                  f"{thr / (args.machines * one):10.2f} "
                  f"{thr / multi['ddp']['samples_per_s']:7.2f} "
                  f"{'' if fusion is None else f'{fusion:g}':>9} "
                  f"{'' if overlap is None else f'{overlap:.2f}':>7}", flush=True)
            if overlap is not None:
                r = multi[impl]
                print(f"{'':>25} profiled step: backward {r['profiled_backward_ms']:.1f} ms, "
                      f"buckets' communication {r['bucket_comm_ms']:.1f} ms of which "
                      f"{r['bucket_comm_in_backward_ms']:.1f} ms inside the backward pass, "
                      f"then a wait of {r['profiled_gradient_wait_ms']:.1f} ms; trace: "
                      f"{os.path.join(PROFILE_ROOT, model, 'trace.json')}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main() or 0)
