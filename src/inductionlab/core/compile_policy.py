"""When the training step is compiled (torch.compile) and how: the ``compile`` setting, the
number of steps and the device decide; one process compiles at a time per cache
(:func:`compile_lock`)."""
from __future__ import annotations

import contextlib
import hashlib
import json
import time

import numpy as np
import torch

from .causal_attention import inductor_cache_dir
from .metrics import mean_loss
from .spec import Spec


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
        raise ValueError("device is 'cuda' but torch sees no CUDA device on this machine; set "
                         "device: cpu or auto in config.yaml, or run where a GPU is")
    return torch.device(name)


def device_name(device: torch.device) -> str:
    """``cpu``, or ``cuda:0 (<GPU name>)``."""
    if device.type == "cuda":
        return f"{device} ({torch.cuda.get_device_name(device)})"
    return str(device)


def _log_row(spec: Spec, step: int, train_loss: float, metrics: dict, elapsed: float,
             device: torch.device) -> dict:
    row = {"variant": spec.variant, "seed": spec.seed, "step": step, "train_loss": train_loss,
           "val_loss_all": metrics["loss_all"], "val_loss_pred": metrics["loss_pred"],
           "val_acc_pred": metrics["acc_pred"], "elapsed_s": round(elapsed, 3),
           "device": device_name(device), "torch": str(torch.__version__)}
    row.update({f"val_loss_pos{i}": v for i, v in enumerate(metrics["loss_pos"])})
    return row


def optimizer(params, lr: float, weight_decay: float) -> torch.optim.Optimizer:
    """AdamW as every training run takes it: fused, one kernel per parameter for the whole
    update (the same numbers as the default loop over its steps, to float32 rounding,
    in about a third of the time on a CPU; benchmarks/train_speed.py)."""
    return torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay, fused=True)


def train_step(loss: torch.Tensor, opt: torch.optim.Optimizer) -> torch.Tensor:
    """One AdamW step on ``loss``; returns the detached loss (no host sync)."""
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss.detach()


COMPILE_MIN_STEPS = 2000


def should_compile(setting: str, steps: int, device: torch.device) -> bool:
    """``train.compile``: always, never, or auto (on a CPU, for runs long enough to pay)."""
    if setting == "auto":
        return device.type == "cpu" and steps >= COMPILE_MIN_STEPS
    return setting == "always"


def loss_function(model, compiled: bool, log):
    """tokens -> mean training loss of ``model``, compiled with torch.compile if asked.

    Compiling needs a C++ compiler; if the first compiled call fails, the eager
    function is used instead (and said so in the log). The first call's time, compiling
    included, is logged by :func:`compile_lock`.
    """
    def eager(tokens):
        return mean_loss(model(tokens), tokens)

    if not compiled:
        return eager
    compiled_fn = torch.compile(eager)
    state = {"fn": None}

    def first_call_decides(tokens):
        if state["fn"] is None:
            try:
                loss = compiled_fn(tokens)
                state["fn"] = compiled_fn
                return loss
            except Exception as err:  # noqa: BLE001 - any compiler failure means eager
                log(f"torch.compile failed ({type(err).__name__}: {str(err)[:200]}); training eagerly")
                state["fn"] = eager
        return state["fn"](tokens)

    return first_call_decides


@contextlib.contextmanager
def compile_lock(spec: Spec, device: torch.device, log):
    """Held by the one job that compiles a training step; others with the same step wait.

    The step depends on the model config, the batch size, the device and torch, not on
    the seed: the first job compiles it into inductor's on-disk cache, and the other
    seeds' jobs find it there (a few seconds instead of half a minute or more). Without
    the lock, jobs starting together would each compile the same step from cold.
    """
    import fcntl

    key = json.dumps({"model": spec.model.to_dict(), "batch": spec.train.batch_size,
                      "device": str(device), "torch": str(torch.__version__)}, sort_keys=True)
    folder = inductor_cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"inductionlab-{hashlib.sha256(key.encode()).hexdigest()[:16]}.lock"
    with open(path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log("waiting for another job that compiles the same training step")
            fcntl.flock(handle, fcntl.LOCK_EX)
        start = time.perf_counter()
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
        log(f"first step, compiling included, took {time.perf_counter() - start:.1f}s")
