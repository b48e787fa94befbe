"""Reading the project's files: models, checkpoints, weights, tables, settings.

Every reader checks what it reads and raises :class:`BadInput` naming the file and
what is wrong with it (missing, a directory, empty, truncated, of another kind, a
checkpoint where a model is expected, non-finite weights), so that a command given a
bad file says so in one line instead of a traceback.
"""
from __future__ import annotations

import json
import os
import pickle
import re
import stat
import zipfile
from pathlib import Path

from .. import records

REBUILD = "if the workflow wrote it, delete it and rerun snakemake to rebuild it"


# The files a training run writes in its results/{model}/seed{N}/ folder: the model, and one
# checkpoint per scheduled step in checkpoints/ (named once here, for training, resuming and
# the dynamics stage alike).
MODEL_FILE = "model.pt"
CHECKPOINTS = "checkpoints"
CHECKPOINT_NAME = re.compile(r"^step(\d+)\.pt$")


def checkpoint_name(step: int) -> str:
    """The file name of the checkpoint at ``step``: step000100.pt."""
    return f"step{step:06d}.pt"


def checkpoint_steps(total: int, n: int = 40) -> list[int]:
    """About ``n`` steps: half log-spaced in [1, total], half evenly spaced in [0, total].

    Always includes 0 and ``total``; dense early (where phase changes happen) and
    regular later.
    """
    import numpy as np

    if total < 1:
        return [0]
    n_log = n // 2
    log = np.geomspace(1, total, max(n_log, 2))
    lin = np.linspace(0, total, max(n - n_log, 2))
    steps = set(np.round(np.concatenate([log, lin])).astype(int).tolist()) | {0, total}
    return sorted(s for s in steps if 0 <= s <= total)


def retrain(model_pt) -> str:
    """The remedy for a damaged or missing training output: retrain its model."""
    return (f"delete {model_pt} and rerun snakemake to retrain the model; its checkpoints and "
            "log are rewritten with it")


class BadInput(ValueError):
    """An input file is missing, damaged or of the wrong kind; the message names it."""

    def __init__(self, path, problem: str, hint: str | None = REBUILD):
        self.path, self.problem = Path(path), problem
        super().__init__(f"{path}: {problem}" + (f" ({hint})" if hint else ""))


def check_file(path, kind: str) -> Path:
    """``path`` as a Path, if it is a non-empty regular file that is the one its record
    describes (:mod:`inductionlab.records`); else :class:`BadInput`."""
    path = Path(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise BadInput(path, f"no such file (expected {kind})", hint=None) from None
    except OSError as err:
        raise BadInput(path, f"cannot be read ({err.strerror}; expected {kind})", hint=None) from None
    if stat.S_ISDIR(info.st_mode):
        raise BadInput(path, f"is a directory, not {kind}", hint=None)
    if not stat.S_ISREG(info.st_mode):
        raise BadInput(path, f"is not a regular file (a device, FIFO or socket), so not {kind}",
                       hint=None)
    if info.st_size == 0:
        raise BadInput(path, f"is empty (expected {kind})")
    _checked(path, records.check, kind)
    return path


def _checked(path, check, *args):
    """``check(path, *args)`` with its problem as :class:`BadInput` naming ``path``."""
    try:
        return check(path, *args)
    except records.FileChanged as err:
        raise BadInput(path, str(err), hint=REBUILD if path.name != "spec.json" else
                       "delete it and rerun snakemake, which writes it from config.yaml again; "
                       "to change a model, edit config.yaml") from None
    except (records.Mismatch, records.SpecFileProblem) as err:  # the message says what to do
        raise BadInput(path, str(err), hint=None) from None
    except records.RecordProblem as err:
        raise BadInput(path, str(err), hint=REBUILD) from None


# Raised by torch.load / np.load / json on a truncated or foreign file.
_DAMAGED = (EOFError, OSError, RuntimeError, pickle.UnpicklingError, zipfile.BadZipFile,
            ValueError, KeyError, IndexError, TypeError, AttributeError, UnicodeDecodeError)


def _torch_payload(path, kind: str) -> dict:
    import torch

    path = check_file(path, kind)
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except _DAMAGED as err:
        raise BadInput(path, f"cannot be read as {kind}, it is truncated or not a torch file "
                       f"({type(err).__name__})") from None
    if not isinstance(payload, dict) or "state_dict" not in payload:
        raise BadInput(path, f"is a torch file but not {kind}")
    return payload


def non_finite(tensors: dict) -> list[str]:
    """Names of the tensors or arrays in ``tensors`` that hold a NaN or an infinity."""
    import numpy as np

    bad = []
    for name, value in tensors.items():
        array = value.detach().cpu().numpy() if hasattr(value, "detach") else np.asarray(value)
        if array.dtype.kind == "f" and not np.isfinite(array).all():
            bad.append(name)
    return bad


def _refuse_non_finite(path, tensors: dict) -> None:
    bad = non_finite(tensors)
    if bad:
        raise BadInput(path, f"weight(s) {', '.join(bad)} hold NaN or infinite values; "
                       "the model diverged or the file is corrupt", hint=None)


def load_model(path, device="cpu", clamped: bool = True):
    """``(model, spec)`` from a ``model.pt``: eval mode, on ``device``, weights checked finite;
    ``spec`` the :class:`~inductionlab.core.spec.Spec` it was trained from. Its attention
    is the explicit form, as in a model rebuilt from ``weights.npz``. A model trained
    under a clamp (``train.intervention``) runs under the same clamp (``model.clamp``),
    as it trained, unless ``clamped`` is False: then its own weights alone."""
    from .model import AttentionOnlyTransformer, ModelConfig
    from .spec import Spec

    payload = _torch_payload(path, "a model.pt")
    if "model_config" not in payload:
        hint = " (a training checkpoint; give its model.pt)" if "step" in payload else ""
        raise BadInput(path, f"is not a model.pt: it has no model config{hint}", hint=None)
    try:
        spec = Spec.of(payload.get("spec"))
    except (ValueError, TypeError, KeyError, AttributeError) as err:
        raise BadInput(path, f"its spec is not valid ({err})") from None
    _checked(path, records.check_content, records.spec_identity(spec.to_dict()))
    _refuse_non_finite(path, payload["state_dict"])
    try:
        model = AttentionOnlyTransformer(ModelConfig.from_dict(payload["model_config"]))
        model.load_state_dict(payload["state_dict"])
    except (RuntimeError, KeyError, TypeError, ValueError) as err:
        raise BadInput(path, f"its weights do not fit its model config ({str(err)[:200]})") from None
    if clamped:
        model.clamp = training_clamp(path, payload, spec, device)
    return model.to(device).eval(), spec


def training_clamp(path, payload: dict, spec, device="cpu"):
    """The :class:`~inductionlab.core.clamping.Clamp` the model in ``path`` (its
    ``payload``) trained under, or None: a clamp to a trained reference reads the model.pt
    its training named (by its path from ``path``'s folder), checked to be that file by
    its SHA-256."""
    setting = spec.train.intervention
    if setting is None or setting.kind != "clamp":
        return None
    from .clamping import clamp_for

    reference = None
    if setting.needs_reference:
        named = payload.get("reference")
        if not isinstance(named, dict) or not {"path", "sha256"} <= set(named):
            raise BadInput(path, f"was trained with {setting.label} but does not name the "
                           "reference it trained with", hint=retrain(path))
        where = Path(path).parent / str(named["path"])
        if not where.is_file():
            raise BadInput(path, f"its clamp's reference {where} is missing: the model runs "
                           "under the activations of that file", hint=retrain(path))
        if records.sha256(where) != named["sha256"]:
            raise BadInput(path, f"its clamp's reference {where} is not the file it trained "
                           "with (its SHA-256 differs)", hint=retrain(path))
        reference = load_reference(where, spec).to(device)
    return clamp_for(setting, spec.model, reference)


def load_reference(path, spec):
    """The trained reference of ``spec`` from its ``model.pt``: the same model (shape,
    vocabulary, context length, positions, smear) and the same seed, trained without an
    intervention; :class:`~inductionlab.core.loading.BadInput` in one line otherwise."""
    with records.another_model():  # another model's file, read on purpose
        reference, trained = load_model(path, clamped=False)
    if trained.model != spec.model:
        mine, theirs = spec.model.to_dict(), trained.model.to_dict()
        diff = ", ".join(f"{k}={theirs[k]!r} (not {mine[k]!r})" for k in mine if mine[k] != theirs[k])
        raise BadInput(path, f"is another model than {spec.name}'s ({diff}); give the "
                       "reference model.pt of the same model and seed", hint=None)
    if trained.seed != spec.seed:
        raise BadInput(path, f"is seed {trained.seed}, not seed {spec.seed}; give the "
                       "reference model.pt of the same seed", hint=None)
    if trained.train.intervention is not None:
        raise BadInput(path, f"was trained with an intervention ({trained.train.intervention.label}); "
                       "a reference is a model trained without one", hint=None)
    for p in reference.parameters():
        p.requires_grad_(False)
    return reference


def read_spec(path):
    """The parsed ``spec.json`` at ``path`` (a :class:`~inductionlab.core.spec.Spec`)."""
    from .spec import Spec

    try:
        spec = Spec.from_dict(read_json(path, "a spec.json"))
    except BadInput:
        raise
    except (ValueError, TypeError, KeyError, AttributeError) as err:
        raise BadInput(path, f"not a valid spec ({err})") from None
    _checked(Path(path), records.check_content, records.spec_identity(spec.to_dict()))
    return spec


def run_specs(paths) -> dict:
    """This run's models from their ``spec.json`` files (each read and checked as
    :func:`read_spec` does): ``(model, seed) -> (spec digest, path)``. Two files of one
    model and seed are :class:`BadInput`."""
    found = {}
    for path in map(Path, paths):
        identity = records.spec_identity(read_spec(path).to_dict())
        key = (identity.model, identity.seed)
        if key in found:
            raise BadInput(path, f"is the spec of {identity.words()}, as {found[key][1]} is; "
                           "give each model's spec.json once", hint=None)
        found[key] = (identity.spec, path)
    return found


def _models_words(pairs) -> str:
    """'one_layer seed 0, two_layer seeds 0, 1' of ``(model, seed)`` pairs."""
    seeds = {}
    for model, seed in sorted(pairs):
        seeds.setdefault(model, []).append(seed)
    return ", ".join(f"{m} seed{'s' if len(s) > 1 else ''} {', '.join(map(str, s))}"
                     for m, s in seeds.items())


def check_stacked_tables(paths, frames, specs: dict) -> None:
    """The stacked tables ``paths`` (read as ``frames``) are this run's: every model their
    records cover was made from this run's spec of it (``specs``, :func:`run_specs`), their
    rows name only this run's models, and together they hold every one of them (a
    per-model table, or a table of a run with fewer seeds, does not). Else
    :class:`BadInput` naming the table, or the tables, and what differs."""
    held = set()
    for path, frame in zip(map(Path, paths), frames):
        record = _checked(path, records.read_record)
        if record is not None:
            _checked(path, records.check_run, record.covers, specs)
        if not {"variant", "seed"} <= set(frame.columns):
            continue
        named = frame[["variant", "seed"]].dropna().drop_duplicates()
        try:
            rows = {(str(v), int(s)) for v, s in named.itertuples(index=False)}
        except (TypeError, ValueError):
            raise BadInput(path, "has a seed that is not a whole number, so it is not a stacked "
                           "table") from None
        foreign = rows - set(specs)
        if foreign:
            raise BadInput(path, f"holds {_models_words(foreign)}, not a model of this run (the "
                           f"spec.json files given are of {_models_words(specs)})", hint=REBUILD)
        held |= rows
    missing = set(specs) - held
    if missing:
        where = Path(paths[0]) if len(paths) == 1 else Path(f"--tables ({len(paths)} files)")
        raise BadInput(where, f"hold{'s' if len(paths) == 1 else ''} rows of "
                       f"{_models_words(held) or 'no model'} but none of {_models_words(missing)}, "
                       f"which this run has (by its spec.json files); give the stacked tables "
                       f"of every model, results/tables/<name>.csv", hint=None)


def load_checkpoint(model, path, step: int | None = None) -> int:
    """Load checkpoint ``path`` into ``model`` in place; returns its step.

    ``step``: the step its name says; a checkpoint holding another step is refused.
    """
    try:
        payload = _torch_payload(path, "a training checkpoint")
    except BadInput as err:
        if err.path.exists() and err.path.stat().st_size:  # damaged, not missing or a folder
            raise BadInput(path, err.problem, hint=retrain(Path(path).parent.parent / MODEL_FILE)) from None
        raise
    if "step" not in payload:
        raise BadInput(path, "is not a training checkpoint (no step)")
    if step is not None and int(payload["step"]) != step:
        raise BadInput(path, f"holds step {payload['step']}, its name says {step}")
    _refuse_non_finite(path, payload["state_dict"])
    try:
        model.load_state_dict(payload["state_dict"])
    except RuntimeError as err:
        raise BadInput(path, f"its weights do not fit the model ({str(err)[:200]})") from None
    return int(payload["step"])


def open_npz(path, kind: str = "an .npz archive", arrays=()) -> dict:
    """Every array of an ``.npz`` file (no pickles), read in full; ``arrays`` must be among
    them (else it is another kind of archive)."""
    import numpy as np

    path = check_file(path, kind)
    try:
        with np.load(path, allow_pickle=False) as f:
            found = {k: f[k] for k in f.files}
    except _DAMAGED as err:
        raise BadInput(path, f"cannot be read as {kind}, it is truncated or not an .npz "
                       f"({type(err).__name__})") from None
    missing = [a for a in arrays if a not in found]
    if missing:
        raise BadInput(path, f"has no array(s) {', '.join(missing)}: it is not {kind}", hint=None)
    return found


def read_json(path, kind: str = "a JSON file", keys=()) -> dict:
    """A JSON object; ``keys`` must be among its keys (else it is another kind of file)."""
    path = check_file(path, kind)
    try:
        data = json.loads(path.read_text())
    except UnicodeDecodeError:
        raise BadInput(path, f"is not a text file, so not {kind}", hint=None) from None
    except json.JSONDecodeError as err:
        raise BadInput(path, f"is not valid JSON ({err}), so not {kind}") from None
    if not isinstance(data, dict):
        raise BadInput(path, f"holds a JSON {type(data).__name__}, expected an object ({kind})")
    missing = [k for k in keys if k not in data]
    if missing:
        raise BadInput(path, f"has no key(s) {', '.join(missing)}: it is not {kind}", hint=None)
    return data


def read_table(path, columns=(), kind: str | None = None, **read_csv_args):
    """A CSV table as a pandas frame; ``columns`` must be present (``kind``: what the
    table should be, for the message when they are not)."""
    import pandas as pd

    path = check_file(path, kind or "a CSV table")
    try:
        frame = pd.read_csv(path, **read_csv_args)
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise BadInput(path, f"is not a readable CSV table ({str(err).strip()[:200]})") from None
    except UnicodeDecodeError:
        raise BadInput(path, f"is not a text file, so not {kind or 'a CSV table'}", hint=None) from None
    if {"variant", "seed"} <= set(frame.columns) and len(frame):
        named = frame[["variant", "seed"]].drop_duplicates()
        if len(named) == 1:
            _checked(path, records.check_rows_model, str(named.iloc[0, 0]), int(named.iloc[0, 1]))
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise BadInput(path, f"has no column(s) {', '.join(missing)}"
                       + (f": it is not {kind}" if kind else "; truncated or another table"),
                       hint=None if kind else REBUILD)
    return frame


def save_model(path, model, spec, reference=None) -> None:
    """Write a model and its spec to ``path`` (atomically), as :func:`load_model` reads it.
    ``reference``: the model.pt of the trained reference a clamp held during training,
    named by its path from ``path``'s folder and its SHA-256, so that an analysis runs the
    model under the same clamp and knows the reference for the one it trained with."""
    import torch

    from .. import atomic
    from .spec import Spec

    payload = {"spec": Spec.of(spec).to_dict(), "model_config": model.cfg.to_dict(),
               "state_dict": {k: v.detach().cpu() for k, v in model.state_dict().items()},
               "torch_version": str(torch.__version__)}
    if reference is not None:
        where = os.path.relpath(Path(reference).resolve(), Path(path).resolve().parent)
        payload["reference"] = {"path": where, "sha256": records.sha256(reference)}
    with atomic.atomic_path(path, identity=records.spec_identity(payload["spec"])) as tmp:
        torch.save(payload, tmp)
