#!/usr/bin/env python3
"""link_agreement.py: the course's emulated link against the kernel's shaped link, row by row.

    python3 tools/link_agreement.py KERNEL.csv[,KERNEL2.csv...] EMULATED.csv[,...] [--label "10 Gbit/s"]

Both sides are `./lesson10 --bench --csv` tables of the same model and batch: KERNEL
measured through tools/shaped_link.sh (two network namespaces, tbf on a veth pair),
EMULATED on loopback with `--link` at the same rate (the course's pacing in its tcp
sockets). Several runs a side (comma-separated) give each row the median of its runs: a
small machine's step times move 10-30% from one run to the next, the compute alone too.
Prints, per mode, both step times and their ratio emulated / kernel, and the rows outside
15%. `make bench-link` runs it (tools/bench_link.sh).

What this is not: a test. Timings depend on the machine and on what else runs; it reports.
"""
import argparse
import csv
import statistics
import sys


def step_times(path):
    """mode -> step time in ms, from a lesson 10 bench CSV."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows or "mode" not in rows[0] or "step(ms)" not in rows[0]:
        sys.exit(f"link_agreement: {path} is not a lesson 10 bench CSV (columns mode, step(ms))")
    # The table ends with a "# ..." summary line, which is no row.
    return {r["mode"]: float(r["step(ms)"]) for r in rows
            if not r["mode"].startswith("#") and r["step(ms)"] not in (None, "", "-")}


def median_times(paths):
    """mode -> the median step time over the runs in `paths` (comma-separated), and the
    number of runs."""
    runs = [step_times(path) for path in paths.split(",") if path]
    modes = [m for m in runs[0] if all(m in run for run in runs)]
    return {m: statistics.median(run[m] for run in runs) for m in modes}, len(runs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kernel")
    parser.add_argument("emulated")
    parser.add_argument("--label", default="")
    parser.add_argument("--tolerance", type=float, default=0.15)
    args = parser.parse_args()
    (kernel, nk), (emulated, ne) = median_times(args.kernel), median_times(args.emulated)
    modes = [m for m in kernel if m in emulated]
    if not modes:
        sys.exit("link_agreement: the two tables share no mode")
    print(f"# emulated link against the kernel's{(' at ' + args.label) if args.label else ''}: "
          f"lesson 10's step time per mode" +
          (f", the median of {nk} and {ne} runs" if nk > 1 or ne > 1 else ""))
    print(f"# {'mode':>22} {'kernel(ms)':>11} {'emulated(ms)':>13} {'emul/kern':>10}")
    outside = []
    for mode in modes:
        ratio = emulated[mode] / kernel[mode] if kernel[mode] > 0 else float("inf")
        flag = "" if abs(ratio - 1) <= args.tolerance else "  outside"
        if flag:
            outside.append(mode)
        print(f"  {mode:>22} {kernel[mode]:11.1f} {emulated[mode]:13.1f} {ratio:10.2f}{flag}")
    print(f"# {len(modes) - len(outside)} of {len(modes)} rows within "
          f"{args.tolerance:.0%}" + (f"; outside: {', '.join(outside)}" if outside else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
