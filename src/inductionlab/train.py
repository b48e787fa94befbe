"""Training loop: AdamW on fresh batches, periodic validation, checkpoints."""
from __future__ import annotations

import contextlib
import copy
import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from torch import nn
from torch.func import functional_call, stack_module_state, vmap

from . import atomic
from .data import sample_sequences, validation_set
from .metrics import evaluate, mean_loss, per_token_loss
from .model import AttentionOnlyTransformer, build_model
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
        raise RuntimeError("device is 'cuda' but torch sees no CUDA device; use 'cpu' or 'auto'")
    return torch.device(name)


def device_name(device: torch.device) -> str:
    """``cpu``, or ``cuda:0 (<GPU name>)``."""
    if device.type == "cuda":
        return f"{device} ({torch.cuda.get_device_name(device)})"
    return str(device)


def _log_row(spec: dict, step: int, train_loss: float, metrics: dict, elapsed: float,
             device: torch.device) -> dict:
    row = {"variant": spec["variant"], "seed": int(spec["seed"]), "step": step, "train_loss": train_loss,
           "val_loss_all": metrics["loss_all"], "val_loss_pred": metrics["loss_pred"],
           "val_acc_pred": metrics["acc_pred"], "elapsed_s": round(elapsed, 3),
           "device": device_name(device), "torch": str(torch.__version__)}
    row.update({f"val_loss_pos{i}": v for i, v in enumerate(metrics["loss_pos"])})
    return row


def train_step(loss: torch.Tensor, opt: torch.optim.Optimizer) -> torch.Tensor:
    """One AdamW step on ``loss``; returns the detached loss (no host sync)."""
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss.detach()


class _SeedRun:
    """Bookkeeping of one model's training: checkpoints, validation log, final files."""

    def __init__(self, spec: dict, out_dir, ckpt_dir: Path, val: torch.Tensor, log):
        self.spec, self.out_dir, self.ckpt_dir, self.val, self.log = spec, Path(out_dir), ckpt_dir, val, log
        tcfg = spec["train"]
        self.steps = int(tcfg["steps"])
        self.task = task_config(spec)
        self.name = f"{spec['variant']} seed {spec['seed']}"
        self.to_eval = set(eval_steps(self.steps, tcfg["eval_every"]))
        self.to_save = set(checkpoint_steps(self.steps, tcfg["n_checkpoints"]))
        self.rows: list[dict] = []

    def at_step(self, step: int, model, train_loss: torch.Tensor | None, elapsed: float) -> None:
        """Checkpoint and validate ``model`` as due at ``step`` (before that step's update)."""
        if step in self.to_save:
            torch.save({"step": step, "state_dict": model.state_dict()},
                       self.ckpt_dir / f"step{step:06d}.pt")
        if step not in self.to_eval:
            return
        loss = float("nan") if train_loss is None else train_loss.item()
        if train_loss is not None and not math.isfinite(loss):
            raise TrainingDiverged(
                f"[{self.name}] training loss is {loss} at step {step} or earlier "
                f"(lr={self.spec['train']['lr']}, weight_decay={self.spec['train']['weight_decay']}); "
                "stopping. Lower train.lr or check the variant's spec."
            )
        was_training = model.training
        model.eval()
        metrics = evaluate(model, self.val, self.task)
        model.train(was_training)
        self.rows.append(_log_row(self.spec, step, loss, metrics, elapsed, self.val.device))
        eta = elapsed / max(step, 1) * (self.steps - step)
        self.log(f"[{self.name}] step {step:>6}/{self.steps}  train {loss:.4f}  "
                 f"val all {metrics['loss_all']:.4f}  pred {metrics['loss_pred']:.4f}  "
                 f"acc {metrics['acc_pred']:.3f}  {elapsed:6.1f}s  eta {eta:6.1f}s")

    def finish(self, model) -> dict:
        atomic.write_csv(self.out_dir / "train_log.csv", pd.DataFrame(self.rows))
        save_model(self.out_dir / "model.pt", model, self.spec)  # last: it means the run finished
        return self.rows[-1]


def _setup(spec: dict, threads: int, log):
    log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    torch.set_num_threads(max(1, int(threads)))
    tcfg = spec["train"]
    device = resolve_device(spec.get("device", "cpu"))
    val = validation_set(tcfg["val_size"], task_config(spec), tcfg["val_seed"]).to(device)
    return log, device, val


# Below this many steps compiling costs more than it saves (about 15-40 s of compiling
# against ~10-25 ms saved per step on a CPU; see benchmarks/train_speed.py).
COMPILE_MIN_STEPS = 2000


def should_compile(setting: str, steps: int, device: torch.device) -> bool:
    """``train.compile``: always, never, or auto (on a CPU, for runs long enough to pay)."""
    if setting == "auto":
        return device.type == "cpu" and steps >= COMPILE_MIN_STEPS
    return setting == "always"


def loss_function(model, compiled: bool, log):
    """tokens -> mean training loss of ``model``, compiled with torch.compile if asked.

    Compiling needs a C++ compiler; if the first compiled call fails, the eager
    function is used instead (and said so in the log).
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


def train(spec: dict, out_dir: str | Path, threads: int = 1, log=None) -> dict:
    """Train the model described by ``spec`` and write its outputs to ``out_dir``.

    Writes ``model.pt`` (config, spec and final state), ``train_log.csv`` (one row
    per validation step) and ``checkpoints/step{N:06d}.pt``. Every file appears
    under its final name only once it is complete. Returns the last log row.
    Batches are sampled on the CPU (the same numbers on every device) and moved.
    """
    log, device, val = _setup(spec, threads, log)
    tcfg, task, seed = spec["train"], task_config(spec), int(spec["seed"])
    model = build_model(model_config(spec), seed).to(device)
    if device.type == "cuda":
        model.attention_form = "sdpa"
    opt = torch.optim.AdamW(model.parameters(), lr=tcfg["lr"], weight_decay=tcfg["weight_decay"])
    batch_gen = generator(seed, "train-batches")
    compiled = should_compile(tcfg.get("compile", "auto"), int(tcfg["steps"]), device)
    loss_fn = loss_function(model, compiled, log)
    log(f"[{spec['variant']} seed {seed}] {model.n_params()} parameters, {tcfg['steps']} steps, "
        f"batch {tcfg['batch_size']}, device {device}, {torch.get_num_threads()} thread(s)"
        f"{', compiled' if compiled else ''}")
    start, train_loss = time.perf_counter(), None
    with atomic.atomic_dir(Path(out_dir) / "checkpoints") as ckpt_dir:
        run = _SeedRun(spec, out_dir, ckpt_dir, val, log)
        for step in range(run.steps + 1):
            run.at_step(step, model, train_loss, time.perf_counter() - start)
            if step == run.steps:
                break
            tokens = sample_sequences(tcfg["batch_size"], task, batch_gen).to(device)
            train_loss = train_step(loss_fn(tokens), opt)
    last = run.finish(model)
    log(f"[{run.name}] done in {time.perf_counter() - start:.1f}s")
    return last


class StackedModels(nn.Module):
    """k models of one config run as one: every weight gets a leading seed axis [k, ...].

    ``forward(tokens [k, B, T])`` gives logits [k, B, T, V]: model i on batch i, the
    same numbers as model i alone (the stacked weights are the optimised parameters).
    ``member(i)`` is model i as a plain model sharing no memory with the stack.
    """

    def __init__(self, models: list):
        super().__init__()
        params, buffers = stack_module_state(models)
        self.weights = nn.ParameterDict({k.replace(".", "/"): nn.Parameter(v.detach().clone())
                                         for k, v in params.items()})
        for name, value in buffers.items():
            self.register_buffer(name.replace(".", "/"), value.clone())
        template = copy.deepcopy(models[0]).to("meta")
        # Under vmap the fused kernel falls back to one call per seed; the explicit
        # softmax batches over seeds.
        template.attention_form = "explicit"
        self._template = (template,)  # a weightless module, not a submodule
        self.k = len(models)

    def _state(self) -> tuple[dict, dict]:
        params = {k.replace("/", "."): v for k, v in self.weights.items()}
        buffers = {k.replace("/", "."): v for k, v in self.named_buffers()}
        return params, buffers

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        params, buffers = self._state()
        run_one = lambda p, b, t: functional_call(self._template[0], (p, b), (t,))  # noqa: E731
        return vmap(run_one)(params, buffers, tokens)

    def member(self, i: int):
        params, buffers = self._state()
        model = AttentionOnlyTransformer(self._template[0].cfg)
        model.load_state_dict({k: v[i].detach().clone() for k, v in {**params, **buffers}.items()})
        return model.to(self.weights["W_E"].device)


def per_seed_loss(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """Each seed's mean loss [k] from stacked logits [k, B, T, V] and tokens [k, B, T].

    Their sum is the stacked objective: each seed's gradient is its own model's.
    """
    k = tokens.shape[0]
    return per_token_loss(logits.flatten(0, 1), tokens.flatten(0, 1)).view(k, -1).mean(1)


def train_stacked(specs: list[dict], out_dirs: list, threads: int = 1, log=None) -> list[dict]:
    """Train several seeds of one model spec as one stacked model; per-seed outputs as :func:`train`.

    Every seed starts from its own initial weights and sees its own batches, as in
    :func:`train`; AdamW acts element by element, so each seed follows the same
    trajectory as alone, up to floating-point summation order.
    """
    if len(specs) != len(out_dirs) or not specs:
        raise ValueError(f"{len(specs)} spec(s) for {len(out_dirs)} output folder(s)")
    strip = lambda s: {k: v for k, v in s.items() if k != "seed"}  # noqa: E731
    if any(strip(s) != strip(specs[0]) for s in specs):
        raise ValueError("stacked training needs specs that differ only in their seed: "
                         f"{[s['variant'] for s in specs]}")
    log, device, val = _setup(specs[0], threads, log)
    tcfg, task = specs[0]["train"], task_config(specs[0])
    seeds = [int(s["seed"]) for s in specs]
    stack = StackedModels([build_model(model_config(specs[0]), s) for s in seeds]).to(device)
    opt = torch.optim.AdamW(stack.parameters(), lr=tcfg["lr"], weight_decay=tcfg["weight_decay"])
    gens = [generator(s, "train-batches") for s in seeds]
    log(f"[{specs[0]['variant']} seeds {seeds}] stacked, {tcfg['steps']} steps, batch "
        f"{tcfg['batch_size']} per seed, device {device}, {torch.get_num_threads()} thread(s)")
    start, losses = time.perf_counter(), None
    with contextlib.ExitStack() as exits:
        runs = [_SeedRun(spec, out, exits.enter_context(atomic.atomic_dir(Path(out) / "checkpoints")), val, log)
                for spec, out in zip(specs, out_dirs)]
        for step in range(runs[0].steps + 1):
            due = step in runs[0].to_save or step in runs[0].to_eval
            for i, run in enumerate(runs):
                if due:
                    run.at_step(step, stack.member(i), None if losses is None else losses[i],
                                time.perf_counter() - start)
            if step == runs[0].steps:
                break
            tokens = torch.stack([sample_sequences(tcfg["batch_size"], task, g) for g in gens]).to(device)
            per_seed = per_seed_loss(stack(tokens), tokens)
            train_step(per_seed.sum(), opt)
            losses = per_seed.detach()
    rows = [run.finish(stack.member(i)) for i, run in enumerate(runs)]
    log(f"[{specs[0]['variant']} seeds {seeds}] done in {time.perf_counter() - start:.1f}s")
    return rows


def save_model(path, model, spec: dict) -> None:
    payload = {"spec": spec, "model_config": model.cfg.to_dict(),
               "state_dict": {k: v.detach().cpu() for k, v in model.state_dict().items()},
               "torch_version": str(torch.__version__)}
    with atomic.atomic_path(path) as tmp:
        torch.save(payload, tmp)


def load_model(path, device: str | torch.device = "cpu"):
    """Rebuild a trained model from ``model.pt`` (or a checkpoint plus its ``model.pt``)."""
    from .model import ModelConfig

    payload = torch.load(path, map_location=device, weights_only=True)
    model = AttentionOnlyTransformer(ModelConfig.from_dict(payload["model_config"]))
    model.load_state_dict(payload["state_dict"])
    return model.to(device).eval(), payload["spec"]
