#!/usr/bin/python3
"""One process training: Cohort's `cohort-bench train` vs the same model in PyTorch, side by side.

Both train one model on one device with the same per-step batch, optimizer (SGD lr 0.01,
momentum 0.9), warm-up and timed steps, and the same number of compute threads; the table
gives samples/s for each and Cohort / PyTorch. Models (bench/models.h builds the same ones in
C++): cnn and mlp on Fashion-MNIST in the same data order as cohort-bench train; resnet18
(torchvision's ResNet-18 layout, 11.7 M parameters) on one fixed synthetic batch of 224x224
images, made once on the device, so both measure the model and not a data loader.

  /usr/bin/python3 bench/train_vs_torch.py --bin-dir build/bin --models cnn,mlp,resnet18 \\
      --batch 64 [--device cuda] [--trace-dir DIR]

With --trace-dir, each side then runs --trace-steps more steps under LibTorch's profiler
(torch.profiler; cohort-bench train --op-trace) and the two traces are compared kernel by kernel
and operator by operator (bench/compare_traces.py).

On the CPU it needs Debian's python3-torch; --device cuda needs a CUDA build of both (issue 17:
cohort-bench built with -DCOHORT_CUDA=ON against the PyTorch install's LibTorch).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from train_vs_ddp import build_model, load_fashion_mnist  # one definition of cnn, mlp, data


def build_resnet18():
    """torchvision.models.resnet18() without torchvision (not on every machine): the same
    modules, names and parameter count (11,689,512)."""
    import torch.nn as nn

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.downsample = None
            if stride != 1 or cin != cout:
                self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                                nn.BatchNorm2d(cout))

        def forward(self, x):
            y = self.bn1(self.conv1(x)).relu()
            y = self.bn2(self.conv2(y))
            return (y + (x if self.downsample is None else self.downsample(x))).relu()

    class ResNet18(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.maxpool = nn.MaxPool2d(3, 2, 1)
            cin = 64
            for stage in range(4):
                cout = 64 << stage
                blocks = [BasicBlock(cin, cout, 2 if stage else 1), BasicBlock(cout, cout, 1)]
                cin = cout
                setattr(self, f"layer{stage + 1}", nn.Sequential(*blocks))
            self.avgpool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(512, 1000)

        def forward(self, x):
            x = self.maxpool(self.bn1(self.conv1(x)).relu())
            for stage in range(4):
                x = getattr(self, f"layer{stage + 1}")(x)
            return self.fc(self.avgpool(x).flatten(1))

    return ResNet18()


def write_trace(events, path):
    """torch.profiler's events as the Chrome trace cohort-bench --op-trace writes ("kernel" for
    the device's events, "cpu_op" for the host's; bench/compare_traces.py reads both)."""
    from torch.autograd import DeviceType

    out = []
    for e in events:
        device = e.device_type != DeviceType.CPU
        out.append({"name": e.name, "cat": "kernel" if device else "cpu_op", "ph": "X",
                    "ts": e.time_range.start, "dur": e.time_range.elapsed_us(),
                    "pid": 1 if device else 0, "tid": 0 if device else 1})
    if not any(o["cat"] == "kernel" for o in out):  # kernels kept only under their operators
        for e in events:
            for k in getattr(e, "kernels", []):
                out.append({"name": k.name, "cat": "kernel", "ph": "X", "ts": e.time_range.start,
                            "dur": k.duration, "pid": 1, "tid": 0})
    with open(path, "w") as f:
        json.dump({"traceEvents": out, "displayTimeUnit": "ms"}, f)


GPU_LIBRARY_STEMS = ("libcudnn", "libcublas", "libcudart", "libnccl", "libtorch_cuda")


def loaded_gpu_libraries():
    """The GPU libraries this process has loaded, as cohort-bench reports its own."""
    found = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line[line.find("/"):].strip() if "/" in line else ""
            if any(stem in path for stem in GPU_LIBRARY_STEMS):
                found.add(path)
    return sorted(found)


def compare_gpu_libraries(theirs, ours):
    """A line naming the GPU libraries one side loads and the other does not (by file name and
    folder), or None when they load the same."""
    a, b = set(theirs.get("gpu_libraries", [])), set(ours.get("gpu_libraries", []))
    if a == b:
        return None
    return (f"different GPU libraries loaded: PyTorch only {sorted(a - b)}, "
            f"Cohort only {sorted(b - a)}")


def torch_run(model_name, device, batch, steps, warmup, threads, trace=None, trace_steps=0):
    """The PyTorch side: samples/s over the timed steps (the loss read once, at the end); with
    `trace`, then trace_steps more steps under torch.profiler, written there (write_trace)."""
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = (build_resnet18() if model_name == "resnet18" else build_model(model_name)).to(device)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = F.nll_loss if model_name == "cnn" else F.cross_entropy
    if model_name == "resnet18":
        gen = torch.Generator().manual_seed(1000)
        fixed = (torch.randn(batch, 3, 224, 224, generator=gen).to(device),
                 torch.randint(1000, (batch,), generator=gen).to(device))
    else:
        images, labels = load_fashion_mnist()
        perm = torch.randperm(len(images), generator=torch.Generator().manual_seed(0))
        offsets = torch.arange(batch)
    loss = None
    for step in range(warmup + steps):
        if step == warmup:
            if loss is not None:
                loss.item()  # the warm-up's queued work is done before the clock starts
            start = time.perf_counter()
        if model_name == "resnet18":
            x, y = fixed
        else:
            idx = perm[(step * batch + offsets) % len(images)]
            x, y = images[idx].to(device), labels[idx].to(device)
        loss = loss_fn(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    final = loss.item()
    elapsed = time.perf_counter() - start
    if trace:
        activities = [torch.profiler.ProfilerActivity.CPU]
        if device.startswith("cuda"):
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        with torch.profiler.profile(activities=activities) as prof:
            for step in range(trace_steps):
                x, y = fixed if model_name == "resnet18" else (x, y)
                loss_fn(model(x), y).backward()
                opt.step()
                opt.zero_grad()
            if device.startswith("cuda"):
                torch.cuda.synchronize()
        write_trace(prof.events(), trace)
    result = {"impl": "pytorch", "model": model_name, "device": device, "per_slot_batch": batch,
              "steps": steps, "samples_per_s": batch * steps / elapsed,
              "step_ms": elapsed / steps * 1e3, "final_loss": final,
              "parameters": sum(p.numel() for p in model.parameters())}
    if device.startswith("cuda"):
        result["gpu_libraries"] = loaded_gpu_libraries()
    return result


def thread_env(threads):
    """Both sides' environment: OpenBLAS (Debian's LibTorch multiplies with it) and OpenMP
    limited to the compute threads, set before either loads torch (torch.set_num_threads alone
    leaves OpenBLAS at one thread per core, which would hand PyTorch's matrix products the
    whole machine)."""
    return dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))


def cohort_optimizer(device):
    """Each side's own SGD as its users get it. On the CPU PyTorch's SGD updates one parameter at
    a time, as LibTorch's torch::optim::SGD does; on a GPU it takes its multi-tensor (foreach)
    path by default, as Cohort's FusedSGD does there (both the same arithmetic as SGD)."""
    return "torch" if device == "cpu" else "fused"


def pytorch_run(args, model_name, trace_dir=None):
    """torch_run in a process of its own, under thread_env (traced into trace_dir if set)."""
    cmd = [sys.executable, os.path.abspath(__file__), "--torch-worker", model_name, args.device,
           str(args.batch), str(args.steps), str(args.warmup), str(args.threads)]
    if trace_dir:
        cmd += [trace_path(args, "pytorch", model_name), str(args.trace_steps)]
    r = subprocess.run(cmd, capture_output=True, text=True, env=thread_env(args.threads),
                       timeout=3600)
    if r.returncode != 0:
        raise RuntimeError(f"PyTorch {model_name} failed ({r.returncode}): {r.stderr[-1500:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def cohort_run(args, model_name, trace_dir=None):
    """cohort-bench train under thread_env (traced into trace_dir if set); its JSON line."""
    cmd = [os.path.join(args.bin_dir, "cohort-bench"), "train", "--model", model_name,
           "--device", args.device, "--per-slot-batch", str(args.batch), "--steps",
           str(args.steps), "--warmup", str(args.warmup), "--threads", str(args.threads),
           "--optimizer", cohort_optimizer(args.device)]
    if trace_dir:
        cmd += ["--op-trace", trace_path(args, "cohort", model_name), "--profile-steps",
                str(args.trace_steps)]
    r = subprocess.run(cmd, capture_output=True, text=True, env=thread_env(args.threads),
                       timeout=3600)
    if r.returncode != 0:
        raise RuntimeError(f"cohort-bench train --model {model_name} failed ({r.returncode}): "
                           f"{(r.stdout + r.stderr)[-1500:]}")
    for line in r.stdout.splitlines():
        if line.startswith("{") and '"samples_per_s"' in line:
            return json.loads(line)
    raise RuntimeError(f"cohort-bench train printed no result: {r.stdout[-1000:]}")


def run_model(args, model_name):
    """--repeats rounds of both sides, the order alternating (PyTorch first in even rounds), so
    neither always runs on a GPU the other has just warmed; prints the medians' row (and each
    round's ratio), the GPU libraries if they differ, and with --trace-dir the traces' comparison
    (traced in the first round)."""
    rounds = []
    for r in range(args.repeats):
        traced = args.trace_dir if r == 0 else None
        sides = [("pytorch", pytorch_run), ("cohort", cohort_run)]
        order = sides if r % 2 == 0 else sides[::-1]
        results = {name: run(args, model_name, traced) for name, run in order}
        rounds.append((results["pytorch"], results["cohort"]))
    theirs, ours = rounds[0]
    if ours.get("parameters") != theirs["parameters"]:
        raise RuntimeError(f"{model_name}: Cohort's model has {ours.get('parameters')} "
                           f"parameters, PyTorch's {theirs['parameters']}: not the same model")
    t = statistics.median(p["samples_per_s"] for p, _ in rounds)
    c = statistics.median(o["samples_per_s"] for _, o in rounds)
    print(f"{model_name:>8} {theirs['parameters']:>11,} {t:18.1f} {c:17.1f} {c / t:16.2f}",
          flush=True)
    if args.repeats > 1:
        ratios = ", ".join(f"{o['samples_per_s'] / p['samples_per_s']:.3f}" for p, o in rounds)
        print(f"{'':>8} rounds (Cohort / PyTorch, PyTorch first in rounds 1, 3, ...): {ratios}")
    for p, o in rounds:
        print(json.dumps({"pytorch": p, "cohort": o}), file=sys.stderr, flush=True)
    libraries = compare_gpu_libraries(theirs, ours)
    if libraries:
        print(f"{model_name}: {libraries}", flush=True)
    if args.trace_dir:
        import compare_traces
        print(f"\n{model_name}: {args.trace_steps} traced steps, PyTorch vs Cohort")
        compare_traces.compare(
            "pytorch", compare_traces.load(trace_path(args, "pytorch", model_name)),
            "cohort", compare_traces.load(trace_path(args, "cohort", model_name)),
            args.trace_steps, 25)
        print(flush=True)


def trace_path(args, side, model_name):
    return os.path.join(args.trace_dir, f"{side}-{model_name}.json")


def main():
    if len(sys.argv) in (8, 10) and sys.argv[1] == "--torch-worker":
        model_name, device = sys.argv[2], sys.argv[3]
        batch, steps, warmup, threads = (int(a) for a in sys.argv[4:8])
        trace, trace_steps = (sys.argv[8], int(sys.argv[9])) if len(sys.argv) == 10 else (None, 0)
        print(json.dumps(torch_run(model_name, device, batch, steps, warmup, threads, trace,
                                   trace_steps)))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin-dir", default=os.path.join(HERE, "..", "build", "bin"))
    parser.add_argument("--models", default="cnn,mlp,resnet18")
    parser.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    parser.add_argument("--batch", type=int, default=64, help="samples per step")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1, help="compute threads, both sides")
    parser.add_argument("--trace-dir", help="after the timed steps, --trace-steps more on each "
                        "side under LibTorch's profiler; their traces are written here "
                        "(pytorch-MODEL.json, cohort-MODEL.json) and compared "
                        "(bench/compare_traces.py)")
    parser.add_argument("--trace-steps", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=1,
                        help="rounds of both sides, alternating which goes first; the medians")
    args = parser.parse_args()
    args.bin_dir = os.path.abspath(args.bin_dir)
    if args.trace_dir:
        os.makedirs(args.trace_dir, exist_ok=True)
    print(f"device {args.device}, batch {args.batch}, {args.steps} timed steps after "
          f"{args.warmup}, {args.threads} compute thread(s)")
    print(f"{'model':>8} {'parameters':>11} {'PyTorch samples/s':>18} {'Cohort samples/s':>17} "
          f"{'Cohort / PyTorch':>16}")
    for model_name in args.models.split(","):
        run_model(args, model_name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
