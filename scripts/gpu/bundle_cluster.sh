#!/bin/bash
# Packs this machine's (Debian 12) cohort-master, cohort-agent, cohort-launch and the cohort CLI
# with the shared libraries they load, apart from glibc's and GCC's runtime (a newer one on the
# GPU machine serves them), into .gpu-cluster.tar.xz at the repository root (git-ignored): the
# cluster half of the GPU check (scripts/gpu/cluster_check.sh), for a GPU machine without
# Debian's packages. None of the four loads LibTorch, so the CPU build's binaries do; the trial
# itself is built there against PyTorch's LibTorch (device_check.sh --train).
#
# Usage: scripts/gpu/bundle_cluster.sh [BUILD_DIR]   (default: build; run scripts/build.sh first)
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
out=$root/.gpu-cluster.tar.xz
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin" "$work/lib"
programs=(cohort-master cohort-agent cohort-launch cohort)
for p in "${programs[@]}"; do
  [ -x "$build/bin/$p" ] || { echo "bundle_cluster: $build/bin/$p is missing: build first" >&2; exit 1; }
  cp "$build/bin/$p" "$work/bin/"
done
strip --strip-debug "$work"/bin/*
# Every library they load, except glibc's, libstdc++ and libgcc_s (the loader's own world).
for p in "${programs[@]}"; do ldd "$build/bin/$p"; done | awk '$3 ~ /^\// {print $3}' | sort -u |
  grep -Ev '/(libc|libm|libpthread|libdl|librt|ld-linux-x86-64|libstdc\+\+|libgcc_s)\.so' |
  while read -r lib; do cp -L "$lib" "$work/lib/"; done
strip --strip-debug "$work"/lib/* 2>/dev/null || true
tar -C "$work" -cJf "$out" bin lib
echo "bundle_cluster: $(ls "$work/lib" | wc -l) libraries, $(du -sh "$work" | cut -f1) unpacked," \
  "$(du -h "$out" | cut -f1) in $out (pass it to the device tool's carry)"
