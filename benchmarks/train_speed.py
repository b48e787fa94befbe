"""Training speed: the project's step against a plain PyTorch loop of the same shapes.

    python benchmarks/train_speed.py [--steps 40] [--rounds 7] [--threads 1] [--batch 256]
                                     [--stack 5] [--variants NAME ...]

For every default variant (or those named by ``--variants``), times in alternating blocks
(so that load from other processes hits both alike) and prints the median ms per step of:

- plain:   a minimal training loop written here: per-layer nn.Linear projections,
           heads split by view, an explicit masked softmax, ``loss.item()`` every step;
- plain compiled: the same loop with its loss (forward and backward) under ``torch.compile``,
           the second reference;
- project: the pipeline's training step as ``train`` runs it for a 10,000-step run
           (``train.compile: auto``: compiled on a CPU; the C++ attention kernel, fused
           AdamW); its compile time is printed with what it saves over 10,000 steps
           against the eager step;
- eager:   the pipeline's step without compiling;
- stacked: ``--stack`` seeds trained as one ``StackedModels`` (eager), time per seed.

Every timed step includes sampling the batch. The ratio project / plain is the figure
of merit (lower is faster). The process keeps the memory it frees for reuse, for all the
loops alike, so that a step is timed as a training job runs it, without the page faults a
loop of bare steps pays and a job does not (``inductionlab/heap.py``);
``--return-freed-memory`` leaves the allocator as it starts. Last, each variant's project step as a rate of matrix work
(``inductionlab.core.flop_count``) and its share of this core's FP32 peak. Times are CPU
seconds of this process (one thread: its wall time when it has a core to itself). Asserts
nothing.

Measured and left out, because they did not pay on a 2-core AMD EPYC (AVX2, torch 2.13 CPU):
- several seeds as one vmapped model under ``torch.compile`` (explicit attention, which vmap
  needs): 21.5 ms a step per seed for five two_layer seeds against 12.0 ms for one compiled
  model alone;
- ``torch.compile(mode="max-autotune")``: inductor's C++ GEMM templates beat MKL on the
  forward batched matmuls (0.4 against 1.1 ms) but not the step as a whole (34-35 against
  37 ms for two_layer) and cost a minute of autotuning per compile;
- attention as a broadcast product and sum, compiled: as slow as the batched matmuls;
  ``scaled_dot_product_attention`` on a CPU: slower (17 against 14 ms per layer, forward
  and backward); ``flex_attention``: no backward pass on a CPU;
- the C++ kernel with 256-bit vectors preferred by the compiler (``-mprefer-vector-width=256``):
  twice as slow on this Zen core as its default 128-bit code;
- AdamW with ``foreach=True``: 0.53 ms per step against 0.73 (loop) and 0.22 (fused);
- MKL's ``MKL_DEBUG_CPU_TYPE`` / ``MKL_ENABLE_INSTRUCTIONS`` on an AMD CPU: no change;
- the attention kernel reading the queries, keys and values where the product leaves them
  ([B, T, 3, H, d]), strided or gathered per batch element into head-major blocks: both
  slower than reading contiguous heads (a [256, 4, 24, 8] layer-batch's backward pass 0.65
  -> 0.80-0.99 ms, forward 0.54 -> 0.59-0.64 ms, the same numbers bit for bit), by about
  what the copies around it cost. What the kernel writes is cheaper to place: it writes z
  and the gradients of q, k and v position-major ([B, T, H, d]), which costs it little and
  leaves the output projection and the projections' backward pass no reordering copy;
  layer 0's q, k, v are gathered from the [V, 3 H d] table in C++ and the table's gradient
  added there row by row (``heads_from_table``), not by inductor's one-element-at-a-time
  index backward.
"""
from __future__ import annotations

import argparse
import math
import resource
import statistics
import time
import warnings

import torch
import torch.nn.functional as F
from torch import nn

from inductionlab.core.compile_policy import loss_function, should_compile
from inductionlab.core.data import TaskConfig, sample_sequences
from inductionlab.core.flop_count import (at_least_measured, core_peak, measured_matmul_gflops,
                                          training_flop)
from inductionlab.core.model import ModelConfig, build_model, choose_attention, sinusoidal_table
from inductionlab.core.seeding import generator
from inductionlab.core.stacked import StackedModels, per_seed_loss
from inductionlab.core.train import optimizer, train_step
from inductionlab.heap import keep_freed_memory

VARIANTS = {
    "one_layer": ModelConfig(n_layers=1),
    "one_layer_smeared": ModelConfig(n_layers=1, smear_layers=(0,)),
    "two_layer": ModelConfig(n_layers=2),
}
STEPS_PER_RUN = 10_000


class PlainLayer(nn.Module):
    def __init__(self, cfg: ModelConfig, smeared: bool):
        super().__init__()
        D = cfg.d_model
        self.q, self.k, self.v, self.o = (nn.Linear(D, D, bias=False) for _ in range(4))
        self.alpha = nn.Parameter(torch.ones(cfg.n_heads, cfg.seq_len - 1)) if smeared else None
        self.h = cfg.n_heads

    def forward(self, x, pos):
        B, T, D = x.shape
        split = lambda t: t.view(B, T, self.h, D // self.h).transpose(1, 2)  # noqa: E731
        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        if self.alpha is not None:
            s = torch.sigmoid(self.alpha)[None, :, : T - 1, None]
            k = torch.cat([k[:, :, :1], s * k[:, :, 1:] + (1 - s) * k[:, :, :-1]], dim=2)
        q, k = q + pos, k + pos
        scores = q @ k.transpose(-1, -2) / math.sqrt(D // self.h)
        causal = torch.ones(T, T, dtype=torch.bool).tril()
        attn = scores.masked_fill(~causal, float("-inf")).softmax(-1)
        return x + self.o((attn @ v).transpose(1, 2).reshape(B, T, D))


class PlainModel(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.layers = nn.ModuleList(PlainLayer(cfg, l in cfg.smear_layers) for l in range(cfg.n_layers))
        self.unembed = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self.register_buffer("pos", sinusoidal_table(cfg.seq_len, cfg.d_head, cfg.pos_encoding))

    def forward(self, tokens):
        x = self.embed(tokens)
        for layer in self.layers:
            x = layer(x, self.pos[: tokens.shape[1]])
        return self.unembed(x)


def plain_loss(model, tokens):
    logits = model(tokens)
    return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))


def plain_step(model, opt, task, gen, batch, loss_fn=plain_loss):
    tokens = sample_sequences(batch, task, gen)
    loss = loss_fn(model, tokens)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.item()


def project_step(loss_fn, opt, task, gen, batch):
    tokens = sample_sequences(batch, task, gen)
    return train_step(loss_fn(tokens), opt)


def stacked_step(stack, opt, task, gens, batch):
    tokens = torch.stack([sample_sequences(batch, task, g) for g in gens])
    return train_step(per_seed_loss(stack(tokens), tokens).sum(), opt)


TRAIN = {"lr": 1e-3, "weight_decay": 1.0}


def adamw(params):
    """The plain loop's optimizer: AdamW as its defaults take it."""
    return torch.optim.AdamW(params, **TRAIN)


def timed(step, n: int, clock=time.process_time) -> float:
    """CPU seconds of this process per call of ``step`` over ``n`` calls (``clock``:
    another clock, such as the wall clock for a compile that runs in worker processes)."""
    start = clock()
    for _ in range(n):
        step()
    return (clock() - start) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40, help="steps per timed block")
    parser.add_argument("--rounds", type=int, default=7, help="alternating blocks per method")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--stack", type=int, default=5, help="seeds per stacked model (0: skip)")
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS),
                        metavar="NAME", help=f"variants to time (default all: {', '.join(VARIANTS)})")
    parser.add_argument("--return-freed-memory", action="store_true",
                        help="leave the allocator as it starts (freed blocks handed back)")
    args = parser.parse_args()
    kept = not args.return_freed_memory and keep_freed_memory()
    print(f"freed memory {'kept for reuse' if kept else 'handed back (the allocator as it starts)'}")
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore", message=".*batching rule.*")
    task = TaskConfig()
    print(f"torch {torch.__version__}, {args.threads} thread(s), batch {args.batch}, "
          f"median of {args.rounds} blocks of {args.steps} steps, ms per step (per seed when stacked)")
    header = (f"{'variant':20s} {'plain':>8s} {'plain_c':>8s} {'project':>8s} {'ratio':>6s} {'ratio_c':>7s}"
              f" {'eager':>8s} {'ratio':>6s}")
    if args.stack:
        header += f" {'stacked':>8s} {'ratio':>6s}"
    print(header + "   compile")
    project_ms = {}
    for name in args.variants:
        cfg = VARIANTS[name]
        gen = generator(0, "benchmark")
        plain = PlainModel(cfg)
        plain_opt = adamw(plain.parameters())
        plain_c = PlainModel(cfg)
        plain_c_opt = adamw(plain_c.parameters())
        plain_c_loss = torch.compile(plain_loss)
        model, eager_model = build_model(cfg, 0), build_model(cfg, 0)
        for m in (model, eager_model):
            choose_attention(m, torch.device("cpu"), log=print)
        opt, eager_opt = optimizer(model.parameters(), **TRAIN), optimizer(eager_model.parameters(), **TRAIN)
        compiled = should_compile("auto", STEPS_PER_RUN, torch.device("cpu"))
        loss_fn = loss_function(model, compiled, log=print)
        eager_fn = loss_function(eager_model, False, log=print)
        compile_s = timed(lambda: project_step(loss_fn, opt, task, gen, args.batch), 1, time.perf_counter)
        methods = {"plain": lambda: plain_step(plain, plain_opt, task, gen, args.batch),
                   "plain_c": lambda: plain_step(plain_c, plain_c_opt, task, gen, args.batch, plain_c_loss),
                   "project": lambda: project_step(loss_fn, opt, task, gen, args.batch),
                   "eager": lambda: project_step(eager_fn, eager_opt, task, gen, args.batch)}
        per_call = {"plain": 1, "plain_c": 1, "project": 1, "eager": 1}
        if args.stack:
            stack = StackedModels([build_model(cfg, s) for s in range(args.stack)])
            stack_opt = optimizer(stack.parameters(), **TRAIN)
            gens = [generator(s, "benchmark") for s in range(args.stack)]
            methods["stacked"] = lambda: stacked_step(stack, stack_opt, task, gens, args.batch)
            per_call["stacked"] = args.stack
        times = {m: [] for m in methods}
        for m, step in methods.items():  # warm-up
            timed(step, 3)
        for _ in range(args.rounds):
            for m, step in methods.items():
                n = max(1, args.steps // per_call[m])
                times[m].append(timed(step, n) / per_call[m] * 1e3)
        med = {m: statistics.median(t) for m, t in times.items()}
        project_ms[name] = med["project"]
        line = (f"{name:20s} {med['plain']:8.2f} {med['plain_c']:8.2f} {med['project']:8.2f}"
                f" {med['project'] / med['plain']:6.2f} {med['project'] / med['plain_c']:7.2f}"
                f" {med['eager']:8.2f} {med['eager'] / med['plain']:6.2f}")
        if args.stack:
            line += f" {med['stacked']:8.2f} {med['stacked'] / med['plain']:6.2f}"
        if compiled:
            saved_s = (med["eager"] - med["project"]) * STEPS_PER_RUN / 1e3
            line += f"   {compile_s:.0f} s, saves {saved_s:.0f} s per {STEPS_PER_RUN:,} steps"
        print(line, flush=True)
    peak = at_least_measured(core_peak(), measured_matmul_gflops())
    print(f"core: {peak['name']}, {peak['units']}: {peak['gflops']:.1f} GFLOP/s FP32 peak")
    for name, ms in project_ms.items():
        cfg = VARIANTS[name]
        rate = training_flop(cfg.seq_len, cfg.vocab_size, cfg.d_model, cfg.n_layers, args.batch, 1) / ms / 1e6
        print(f"{name}: project step {rate:.1f} GFLOP/s of matrix work = {rate / peak['gflops']:.1%} of peak")
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory of this process: {peak_mb:.0f} MB")


if __name__ == "__main__":
    main()
