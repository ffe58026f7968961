#!/usr/bin/env python3
"""PyTorch's DDP communication hooks on the model of ./lesson14 --bench, row by row.

    build/solutions/launch --np 2 --no-prefix -- /usr/bin/python3 tools/torch_hooks_bench.py
    tools/shaped_link.sh --rate 1gbit -- /usr/bin/python3 tools/torch_hooks_bench.py

One rank per process, started by a launcher that sets torchrun's variables (RANK,
WORLD_SIZE, MASTER_ADDR, MASTER_PORT): the course's `launch`, torchrun, or each node of
tools/shaped_link.sh. Rows, as lesson 14's table: DDP with no hook, torch's
fp16_compress_hook, bf16_compress_hook, and powerSGD_hook at ranks 1, 2 and 4; every row
with gradient_as_bucket_view, the bench model of lesson 10 (MLP 784 -> 2048 x 4 -> 10),
synthetic inputs, SGD, gloo, one thread per process. Each row's step is the median of its
timed steps on the slowest rank.

Each row runs in a child process of its own, on port MASTER_PORT + 1 + its index, with a
60 s timeout on every collective and --row-timeout on the whole row: a hook that fails
(torch 1.13's PowerSGD over gloo aborts in gloo's own checks, and bf16_compress_hook needs
CUDA and NCCL) becomes a row saying so, each failing rank with its error, and the next row
runs. PowerSGD starts at step 2 (torch needs start_powerSGD_iter > 1 with error
feedback and warm start; the course's bench compresses from step 0), so the warm-up is at
least 3 steps and every timed step is compressed.

Optional: needs python3-torch (Debian's package is enough); `make bench-link` runs it on
the kernel-shaped link when torch imports. What this is not: a test.
"""
import argparse
import datetime
import os
import statistics
import subprocess
import sys
import time

from torch_ddp_bench import bench_batch, bench_mlp, finish

ROWS = ["no hook", "fp16", "bf16", "powersgd rank 1", "powersgd rank 2", "powersgd rank 4"]


def one_row(name, args):
    """This rank's part of one row; rank 0 prints `ROW <name> <ms>`."""
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as powersgd

    torch.set_num_threads(1)
    rank = int(os.environ["RANK"])
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    ddp = nn.parallel.DistributedDataParallel(bench_mlp(args.hidden, args.layers),
                                              gradient_as_bucket_view=True)
    if name == "fp16":
        ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
    elif name == "bf16":
        ddp.register_comm_hook(None, default_hooks.bf16_compress_hook)
    elif name.startswith("powersgd"):
        state = powersgd.PowerSGDState(process_group=None,
                                       matrix_approximation_rank=int(name.split()[-1]),
                                       start_powerSGD_iter=2)
        ddp.register_comm_hook(state, powersgd.powerSGD_hook)
    x, y = bench_batch(args.batch, rank)
    opt = torch.optim.SGD(ddp.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    times = []
    for step in range(max(args.warmup, 3) + args.steps):
        dist.barrier()
        t0 = time.perf_counter()
        opt.zero_grad()
        loss_fn(ddp(x), y).backward()
        opt.step()
        if step >= max(args.warmup, 3):
            times.append(time.perf_counter() - t0)
    m = torch.tensor([statistics.median(times)])
    dist.all_reduce(m, op=dist.ReduceOp.MAX)
    if rank == 0:
        print(f"ROW\t{name}\t{1e3 * m.item():.1f}", flush=True)
    finish(dist)


def all_rows(args):
    import torch
    rank = int(os.environ["RANK"])
    base = int(os.environ.get("MASTER_PORT", "29571"))
    if rank == 0:
        print(f"# torch {torch.__version__} DDP communication hooks, gloo, "
              f"{os.environ['WORLD_SIZE']} rank(s), MLP 784 -> {args.hidden} x {args.layers} "
              f"-> 10, batch {args.batch} per rank, gradient_as_bucket_view, {args.steps} timed "
              "steps per row, median of the slowest rank (tools/torch_hooks_bench.py)")
        print(f"# {'hook':>18} {'step(ms)':>9} {'x no hook':>10}")
    baseline = None
    for i, name in enumerate(ROWS):
        env = dict(os.environ, MASTER_PORT=str(base + 1 + i))
        command = [sys.executable, __file__, "--one", name, "--hidden", str(args.hidden),
                   "--layers", str(args.layers), "--batch", str(args.batch),
                   "--warmup", str(args.warmup), "--steps", str(args.steps)]
        try:
            done = subprocess.run(command, env=env, capture_output=True, text=True,
                                  timeout=args.row_timeout)
            out, err, code = done.stdout, done.stderr, done.returncode
        except subprocess.TimeoutExpired as e:
            out, err, code = e.stdout or "", f"no result in {args.row_timeout} s", -1
            out = out.decode() if isinstance(out, bytes) else out
        row = [line.split("\t") for line in out.splitlines() if line.startswith("ROW\t")]
        if code == 0 and (row or rank != 0):
            if row:
                ms = float(row[0][2])
                baseline = baseline or (ms if name == "no hook" else None)
                ratio = f"{baseline / ms:10.2f}" if baseline else f"{'-':>10}"
                print(f"  {name:>18} {ms:9.1f} {ratio}", flush=True)
            continue
        # Every rank whose part failed says why: the rank that broke names the cause (an
        # exception's what()), the others often only see their peer go.
        lines = [line.strip() for line in err.splitlines() if line.strip()]
        why = next((line for line in lines if line.startswith("what()")), None) or next(
            (line for line in reversed(lines) if "Error" in line), lines[-1] if lines else "")
        print(f"  {name:>18} {'failed':>9} {'-':>10}  rank {rank}, exit {code}: {why[:200]}",
              flush=True)
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--hidden", type=int, default=2048)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--row-timeout", type=int, default=120,
                        help="seconds a row may take before it is reported as failed")
    parser.add_argument("--one", choices=ROWS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
        sys.exit("torch_hooks_bench: start it as ranks (RANK and WORLD_SIZE unset): "
                 "build/solutions/launch --np 2 --no-prefix -- /usr/bin/python3 "
                 "tools/torch_hooks_bench.py, or under tools/shaped_link.sh")
    try:
        import torch  # noqa: F401
    except ImportError:
        print("torch_hooks_bench: PyTorch is not installed (apt-get install python3-torch); "
              "skipped")
        return 0
    if args.one:
        return one_row(args.one, args)
    return all_rows(args)


if __name__ == "__main__":
    sys.exit(main())
