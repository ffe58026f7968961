#!/usr/bin/env bash
# gpu_bundle_test.sh: proves, on the course's own Debian machine, that the bundle
# (tools/gpu_bundle.sh) holds everything tools/gpu_check.sh needs: it runs gpu_check.sh in a
# private mount namespace where the system's copies of every bundled package are hidden,
# so that a header, library, CMake file or data file missing from the bundle fails the
# build or the run here, as it would on a bare GPU machine.
#
#   tests/tools/gpu_bundle_test.sh [BUNDLE]     # as root (unshare -m); BUNDLE as for gpu_check.sh
#
# Hidden: every file the bundled packages installed (dpkg -L), a directory that only they
# own behind an empty tmpfs (/usr/include/gloo, /usr/share/cmake/Gloo, the data set, ...),
# any other file behind /dev/null; also the -dev packages of Gloo's dependencies, which
# the bundle leaves out on purpose. zlib's runtime library stays: every Linux has it, and
# CMake and the compilers load it. CUDA, NCCL, the compiler and CMake stay: the GPU machine
# has those. What it is not: a test of the GPU; without one, gpu_check.sh exits 2 after the
# build, the GPU tests (which report "skipped: no CUDA device") and a CPU smoke run.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ "${1:-}" != --inside ]; then
  BUNDLE=${1:-${GPU_BUNDLE:-gpu-bundle}}
  [ -f "$BUNDLE/MANIFEST" ] || { echo "gpu_bundle_test: no bundle at $BUNDLE (tools/gpu_bundle.sh)"; exit 1; }
  [ "$(id -u)" -eq 0 ] || { echo "gpu_bundle_test: needs root (unshare -m)"; exit 1; }
  GPU_BUNDLE=$BUNDLE exec unshare -m --propagation private "$0" --inside
fi
BUNDLE=$GPU_BUNDLE

# The packages to hide: the bundle's (zlib's runtime aside) and those it leaves out.
mapfile -t bundled < <(awk '$1 != "nccl.h" && $1 != "zlib1g" { print $1 }' "$BUNDLE/MANIFEST")
hidden=()
for p in "${bundled[@]}" libgloo-dev libhiredis-dev libibverbs-dev libgmock-dev libopenblas-dev \
  libopenblas0 libopenblas0-openmp libopenblas-openmp-dev libopenblas0-serial libopenblas-serial-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" && hidden+=("$p")
done
mapfile -t paths < <(dpkg -L "${hidden[@]}" | grep -vE '^/\.$|^/usr/share/(doc|man|lintian|bug)(/|$)' |
  sort -u)
hidden_set=" ${hidden[*]} "

# A directory is hidden whole when every package owning it is hidden (and it is not under
# one already hidden); other files one by one.
dirs=()
for path in "${paths[@]}"; do
  if [ ! -d "$path" ] || [ -L "$path" ]; then continue; fi
  owners=$(dpkg-query -S "$path" 2>/dev/null | sed 's/: .*//; s/:[a-z0-9]*//g; s/,/ /g')
  only_hidden=1
  for o in $owners; do [[ $hidden_set == *" $o "* ]] || only_hidden=0; done
  [ $only_hidden = 1 ] && dirs+=("$path")
done
top_dirs=()
for d in "${dirs[@]}"; do  # sorted: a parent comes before its children
  under=0
  for t in "${top_dirs[@]}"; do [[ $d == "$t"/* ]] && under=1; done
  [ $under = 1 ] || top_dirs+=("$d")
done
# A mount follows a symbolic link to its target: a link is hidden through its target, and
# one whose target belongs to a package left visible stays (zlib's libz.so).
declare -A hidden_file
for path in "${paths[@]}"; do
  [ -f "$path" ] && [ ! -L "$path" ] && hidden_file[$(realpath "$path")]=1
done
# ccache (where the build uses it) loads hiredis, which is hidden: it gets a private copy
# through the loader's --library-path, which its children (the compiler) do not inherit.
if ccache=$(command -v ccache); then
  tools=$(mktemp -d)
  trap 'rm -rf "$tools"' EXIT
  mkdir -p "$tools/lib" "$tools/bin"
  for lib in $(ldd "$ccache" | awk '$3 ~ /^\// { print $3 }'); do
    [ -z "${hidden_file[$(realpath "$lib")]:-}" ] || cp "$lib" "$tools/lib/"
  done
  loader=$(ldd "$ccache" | awk '/ld-linux/ { print $1 }')
  printf '#!/bin/sh\nexec %s --library-path %s %s "$@"\n' "$loader" "$tools/lib" "$ccache" \
    >"$tools/bin/ccache"
  chmod +x "$tools/bin/ccache"
  export PATH=$tools/bin:$PATH
fi
n_files=0
visible=()
for d in "${top_dirs[@]}"; do mount -t tmpfs -o size=1m,mode=755 gpu-bundle-test "$d"; done
for path in "${paths[@]}"; do
  [ -d "$path" ] && continue
  [ -e "$path" ] || continue  # hidden already, with its directory
  if [ -L "$path" ] && [ -z "${hidden_file[$(realpath "$path")]:-}" ]; then
    visible+=("$path")
    continue
  fi
  mount --bind /dev/null "$path"
  n_files=$((n_files + 1))
done
# What update-alternatives points at OpenBLAS lives outside the packages' lists.
for alt in /usr/lib/*-linux-gnu/libopenblas.so* /usr/lib/*-linux-gnu/libblas.so* \
  /usr/lib/*-linux-gnu/liblapack.so* /usr/include/*-linux-gnu/cblas.h; do
  if [ -e "$alt" ]; then
    mount --bind /dev/null "$alt"
    n_files=$((n_files + 1))
  fi
done
echo "gpu_bundle_test: hiding ${#hidden[@]} packages: ${#top_dirs[@]} directories behind tmpfs," \
  "$n_files files behind /dev/null"
printf '  %s\n' "${top_dirs[@]}"
[ ${#visible[@]} -eq 0 ] || echo "gpu_bundle_test: left visible (links into packages kept): ${visible[*]}"
for probe in /usr/include/gloo/context.h /usr/include/gtest/gtest.h /usr/include/CLI/CLI.hpp \
  /usr/include/nlohmann/json.hpp /usr/include/zlib.h /usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz; do
  if [ -s "$probe" ]; then echo "gpu_bundle_test: $probe is still visible"; exit 1; fi
done

rc=0
tools/gpu_check.sh "$BUNDLE" || rc=$?
echo "gpu_bundle_test: gpu_check.sh exited $rc (2: everything but the GPU steps passed)"
[ $rc -eq 2 ] || [ $rc -eq 0 ]
