#!/usr/bin/env bash
# Runs Cohort's libFuzzer targets (fuzz/README.md): installs clang and libFuzzer if missing,
# builds the targets with clang, ASan and UBSan into build-fuzz/ (only they and the libraries
# they link), and runs each for SECONDS (default 60) on one core, starting from its seed corpus.
#   scripts/fuzz.sh [SECONDS] [TARGET...]     e.g. scripts/fuzz.sh 300 yaml_json config
# New interesting inputs go to build-fuzz/fuzz/corpus/<target>/ (the seeds in fuzz/corpus/ are
# not touched); crashes go to build-fuzz/fuzz/crashes/<target>/, printed at the end. Exit status
# 1 when any target crashed. BUILD_DIR and BUILD_JOBS override build-fuzz and 1.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH="${1:-60}"
shift || true
TARGETS=("$@")
if [ ${#TARGETS[@]} -eq 0 ]; then
  TARGETS=(config yaml_json wire_json wire_text json_bounded context_archive)
fi
BUILD_DIR="${BUILD_DIR:-build-fuzz}"
BUILD_JOBS="${BUILD_JOBS:-1}"

# Debian 12's clang; libFuzzer's runtime (libclang_rt.fuzzer) is in libclang-rt-14-dev, which
# clang only recommends.
PACKAGES=(clang libclang-rt-14-dev)
missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "fuzz: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

GENERATOR=()
command -v ninja >/dev/null 2>&1 && GENERATOR=(-G Ninja)
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  CC=clang CXX=clang++ cmake -S . -B "$BUILD_DIR" "${GENERATOR[@]}" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOHORT_FUZZ=ON
fi
cmake --build "$BUILD_DIR" -j "$BUILD_JOBS" --target "${TARGETS[@]/%/_fuzzer}"

crashed=()
for t in "${TARGETS[@]}"; do
  corpus="$BUILD_DIR/fuzz/corpus/$t"
  crashes="$BUILD_DIR/fuzz/crashes/$t"
  mkdir -p "$corpus" "$crashes"
  echo "fuzz: $t for ${SECONDS_EACH}s"
  # -fork=1 -ignore_crashes=1: keep fuzzing after a crash, so one run finds more than one bug.
  if ! "$BUILD_DIR/fuzz/${t}_fuzzer" "$corpus" "fuzz/corpus/$t" -max_total_time="$SECONDS_EACH" \
      -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 -timeout=10 -rss_limit_mb=2048 \
      -max_len=65536 -artifact_prefix="$crashes/" -print_final_stats=1 \
      >"$BUILD_DIR/fuzz/$t.log" 2>&1; then
    echo "fuzz: $t exited with an error; see $BUILD_DIR/fuzz/$t.log"
  fi
  grep -E "^(INFO: fuzzed for|stat::number_of_executed_units|#[0-9]+: cov)" \
    "$BUILD_DIR/fuzz/$t.log" | tail -2 || true
  if [ -n "$(ls -A "$crashes")" ]; then crashed+=("$t"); fi
done

if [ ${#crashed[@]} -gt 0 ]; then
  echo "fuzz: crashes, timeouts or ooms found in: ${crashed[*]}"
  for t in "${crashed[@]}"; do echo "  $BUILD_DIR/fuzz/crashes/$t/"; ls "$BUILD_DIR/fuzz/crashes/$t"; done
  echo "fuzz: reproduce one with $BUILD_DIR/fuzz/TARGET_fuzzer FILE"
  exit 1
fi
echo "fuzz: no crashes in ${TARGETS[*]}"
