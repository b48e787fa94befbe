"""Training loop: AdamW on fresh batches, periodic validation, checkpoints."""
from __future__ import annotations

import contextlib
import math
import sys
import time
from pathlib import Path

import pandas as pd
import torch

from .. import atomic, records
from .data import validation_set
from .loading import (MODEL_FILE, checkpoint_name, checkpoint_steps, load_reference, non_finite,
                      save_model)
from .metrics import evaluate
from .formats import NATS, declare_table
from .model import build_model, choose_attention
from .seeding import generator
from .compile_policy import compile_lock, loss_function, should_compile
from .resume import ResumeState, adam_moments, restore_adam, resume_key
from .spec import Spec
from .task_kinds import training_tokens
from .clamping import (NEEDS_REFERENCE, UNCLAMPED, FrozenLayer, clamp_for, clamped_loss_function,
                       evaluate_clamped)


class TrainingDiverged(RuntimeError):
    """The training loss became NaN or infinite."""


def eval_steps(total: int, every: int, n_checkpoints: int = 0) -> list[int]:
    """Validation steps: 0, every ``every`` steps, every checkpoint of ``n_checkpoints``
    (:func:`checkpoint_steps`: dense early, where the loss moves fastest, as a curve on a
    logarithmic step axis needs) and the last step."""
    checkpoints = checkpoint_steps(total, n_checkpoints) if n_checkpoints else []
    return sorted(set(range(0, total + 1, every)) | set(checkpoints) | {total})


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


TRAIN_LOG = declare_table(
    "train_log", ["variant", "seed", "step", "train_loss", "val_loss_all", "val_loss_pred",
                  "val_acc_pred", "elapsed_s", "device", "torch"],
    keys=["step"], more=r"val_loss_pos\d+|val_(loss_all|loss_pred|acc_pred)_unclamped",
    units={r"(train|val)_loss\w*": NATS})


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


def train_step(loss: torch.Tensor, opt: torch.optim.Optimizer,
               frozen: FrozenLayer | None = None) -> torch.Tensor:
    """One AdamW step on ``loss``, the ``frozen`` layer's weights kept as they are;
    returns the detached loss (no host sync)."""
    opt.zero_grad(set_to_none=True)
    loss.backward()
    if frozen is not None:
        frozen.before_update()
    opt.step()
    if frozen is not None:
        frozen.after_update()
    return loss.detach()


class _SeedRun:
    """Bookkeeping of one model's training: checkpoints, validation log, resume state, final files."""

    def __init__(self, spec: Spec, out_dir, val: torch.Tensor, log, mode: str):
        self.spec, self.out_dir, self.val, self.log = spec, Path(out_dir), val, log
        self.steps, self.task, self.name = spec.train.steps, spec.task, spec.name
        self.to_eval = set(eval_steps(self.steps, spec.train.eval_every, spec.train.n_checkpoints))
        self.to_save = set(checkpoint_steps(self.steps, spec.train.n_checkpoints))
        self.rows: list[dict] = []
        self.resume = ResumeState(out_dir, resume_key(spec, mode))
        self.clamp = None  # a clamped run's Clamp: validated with and without it
        self.reference = None  # the trained reference's model.pt, named in model.pt
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
            with atomic.atomic_path(self.resume.ckpt_dir / checkpoint_name(step)) as tmp:
                torch.save({"step": step, "state_dict": model.state_dict()}, tmp)
        if step not in self.to_eval:
            return
        loss = float("nan") if train_loss is None else train_loss.item()
        was_training = model.training
        model.eval()
        metrics = evaluate(model, self.val)
        unclamped = ""
        if self.clamp is not None:  # the clamped model's metrics; its own weights' alongside
            alone, metrics = metrics, evaluate_clamped(model, self.clamp, self.val)
            unclamped = f"  unclamped pred {alone['loss_pred']:.4f} acc {alone['acc_pred']:.3f}"
        model.train(was_training)
        row = _log_row(self.spec, step, loss, metrics, elapsed, self.val.tokens.device)
        if self.clamp is not None:
            row.update({column: alone[key] for key, column in UNCLAMPED.items()})
        self.rows.append(row)
        eta = elapsed / max(step, 1) * (self.steps - step)
        self.log(f"[{self.name}] step {step:>6}/{self.steps}  train {loss:.4f}  "
                 f"val all {metrics['loss_all']:.4f}  pred {metrics['loss_pred']:.4f}  "
                 f"acc {metrics['acc_pred']:.3f}{unclamped}  {elapsed:6.1f}s  eta {eta:6.1f}s")

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
        save_model(self.out_dir / MODEL_FILE, model, self.spec, reference=self.reference)
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


def train(spec: Spec | dict, out_dir: str | Path, threads: int = 1, log=None,
          reference: str | Path | None = None) -> dict:
    """Train the model described by ``spec`` and write its outputs to ``out_dir``.

    Writes ``model.pt`` (config, spec and final state), ``train_log.csv`` (one row
    per validation step) and ``checkpoints/step{N:06d}.pt``. Every file appears
    under its final name only once it is complete. Returns the last log row.
    Batches are sampled on the CPU (the same numbers on every device) and moved.
    ``spec``: a :class:`Spec`, or its JSON document. ``reference``: the trained model.pt
    that a clamp to a trained reference (``train.intervention``, :mod:`.clamping`) takes
    its activations from; no other spec takes one.
    """
    spec = Spec.of(spec)
    setting = spec.train.intervention
    needs = setting is not None and setting.needs_reference
    if needs != (reference is not None):
        raise ValueError(NEEDS_REFERENCE if needs else
                         f"--reference {reference}: {spec.name} is trained without a clamp to a "
                         "trained model (train.intervention), so it takes no reference; leave it out")
    log, device, val = _setup(spec, threads, log)
    tcfg, task, seed = spec.train, spec.task, spec.seed
    model = build_model(spec.model, seed).to(device)
    mode = "single"
    clamp = frozen = None
    if setting is not None and setting.kind == "clamp":
        ref = load_reference(reference, spec).to(device) if needs else None
        clamp = clamp_for(setting, spec.model, ref)
        if needs:  # a changed reference file never resumes a run clamped to another
            mode = f"single reference {records.sha256(reference)}"
    elif setting is not None:
        frozen = FrozenLayer(model, 0)
    attention = choose_attention(model, device, log)
    opt = optimizer(model.parameters(), tcfg.lr, tcfg.weight_decay)
    batch_gen = generator(seed, "train-batches")
    # a clamp holds new activations for every batch: its step runs eagerly
    compiled = should_compile(tcfg.compile, tcfg.steps, device) and clamp is None
    loss_fn = clamped_loss_function(model, clamp) if clamp else loss_function(model, compiled, log)
    log(f"[{spec.name}] {model.n_params()} parameters, {tcfg.steps} steps, "
        f"batch {tcfg.batch_size}, device {device}, {torch.get_num_threads()} thread(s), "
        f"{attention} attention{', compiled' if compiled else ''}"
        + (f", {setting.label}" + (f" ({reference})" if needs else "") if setting else ""))
    run = _SeedRun(spec, out_dir, val, log, mode=mode)
    run.clamp, run.reference = clamp, reference if needs else None
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
        tokens = training_tokens(task, tcfg.batch_size, batch_gen).to(device)
        with compile_lock(spec, device, log) if compiled and step == first else contextlib.nullcontext():
            train_loss = train_step(loss_fn(tokens), opt, frozen)
        first_bad = first_non_finite(first_bad, train_loss, step)
    last = run.finish(model)
    log(f"[{run.name}] done in {time.perf_counter() - start:.1f}s"
        + (f" (resumed at step {first})" if saved else ""))
    return last
