"""Training loop: AdamW on fresh batches, periodic validation, checkpoints."""
from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import math
import os
import re
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from torch import nn
from torch.func import functional_call, stack_module_state, vmap

from .. import atomic
from .data import sample_sequences, validation_set
from .causal_attention import inductor_cache_dir
from .loading import non_finite
from .metrics import evaluate, mean_loss, per_token_loss
from .model import AttentionOnlyTransformer, build_model, choose_attention
from .seeding import generator
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


def resume_key(spec: Spec, mode: str) -> str:
    """A short hash of what a run's numbers depend on: the spec, how it is trained, torch.

    Resume state is kept under this key, so a changed spec never resumes from it.
    """
    text = json.dumps({"spec": spec.document, "mode": mode, "torch": str(torch.__version__)}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


_STATE = re.compile(r"^state-step(\d+)\.pt$")
STATE_PARTS = ("step", "model", "adam", "batch_rng", "rows", "elapsed")


class ResumeState:
    """One model's training in progress, in ``{out_dir}/.partial-{key}/``.

    Holds ``checkpoints/`` as they are written and ``state-step{N}.pt`` files (model,
    AdamW moments, batch-generator state, step, log rows so far), each written
    atomically. It is not a declared output, so it survives Snakemake deleting the
    outputs of a killed job; a changed spec has another key; it is removed once the
    model is published.
    """

    def __init__(self, out_dir, key: str):
        self.out_dir = Path(out_dir)
        self.dir = self.out_dir / f".partial-{key}"
        self.ckpt_dir = self.dir / "checkpoints"

    def prepare(self) -> list[str]:
        """Remove what killed or changed runs left behind; returns what was removed."""
        removed = []
        stale = list(self.out_dir.glob(".tmp-*"))
        stale += [p for p in self.out_dir.glob(".partial-*") if p != self.dir]
        stale += list(self.dir.glob(".tmp-*")) + list(self.ckpt_dir.glob(".tmp-*"))
        for path in stale:
            shutil.rmtree(path) if path.is_dir() else path.unlink()
            removed.append(str(path))
        self.ckpt_dir.mkdir(parents=True, exist_ok=True)
        return removed

    def steps(self) -> list[int]:
        """Steps with a complete saved state, ascending."""
        if not self.dir.is_dir():
            return []
        return sorted(int(m.group(1)) for p in self.dir.iterdir() if (m := _STATE.match(p.name)))

    def path(self, step: int) -> Path:
        return self.dir / f"state-step{step:06d}.pt"

    def save(self, step: int, state: dict) -> None:
        with atomic.atomic_path(self.path(step)) as tmp:
            torch.save({"step": step, **state}, tmp)

    def load(self, step: int) -> dict:
        """The state saved at ``step``; :class:`~inductionlab.core.loading.BadInput` naming
        the file if it cannot be read or lacks a part."""
        from .loading import _DAMAGED, BadInput

        path = self.path(step)
        try:
            state = torch.load(path, map_location="cpu", weights_only=True)
        except _DAMAGED as err:
            raise BadInput(path, f"cannot be read ({type(err).__name__}: {str(err)[:120]})",
                           hint=None) from None
        missing = [k for k in STATE_PARTS if not isinstance(state, dict) or k not in state]
        if missing:
            raise BadInput(path, f"lacks {', '.join(missing)}", hint=None)
        return state

    def set_aside(self, step: int) -> Path:
        """Rename the state at ``step`` out of the way (kept for a look, never resumed from)."""
        target = self.dir / f"damaged-{self.path(step).name}"
        os.replace(self.path(step), target)
        return target

    def keep_from(self, step: int) -> None:
        """Delete saved states older than ``step``."""
        for s in self.steps():
            if s < step:
                self.path(s).unlink()

    def publish_checkpoints(self) -> None:
        """``checkpoints/`` into place as hard links (copies where links fail); the state stays."""
        with atomic.atomic_dir(self.out_dir / "checkpoints") as tmp:
            for src in sorted(self.ckpt_dir.glob("step*.pt")) + sorted(self.ckpt_dir.glob(".step*.pt.sha256")):
                try:
                    os.link(src, tmp / src.name)
                except OSError:
                    shutil.copy2(src, tmp / src.name)

    def remove(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def adam_moments(opt: torch.optim.Optimizer, named_params, index: int | None = None) -> dict:
    """AdamW's state of every parameter by name (member ``index`` of stacked parameters)."""
    out = {}
    for name, param in named_params:
        state = opt.state.get(param)
        if state:
            out[name] = {k: (v if k == "step" or index is None else v[index]).detach().cpu().clone()
                         for k, v in state.items()}
    return out


def restore_adam(opt: torch.optim.Optimizer, named_params, moments: list[dict]) -> None:
    """Set AdamW's state from :func:`adam_moments` of one model, or of each stacked member."""
    for name, param in named_params:
        parts = [m[name] for m in moments if name in m]
        if not parts:
            continue
        state = {"step": parts[0]["step"].to(param.device, torch.float32).clone()}
        for key in parts[0]:
            if key != "step":
                # a plain model's moments as they are; stacked members' along a new seed axis
                value = parts[0][key] if param.dim() == parts[0][key].dim() \
                    else torch.stack([p[key] for p in parts])
                state[key] = value.to(param.device, param.dtype).clone()
        opt.state[param] = state


class _SeedRun:
    """Bookkeeping of one model's training: checkpoints, validation log, resume state, final files."""

    def __init__(self, spec: Spec, out_dir, val: torch.Tensor, log, mode: str):
        self.spec, self.out_dir, self.val, self.log = spec, Path(out_dir), val, log
        self.steps, self.task, self.name = spec.train.steps, spec.task, spec.name
        self.to_eval = set(eval_steps(self.steps, spec.train.eval_every))
        self.to_save = set(checkpoint_steps(self.steps, spec.train.n_checkpoints))
        self.rows: list[dict] = []
        self.resume = ResumeState(out_dir, resume_key(spec, mode))
        for path in self.resume.prepare():
            log(f"[{self.name}] removed {path}, left by a killed or changed run")

    def due(self, step: int) -> bool:
        return step in self.to_save or step in self.to_eval

    def check_finite(self, first_bad: torch.Tensor) -> None:
        """Stop if any training loss so far was non-finite (one host sync, at due steps only)."""
        bad = int(first_bad)
        if bad >= 0:
            self.resume.remove()
            raise TrainingDiverged(
                f"[{self.name}] the training loss was first non-finite at step {bad} "
                f"(lr={self.spec.train.lr}, weight_decay={self.spec.train.weight_decay}); "
                "nothing was published. Lower train.lr or check the variant's spec."
            )

    def at_step(self, step: int, model, train_loss: torch.Tensor | None, elapsed: float) -> None:
        """Checkpoint and validate ``model`` as due at ``step`` (before that step's update)."""
        if step in self.to_save:
            with atomic.atomic_path(self.resume.ckpt_dir / f"step{step:06d}.pt") as tmp:
                torch.save({"step": step, "state_dict": model.state_dict()}, tmp)
        if step not in self.to_eval:
            return
        loss = float("nan") if train_loss is None else train_loss.item()
        was_training = model.training
        model.eval()
        metrics = evaluate(model, self.val, self.task)
        model.train(was_training)
        self.rows.append(_log_row(self.spec, step, loss, metrics, elapsed, self.val.device))
        eta = elapsed / max(step, 1) * (self.steps - step)
        self.log(f"[{self.name}] step {step:>6}/{self.steps}  train {loss:.4f}  "
                 f"val all {metrics['loss_all']:.4f}  pred {metrics['loss_pred']:.4f}  "
                 f"acc {metrics['acc_pred']:.3f}  {elapsed:6.1f}s  eta {eta:6.1f}s")

    def save_state(self, step: int, model, moments: dict, batch_gen, elapsed: float) -> None:
        self.resume.save(step, {"model": model.state_dict(), "adam": moments,
                                "batch_rng": batch_gen.get_state(), "rows": self.rows,
                                "elapsed": elapsed})

    def readable(self, step: int) -> dict | None:
        """The saved state at ``step``, or None if it is damaged: then it is set aside,
        saying so, and the caller resumes from an earlier state (or from step 0)."""
        from .loading import BadInput

        try:
            return self.resume.load(step)
        except BadInput as err:
            aside = self.resume.set_aside(step)
            self.log(f"[{self.name}] {err}; set aside as {aside.name}, resuming from the newest "
                     "readable earlier state, or from step 0 if there is none")
            return None

    def newest(self, steps: list[int]) -> tuple[int, dict | None]:
        """The newest readable saved state among ``steps``: ``(step, state)``, or
        ``(0, None)`` when none is readable."""
        for step in sorted(steps, reverse=True):
            state = self.readable(step)
            if state is not None:
                return step, state
        if steps:
            self.log(f"[{self.name}] no readable saved state: training from step 0")
        return 0, None

    def restore(self, step: int, state: dict) -> dict:
        """Resume from ``state``, saved at ``step``: its log rows become this run's."""
        self.rows = list(state["rows"])
        self.log(f"[{self.name}] resumed from step {step} of {self.steps} "
                 f"(state in {self.resume.dir})")
        return state

    def finish(self, model) -> dict:
        """Publish checkpoints, log and model (last: it means the run finished), if all finite."""
        bad = non_finite(model.state_dict())
        final_val = self.rows[-1]["val_loss_all"]
        if bad or not math.isfinite(final_val):
            self.resume.remove()
            raise TrainingDiverged(
                f"[{self.name}] the final " + (f"weights {', '.join(bad)} are" if bad else
                                               f"validation loss is {final_val} and is")
                + f" not finite although every training loss was (lr={self.spec.train.lr}); "
                "nothing was published. Lower train.lr.")
        self.resume.publish_checkpoints()
        atomic.write_csv(self.out_dir / "train_log.csv", pd.DataFrame(self.rows))
        save_model(self.out_dir / "model.pt", model, self.spec)
        self.resume.remove()
        return self.rows[-1]


def first_non_finite(first_bad: torch.Tensor, loss: torch.Tensor, step: int) -> torch.Tensor:
    """``first_bad`` (-1: none yet), set to ``step`` where ``loss`` is the first non-finite one.

    Works element-wise for stacked losses; stays on the loss's device (no host sync).
    """
    return torch.where((first_bad < 0) & ~torch.isfinite(loss), step, first_bad)


def _setup(spec: Spec, threads: int, log):
    log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    torch.set_num_threads(max(1, int(threads)))
    device = resolve_device(spec.device)
    val = validation_set(spec.train.val_size, spec.task, spec.train.val_seed).to(device)
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


def train(spec: Spec | dict, out_dir: str | Path, threads: int = 1, log=None) -> dict:
    """Train the model described by ``spec`` and write its outputs to ``out_dir``.

    Writes ``model.pt`` (config, spec and final state), ``train_log.csv`` (one row
    per validation step) and ``checkpoints/step{N:06d}.pt``. Every file appears
    under its final name only once it is complete. Returns the last log row.
    Batches are sampled on the CPU (the same numbers on every device) and moved.
    ``spec``: a :class:`Spec`, or its JSON document.
    """
    spec = Spec.of(spec)
    log, device, val = _setup(spec, threads, log)
    tcfg, task, seed = spec.train, spec.task, spec.seed
    model = build_model(spec.model, seed).to(device)
    attention = choose_attention(model, device, log)
    opt = optimizer(model.parameters(), tcfg.lr, tcfg.weight_decay)
    batch_gen = generator(seed, "train-batches")
    compiled = should_compile(tcfg.compile, tcfg.steps, device)
    loss_fn = loss_function(model, compiled, log)
    log(f"[{spec.name}] {model.n_params()} parameters, {tcfg.steps} steps, "
        f"batch {tcfg.batch_size}, device {device}, {torch.get_num_threads()} thread(s), "
        f"{attention} attention{', compiled' if compiled else ''}")
    run = _SeedRun(spec, out_dir, val, log, mode="single")
    elapsed0 = 0.0
    first, state = run.newest(run.resume.steps())
    saved = state is not None
    if saved:
        run.restore(first, state)
        model.load_state_dict(state["model"])
        restore_adam(opt, model.named_parameters(), [state["adam"]])
        batch_gen.set_state(state["batch_rng"])
        elapsed0 = state["elapsed"]
    start, train_loss = time.perf_counter() - elapsed0, None
    first_bad = torch.full((), -1, dtype=torch.long, device=device)
    for step in range(first, run.steps + 1):
        if run.due(step) and not (saved and step == first):
            run.check_finite(first_bad)
            elapsed = time.perf_counter() - start
            run.at_step(step, model, train_loss, elapsed)
            run.save_state(step, model, adam_moments(opt, model.named_parameters()), batch_gen, elapsed)
            run.resume.keep_from(step)
        if step == run.steps:
            break
        tokens = sample_sequences(tcfg.batch_size, task, batch_gen).to(device)
        with compile_lock(spec, device, log) if compiled and step == first else contextlib.nullcontext():
            train_loss = train_step(loss_fn(tokens), opt)
        first_bad = first_non_finite(first_bad, train_loss, step)
    last = run.finish(model)
    log(f"[{run.name}] done in {time.perf_counter() - start:.1f}s"
        + (f" (resumed at step {first})" if saved else ""))
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

    def named_weights(self):
        """``(name, stacked parameter)`` with the plain model's parameter names."""
        return [(k.replace("/", "."), v) for k, v in self.weights.items()]

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


def train_stacked(specs: list, out_dirs: list, threads: int = 1, log=None) -> list[dict]:
    """Train several seeds of one model spec as one stacked model; per-seed outputs as :func:`train`.

    Every seed starts from its own initial weights and sees its own batches, as in
    :func:`train`; AdamW acts element by element, so each seed follows the same
    trajectory as alone, up to floating-point summation order.
    """
    if len(specs) != len(out_dirs) or not specs:
        raise ValueError(f"{len(specs)} spec(s) for {len(out_dirs)} output folder(s)")
    specs = [Spec.of(s) for s in specs]
    if any(s.without_seed() != specs[0].without_seed() for s in specs):
        raise ValueError("stacked training needs specs that differ only in their seed: "
                         f"{[s.variant for s in specs]}")
    log, device, val = _setup(specs[0], threads, log)
    tcfg, task = specs[0].train, specs[0].task
    seeds = [s.seed for s in specs]
    mode = f"stacked {seeds}"
    runs = [_SeedRun(spec, out, val, log, mode=mode) for spec, out in zip(specs, out_dirs)]
    # Every member saves its state at the same steps and deletes older ones only after
    # all have saved, so the newest step saved by all of them is always complete.
    common = sorted(set.intersection(*(set(run.resume.steps()) for run in runs)))
    first, states = 0, None
    for step in reversed(common):  # the newest step whose state every member can read
        found = [run.readable(step) for run in runs]
        if all(st is not None for st in found):
            first, states = step, [run.restore(step, st) for run, st in zip(runs, found)]
            break
    members = [build_model(specs[0].model, s) for s in seeds]
    for model, state in zip(members, states or []):
        model.load_state_dict(state["model"])
    stack = StackedModels(members).to(device)
    opt = optimizer(stack.parameters(), tcfg.lr, tcfg.weight_decay)
    gens = [generator(s, "train-batches") for s in seeds]
    if states:
        restore_adam(opt, stack.named_weights(), [st["adam"] for st in states])
        for gen, state in zip(gens, states):
            gen.set_state(state["batch_rng"])
    log(f"[{specs[0].variant} seeds {seeds}] stacked, {tcfg.steps} steps, batch "
        f"{tcfg.batch_size} per seed, device {device}, {torch.get_num_threads()} thread(s)")
    start = time.perf_counter() - (states[0]["elapsed"] if states else 0.0)
    losses = None
    first_bad = torch.full((len(seeds),), -1, dtype=torch.long, device=device)
    for step in range(first, runs[0].steps + 1):
        if runs[0].due(step) and not (states and step == first):
            elapsed = time.perf_counter() - start
            for i, run in enumerate(runs):
                run.check_finite(first_bad[i])
                member = stack.member(i)
                run.at_step(step, member, None if losses is None else losses[i], elapsed)
                run.save_state(step, member, adam_moments(opt, stack.named_weights(), i),
                               gens[i], elapsed)
            for run in runs:
                run.resume.keep_from(step)
        if step == runs[0].steps:
            break
        tokens = torch.stack([sample_sequences(tcfg.batch_size, task, g) for g in gens]).to(device)
        per_seed = per_seed_loss(stack(tokens), tokens)
        train_step(per_seed.sum(), opt)
        losses = per_seed.detach()
        first_bad = first_non_finite(first_bad, losses, step)
    rows = [run.finish(stack.member(i)) for i, run in enumerate(runs)]
    log(f"[{specs[0].variant} seeds {seeds}] done in {time.perf_counter() - start:.1f}s"
        + (f" (resumed at step {first})" if states else ""))
    return rows


def save_model(path, model, spec: Spec | dict) -> None:
    payload = {"spec": Spec.of(spec).to_dict(), "model_config": model.cfg.to_dict(),
               "state_dict": {k: v.detach().cpu() for k, v in model.state_dict().items()},
               "torch_version": str(torch.__version__)}
    with atomic.atomic_path(path) as tmp:
        torch.save(payload, tmp)
