"""Training throughput and memory per variant: prints measured figures, asserts nothing.

    python benchmarks/train_speed.py [--steps 200] [--threads 1] [--batch 256]

Times optimisation steps (forward, backward, AdamW) on fresh batches after a short
warm-up, for each default variant, and the peak resident memory of the process.
"""
from __future__ import annotations

import argparse
import resource
import time

import torch

from inductionlab.data import TaskConfig, sample_sequences
from inductionlab.metrics import mean_loss
from inductionlab.model import ModelConfig, build_model
from inductionlab.seeding import generator

VARIANTS = {
    "one_layer": ModelConfig(n_layers=1),
    "one_layer_smeared": ModelConfig(n_layers=1, smear_layers=(0,)),
    "two_layer": ModelConfig(n_layers=2),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--batch", type=int, default=256)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    task = TaskConfig()
    print(f"torch {torch.__version__}, {args.threads} thread(s), batch {args.batch}, {args.steps} steps")
    for name, cfg in VARIANTS.items():
        model = build_model(cfg, 0)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1.0)
        gen = generator(0, "benchmark")
        for warm in range(args.steps + 10):
            if warm == 10:
                start = time.perf_counter()
            tokens = sample_sequences(args.batch, task, gen)
            loss = mean_loss(model(tokens), tokens)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        per_step = (time.perf_counter() - start) / args.steps
        print(f"{name:20s} {per_step * 1e3:7.2f} ms/step  {1 / per_step:7.1f} steps/s  "
              f"10,000 steps ≈ {per_step * 10000 / 60:5.1f} min")
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory of this process: {peak_mb:.0f} MB")


if __name__ == "__main__":
    main()
