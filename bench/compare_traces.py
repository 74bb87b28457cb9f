#!/usr/bin/python3
"""Compares two operator traces of the same training steps, event by event: where one side
spends device time the other does not, and which operators one side runs more often.

The traces are Chrome trace files of "X" events whose "cat" is "kernel" (the device's kernels,
copies and memsets; Kineto's own "gpu_memcpy"/"gpu_memset" count too) or "cpu_op" (the host's
operators): what `cohort-bench train --op-trace` writes, what bench/train_vs_torch.py
--trace-dir writes for PyTorch, and what torch.profiler's export_chrome_trace writes.

  /usr/bin/python3 bench/compare_traces.py pytorch-resnet18.json cohort-resnet18.json --steps 3

Prints, per step: each side's device time and kernel count; the kernels whose device time
differs most (name, launches, ms on each side); the host operators (aten::, autograd nodes)
whose counts differ. Exit 1 when a file is missing or not a trace.
"""

import argparse
import collections
import json
import sys

DEVICE_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}


def load(path):
    """{"device": {name: [count, us]}, "host": {name: count}} of one trace file."""
    with open(path) as f:
        data = json.load(f)
    events = data["traceEvents"] if isinstance(data, dict) else data
    device = collections.defaultdict(lambda: [0, 0.0])
    host = collections.Counter()
    for e in events:
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        name, cat = str(e.get("name", "")), e.get("cat", "")
        if cat in DEVICE_CATS:
            device[name][0] += 1
            device[name][1] += float(e.get("dur", 0))
        elif cat == "cpu_op" and not name.startswith("cuda"):
            host[name] += 1
    return {"device": device, "host": host}


def short(name, width):
    return name if len(name) <= width else name[:width - 3] + "..."


def compare(a_label, a, b_label, b, steps, top, out=sys.stdout):
    """Prints the comparison of two loaded traces of `steps` steps each."""
    def per_step_ms(side):
        return sum(us for _, us in side["device"].values()) / steps / 1e3

    def launches(side):
        return sum(n for n, _ in side["device"].values()) / steps

    print(f"device time per step: {a_label} {per_step_ms(a):.3f} ms ({launches(a):.0f} launches), "
          f"{b_label} {per_step_ms(b):.3f} ms ({launches(b):.0f} launches)", file=out)
    names = set(a["device"]) | set(b["device"])
    rows = []
    for name in names:
        na, ua = a["device"].get(name, [0, 0.0])
        nb, ub = b["device"].get(name, [0, 0.0])
        rows.append((ub - ua, name, na / steps, nb / steps, ua / steps / 1e3, ub / steps / 1e3))
    rows.sort(key=lambda r: -abs(r[0]))
    if rows:
        print(f"\n{'kernel (per step)':<72} {'n ' + a_label:>10} {'n ' + b_label:>10} "
              f"{'ms ' + a_label:>11} {'ms ' + b_label:>11} {'diff ms':>8}", file=out)
        for diff, name, na, nb, ma, mb in rows[:top]:
            print(f"{short(name, 72):<72} {na:>10.1f} {nb:>10.1f} {ma:>11.3f} {mb:>11.3f} "
                  f"{diff / steps / 1e3:>+8.3f}", file=out)
    differing = [(name, a["host"].get(name, 0) / steps, b["host"].get(name, 0) / steps)
                 for name in set(a["host"]) | set(b["host"])
                 if a["host"].get(name, 0) != b["host"].get(name, 0)]
    differing.sort(key=lambda r: -abs(r[2] - r[1]))
    print(f"\nhost operators whose counts differ (per step): {len(differing)}", file=out)
    for name, ca, cb in differing[:top]:
        print(f"  {short(name, 80):<80} {a_label} {ca:>7.1f}  {b_label} {cb:>7.1f}", file=out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("a", help="the first trace (e.g. PyTorch's)")
    parser.add_argument("b", help="the second trace (e.g. Cohort's)")
    parser.add_argument("--labels", default="A,B", help="two names for the columns")
    parser.add_argument("--steps", type=int, default=1, help="steps in each trace")
    parser.add_argument("--top", type=int, default=25, help="rows of each table")
    args = parser.parse_args()
    labels = args.labels.split(",")
    if len(labels) != 2 or args.steps < 1:
        parser.error("--labels takes two names, --steps a positive count")
    try:
        a, b = load(args.a), load(args.b)
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"compare_traces: {e}", file=sys.stderr)
        return 1
    compare(labels[0], a, labels[1], b, args.steps, args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
