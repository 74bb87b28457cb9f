#!/bin/bash
# Bundles the Debian 12 libraries that the GPU build's COHORT_COMM_ONLY configuration needs
# (Abseil, Gloo and what libgloo0 loads, nlohmann-json, CLI11, GoogleTest) into
# .gpu-deps/ at the repository root (git-ignored), for a GPU machine that has CUDA, NCCL and
# PyTorch but no package registry. The folder travels with the working tree (the device tool's
# `carry`, at most 64 MiB in all); scripts/gpu/device_check.sh finds it there.
#
# How: `apt-get download` of each package (no installation; a few packages named here, nothing
# looked up in bulk), `dpkg -x` into .gpu-deps/, then debug symbols and documentation removed and
# the one absolute path Debian's Gloo config holds (/usr/lib/libgloo.so.0.5.0) made relative.
# Run on a Debian 12 (bookworm) machine with network access. Prints the bundle's size.
#
# Usage: scripts/gpu/bundle_deps.sh [--train] [--pack] [DEST]   (default: .gpu-deps)
#   --train: also what COHORT_TRAIN_ONLY needs (yaml-cpp, RE2, protobuf with protoc, zlib).
#   --pack: also DEST.tar.xz (about a third of the size; device_check.sh unpacks it when DEST is
#   absent), so the bundle, Fashion-MNIST and the cluster's programs fit the tool's 64 MiB.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
train=0
pack=0
while [ $# -gt 0 ]; do
  case $1 in
    --train) train=1; shift ;;
    --pack) pack=1; shift ;;
    *) break ;;
  esac
done
dest=${1:-$root/.gpu-deps}
packages=(
  libabsl-dev libabsl20220623         # Abseil: headers, CMake config, shared libraries
  libgloo-dev libgloo0                # Gloo (its config points at /usr/lib, fixed below)
  libhiredis0.14 libibverbs1          # what libgloo.so.0 is linked against
  libnl-3-200 libnl-route-3-200       # what libibverbs.so.1 is linked against
  nlohmann-json3-dev libcli11-dev     # header-only
  libgtest-dev libgmock-dev           # GoogleTest (static libraries and CMake config)
)
if [ $train = 1 ]; then
  packages+=(
    libyaml-cpp-dev libyaml-cpp0.7    # experiment configs
    libre2-dev libre2-9               # log policies' patterns (config)
    libprotobuf-dev libprotobuf32     # TensorBoard's event records (core)
    protobuf-compiler libprotoc32     # protoc, run at build time
    zlib1g-dev                        # the datasets' gzip files
  )
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rm -rf "$dest"
mkdir -p "$dest"
(cd "$work" && apt-get download "${packages[@]}" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
for deb in "$work"/*.deb; do
  dpkg -x "$deb" "$dest"
done
rm -rf "$dest/usr/share/doc" "$dest/usr/share/lintian" "$dest/usr/share/man" \
       "$dest/usr/lib/debug"
# A static library beside its shared one is never linked (CMake's configs name the .so).
for a in $(find "$dest" -name '*.a'); do
  if [ -e "${a%.a}.so" ]; then rm -f "$a"; fi
done
# Shared libraries carry no debug sections worth their weight here.
find "$dest" -name '*.so*' -type f -exec strip --strip-debug {} + 2>/dev/null || true
# Debian's Gloo config names its library by an absolute path: make it relative to the prefix.
sed -i 's|"/usr/lib/libgloo.so.0.5.0"|"${_IMPORT_PREFIX}/lib/libgloo.so.0.5.0"|' \
  "$dest"/usr/share/cmake/Gloo/GlooTargets-*.cmake
du -sh "$dest"
if [ $pack = 1 ]; then
  tar -C "$(dirname "$dest")" -cJf "$dest.tar.xz" "$(basename "$dest")"
  du -h "$dest.tar.xz"
fi
echo "bundle_deps: ${#packages[@]} packages in $dest (pass it to the device tool's carry)"
