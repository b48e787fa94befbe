"""Where a training step's time goes: the top operations by their own CPU time.

    python benchmarks/step_profile.py [--variant two_layer] [--steps 50] [--top 8]
                                      [--attention kernel|explicit] [--eager] [--batch 256]

Builds the variant's model and optimizer as ``inductionlab train`` does (compiled on a CPU,
the attention form ``choose_attention`` picks unless ``--attention`` says otherwise), warms
it up, then profiles ``--steps`` steps (batch sampling included) with ``torch.profiler`` on
one thread and prints each operation's share of the profiled CPU time. Asserts nothing.
"""
from __future__ import annotations

import argparse
import time

import torch
from torch.profiler import ProfilerActivity, profile

from inductionlab.core.compile_policy import loss_function
from inductionlab.core.data import TaskConfig, sample_sequences
from inductionlab.core.model import build_model, choose_attention
from inductionlab.core.seeding import generator
from inductionlab.core.train import optimizer, train_step
from inductionlab.heap import keep_freed_memory

from train_speed import TRAIN, VARIANTS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", default="two_layer", choices=sorted(VARIANTS))
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--top", type=int, default=8)
    parser.add_argument("--attention", choices=("kernel", "explicit"), default=None)
    parser.add_argument("--eager", action="store_true", help="do not compile the step")
    parser.add_argument("--batch", type=int, default=256)
    args = parser.parse_args()
    keep_freed_memory()  # as a training job's steps run (inductionlab/heap.py)
    torch.set_num_threads(1)
    model = build_model(VARIANTS[args.variant], 0)
    choose_attention(model, torch.device("cpu"), log=print)
    if args.attention:
        model.attention_form = args.attention
    opt = optimizer(model.parameters(), **TRAIN)
    loss_fn = loss_function(model, not args.eager, log=print)
    task, gen = TaskConfig(), generator(0, "profile")

    def step():
        return train_step(loss_fn(sample_sequences(args.batch, task, gen)), opt)

    for _ in range(20):
        step()
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    ms = (time.perf_counter() - start) / args.steps * 1e3
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(args.steps):
            step()
    events = [e for e in prof.key_averages() if e.self_cpu_time_total > 0]
    total = sum(e.self_cpu_time_total for e in events)
    print(f"{args.variant}, {model.attention_form} attention, {'eager' if args.eager else 'compiled'}: "
          f"{ms:.1f} ms per step unprofiled; top {args.top} of the profiled step by own CPU time")
    print(f"{'share':>6s} {'ms/step':>8s} {'calls/step':>10s}  operation")
    for e in sorted(events, key=lambda e: -e.self_cpu_time_total)[: args.top]:
        name = e.key if len(e.key) <= 70 else e.key[:67] + "..."
        print(f"{e.self_cpu_time_total / total:6.1%} {e.self_cpu_time_total / 1e3 / args.steps:8.2f} "
              f"{e.count / args.steps:10.1f}  {name}")


if __name__ == "__main__":
    main()
