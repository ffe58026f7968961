#!/usr/bin/env python3
"""Lesson 17's GPT (lessons/17_attention/gpt.h) in PyTorch: the course's checkpoints checked
in torch, and torch's training step beside ./lesson17 --bench's.

    /usr/bin/python3 tools/torch_gpt.py check CHECKPOINT [--expect LOSS] [--init START]
    /usr/bin/python3 tools/torch_gpt.py bench [--steps 5] [--batch-size 16 --seq-len 64 ...]
    (Debian's python3-torch installs for /usr/bin/python3, not for a pyenv python3)

The module is nanoGPT's layout with the course's names: pre-LayerNorm blocks, c_attn and
c_proj, GELU's tanh form, an untied lm_head, no dropout; its state dict has exactly the
names and shapes of the course's Gpt (transformer.wte.weight, transformer.h.0.ln_1.weight,
..., lm_head.weight), so a checkpoint loads with load_state_dict(strict=True). The
safetensors file is read here (8-byte header length, JSON header, raw float32 data):
Debian ships no python3-safetensors.

check: loads CHECKPOINT (the optimizer's "optimizer.*" entries left out) and the
vocabulary beside it, rebuilds the validation windows of ./lesson17 from the fortunes
(text_corpus.h: each file's last 10% of fortunes; fixed_batches' evenly spaced windows,
--eval-batches batches of --batch-size) and prints their mean loss in torch. --expect
compares it with the loss ./lesson17 printed (4 decimals). --init START trains --steps
steps in torch from START with ./lesson17's loop (the same windows, from a copy of the
course's PCG32; clip_grad_norm_, torch's AdamW, the warm-up and cosine) and compares every
parameter with CHECKPOINT's: the forward, the backward and the optimizer at once (all but
the keys' third of c_attn.bias, whose gradient is 0 but for rounding: printed apart).

    build/solutions/lesson17 --steps 0 --checkpoint /tmp/start.safetensors --sample 0
    build/solutions/lesson17 --init /tmp/start.safetensors --steps 5 \
      --checkpoint /tmp/gpt.safetensors --sample 0           # prints its validation loss
    /usr/bin/python3 tools/torch_gpt.py check /tmp/gpt.safetensors --init /tmp/start.safetensors \
      --steps 5 --expect <that loss>

It exits 1 when a comparison is off by more than its tolerance.

bench: torch's training step (forward, cross-entropy, backward, clip_grad_norm_ to 1.0,
AdamW with lr 1e-3, betas (0.9, 0.95), weight decay 0.1 on the 2-D weights) on the model
and batch of ./lesson17 --bench's training table (vocabulary 96, random tokens; the shape
flags as ./lesson17's), one thread (torch.set_num_threads(1)), the median of --steps steps
after one warm-up as the course's, printed as one row of that table. `make bench` runs it
after ./lesson17 --bench, the same way (OpenBLAS's kernels as it picks them for both), when
/usr/bin/python3 imports torch. torch's attention here is the naive one (softmax of the
masked S x S scores, kept for backward).
"""
import argparse
import importlib.util
import json
import math
import os
import statistics
import struct
import sys
import time


def read_safetensors(path):
    """{name: float32 tensor} and the metadata of a safetensors file (F32 only)."""
    import torch

    with open(path, "rb") as f:
        raw = f.read()
    (header_len,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + header_len])
    metadata = header.pop("__metadata__", {})
    buffer = memoryview(raw)[8 + header_len:]
    tensors = {}
    for name, entry in header.items():
        if entry["dtype"] != "F32":
            sys.exit(f"torch_gpt.py: {path}: tensor {name} is {entry['dtype']}, not F32")
        begin, end = entry["data_offsets"]
        data = torch.frombuffer(bytearray(buffer[begin:end]), dtype=torch.float32)
        tensors[name] = data.reshape(entry["shape"])
    return tensors, metadata


def gpt_module(vocab, context, layers, heads, hidden):
    """The course's Gpt as an nn.Module (see the top of this file)."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class CausalSelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(hidden, 3 * hidden)
            self.c_proj = nn.Linear(hidden, hidden)
            mask = torch.tril(torch.ones(context, context, dtype=torch.bool))
            self.register_buffer("mask", mask, persistent=False)  # not in the state dict

        def forward(self, x):
            b, s, h = x.shape
            q, k, v = (t.view(b, s, heads, h // heads).transpose(1, 2)
                       for t in self.c_attn(x).split(h, dim=2))
            att = (q @ k.transpose(-2, -1)) / math.sqrt(h // heads)
            att = F.softmax(att.masked_fill(~self.mask[:s, :s], float("-inf")), dim=-1)
            return self.c_proj((att @ v).transpose(1, 2).reshape(b, s, h))

    class Mlp(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_fc = nn.Linear(hidden, 4 * hidden)
            self.c_proj = nn.Linear(4 * hidden, hidden)

        def forward(self, x):
            return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(hidden)
            self.attn = CausalSelfAttention()
            self.ln_2 = nn.LayerNorm(hidden)
            self.mlp = Mlp()

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class Gpt(nn.Module):
        def __init__(self):
            super().__init__()
            self.transformer = nn.ModuleDict({
                "wte": nn.Embedding(vocab, hidden),
                "wpe": nn.Embedding(context, hidden),
                "h": nn.ModuleList(Block() for _ in range(layers)),
                "ln_f": nn.LayerNorm(hidden),
            })
            self.lm_head = nn.Linear(hidden, vocab, bias=False)
            self.context = context

        def forward(self, ids):  # [B, S] -> logits [B*S, V], as the course's
            t = self.transformer
            x = t.wte(ids) + t.wpe(torch.arange(ids.shape[1]))
            for block in t.h:
                x = block(x)
            return self.lm_head(t.ln_f(x)).reshape(-1, vocab)

    return Gpt()


def parameter_count(vocab, context, layers, hidden):
    """gpt.h's N = 2 V H + context H + L (12 H^2 + 13 H) + 2 H."""
    return (2 * vocab * hidden + context * hidden + layers * (12 * hidden**2 + 13 * hidden)
            + 2 * hidden)


class Pcg32:
    """common/data/rng.h's Rng (PCG32), for random_batch's window starts."""
    M64 = (1 << 64) - 1

    def __init__(self, seed, stream=0):
        self.inc, self.state = ((stream << 1) | 1) & self.M64, 0
        self.next_u32()
        self.state = (self.state + seed) & self.M64
        self.next_u32()

    def next_u32(self):
        old = self.state
        self.state = (old * 6364136223846793005 + self.inc) & self.M64
        xorshifted = (((old >> 18) ^ old) >> 27) & 0xFFFFFFFF
        rot = old >> 59
        return ((xorshifted >> rot) | (xorshifted << ((32 - rot) & 31))) & 0xFFFFFFFF

    def below(self, n):
        limit = self.M64 - self.M64 % n
        while True:
            r = (self.next_u32() << 32) | self.next_u32()
            if r < limit:
                return r % n


def corpus_tokens(data_dir, vocab_bytes):
    """text_corpus.h's training and validation text (each file's last 10% of fortunes
    validation), tokenized with the vocabulary's bytes (token 0: unknown)."""
    files = ["literature", "humorists", "wisdom", "people", "education", "food", "kids", "love",
             "science", "songs-poems", "work", "platitudes", "fortunes"]
    train, validation = b"", b""
    for name in files:
        with open(os.path.join(data_dir, name), "rb") as f:
            lines = f.read().split(b"\n")
        if lines[-1] == b"":  # std::getline's lines: no empty one after the last newline
            lines.pop()
        fortunes, current = [], b""
        for line in lines:
            if line == b"%":
                if current:
                    fortunes.append(current + b"%\n")
                current = b""
            else:
                current += line + b"\n"
        if current:
            fortunes.append(current + b"%\n")
        held = math.ceil(0.1 * len(fortunes))
        train += b"".join(fortunes[:len(fortunes) - held])
        validation += b"".join(fortunes[len(fortunes) - held:])
    token_of = {byte: i + 1 for i, byte in enumerate(vocab_bytes)}
    return [[token_of.get(byte, 0) for byte in text] for text in (train, validation)]


def load_gpt(path, heads):
    """The module holding a course checkpoint's weights (strict), and its vocabulary."""
    tensors, metadata = read_safetensors(path)
    weights = {k: v for k, v in tensors.items() if not k.startswith("optimizer.")}
    vocab, hidden = weights["transformer.wte.weight"].shape
    context = weights["transformer.wpe.weight"].shape[0]
    layers = len({k.split(".")[2] for k in weights if k.startswith("transformer.h.")})
    model = gpt_module(vocab, context, layers, int(metadata.get("gpt.heads", heads)), hidden)
    model.load_state_dict(weights, strict=True)
    assert sum(p.numel() for p in model.parameters()) == parameter_count(vocab, context, layers,
                                                                         hidden)
    stem = path[:-len(".safetensors")] if path.endswith(".safetensors") else path
    with open(stem + ".vocab.txt") as f:
        lines = f.read().split("\n")
    assert lines[0] == "course char vocabulary", stem + ".vocab.txt"
    return model, [int(line) for line in lines[1:] if line]


def adamw(model, lr):
    """torch's AdamW as the course's (betas 0.9, 0.95; decay 0.1 on the 2-D weights only)."""
    import torch

    matrices = [p for p in model.parameters() if p.dim() == 2]
    others = [p for p in model.parameters() if p.dim() != 2]
    return torch.optim.AdamW([{"params": matrices, "weight_decay": 0.1},
                              {"params": others, "weight_decay": 0.0}], lr=lr, betas=(0.9, 0.95))


def cosine_lr(step, steps, max_lr):
    """lr_schedule.h's CosineSchedule as ./lesson17 sets it: warm-up over 5% of the steps
    (at least one), then a cosine to max_lr / 10 at the last step."""
    warmup, min_lr = min(steps, max(1, steps // 20)), max_lr / 10
    if step < warmup:
        return max_lr * (step + 1) / (warmup + 1)
    if step > steps:
        return min_lr
    if steps == warmup:
        return max_lr
    ratio = (step - warmup) / (steps - warmup)
    return min_lr + 0.5 * (1 + math.cos(math.pi * ratio)) * (max_lr - min_lr)


def train(model, tokens, args, seq):
    """./lesson17's training loop: the same random windows (Rng(seed, 1)), clip, AdamW."""
    import torch
    import torch.nn.functional as F

    rng, opt = Pcg32(args.seed, 1), adamw(model, args.lr)
    for step in range(args.steps):
        starts = [rng.below(len(tokens) - seq) for _ in range(args.batch_size)]
        window = torch.tensor([tokens[s:s + seq + 1] for s in starts])
        opt.zero_grad()
        F.cross_entropy(model(window[:, :-1]), window[:, 1:].reshape(-1)).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        for group in opt.param_groups:
            group["lr"] = cosine_lr(step, args.steps, args.lr)
        opt.step()


def validation_loss(model, tokens, args, seq):
    """The mean loss on fixed_batches' windows: evenly spaced starts, the same every time."""
    import torch
    import torch.nn.functional as F

    windows, last_start = args.batch_size * args.eval_batches, len(tokens) - seq - 1
    starts = [last_start * w // (windows - 1) if windows > 1 else 0 for w in range(windows)]
    losses = []
    with torch.no_grad():
        for c in range(0, windows, args.batch_size):
            window = torch.tensor([tokens[s:s + seq + 1] for s in starts[c:c + args.batch_size]])
            losses.append(F.cross_entropy(model(window[:, :-1]), window[:, 1:].reshape(-1)).item())
    return sum(losses) / len(losses)


def check(args):
    import torch

    model, vocab_bytes = load_gpt(args.checkpoint, args.heads)
    train_tokens, valid_tokens = corpus_tokens(args.data, vocab_bytes)
    seq = args.seq_len or model.context
    loss = validation_loss(model, valid_tokens, args, seq)
    count = sum(p.numel() for p in model.parameters())
    print(f"# torch {torch.__version__}: {args.checkpoint} loaded strict ({count} parameters); "
          f"validation: {args.eval_batches} batches of {args.batch_size} x {seq}")
    print(f"validation loss in torch: {loss:.6f}")
    ok = True
    if args.expect is not None:
        ok = abs(loss - args.expect) <= args.expect_tolerance
        print(f"{'PASS' if ok else 'FAIL'}: the course printed {args.expect}, |difference| "
              f"{abs(loss - args.expect):.2e} (tolerance {args.expect_tolerance:g})")
    if args.init:
        if read_safetensors(args.init)[1].get("optimizer_steps", "0") != "0":
            sys.exit(f"torch_gpt.py: --init {args.init} holds AdamW's state after some steps: "
                     "start from a checkpoint of ./lesson17 --steps 0")
        trained, _ = load_gpt(args.init, args.heads)
        train(trained, train_tokens, args, seq)
        ref, diffs, key_bias = dict(model.named_parameters()), {}, 0.0
        for name, p in trained.named_parameters():
            diff = (p - ref[name]).abs().detach()
            if name.endswith("attn.c_attn.bias"):
                # The keys' bias adds q.b to every score of a row, which softmax ignores: its
                # gradient is 0 in exact arithmetic, rounding noise in float, and Adam turns
                # that noise into steps. Left out of the comparison, printed.
                h = diff.shape[0] // 3
                key_bias = max(key_bias, diff[h:2 * h].max().item())
                diff = torch.cat([diff[:h], diff[2 * h:]])
            diffs[name] = diff.max().item()
        worst = max(diffs, key=diffs.get)
        trained_loss = validation_loss(trained, valid_tokens, args, seq)
        step_ok = diffs[worst] <= args.tolerance
        ok = ok and step_ok
        print(f"{'PASS' if step_ok else 'FAIL'}: {args.steps} steps in torch from {args.init}: "
              f"largest parameter difference {diffs[worst]:.2e} ({worst}; tolerance "
              f"{args.tolerance:g}); validation loss {trained_loss:.6f}, "
              f"|difference| {abs(trained_loss - loss):.2e}; the keys' bias (not compared: "
              f"noise, its gradient is 0) {key_bias:.2e}")
    return 0 if ok else 1


def bench(args):
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(1)
    torch.manual_seed(17)
    vocab, batch, seq = 96, args.batch_size, args.seq_len
    model = gpt_module(vocab, seq, args.layers, args.heads, args.hidden)
    ids = torch.randint(vocab, (batch, seq))
    targets = torch.randint(vocab, (batch * seq,))
    opt = adamw(model, 1e-3)

    def step():
        opt.zero_grad()
        F.cross_entropy(model(ids), targets).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    step()  # the warm-up
    times = []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    t = statistics.median(times)
    n = parameter_count(vocab, seq, args.layers, args.hidden)
    # gpt_bench.h's accounting: 6 N' + 12 L S H, N' every parameter but wte and wpe
    flops = 6 * (n - (vocab + seq) * args.hidden) + 12 * args.layers * seq * args.hidden
    print(f"# torch {torch.__version__}: the same GPT (vocab {vocab}, context {seq}, "
          f"{args.layers} layers, {args.heads} heads, hidden {args.hidden}; N = {n}), B {batch} x "
          f"S {seq} tokens, AdamW, clip 1.0, one thread; median of {args.steps} steps")
    print(f"# {'kind':>6} {'step(ms)':>10} {'tokens/s':>10} {'GFLOP/s':>9}")
    rate = batch * seq * flops / t
    print(f"  {'torch':>6} {1e3 * t:10.2f} {batch * seq / t:10.0f} {rate / 1e9:9.2f}")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    c = sub.add_parser("check", help="load a course checkpoint, validation loss in torch")
    c.add_argument("checkpoint")
    c.add_argument("--expect", type=float, help="the validation loss ./lesson17 printed")
    c.add_argument("--expect-tolerance", type=float, default=1e-4,
                   help="for --expect (./lesson17 prints 4 decimals)")
    c.add_argument("--init", help="train --steps in torch from this checkpoint and compare")
    c.add_argument("--steps", type=int, default=5)
    c.add_argument("--tolerance", type=float, default=1e-5, help="for --init's parameters")
    c.add_argument("--lr", type=float, default=3e-3)
    c.add_argument("--clip", type=float, default=1.0)
    c.add_argument("--seed", type=int, default=1)
    c.add_argument("--data", default="/usr/share/games/fortunes")
    c.add_argument("--heads", type=int, default=4, help="when the metadata does not say")
    c.add_argument("--seq-len", type=int, default=0, help="window length (0: the context)")
    c.add_argument("--batch-size", type=int, default=16)
    c.add_argument("--eval-batches", type=int, default=8)
    b = sub.add_parser("bench", help="torch's training step on ./lesson17 --bench's model")
    b.add_argument("--steps", type=int, default=10, help="timed steps, after one warm-up")
    for flag, default in [("--batch-size", 16), ("--seq-len", 64), ("--layers", 2),
                          ("--heads", 4), ("--hidden", 64)]:
        b.add_argument(flag, type=int, default=default, help="as ./lesson17's")
    args = parser.parse_args()
    if importlib.util.find_spec("torch") is None:
        sys.exit("torch_gpt.py: PyTorch is not installed for " + sys.executable +
                 " (apt-get install python3-torch; then run it with /usr/bin/python3)")
    return check(args) if args.mode == "check" else bench(args)


if __name__ == "__main__":
    sys.exit(main())
