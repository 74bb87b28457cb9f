#!/usr/bin/env bash
# What profiling costs the training it watches (issue budget: <= 2% of throughput). The
# distributed Fashion-MNIST example (global batch 128 on 2 slots) cut to $BATCHES batches runs
# $PAIRS times with `profiling.enabled: true` (system sampling + every rank's step timeline)
# and $PAIRS times with `false`, alternating, on one private local cluster (one 2-slot agent).
# Throughput is each trial's own training/samples_per_second, its first (warm-up) report window
# left out. Prints every run, the means and the ratio on/off.
#   bench/profiling_overhead.sh            # BATCHES=300 PAIRS=3 PORT=8191
set -euo pipefail
cd "$(dirname "$0")/.."
BATCHES=${BATCHES:-300}
PAIRS=${PAIRS:-3}
PORT=${PORT:-8191}
cohort=$PWD/build/bin/cohort
[[ -x $cohort && -d build/contexts/fashion_mnist ]] || { echo "build first: scripts/build.sh" >&2; exit 1; }
work=$(mktemp -d)
export HOME=$work XDG_CONFIG_HOME=$work/config  # a private cluster and login
trap '"$cohort" cluster down >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
sed -e "s/batches: 2000   # .*/batches: $BATCHES/" -e "s/batches: 500/batches: $BATCHES/" \
    -e "s/end_after_batch: 2000/end_after_batch: $BATCHES/" \
    examples/fashion_mnist/distributed.yaml > "$work/on.yaml"
sed 's/enabled: true/enabled: false/' "$work/on.yaml" > "$work/off.yaml"
"$cohort" cluster up --port "$PORT" --agents 1 --slots 2
declare -A trials=([on]="" [off]="")
for ((i = 1; i <= PAIRS; i++)); do
  for mode in on off; do
    out=$("$cohort" experiment create --follow "$work/$mode.yaml" build/contexts/fashion_mnist 2>&1)
    id=$(sed -n 's/^trial \([0-9]*\): validation.*/\1/p' <<<"$out" | head -1)
    if [[ -z $id ]] || ! grep -q '^experiment [0-9]* COMPLETED' <<<"$out"; then
      echo "run $i ($mode) did not complete:" >&2; echo "$out" >&2; exit 1
    fi
    trials[$mode]+="$id "
    echo "run $i, profiling $mode: trial $id"
  done
done
for mode in on off; do
  for id in ${trials[$mode]}; do "$cohort" trial metrics "$id" --json > "$work/$mode-$id.json"; done
done
python3 - "$work" "${trials[on]}" "${trials[off]}" <<'PY'
import json, statistics, sys
work, on, off = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
def rate(mode, trial):
    series = json.load(open(f"{work}/{mode}-{trial}.json"))["series"]
    points = next(s["points"] for s in series if s["name"] == "training/samples_per_second")
    return statistics.mean(p[2] for p in points[1:])  # the first window warms up
rates = {"on": [rate("on", t) for t in on], "off": [rate("off", t) for t in off]}
print(f"{'run':>4} {'profiling on':>14} {'profiling off':>14}   (samples/s)")
for i, (a, b) in enumerate(zip(rates["on"], rates["off"]), 1):
    print(f"{i:>4} {a:>14,.0f} {b:>14,.0f}")
m_on, m_off = statistics.mean(rates["on"]), statistics.mean(rates["off"])
print(f"{'mean':>4} {m_on:>14,.0f} {m_off:>14,.0f}")
print(f"on/off = {m_on / m_off:.3f} (profiling costs {100 * (1 - m_on / m_off):+.1f}% of throughput)")
PY
