#!/usr/bin/env bash
# gpu_bundle.sh: gathers, on a Debian machine with network, what a bare and offline GPU
# machine lacks to build and run the GPU check (tools/gpu_check.sh, docs/gpu.md).
#
#   tools/gpu_bundle.sh              # writes gpu-bundle/ (ignored by git), prints its size
#   tools/gpu_bundle.sh DIR          # writes DIR instead
#
# What it gathers: the Debian packages the build and the drivers need (Gloo, OpenBLAS,
# GoogleTest, CLI11, nlohmann-json, zlib), the shared libraries they load that a bare
# machine may lack (Gloo's hiredis, ibverbs and netlink; OpenBLAS's gfortran and
# quadmath), and the Fashion-MNIST files. Each package is fetched with `apt-get download`
# and unpacked with `dpkg -x`; only headers, libraries and CMake package files are kept,
# in Debian's layout under DIR/usr (the data under DIR/usr/share/datasets/fashion-mnist).
#
# What it is not: NCCL. Its library is some 200 MB, four times the bundle's budget; the
# GPU machine has one (CUDA's, or the one PyTorch's wheels bring, nvidia/nccl/), and
# gpu_check.sh finds it there. Only nccl.h is bundled, for a machine whose NCCL came
# without it. Nor CUDA, CMake, a compiler or Ninja: the GPU machine has those.
#
# Changes to the unpacked files, so the bundle can live anywhere: links that point to /lib
# or /usr point into the bundle; absolute /usr paths in the CMake package files (Gloo names
# /usr/lib/libgloo.so.0.5.0) are made relative to the file. OpenBLAS's library (36 MB,
# every CPU's kernels) is stored xz-compressed, which keeps the bundle under 50 MiB;
# gpu_check.sh uncompresses it into its build folder.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-gpu-bundle}
LIMIT_MIB=50

# What the build needs (tools/setup.sh installs the same on a course machine), and the
# runtime libraries those pull in that are not part of a machine with a compiler.
packages=(
  libgloo-dev libgloo0 libhiredis0.14 libibverbs1 libnl-3-200 libnl-route-3-200
  libopenblas-pthread-dev libopenblas0-pthread libgfortran5 libquadmath0
  libgtest-dev libcli11-dev nlohmann-json3-dev zlib1g-dev zlib1g
  dataset-fashion-mnist
)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "gpu_bundle: fetching ${#packages[@]} packages (apt-get download)"
(cd "$work" && apt-get download -q "${packages[@]}" >"$work/download.log" 2>&1) || {
  cat "$work/download.log"
  echo "gpu_bundle: apt-get download failed (run apt-get update first?)"
  exit 1
}

rm -rf "$OUT"
mkdir -p "$OUT"
: >"$OUT/MANIFEST"
for deb in "$work"/*.deb; do
  dpkg -x "$deb" "$work/root"
  # shellcheck disable=SC2016  # dpkg-deb's own ${field} syntax
  dpkg-deb -W --showformat='${Package} ${Version}\n' "$deb" >>"$OUT/MANIFEST"
done
root=$work/root

# /lib is /usr/lib on a merged-/usr system: keep one tree.
if [ -d "$root/lib" ] && [ ! -L "$root/lib" ]; then
  mkdir -p "$root/usr/lib"
  cp -a "$root/lib/." "$root/usr/lib/"
  rm -rf "${root:?}/lib"
fi

# Headers, libraries and CMake package files only: no documentation, manuals, sources,
# pkg-config files, lintian overrides; no static archives but GoogleTest's (it ships no
# shared library); no LAPACK or reference-BLAS names (the course links OpenBLAS itself).
rm -rf "$root/usr/share/doc" "$root/usr/share/man" "$root/usr/share/lintian" "$root/usr/src" \
  "$root/usr/share/bug"
find "$root" -name pkgconfig -type d -prune -exec rm -rf {} +
find "$root" \( -name '*.a' ! -name 'libgtest*.a' \) -delete
find "$root" \( -name 'liblapack*' -o -name 'libblas*' \) -delete

# Links to /lib/... or /usr/... point into the bundle instead (zlib's libz.so).
while IFS= read -r link; do
  target=$(readlink "$link")
  case "$target" in
    /lib/*) target=/usr$target ;;
    /usr/*) ;;
    *) continue ;;
  esac
  ln -sfn "$(realpath -m --relative-to="$(dirname "$link")" "$root$target")" "$link"
done < <(find "$root" -type l)
# CMake package files with absolute /usr paths (Gloo's IMPORTED_LOCATION): relative to
# the prefix CMake computes from the file's place (_IMPORT_PREFIX, i.e. DIR/usr).
while IFS= read -r f; do
  if grep -q '"/usr/' "$f" && grep -q '_IMPORT_PREFIX' "$(dirname "$f")"/*Targets.cmake; then
    sed -i 's|"/usr/|"${_IMPORT_PREFIX}/|g' "$f"
  fi
done < <(find "$root" -path '*cmake*' -name '*Targets-*.cmake')

# nccl.h from this machine's CUDA toolkit, only as a fallback on the GPU machine.
for h in /usr/local/cuda/include/nccl.h /usr/include/nccl.h; do
  if [ -f "$h" ]; then
    mkdir -p "$root/usr/share/course-nccl/include"
    cp "$h" "$root/usr/share/course-nccl/include/"
    echo "nccl.h $(sed -n 's/^#define NCCL_VERSION_CODE //p' "$h") (from $h)" >>"$OUT/MANIFEST"
    break
  fi
done

# The big library compressed (gpu_check.sh uncompresses it next to itself on first use).
# Its links (libopenblas.so, .so.0) would dangle: gpu_check.sh makes them beside its copy.
find "$root" -path '*openblas*' -name 'libopenblas*.so*' -type f -exec xz -T0 -6 {} +
find "$root" -xtype l -delete

cp -a "$root/usr" "$OUT/"
sort -o "$OUT/MANIFEST" "$OUT/MANIFEST"
bytes=$(du -sb "$OUT" | cut -f1)
mib=$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1048576 }')
echo "gpu_bundle: $OUT: $mib MiB ($(wc -l <"$OUT/MANIFEST") entries in $OUT/MANIFEST)"
du -sh "$OUT"/usr/include "$OUT"/usr/lib "$OUT"/usr/share/datasets 2>/dev/null | sed 's/^/  /'
if awk -v b="$bytes" -v l="$LIMIT_MIB" 'BEGIN { exit !(b > l * 1048576) }'; then
  echo "gpu_bundle: over the ${LIMIT_MIB} MiB budget"
  exit 1
fi
