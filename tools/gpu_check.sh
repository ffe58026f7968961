#!/usr/bin/env bash
# gpu_check.sh: what a maintainer runs on a machine with an NVIDIA GPU (docs/gpu.md).
#
#   tools/gpu_check.sh            # build the reference, run the GPU tests and the drivers
#   EPOCHS=1 tools/gpu_check.sh   # shorter driver runs
#
# 1. configures and builds the reference tree (build/solutions) with CUDA and NCCL, and
#    stops if the configure summary does not say "CUDA ON, NCCL ON";
# 2. runs the GPU tests: every CUDA kernel against the CPU (tensor_cuda_test), the nccl
#    group's operations (nccl_process_group_test, more ranks where there are more GPUs),
#    and lesson 07 training on CUDA equal to the CPU (07_training/device_test); a test
#    that reports "skipped" here means the machine's GPU was not seen;
# 3. runs ./lesson07 and ./lesson11 --backend nccl --np 1 on --device cuda, and the same
#    on the CPU, and prints samples/s of both side by side, with the drivers' verdicts.
# Exits non-zero when a step fails. Each driver's whole output is kept in $OUT (default
# build/gpu_check) for the record.
set -euo pipefail
cd "$(dirname "$0")/.."
EPOCHS=${EPOCHS:-3}
OUT=${OUT:-build/gpu_check}
mkdir -p "$OUT"

echo "== GPU"
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader || {
  echo "gpu_check: nvidia-smi sees no GPU; this script is for a GPU machine"; exit 1; }

echo "== build (reference tree)"
make configure IMPL=solutions
grep -q "CUDA ON, NCCL ON" build/solutions/configure.log || {
  echo "gpu_check: the configure summary does not say CUDA ON, NCCL ON:"
  grep "course:" build/solutions/configure.log; exit 1; }
cmake --build build/solutions -j "$(nproc)" --target test_common test_07 lesson07 lesson11 \
  >"$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }

echo "== GPU tests"
(cd build/solutions && ctest -R "TensorCuda|TensorDevice|Nccl|DeviceTraining" \
   --output-on-failure --timeout 600) | tee "$OUT/ctest.log"
if grep -q "skipped: no CUDA device" build/solutions/Testing/Temporary/LastTest.log 2>/dev/null; then
  echo "gpu_check: some GPU tests skipped for want of a device (see $OUT/ctest.log)"; exit 1
fi

samples_per_s() {  # the last "N samples/s" a driver printed (lesson 07: its overall line)
  local n
  n=$(grep -Eo "[0-9]+ samples/s" "$1" | tail -1 | grep -Eo "^[0-9]+" || true)
  echo "${n:-?}"
}
verdict() { grep -E "(PASS|FAIL)" "$1" | tail -1 || echo "(no verdict)"; }

run_driver() {  # name, log, args...
  local name=$1 log=$2; shift 2
  echo "-- $name $*"
  local rc=0
  "./build/solutions/$name" "$@" >"$log" 2>&1 || rc=$?
  echo "   $(verdict "$log")   [exit $rc, log $log]"
  return $rc
}

echo "== drivers (cuda next to cpu)"
status=0
run_driver lesson07 "$OUT/lesson07_cuda.log" --device cuda --epochs "$EPOCHS" || status=1
run_driver lesson07 "$OUT/lesson07_cpu.log" --device cpu --epochs "$EPOCHS" || status=1
run_driver lesson11 "$OUT/lesson11_cuda.log" --device cuda --backend nccl --np 1 || status=1
run_driver lesson11 "$OUT/lesson11_cpu.log" --device cpu --backend tcp --np 1 || status=1

echo "== samples/s"
printf "%-10s %12s %12s\n" driver cuda cpu
printf "%-10s %12s %12s\n" lesson07 "$(samples_per_s "$OUT/lesson07_cuda.log")" \
  "$(samples_per_s "$OUT/lesson07_cpu.log")"
printf "%-10s %12s %12s\n" lesson11 "$(samples_per_s "$OUT/lesson11_cuda.log")" \
  "$(samples_per_s "$OUT/lesson11_cpu.log")"
exit $status
