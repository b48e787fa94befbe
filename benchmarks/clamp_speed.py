"""The cost of a clamped training step against the plain one.

    python benchmarks/clamp_speed.py [--steps 20] [--rounds 5] [--threads 1] [--batch 256]

For two_layer and one_layer_smeared at the default shapes, times in alternating blocks (so
that load from other processes hits all alike) and prints the median ms per step of the
pipeline's eager step (the C++ attention kernel, fused AdamW) without an intervention,
with every clamp (``inductionlab.core.clamping``; to a trained reference: a model of the
same shape, run on each batch without gradients), and with layer 0 frozen; and each as a
ratio to the plain eager step. Every timed step includes sampling the batch. Times are
CPU seconds of this process. Asserts nothing.
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch

from inductionlab.core.clamping import (FrozenLayer, TrainingIntervention, clamp_for,
                                        clamped_loss_function)
from inductionlab.core.compile_policy import loss_function
from inductionlab.core.data import TaskConfig, sample_sequences
from inductionlab.core.model import ModelConfig, build_model, choose_attention
from inductionlab.core.seeding import generator
from inductionlab.core.train import optimizer, train_step

VARIANTS = {"two_layer": {"n_layers": 2}, "one_layer_smeared": {"n_layers": 1, "smear_layers": (0,)}}


def steppers(cfg: ModelConfig, batch: int) -> dict:
    """name -> a function running one training step (batch sampled in it)."""
    task = TaskConfig()
    out = {}

    def make(name, setting):
        model = build_model(cfg, 0)
        choose_attention(model, torch.device("cpu"))
        opt = optimizer(model.parameters(), 1e-3, 1.0)
        gen = generator(0, "train-batches")
        frozen = None
        if setting is None:
            loss_fn = loss_function(model, False, print)
        elif setting.kind == "freeze":
            loss_fn, frozen = loss_function(model, False, print), FrozenLayer(model)
        else:
            reference = build_model(cfg, 1).eval()
            loss_fn = clamped_loss_function(model, clamp_for(setting, cfg, reference))

        def step():
            train_step(loss_fn(sample_sequences(batch, task, gen)), opt, frozen)
        out[name] = step

    make("plain", None)
    for part in "ABC":
        for reference in ("trained", "handbuilt"):
            make(f"clamp {part} to {reference}", TrainingIntervention("clamp", part, reference))
    if cfg.n_layers > 1:
        make("freeze layer0", TrainingIntervention("freeze", "layer0"))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--batch", type=int, default=256)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    for variant, fields in VARIANTS.items():
        runs = steppers(ModelConfig(**fields), args.batch)
        times = {name: [] for name in runs}
        for name, step in runs.items():  # warm up
            for _ in range(3):
                step()
        for _ in range(args.rounds):
            for name, step in runs.items():
                start = time.process_time()
                for _ in range(args.steps):
                    step()
                times[name].append((time.process_time() - start) / args.steps * 1e3)
        plain = statistics.median(times["plain"])
        print(f"{variant} (batch {args.batch}, {args.threads} thread(s))")
        for name, values in times.items():
            ms = statistics.median(values)
            print(f"  {name:<24} {ms:7.2f} ms/step  {ms / plain:5.2f}x")


if __name__ == "__main__":
    main()
