#!/usr/bin/env python3
"""PyTorch's DDP on the model of ./lesson10 --bench, for the table beside the course's Reducer.

    python3 tools/torch_ddp_bench.py [--np 2] [--batch 32] [--steps 5]
    (Debian's python3-torch installs for /usr/bin/python3, not for a pyenv python3)

Two processes (torch.multiprocessing), the gloo backend over loopback, one thread each,
the bench model of lesson 10 (MLP 784 -> 2048 x 4 -> 10), synthetic inputs, SGD. Rows, as in
lesson 10's table: compute only (DDP's backward under no_sync, nothing sent), naive (every
gradient all-reduced after backward, one call per parameter), and DDP with its default
buckets (25 MiB cap), or one DDP row per cap of --bucket-caps. The timed steps are
interleaved round by round, and each row is the median of the slowest rank, as in
lesson 10.

    python3 tools/torch_ddp_bench.py --compare --np 2 --sizes 784,512,512,10 --global-batch 256

--compare: the rows ./lesson09 --compare adds to its table (it runs this itself when
/usr/bin/python3 imports torch): one process on the whole global batch, then torch DDP
(default buckets, gloo) over --np ranks on global batch / np each, samples/s of each.

With RANK and WORLD_SIZE in its environment (torchrun's variables, the course's
`launch`, or each node of tools/shaped_link.sh, which `make bench-link` uses for the
kernel-shaped link) it is one rank of that job instead of spawning --np processes. `make
bench` starts it under the course's launcher,

    build/solutions/launch --np 2 --no-prefix -- /usr/bin/python3 tools/torch_ddp_bench.py

so that torch's ranks get what the course's get: one BLAS thread and OpenBLAS's kernels
named from the CPU's features (OPENBLAS_CORETYPE). Spawned from a shell without them, on a
virtual CPU torch's compute here took 2.7 times as long (282 against 105 ms a step).

Optional: needs python3-torch (Debian's package is enough). `make bench` runs it when
torch imports and prints one line otherwise. torch's gloo is not paced by the course's
--link (that pacing lives in the course's tcp transport), so this is the loopback table.
"""
import argparse
import os
import statistics
import sys
import time


def run(rank, world, args, port):
    import torch
    import torch.distributed as dist
    import torch.nn as nn

    torch.set_num_threads(1)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)

    x, y = bench_batch(args.batch, rank)
    loss_fn = nn.CrossEntropyLoss()

    rows = {}
    ddp_compute = nn.parallel.DistributedDataParallel(bench_mlp(args.hidden, args.layers))
    naive = bench_mlp(args.hidden, args.layers)
    for p in naive.parameters():
        dist.broadcast(p.data, 0)
    opts = {
        "compute only (no_sync)": torch.optim.SGD(ddp_compute.parameters(), lr=1e-3),
        "naive per-param": torch.optim.SGD(naive.parameters(), lr=1e-3),
    }
    # One DDP per bucket cap (torch's first bucket stays at its 1 MiB, as the course's).
    ddps = {}
    for cap in args.bucket_caps:
        name = "DDP default buckets" if cap == 25 else f"DDP {cap:g} MiB buckets"
        ddps[name] = nn.parallel.DistributedDataParallel(bench_mlp(args.hidden, args.layers),
                                                         bucket_cap_mb=cap)
        opts[name] = torch.optim.SGD(ddps[name].parameters(), lr=1e-3)

    def step_compute():
        opt = opts["compute only (no_sync)"]
        opt.zero_grad()
        with ddp_compute.no_sync():
            loss_fn(ddp_compute(x), y).backward()
        opt.step()

    def step_naive():
        opt = opts["naive per-param"]
        opt.zero_grad()
        loss_fn(naive(x), y).backward()
        for p in naive.parameters():
            dist.all_reduce(p.grad)
            p.grad /= world
        opt.step()

    def step_ddp(name):
        opt = opts[name]
        opt.zero_grad()
        loss_fn(ddps[name](x), y).backward()
        opt.step()

    steps = [("compute only (no_sync)", step_compute), ("naive per-param", step_naive)]
    steps += [(name, lambda name=name: step_ddp(name)) for name in ddps]
    for name, _ in steps:
        rows[name] = []
    for r in range(args.warmup + args.steps):
        for name, fn in steps:
            dist.barrier()
            t0 = time.perf_counter()
            fn()
            if r >= args.warmup:
                rows[name].append(time.perf_counter() - t0)
    medians = {}
    for name, _ in steps:
        m = torch.tensor([statistics.median(rows[name])])
        dist.all_reduce(m, op=dist.ReduceOp.MAX)
        medians[name] = m.item()
    if rank == 0:
        compute = medians["compute only (no_sync)"]
        print(f"# torch {torch.__version__} DDP, gloo, {world} rank(s), MLP 784 -> {args.hidden} x "
              f"{args.layers} -> 10, batch {args.batch} per rank, {args.steps} interleaved rounds, "
              "median per row of the slowest rank")
        print(f"# {'mode':>26} {'step(ms)':>9} {'x compute':>10}")
        for name, _ in steps:
            t = medians[name]
            print(f"  {name:>26} {1e3 * t:9.1f} {t / compute:10.2f}")
    finish(dist)


def bench_mlp(hidden, layers):
    """lesson 10's bench model: 784 -> hidden x layers -> 10, ReLU between, seed 1."""
    import torch
    import torch.nn as nn
    torch.manual_seed(1)
    modules, width = [], 784
    for _ in range(layers):
        modules += [nn.Linear(width, hidden), nn.ReLU()]
        width = hidden
    modules.append(nn.Linear(width, 10))
    return nn.Sequential(*modules)


def bench_batch(batch, rank):
    """Synthetic inputs and labels, different on every rank."""
    import torch
    torch.manual_seed(100 + rank)
    return torch.randn(batch, 784), torch.randint(0, 10, (batch,))


def finish(dist):
    """Ends a rank once every rank is done. torch 1.13's destroy_process_group can hang at
    exit with gloo (seen here once in two runs, after the table was printed), which would
    hang `make bench`; the process exits instead, and the OS closes its sockets."""
    dist.barrier()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def compare_mlp(sizes):
    import torch.nn as nn
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i + 2 < len(sizes):
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def compare_steps(model, batch, args):
    """Seconds per step (mean of the timed steps) of SGD on `model`, `batch` examples."""
    import torch
    import torch.nn as nn
    torch.manual_seed(1)
    x = torch.randn(batch, args.sizes[0])
    y = torch.randint(0, args.sizes[-1], (batch,))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    for r in range(args.warmup + args.steps):
        if r == args.warmup:
            t0 = time.perf_counter()
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    return (time.perf_counter() - t0) / args.steps


def compare_ddp(rank, world, args, port, one_process_rate):
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(1)
    ddp = torch.nn.parallel.DistributedDataParallel(compare_mlp(args.sizes))
    dist.barrier()
    step = torch.tensor([compare_steps(ddp, args.global_batch // world, args)])
    dist.all_reduce(step, op=dist.ReduceOp.MAX)  # a step is as slow as its slowest rank
    if rank == 0:
        rate = args.global_batch / step.item()
        print(f"{'torch DDP, gloo, ' + str(world) + ' ranks':>34} {rate:10.0f} "
              f"{rate / one_process_rate:6.2f}")
    finish(dist)


def compare(args):
    import torch
    import torch.multiprocessing as mp
    torch.set_num_threads(1)
    step = compare_steps(compare_mlp(args.sizes), args.global_batch, args)
    rate = args.global_batch / step
    print(f"# torch {torch.__version__} on the same MLP {'-'.join(map(str, args.sizes))} and "
          f"global batch {args.global_batch}, one thread per process, {args.warmup} warm-up + "
          f"{args.steps} timed steps (tools/torch_ddp_bench.py --compare; synthetic inputs)")
    print(f"# {'configuration':>32} {'samples/s':>10} {'x 1p':>6}")
    print(f"{'torch one process':>34} {rate:10.0f} {1.0:6.2f}", flush=True)
    mp.spawn(compare_ddp, args=(args.np, args, args.port, rate), nprocs=args.np, join=True)
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--np", type=int, default=2)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--hidden", type=int, default=2048)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--port", type=int, default=29571)
    parser.add_argument("--bucket-caps", default="25",
                        help="DDP rows, one per bucket cap in MiB: e.g. 25,5,1 (25 is the default)")
    parser.add_argument("--compare", action="store_true",
                        help="lesson 09's rows: one process vs torch DDP (see above)")
    parser.add_argument("--sizes", default="784,512,512,10",
                        help="--compare: the MLP's layer sizes")
    parser.add_argument("--global-batch", type=int, default=256, help="--compare: global batch")
    args = parser.parse_args()
    args.sizes = [int(v) for v in args.sizes.split(",")]
    try:
        args.bucket_caps = [float(v) for v in args.bucket_caps.split(",")]
    except ValueError:
        parser.error(f"--bucket-caps '{args.bucket_caps}' is not a list of MiB, e.g. 25,5,1")
    try:
        import torch.multiprocessing as mp
    except ImportError:
        print("torch_ddp_bench: PyTorch is not installed (apt-get install python3-torch); skipped")
        return 0
    if args.compare:
        return compare(args)
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        # One rank of a job started elsewhere (torchrun's variables, or one node of
        # tools/shaped_link.sh): MASTER_ADDR/MASTER_PORT come from the environment, and Gloo
        # takes its interface from GLOO_SOCKET_IFNAME.
        run(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), args, args.port)
        return 0
    mp.spawn(run, args=(args.np, args, args.port), nprocs=args.np, join=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
