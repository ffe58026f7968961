#!/usr/bin/env bash
# gpu_check.sh: the GPU check a maintainer runs on a machine with an NVIDIA GPU, offline,
# against the bundle tools/gpu_bundle.sh prepared on a networked machine (docs/gpu.md).
#
#   tools/gpu_check.sh [BUNDLE]           # BUNDLE: $GPU_BUNDLE, else gpu-bundle/
#   EPOCHS=1 tools/gpu_check.sh           # shorter lesson 07 runs
#   GPU_CHECK_LOGS=/tmp/logs tools/gpu_check.sh
#   GPU_CHECK_CMAKE_FLAGS=-DCMAKE_CUDA_ARCHITECTURES=native tools/gpu_check.sh  # this GPU only
#
# What the machine needs: an NVIDIA driver, CUDA's nvcc and cuBLAS, NCCL (CUDA's, the
# system's, or the one PyTorch's wheels bring: the python3 module nvidia.nccl), CMake >= 3.22, g++ with
# C++20, glibc >= 2.34 (the bundle's libraries are Debian 12's). Nothing is installed and
# no network is used: no `make setup`, no apt-get.
#
# Steps; [GPU] marks those that need a GPU, skipped with a line saying so when nvidia-smi
# sees none (the build and everything else still run, so the bundle is checked anyway):
#   1. bundle: OpenBLAS's library, stored compressed, uncompressed into the build folder;
#   2. configure build/gpu-check against the bundle's prefix (CMAKE_PREFIX_PATH and hints;
#      the binaries carry the bundle's library directories in their RPATH), and stop
#      unless the summary says "Gloo ON, CUDA ON, NCCL ON";
#   3. build the GPU tests and the drivers with every core (Ninja where installed);
#   4. [GPU] the GPU tests: every CUDA kernel against the CPU (tensor_cuda_test), the nccl
#      group (nccl_process_group_test, more ranks where there are more GPUs), lesson 07 on
#      CUDA equal to the CPU (07_training/device_test). Without a GPU they still run and
#      report "skipped: no CUDA device", which shows the binaries load;
#   5. [GPU] ./lesson07 and ./lesson11 --backend nccl --np 1 on --device cuda, and the same
#      on the CPU, then samples/s side by side with the drivers' verdicts. Without a GPU
#      the CPU runs are a short smoke run (one epoch on 6000 examples) of the bundle's
#      libraries and data.
# Logs: every step's whole output in $GPU_CHECK_LOGS (default build/gpu-check/logs).
# Exit: 0 all passed on a GPU; 1 a step failed; 2 built and ran, but no GPU was seen.
set -euo pipefail
cd "$(dirname "$0")/.."
BUNDLE=${1:-${GPU_BUNDLE:-gpu-bundle}}
BUILD=${GPU_CHECK_BUILD:-build/gpu-check}
LOGS=${GPU_CHECK_LOGS:-$BUILD/logs}
EPOCHS=${EPOCHS:-3}
mkdir -p "$BUILD" "$LOGS"
LOGS=$(realpath "$LOGS")
rm -rf "$LOGS"/lesson*  # an earlier run's driver logs and run directories
start=$SECONDS
elapsed() { echo "$((SECONDS - start)) s"; }
fail() { echo "gpu_check: $*"; exit 1; }

echo "== GPU"
have_gpu=0
if command -v nvidia-smi >/dev/null 2>&1 &&
  nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader \
    >"$LOGS/nvidia-smi.log" 2>&1 && [ -s "$LOGS/nvidia-smi.log" ]; then
  have_gpu=1
  cat "$LOGS/nvidia-smi.log"
else
  echo "gpu_check: NO GPU (nvidia-smi absent or sees none): the steps marked [GPU] are skipped;"
  echo "gpu_check: the build, the bundle and the CPU side are checked all the same"
fi

echo "== bundle $BUNDLE"
glibc=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{ print $2 }')
if [ -n "$glibc" ] && [ "$(printf '%s\n' 2.34 "$glibc" | sort -V | head -1)" != 2.34 ]; then
  fail "the bundle's libraries are Debian 12's and need glibc 2.34 or later; this machine has $glibc"
fi
[ -f "$BUNDLE/MANIFEST" ] || fail "no bundle at $BUNDLE (make it with tools/gpu_bundle.sh on a networked Debian machine)"
BUNDLE=$(realpath "$BUNDLE")
# OpenBLAS's library, stored compressed, uncompressed into the build folder: the bundle
# stays as carried (read-only will do).
packed=$(find "$BUNDLE" -name 'libopenblas*.so.xz' | head -1)
[ -n "$packed" ] || fail "no OpenBLAS library (libopenblas*.so.xz) in $BUNDLE"
openblas_dir=$(realpath "$BUILD")/openblas
unpacked=$openblas_dir/$(basename "${packed%.xz}")
if [ ! -f "$unpacked" ] || [ "$packed" -nt "$unpacked" ]; then
  mkdir -p "$openblas_dir"
  if command -v xz >/dev/null 2>&1; then
    xz -dc "$packed" >"$unpacked.tmp"
  else
    python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer)' \
      "$packed" >"$unpacked.tmp"
  fi
  mv "$unpacked.tmp" "$unpacked"
  ln -sfn "$(basename "$unpacked")" "$openblas_dir/libopenblas.so.0"  # its soname
  ln -sfn "$(basename "$unpacked")" "$openblas_dir/libopenblas.so"
fi
prefix=$BUNDLE/usr
multiarch_lib=$(find "$prefix/lib" -maxdepth 1 -type d -name '*-linux-gnu' | head -1)
data=$prefix/share/datasets/fashion-mnist
[ -f "$data/train-images-idx3-ubyte.gz" ] || fail "no Fashion-MNIST in $data"
echo "$(wc -l <"$BUNDLE/MANIFEST") packages ($BUNDLE/MANIFEST), data $data"

echo "== NCCL"
# CUDA's own (what CMake finds by itself), else the system's, else PyTorch's wheel.
# NCCL_HOME=DIR (DIR/include/nccl.h, DIR/lib/libnccl.so*) picks one by hand.
nccl_include="" nccl_library=""
nccl_dirs=("${NCCL_HOME:-}" "${CUDA_HOME:-/usr/local/cuda}" /usr/local/cuda /usr)
torch_nccl=$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>/dev/null || true)
[ -n "$torch_nccl" ] && nccl_dirs+=("$torch_nccl")
for dir in "${nccl_dirs[@]}"; do
  [ -n "$dir" ] || continue
  for libdir in "$dir/lib64" "$dir/lib" "$dir/lib/${multiarch_lib##*/}"; do
    [ -d "$libdir" ] || continue  # find's status on a missing folder would end the script
    lib=$(find "$libdir/" -maxdepth 1 -name 'libnccl.so*' | sort | head -1)
    if [ -n "$lib" ]; then
      nccl_library=$lib
      [ -f "$dir/include/nccl.h" ] && nccl_include=$dir/include
      break 2
    fi
  done
done
[ -n "$nccl_library" ] || fail "no libnccl.so found (looked in ${nccl_dirs[*]}); set NCCL_HOME"
if [ -z "$nccl_include" ]; then
  nccl_include=$prefix/share/course-nccl/include
  echo "gpu_check: no nccl.h beside $nccl_library: the bundle's ($(grep nccl.h "$BUNDLE/MANIFEST"))"
fi
echo "library $nccl_library, header $nccl_include/nccl.h"

echo "== configure $BUILD (against $prefix)"
# The bundle's libraries are found at run time through the binaries' RPATH (DT_RPATH,
# which also serves the libraries they load: Gloo's hiredis, OpenBLAS's gfortran).
rpath_dirs="$prefix/lib:$multiarch_lib:$openblas_dir:$(dirname "$nccl_library")"
link_flags="-Wl,--disable-new-dtags -Wl,-rpath,$rpath_dirs -Wl,-rpath-link,$rpath_dirs"
generator=()
[ -f "$BUILD/CMakeCache.txt" ] || { command -v ninja >/dev/null 2>&1 && generator=(-G Ninja); }
read -ra extra_flags <<<"${GPU_CHECK_CMAKE_FLAGS:-}"
launcher=()
command -v ccache >/dev/null 2>&1 && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$BUILD" "${generator[@]}" "${launcher[@]}" -DIMPL=solutions -DCHAIN=ref \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_LIBRARY_PATH="$multiarch_lib;$prefix/lib" \
  -DGTest_DIR="$multiarch_lib/cmake/GTest" \
  -DBLAS_openblas_LIBRARY="$openblas_dir/libopenblas.so" \
  -DCBLAS_INCLUDE_DIR="$prefix/include/${multiarch_lib##*/}/openblas-pthread" \
  -DNCCL_INCLUDE_DIR="$nccl_include" -DNCCL_LIBRARY="$nccl_library" \
  -DCMAKE_EXE_LINKER_FLAGS="$link_flags" "${extra_flags[@]}" >"$LOGS/configure.log" 2>&1 || {
  grep -E "Error|error" -A5 "$LOGS/configure.log" | head -40
  fail "configure failed (the whole log: $LOGS/configure.log)"
}
summary=$(sed -n 's/^-- course: //p' "$LOGS/configure.log" | paste -sd'|' | sed 's/|/; /g')
echo "$summary"
grep -q "Gloo ON, CUDA ON, NCCL ON" "$LOGS/configure.log" ||
  fail "the configure summary does not say Gloo ON, CUDA ON, NCCL ON (see $LOGS/configure.log)"
# Nothing of the bundled packages may come from the system.
found=$(grep -E "^(GTest_DIR|CLI11_DIR|nlohmann_json_DIR|Gloo_DIR|ZLIB_LIBRARY_RELEASE|BLAS_[a-z]+_LIBRARY):" \
  "$BUILD/CMakeCache.txt" | grep -vE "=($prefix|$openblas_dir)/" | grep -v NOTFOUND || true)
[ -z "$found" ] || echo "gpu_check: warning: found outside the bundle: $found"

echo "== build ($(nproc) cores, $(elapsed) so far)"
cmake --build "$BUILD" -j "$(nproc)" --target test_common test_07 lesson07 lesson11 \
  >"$LOGS/build.log" 2>&1 || { tail -40 "$LOGS/build.log"; fail "build failed ($LOGS/build.log)"; }
echo "built test_common test_07 lesson07 lesson11 ($(elapsed) so far)"

echo "== [GPU] GPU tests"
[ $have_gpu = 1 ] || echo "NO GPU: these run, and report 'skipped: no CUDA device'"
(cd "$BUILD" && ctest -R "TensorCuda|TensorDevice|Nccl|DeviceTraining" --output-on-failure \
  --timeout 600) >"$LOGS/ctest.log" 2>&1 || { cat "$LOGS/ctest.log"; fail "GPU tests failed"; }
sed -nE 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: common\.|^ *[0-9]+\/[0-9]+ Test +#[0-9]+: //p' "$LOGS/ctest.log" |
  sed -E 's/ \.{3,}/ /; s/ +[0-9.]+ sec$//; s/^/  /'
grep -E "tests passed|Total Test time" "$LOGS/ctest.log"
skipped=$(grep -c "skipped: no CUDA device" "$BUILD/Testing/Temporary/LastTest.log" || true)
if [ $have_gpu = 1 ] && [ "$skipped" -gt 0 ]; then
  fail "$skipped GPU tests skipped for want of a device although nvidia-smi sees one ($LOGS/ctest.log)"
fi
[ $have_gpu = 1 ] || echo "NO GPU: $skipped tests skipped for want of a device, as expected here"

samples_per_s() {  # the last "N samples/s" a driver printed (lesson 07: its overall line)
  local n
  n=$(grep -Eo "[0-9]+ samples/s" "$1" 2>/dev/null | tail -1 | grep -Eo "^[0-9]+" || true)
  echo "${n:--}"
}
verdict() { grep -E "(PASS|FAIL)" "$1" | tail -1 || echo "(no verdict)"; }
run_driver() {  # name, log, args...
  local name=$1 log=$2
  shift 2
  echo "-- $name $*"
  local rc=0
  "$BUILD/$name" --data "$data" "$@" >"$log" 2>&1 || rc=$?
  echo "   $(verdict "$log")   [exit $rc, log $log]"
  return $rc
}

status=0
if [ $have_gpu = 1 ]; then
  echo "== [GPU] drivers (cuda next to cpu)"
  run_driver lesson07 "$LOGS/lesson07_cuda.log" --device cuda --epochs "$EPOCHS" || status=1
  run_driver lesson07 "$LOGS/lesson07_cpu.log" --device cpu --epochs "$EPOCHS" || status=1
  run_driver lesson11 "$LOGS/lesson11_cuda.log" --device cuda --backend nccl --np 1 \
    --run-dir "$LOGS/lesson11_cuda.run" || status=1
  run_driver lesson11 "$LOGS/lesson11_cpu.log" --device cpu --backend tcp --np 1 \
    --run-dir "$LOGS/lesson11_cpu.run" || status=1
else
  echo "== [GPU] drivers: NO GPU: the cuda runs skipped; the cpu runs as a smoke run"
  echo "   (one epoch on 6000 examples: what is checked is that they load the bundle's"
  echo "   libraries and data and train; their accuracy verdict is not judged)"
  smoke() {  # name, args...: trained and printed samples/s, whatever its accuracy
    local name=$1 log=$LOGS/$1_cpu.log
    shift
    echo "-- $name $*"
    "$BUILD/$name" --data "$data" --epochs 1 --limit 6000 "$@" >"$log" 2>&1 || true
    if [ "$(samples_per_s "$log")" = - ]; then
      echo "   did not train: $(tail -1 "$log")   [log $log]"
      status=1
    else
      echo "   trained one epoch, $(samples_per_s "$log") samples/s   [log $log]"
    fi
  }
  smoke lesson07 --device cpu
  smoke lesson11 --device cpu --backend tcp --np 1 --run-dir "$LOGS/lesson11_cpu.run"
fi

echo "== samples/s"
{
  printf "%-10s %12s %12s\n" driver cuda cpu
  for d in lesson07 lesson11; do
    printf "%-10s %12s %12s\n" "$d" "$(samples_per_s "$LOGS/${d}_cuda.log")" \
      "$(samples_per_s "$LOGS/${d}_cpu.log")"
  done
} | tee "$LOGS/samples_per_s.txt"
[ $have_gpu = 1 ] || echo "(cpu: the smoke run, not comparable; cuda: - no GPU)"

if [ $status -ne 0 ]; then
  fail "a driver failed (logs in $LOGS; $(elapsed))"
elif [ $have_gpu = 0 ]; then
  echo "gpu_check: built and ran from the bundle in $(elapsed); NO GPU, so nothing ran on one (exit 2)"
  exit 2
fi
echo "gpu_check: all passed in $(elapsed) (logs in $LOGS)"
