#!/usr/bin/env bash
# bench_link.sh: lesson 10's DDP sweep and PyTorch's DDP on a link the kernel shapes, and
# the course's emulated link checked against it; `make bench-link` runs it (as root).
#
#   tools/bench_link.sh BUILD_DIR [RATE...]          e.g. tools/bench_link.sh build/solutions 10gbit 1gbit
#
# On each rate, two ranks in two network namespaces joined by tbf-shaped veth pairs
# (tools/shaped_link.sh), for lesson 10's bench model (MLP 784 -> 2048 x 4 -> 10, batch 32)
# and for a 48-layer model of 98 small parameters (256 wide, batch 512):
#   1. lesson 10's sweep on the kernel's link;
#   2. PyTorch's DDP on the same model and link (tools/torch_ddp_bench.py: naive, default
#      buckets and 1 MiB buckets), when /usr/bin/python3 imports torch;
#   3. lesson 10's sweep on the course's emulated link at the same rate, twice: as a wire
#      (`--link RATE`) and as the same shaper, tbf's 512 KiB bucket (`--link RATE,0us,512kb`);
#   4. the two agreements, row by row (tools/link_agreement.py).
# Then lesson 05's ring beside Gloo on the kernel's link, and, on the 1 Gbit/s link, lesson
# 14's hooks beside torch's (tools/torch_hooks_bench.py). The emulated runs use no latency:
# tbf adds none. CSV under bench-results/: lesson10_{kernel,wire,shaper}_<model>_<rate>_<run>.csv.
#
# Step times move 10-30% from one run to the next on a small machine (the compute alone
# too), so the three sweeps run BENCH_LINK_REPEATS times (default 3), interleaved, and the
# agreement compares each row's median; PyTorch runs once per model and rate.
#
# What this is not: a test. It reports.
set -u
cd "$(dirname "$0")/.."
build=${1:?usage: tools/bench_link.sh BUILD_DIR [RATE...]}
shift
rates=("$@")
[ ${#rates[@]} -gt 0 ] || rates=(10gbit 1gbit)
if [ "$(id -u)" -ne 0 ]; then
  echo "bench_link: needs root (network namespaces); skipped"
  exit 0
fi
torch=""
/usr/bin/python3 -c "import torch" 2>/dev/null && torch=/usr/bin/python3
[ -n "$torch" ] || echo "bench_link: /usr/bin/python3 cannot import torch (apt-get install python3-torch): no torch rows"
out=bench-results
mkdir -p "$out"
status=0
run() {  # run LABEL COMMAND...: runs it, and remembers a failure without stopping
  echo "== $1"
  shift
  "$@" || { echo "bench_link: failed ($?): $*"; status=1; }
}

for rate in "${rates[@]}"; do
  for model in bench deep; do
    if [ "$model" = bench ]; then
      model_args=()
      torch_args=(--bucket-caps 25,1)
    else
      model_args=(--bench-hidden 256 --bench-layers 48 --bench-batch 512)
      torch_args=(--hidden 256 --layers 48 --batch 512 --bucket-caps 25,1)
    fi
    stem="${model}_$rate"
    declare -A csvs=([kernel]="" [wire]="" [shaper]="")
    for ((r = 1; r <= ${BENCH_LINK_REPEATS:-3}; r++)); do
      run "lesson 10, $model model, on the kernel's $rate link (run $r)" \
        tools/shaped_link.sh --rate "$rate" -- "$build/lesson10" --bench "${model_args[@]}" \
        --csv "$out/lesson10_kernel_${stem}_$r.csv" --svg ""
      run "lesson 10, $model model, on the course's emulated $rate link, a wire (run $r)" \
        "$build/lesson10" --bench --np 2 --link "$rate" "${model_args[@]}" \
        --csv "$out/lesson10_wire_${stem}_$r.csv" --svg ""
      run "lesson 10, $model model, on the course's emulated $rate link, tbf's 512 KiB burst (run $r)" \
        "$build/lesson10" --bench --np 2 --link "$rate,0us,512kb" "${model_args[@]}" \
        --csv "$out/lesson10_shaper_${stem}_$r.csv" --svg ""
      for kind in kernel wire shaper; do
        [ ! -f "$out/lesson10_${kind}_${stem}_$r.csv" ] ||
          csvs[$kind]+="${csvs[$kind]:+,}$out/lesson10_${kind}_${stem}_$r.csv"
      done
    done
    [ -z "$torch" ] ||
      run "PyTorch's DDP, $model model, on the kernel's $rate link" \
        tools/shaped_link.sh --rate "$rate" -- "$torch" tools/torch_ddp_bench.py "${torch_args[@]}"
    for kind in wire shaper; do
      [ -n "${csvs[kernel]}" ] && [ -n "${csvs[$kind]}" ] &&
        python3 tools/link_agreement.py --label "$rate, $model model, emulated as a $kind" \
          "${csvs[kernel]}" "${csvs[$kind]}"
    done
  done
  run "lesson 05 (ring, naive, gloo) on the kernel's $rate link" \
    tools/shaped_link.sh --rate "$rate" -- "$build/lesson05" --bench -e 16M \
    --csv "$out/lesson05_kernel_$rate.csv" --svg ""
  if [ "$rate" = 1gbit ]; then
    run "lesson 14's hooks on the kernel's 1gbit link" \
      tools/shaped_link.sh --rate 1gbit -- "$build/lesson14" --bench \
      --csv "$out/lesson14_kernel_1gbit.csv"
    [ -z "$torch" ] ||
      run "PyTorch's hooks on the kernel's 1gbit link" \
        tools/shaped_link.sh --rate 1gbit -- "$torch" tools/torch_hooks_bench.py
  fi
done
exit "$status"
