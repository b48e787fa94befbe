"""The resume state of a training run: the model, AdamW's moments, the batch generator and
the log rows saved every checkpoint in the run's ``.partial-<key>`` folder, so that a killed
job resumes bit for bit; a state that cannot be read is set aside and the newest readable
one used."""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from pathlib import Path

import torch

from .. import atomic
from .loading import CHECKPOINT_NAME, CHECKPOINTS
from .spec import Spec


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
        self.ckpt_dir = self.dir / CHECKPOINTS

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
        with atomic.atomic_dir(self.out_dir / CHECKPOINTS) as tmp:
            files = sorted(p for p in self.ckpt_dir.iterdir() if CHECKPOINT_NAME.match(p.name))
            for src in files + sorted(self.ckpt_dir.glob(".step*.pt.sha256")):
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
