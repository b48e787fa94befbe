"""Training loop: AdamW on fresh batches, periodic validation, checkpoints."""
from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from . import atomic
from .data import sample_sequences, validation_set
from .metrics import evaluate, mean_loss
from .model import build_model
from .seeding import generator
from .spec import model_config, task_config


class TrainingDiverged(RuntimeError):
    """The training loss became NaN or infinite."""


def checkpoint_steps(total: int, n: int = 40) -> list[int]:
    """About ``n`` steps: half log-spaced in [1, total], half evenly spaced in [0, total].

    Always includes 0 and ``total``; dense early (where phase changes happen) and
    regular later.
    """
    if total < 1:
        return [0]
    n_log = n // 2
    log = np.geomspace(1, total, max(n_log, 2))
    lin = np.linspace(0, total, max(n - n_log, 2))
    steps = set(np.round(np.concatenate([log, lin])).astype(int).tolist()) | {0, total}
    return sorted(s for s in steps if 0 <= s <= total)


def eval_steps(total: int, every: int) -> list[int]:
    """Validation steps: 0, every ``every`` steps, and the last step."""
    return sorted(set(range(0, total + 1, every)) | {total})


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("train.device is 'cuda' but torch sees no CUDA device; use 'cpu' or 'auto'")
    return torch.device(name)


def _log_row(spec: dict, step: int, train_loss: float, metrics: dict, elapsed: float) -> dict:
    row = {"variant": spec["variant"], "seed": int(spec["seed"]), "step": step, "train_loss": train_loss, "val_loss_all": metrics["loss_all"],
           "val_loss_pred": metrics["loss_pred"], "val_acc_pred": metrics["acc_pred"],
           "elapsed_s": round(elapsed, 3)}
    row.update({f"val_loss_pos{i}": v for i, v in enumerate(metrics["loss_pos"])})
    return row


def train(spec: dict, out_dir: str | Path, threads: int = 1, log=None) -> dict:
    """Train the model described by ``spec`` and write its outputs to ``out_dir``.

    Writes ``model.pt`` (config, spec and final state), ``train_log.csv`` (one row
    per validation step) and ``checkpoints/step{N:06d}.pt``. Every file appears
    under its final name only once it is complete. Returns the last log row.
    """
    log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    torch.set_num_threads(max(1, int(threads)))
    out_dir = Path(out_dir)
    tcfg = spec["train"]
    task, mcfg = task_config(spec), model_config(spec)
    device = resolve_device(tcfg.get("device", "cpu"))
    seed, steps = int(spec["seed"]), int(tcfg["steps"])

    model = build_model(mcfg, seed).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=tcfg["lr"], weight_decay=tcfg["weight_decay"])
    batch_gen = generator(seed, "train-batches")
    val = validation_set(tcfg["val_size"], task, tcfg["val_seed"]).to(device)
    to_eval = set(eval_steps(steps, tcfg["eval_every"]))
    to_save = set(checkpoint_steps(steps, tcfg["n_checkpoints"]))
    name = f"{spec['variant']} seed {seed}"
    log(f"[{name}] {model.n_params()} parameters, {steps} steps, batch {tcfg['batch_size']}, "
        f"device {device}, {torch.get_num_threads()} thread(s)")

    rows, train_loss, start = [], float("nan"), time.perf_counter()
    with atomic.atomic_dir(out_dir / "checkpoints") as ckpt_dir:
        for step in range(steps + 1):
            if step in to_save:
                torch.save({"step": step, "state_dict": model.state_dict()},
                           ckpt_dir / f"step{step:06d}.pt")
            if step in to_eval:
                model.eval()
                metrics = evaluate(model, val, task)
                model.train()
                elapsed = time.perf_counter() - start
                rows.append(_log_row(spec, step, train_loss, metrics, elapsed))
                eta = elapsed / max(step, 1) * (steps - step)
                log(f"[{name}] step {step:>6}/{steps}  train {train_loss:.4f}  "
                    f"val all {metrics['loss_all']:.4f}  pred {metrics['loss_pred']:.4f}  "
                    f"acc {metrics['acc_pred']:.3f}  {elapsed:6.1f}s  eta {eta:6.1f}s")
            if step == steps:
                break
            tokens = sample_sequences(tcfg["batch_size"], task, batch_gen).to(device)
            loss = mean_loss(model(tokens), tokens)
            train_loss = loss.item()
            if not math.isfinite(train_loss):
                raise TrainingDiverged(
                    f"[{name}] training loss is {train_loss} at step {step} "
                    f"(lr={tcfg['lr']}, weight_decay={tcfg['weight_decay']}); stopping. "
                    "Lower train.lr or check the variant's spec."
                )
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()

    atomic.write_csv(out_dir / "train_log.csv", pd.DataFrame(rows))
    save_model(out_dir / "model.pt", model, spec)  # last: its presence means the run finished
    log(f"[{name}] done in {time.perf_counter() - start:.1f}s")
    return rows[-1]


def save_model(path, model, spec: dict) -> None:
    payload = {"spec": spec, "model_config": model.cfg.to_dict(),
               "state_dict": {k: v.detach().cpu() for k, v in model.state_dict().items()},
               "torch_version": str(torch.__version__)}
    with atomic.atomic_path(path) as tmp:
        torch.save(payload, tmp)


def load_model(path, device: str | torch.device = "cpu"):
    """Rebuild a trained model from ``model.pt`` (or a checkpoint plus its ``model.pt``)."""
    from .model import AttentionOnlyTransformer, ModelConfig

    payload = torch.load(path, map_location=device, weights_only=True)
    model = AttentionOnlyTransformer(ModelConfig.from_dict(payload["model_config"]))
    model.load_state_dict(payload["state_dict"])
    return model.to(device).eval(), payload["spec"]
