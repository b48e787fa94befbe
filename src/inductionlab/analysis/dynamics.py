"""Training dynamics: every metric of the final model, at every checkpoint.

See SCIENCE.md, "Training dynamics". Nothing is re-implemented here: each checkpoint
is scored by the functions the other stages call on the final model —
:func:`behaviour.model_summary` (losses, accuracy, ICL
score), :func:`attention.head_score_table` on the first ``n_sequences`` of
:func:`behaviour.evaluation_samples` (head scores) and :func:`circuits.circuit_table` on
:func:`weights.model_arrays` (eigenvalue positivities). The final checkpoint holds the
weights of ``model.pt``, so its circuit rows equal the circuits stage's, and with
``n_sequences`` the whole behaviour sample its other rows equal the behaviour stage's.

``dynamics.csv`` is tidy, one row per (step, metric, layer, head, position):

    variant, seed   the model
    step            training step of the checkpoint
    metric          see below
    layer, head     0-based; -1 where not applicable (model-level metrics; an OV sum has head -1)
    position        prediction index i (position i predicting token i + 1) for ``loss_pos``; else -1
    value           the number

Metrics (names as in the tables of the stage that computes them for the final model):

    loss_all, loss_pred, acc_pred, icl_score, loss_pos   behaviour.csv (behaviour sample prefix)
    induction, nearest_copy, first_block, first_token, previous_token, local,
    prefix_matching, copying
        head_scores.csv, per head
    induction_control, ..., prefix_matching_control
        head_scores.csv: each score on the control sample (random sequences), per head
    induction_chance, nearest_copy_chance, ..., prefix_matching_chance
        head_scores.csv: the score of uniform causal attention on the same queries and
        keys, per layer (head -1)
    best_induction   the largest induction score over the heads of the layers that can
        form an induction head (:func:`induction_layers`), model-level (layer and head
        -1); only for a model that has such a layer
    best_induction_content   the same for the content part (induction − its control):
        the largest over the heads of those layers
    direct_positivity, ov_positivity, ov_sum_positivity, qk_positivity
        circuits.csv (real part of the eigenvalue positivity), per circuit

``per_token_losses.npz``: ``steps`` [n_ckpt]; ``losses`` [n_ckpt, n_seq, T-1] (float32)
next-token losses on one fixed evaluation set shared by every model (``eval_size``
sequences from the generator (behaviour ``eval_seed``, "per-token-loss")); ``tokens``
[n_seq, T] that set; ``meta`` (JSON: variant, seed, eval_seed, eval_size).

``phase_change.csv``: one row per (model, detector), :data:`PHASE_COLUMNS`: the detected
step (an integer, or :data:`NEVER` / :data:`NONE_FORMED`), its value, the chance level,
the head, a note saying why nothing was detected, and the definition in words; see
:func:`steepest_drop` and :func:`induction_rise`.

``per_token_loss_pca.csv`` (all models): one PCA of the per-token loss vectors of every
checkpoint of every model (:func:`pca`); columns variant, seed, step, PC1, PC2,
explained_variance_PC1, explained_variance_PC2 (ratios, the same on every row).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from .attention import ATTENTION_SCORES
from .roles import content_column, control_column
from ..core.loading import load_checkpoint

DYNAMICS_COLUMNS = ["variant", "seed", "step", "metric", "layer", "head", "position", "value"]
PHASE_COLUMNS = ["variant", "seed", "metric", "step", "value", "chance", "layer", "head", "note",
                 "definition"]
PCA_COLUMNS = ["variant", "seed", "step", "PC1", "PC2",
               "explained_variance_PC1", "explained_variance_PC2"]
NEVER = "never"
NONE_FORMED = "none formed"
NOT_DETECTED = (NEVER, NONE_FORMED)

SCALAR_METRICS = ("loss_all", "loss_pred", "acc_pred", "icl_score")
HEAD_SCORES = (ATTENTION_SCORES + tuple(control_column(name) for name in ATTENTION_SCORES)
               + ("copying",))
CHANCE_METRICS = tuple(f"{name}_chance" for name in ATTENTION_SCORES)
BEST_INDUCTION = "best_induction"
BEST_INDUCTION_CONTENT = "best_induction_content"
CIRCUIT_METRICS = {"direct": "direct_positivity", "ov": "ov_positivity",
                   "ov_sum": "ov_sum_positivity", "qk": "qk_positivity"}

STEEPEST_DROP_DEFINITION = (
    "step of steepest drop in loss on predictable targets (behaviour sample): the loss "
    "at the checkpoints, linearly interpolated in u = ln(step + 1) on a uniform grid of "
    "{grid} points and smoothed with a Gaussian of sd {smoothing} in u, falls fastest per "
    "unit of u there; value = that rate (nats per unit ln(step + 1)); 'never' if the "
    "fastest rate is below {min_rate}")
INDUCTION_RISE_DEFINITION = (
    "first checkpoint step at which the best head's induction score (attention on every "
    "earlier copy of the token to be predicted, keys j >= 1, mean over queries i >= "
    "{block_len}, behaviour sample; best over the heads of {layers}, the layers that can "
    "form an induction head: layer >= 1 or smeared keys) reaches chance + {fraction:g} x "
    "(final - chance), where chance is the score of uniform causal attention on the same "
    "queries and keys and final the best score at the last checkpoint; value = the best "
    "score there, layer/head = that head; 'none formed' if final - chance < {min_gain:g} or "
    "no layer can form an induction head")
NO_LAYER_NOTE = "no layer can form an induction head (needs layer >= 1 or smeared keys)"


# ------------------------------------------------------------------ checkpoints


_CKPT = re.compile(r"^step(\d+)\.pt$")


def checkpoint_files(folder) -> list[tuple[int, Path]]:
    """``(step, path)`` of every ``step{N:06d}.pt`` in ``folder``, by step."""
    from ..core.loading import BadInput

    folder = Path(folder)
    if not folder.is_dir():
        raise BadInput(folder, "no such checkpoints folder" if not folder.exists() else
                       "is a file, not a checkpoints folder", hint=None)
    found = sorted((int(m.group(1)), p) for p in folder.iterdir() if (m := _CKPT.match(p.name)))
    if not found:
        raise BadInput(folder, "no checkpoints (step*.pt) in it",
                       hint="delete the model.pt beside it and rerun snakemake to retrain the model")
    return found


def check_schedule(files: list[tuple[int, Path]], folder, train) -> None:
    """Every checkpoint that training's schedule writes is in ``files``, else :class:`BadInput`."""
    from ..core.loading import BadInput
    from ..core.train import checkpoint_steps

    expected = checkpoint_steps(train.steps, train.n_checkpoints)
    missing = sorted(set(expected) - {step for step, _ in files})
    if missing:
        shown = ", ".join(map(str, missing[:8])) + (" ..." if len(missing) > 8 else "")
        raise BadInput(folder, f"{len(missing)} of the {len(expected)} checkpoints of the training "
                       f"schedule are missing (step {shown})",
                       hint="delete the model.pt beside it and rerun snakemake to retrain the model")


# ------------------------------------------------------------------ one checkpoint


def loss_tokens(task, n: int, seed: int) -> torch.Tensor:
    """The fixed per-token-loss evaluation set: ``n`` task sequences, the same for every model."""
    from ..core.data import sample_sequences
    from ..core.seeding import generator

    return sample_sequences(n, task, generator(seed, "per-token-loss"))


@torch.no_grad()
def checkpoint_metrics(model, task, tokens: torch.Tensor, distinct: torch.Tensor,
                       local_window: int, meta: dict,
                       control: torch.Tensor | None = None) -> pd.DataFrame:
    """Every dynamics metric of ``model`` in its current state, as tidy rows.

    Columns: metric, layer, head, position, value. ``tokens``/``distinct`` are the
    behaviour stage's :func:`behaviour.evaluation_samples` and ``control`` its control
    sample (:func:`~inductionlab.core.data.control_sample`); ``meta`` needs variant and
    seed (for :func:`circuits.circuit_table`).
    """
    from .attention import head_score_table
    from .behaviour import model_summary
    from .circuits import circuit_table
    from ..core.weights import model_arrays

    rows = []

    def add(metric, value, layer=-1, head=-1, position=-1):
        rows.append((metric, int(layer), int(head), int(position), float(value)))

    # as in behaviour.behaviour_results (head_scores.csv and behaviour.csv)
    scores, _, logits = head_score_table(model, tokens, distinct, task.block_len, local_window,
                                         return_logits=True, control_tokens=control)
    metrics = model_summary(model, tokens, task, logits=logits)
    for name in SCALAR_METRICS:
        add(name, metrics[name])
    for i, v in enumerate(metrics["loss_pos"]):
        add("loss_pos", v, position=i)
    for r in scores.to_dict("records"):
        for name in HEAD_SCORES:
            if name in r:
                add(name, r[name], r["layer"], r["head"])
    for r in scores.groupby("layer", sort=True).first().reset_index().to_dict("records"):
        for name in CHANCE_METRICS:
            add(name, r[name], r["layer"])
    # as the circuits stage computes circuits.csv, on the same float32 arrays as weights.npz
    circuits = circuit_table(model_arrays(model), meta)
    for r in circuits.to_dict("records"):
        add(CIRCUIT_METRICS[r["circuit"]], r["positivity_real"], r["layer"], r["head"])
    return pd.DataFrame(rows, columns=["metric", "layer", "head", "position", "value"])


# ------------------------------------------------------------------ one model


def induction_layers(model_spec: dict) -> list[int]:
    """Layers whose heads can form an induction head: every layer after the first (its
    keys can hold the previous token, written by an earlier layer) and a layer with
    smeared keys (the smear mixes the previous token into each key)."""
    smeared = {int(l) for l in model_spec.get("smear_layers", ())}
    return [l for l in range(int(model_spec["n_layers"])) if l >= 1 or l in smeared]


def induction_content_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """Per head and step, the induction score's content part: induction − its control."""
    keys = ["step", "layer", "head"]
    score = frame[frame["metric"] == "induction"].set_index(keys)["value"]
    control = frame[frame["metric"] == control_column("induction")].set_index(keys)["value"]
    content = (score - control).dropna().reset_index()
    return content.assign(metric=content_column("induction"), position=-1)


def best_induction_heads(frame: pd.DataFrame, layers, metric: str = "induction") -> pd.DataFrame:
    """Per step, the head with the largest ``metric`` (the induction score, or its content
    part) among ``layers``.

    Columns step, value, layer, head, by step; no rows when ``layers`` is empty.
    """
    if metric == content_column("induction"):
        frame = induction_content_rows(frame)
    heads = frame[(frame["metric"] == metric) & frame["layer"].isin(list(layers))]
    if heads.empty:
        return pd.DataFrame({"step": pd.Series(dtype=int), "value": pd.Series(dtype=float),
                             "layer": pd.Series(dtype=int), "head": pd.Series(dtype=int)})
    best = heads.loc[heads.groupby("step")["value"].idxmax()].sort_values("step")
    return best[["step", "value", "layer", "head"]].reset_index(drop=True)


def best_induction_rows(frame: pd.DataFrame, layers) -> pd.DataFrame:
    """The :data:`BEST_INDUCTION` and :data:`BEST_INDUCTION_CONTENT` rows of a dynamics
    frame (layer, head and position -1)."""
    out = []
    for metric, name in (("induction", BEST_INDUCTION),
                         (content_column("induction"), BEST_INDUCTION_CONTENT)):
        best = best_induction_heads(frame, layers, metric)
        out.append(pd.DataFrame({"step": best["step"], "metric": name, "layer": -1, "head": -1,
                                 "position": -1, "value": best["value"]}))
    return pd.concat(out, ignore_index=True)


def score_chance(frame: pd.DataFrame, score: str = "induction", layers=None) -> float:
    """The chance level of attention score ``score`` (its ``<score>_chance`` rows of
    ``layers``, or of every layer), at the last checkpoint; ``LookupError`` if none."""
    rows = frame[frame["metric"] == f"{score}_chance"]
    if layers is not None and rows["layer"].isin(list(layers)).any():
        rows = rows[rows["layer"].isin(list(layers))]
    if rows.empty:
        raise LookupError(f"the dynamics frame has no {score}_chance rows")
    return float(rows[rows["step"] == rows["step"].max()]["value"].mean())


def _checkpoint_line(frame: pd.DataFrame, layers) -> str:
    """loss_pred and the best induction score of one checkpoint, for the log."""
    pred = frame.loc[frame["metric"] == "loss_pred", "value"].iloc[0]
    heads = frame[frame["metric"] == "induction"]
    if layers:
        heads = heads[heads["layer"].isin(list(layers))]
    best = heads.loc[heads["value"].idxmax()]
    chance = frame.loc[frame["metric"] == "induction_chance", "value"].iloc[0]
    return (f"loss_pred {pred:.4f}, best induction score {best['value']:.3f} "
            f"(L{int(best['layer'])}H{int(best['head'])}; chance {chance:.3f})")


def model_dynamics(model, spec, checkpoints_dir, behaviour_settings: dict, dynamics_settings: dict,
                   log=lambda msg: None):
    """Score every checkpoint of one model (``model``, trained from ``spec``, a
    :class:`~inductionlab.core.spec.Spec`), loading each into ``model`` in turn.

    Returns ``(frame, losses, layers)``: the tidy :data:`DYNAMICS_COLUMNS` frame, a
    dict with ``steps`` [n_ckpt], ``losses`` [n_ckpt, n_seq, T-1] (float32), ``tokens``,
    and the model's :func:`induction_layers`. The last checkpoint must be the final
    training step (its weights are model.pt's).
    """
    from .behaviour import evaluation_samples
    from ..core.data import control_sample
    from ..core.metrics import per_token_loss

    task = spec.task
    meta = {"variant": spec.variant, "seed": spec.seed}
    files = checkpoint_files(checkpoints_dir)
    check_schedule(files, checkpoints_dir, spec.train)
    final = spec.train.steps
    if files[-1][0] != final:
        raise ValueError(f"{checkpoints_dir}: last checkpoint is step {files[-1][0]}, "
                         f"but the model was trained for {final} steps")
    eval_seed = behaviour_settings["eval_seed"]
    n = min(dynamics_settings.get("n_sequences", behaviour_settings["n_sequences"]),
            behaviour_settings["n_sequences"])
    tokens, distinct = evaluation_samples(task, behaviour_settings["n_sequences"], eval_seed)
    control = control_sample(behaviour_settings["n_sequences"], task, eval_seed)
    # a prefix: the behaviour stage's sequences
    tokens, distinct, control = tokens[:n], distinct[:n], control[:n]
    per_token = loss_tokens(task, dynamics_settings["eval_size"], eval_seed)
    local_window = behaviour_settings["roles"]["local_window"]
    layers = induction_layers(spec.model.to_dict())

    frames, losses, steps = [], [], []
    for step, path in files:
        load_checkpoint(model, path, step)
        model.eval()
        frame = checkpoint_metrics(model, task, tokens, distinct, local_window, meta, control)
        frames.append(frame.assign(step=step))
        with torch.no_grad():
            losses.append(per_token_loss(model(per_token), per_token).numpy().astype(np.float32))
        steps.append(step)
        log(f"[{meta['variant']} seed {meta['seed']}] step {step:>6}: "
            f"{_checkpoint_line(frame, layers)}")
    frame = pd.concat(frames, ignore_index=True)
    frame = (pd.concat([frame, best_induction_rows(frame, layers)], ignore_index=True)
             .sort_values("step", kind="stable").assign(**meta))
    return frame[DYNAMICS_COLUMNS], {"steps": np.array(steps, dtype=np.int64),
                                     "losses": np.stack(losses),
                                     "tokens": per_token.numpy()}, layers


def metric_curve(frame: pd.DataFrame, metric: str, layer: int = -1, head: int = -1,
                 position: int = -1) -> tuple[np.ndarray, np.ndarray]:
    """``(steps, values)`` of one metric of one model, by step."""
    sel = frame[(frame["metric"] == metric) & (frame["layer"] == layer) & (frame["head"] == head)
                & (frame["position"] == position)].sort_values("step")
    return sel["step"].to_numpy(), sel["value"].to_numpy(dtype=float)


# ------------------------------------------------------------------ phase change


def steepest_drop(steps, values, smoothing: float = 0.25, min_rate: float = 0.1,
                  grid: int = 1024) -> tuple[int | str, float]:
    """Step at which ``values`` fall fastest per unit of ln(step + 1), and that rate.

    The curve is linearly interpolated in u = ln(step + 1) onto ``grid`` evenly spaced
    points, smoothed with a Gaussian of standard deviation ``smoothing`` (in u; edges
    padded with the end values) and differentiated. The largest decrease rate wins; its
    u is turned back into a step, ``round(exp(u) - 1)``. Between two checkpoints the
    interpolation is linear, so a drop confined to one interval is placed at its
    geometric midpoint; the smoothing keeps closely spaced, noisy checkpoints (the
    regular ones late in training) from outweighing a real drop. Returns
    ``("never", rate)`` when the largest rate is below ``min_rate`` (a flat curve) or
    there are fewer than two checkpoints.
    """
    steps = np.asarray(steps, dtype=float)
    values = np.asarray(values, dtype=float)
    if steps.shape != values.shape or steps.ndim != 1:
        raise ValueError(f"steps and values must be 1-d of equal length, got {steps.shape} and {values.shape}")
    order = np.argsort(steps)
    steps, values = steps[order], values[order]
    if len(steps) < 2 or steps[-1] == steps[0]:
        return NEVER, 0.0
    u = np.log(steps + 1.0)
    grid_u = np.linspace(u[0], u[-1], grid)
    du = grid_u[1] - grid_u[0]
    curve = np.interp(grid_u, u, values)
    sd = smoothing / du
    if sd > 0:
        half = int(np.ceil(4 * sd))
        x = np.arange(-half, half + 1)
        kernel = np.exp(-0.5 * (x / sd) ** 2)
        curve = np.convolve(np.pad(curve, half, mode="edge"), kernel / kernel.sum(), mode="valid")
    rate = -np.gradient(curve, du)
    k = int(np.argmax(rate))
    if not rate[k] >= min_rate:
        return NEVER, float(max(rate[k], 0.0))
    return int(round(float(np.exp(grid_u[k]) - 1.0))), float(rate[k])


def _gain_phrase(gain: float) -> str:
    return f"{gain:.3f} above" if gain >= 0 else f"{-gain:.3f} below"


def induction_rise(best: pd.DataFrame, chance: float, fraction: float = 0.5,
                   min_gain: float = 0.1) -> dict:
    """When the best head's induction score rose from chance to its final level.

    ``best``: :func:`best_induction_heads` (step, value, layer, head per checkpoint).
    With final = the best score at the last checkpoint, the step is the first
    checkpoint whose best score reaches chance + ``fraction`` x (final - chance); value,
    layer and head are that checkpoint's best head. When final - chance < ``min_gain``
    no induction head formed: the step is :data:`NONE_FORMED`, value/layer/head those
    of the last checkpoint, and the note says why (as it does when ``best`` is empty:
    the model has no layer that can form one). Returns a dict with step, value, layer,
    head and note ("" when the step was found).
    """
    best = best.sort_values("step")
    if best.empty:
        return {"step": NONE_FORMED, "value": float("nan"), "layer": -1, "head": -1,
                "note": NO_LAYER_NOTE}
    last = best.iloc[-1]
    final = float(last["value"])
    gain = final - chance
    if not gain >= min_gain:
        return {"step": NONE_FORMED, "value": final, "layer": int(last["layer"]),
                "head": int(last["head"]),
                "note": (f"no induction head formed: the best head's final induction score "
                         f"{final:.3f} (L{int(last['layer'])}H{int(last['head'])}) is "
                         f"{_gain_phrase(gain)} chance {chance:.3f} (< {min_gain:g})")}
    reached = best[best["value"].to_numpy(dtype=float) >= chance + fraction * gain]
    hit = reached.iloc[0]
    return {"step": int(hit["step"]), "value": float(hit["value"]), "layer": int(hit["layer"]),
            "head": int(hit["head"]), "note": ""}


def _layers_phrase(layers) -> str:
    layers = list(layers)
    if not layers:
        return "no layer"
    return ("layer " if len(layers) == 1 else "layers ") + ", ".join(map(str, layers))


def phase_change_table(frame: pd.DataFrame, settings: dict, block_len: int,
                       layers) -> pd.DataFrame:
    """The two phase-change detectors of one model's dynamics frame (:data:`PHASE_COLUMNS`).

    ``layers``: the model's :func:`induction_layers`.
    """
    variant, seed = frame["variant"].iloc[0], int(frame["seed"].iloc[0])
    smoothing, min_rate = settings["drop_smoothing"], settings["min_drop_rate"]
    fraction, min_gain = settings["induction_rise_fraction"], settings["min_induction_gain"]
    steps, loss = metric_curve(frame, "loss_pred")
    drop_step, rate = steepest_drop(steps, loss, smoothing, min_rate)
    rows = [{"variant": variant, "seed": seed, "metric": "steepest_drop_loss_pred",
             "step": drop_step, "value": rate, "chance": float("nan"), "layer": -1, "head": -1,
             "note": "",
             "definition": STEEPEST_DROP_DEFINITION.format(grid=1024, smoothing=smoothing,
                                                           min_rate=min_rate)}]
    chance = score_chance(frame, "induction", layers)
    rise = induction_rise(best_induction_heads(frame, layers), chance, fraction, min_gain)
    rows.append({"variant": variant, "seed": seed, "metric": "induction_rise", **rise,
                 "chance": chance,
                 "definition": INDUCTION_RISE_DEFINITION.format(
                     block_len=block_len, layers=_layers_phrase(layers), fraction=fraction,
                     min_gain=min_gain)})
    return pd.DataFrame(rows, columns=PHASE_COLUMNS)


# ------------------------------------------------------------------ PCA


def pca(matrix, n_components: int = 2) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """PCA of the rows of ``matrix`` [n, p] by SVD of the column-centred matrix.

    Returns ``(scores [n, k], explained_variance_ratio [k], components [k, p])``.
    Each component's sign is chosen so that its loadings sum to a positive number
    (for loss vectors: the score grows with the loss). Components beyond the rank
    have zero scores and ratio 0.
    """
    X = np.asarray(matrix, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] < 2:
        raise ValueError(f"matrix must be 2-d with at least two rows, got shape {X.shape}")
    X = X - X.mean(axis=0)
    U, S, Vt = np.linalg.svd(X, full_matrices=False)
    k = n_components
    total = float((S ** 2).sum())
    ratio = (S ** 2) / total if total > 0 else np.zeros_like(S)
    signs = np.sign(Vt.sum(axis=1))
    signs[signs == 0] = 1.0
    U, Vt = U * signs, Vt * signs[:, None]
    scores = np.zeros((X.shape[0], k))
    comps = np.zeros((k, X.shape[1]))
    r = min(k, len(S))
    scores[:, :r] = U[:, :r] * S[:r]
    comps[:r] = Vt[:r]
    out_ratio = np.zeros(k)
    out_ratio[:r] = ratio[:r]
    return scores, out_ratio, comps


def read_losses(path) -> dict:
    from ..core.loading import BadInput, open_npz

    out = open_npz(path, "a per_token_losses.npz")
    missing = [k for k in ("meta", "steps", "losses", "tokens") if k not in out]
    if missing:
        raise BadInput(path, f"no {', '.join(missing)}; not a per_token_losses.npz")
    out["meta"] = json.loads(str(out["meta"]))
    return out


def per_token_loss_pca(paths) -> pd.DataFrame:
    """One PCA over the per-token loss vectors of every checkpoint of every model.

    ``paths``: ``per_token_losses.npz`` files. Each checkpoint's vector is its
    flattened [n_seq, T-1] loss matrix; every file must hold the same evaluation set.
    """
    blocks, ids, reference = [], [], None
    for path in paths:
        data = read_losses(path)
        if reference is None:
            reference = (path, data["tokens"])
        elif not np.array_equal(data["tokens"], reference[1]):
            raise ValueError(f"{path}: its per-token evaluation set differs from that of "
                             f"{reference[0]}; rerun the dynamics stage with one config")
        n = len(data["steps"])
        blocks.append(data["losses"].reshape(n, -1))
        ids += [(data["meta"]["variant"], int(data["meta"]["seed"]), int(s)) for s in data["steps"]]
    if not blocks:
        raise ValueError("no per_token_losses.npz given")
    scores, ratio, _ = pca(np.concatenate(blocks), 2)
    frame = pd.DataFrame(ids, columns=["variant", "seed", "step"])
    frame["PC1"], frame["PC2"] = scores[:, 0], scores[:, 1]
    frame["explained_variance_PC1"], frame["explained_variance_PC2"] = ratio[0], ratio[1]
    return frame[PCA_COLUMNS]


def dynamics_results(model, spec, checkpoints_dir, behaviour: dict, settings: dict,
                     log=lambda msg: None) -> tuple[pd.DataFrame, dict, pd.DataFrame]:
    """The dynamics stage's results for one model: ``(dynamics, per-token losses,
    phase_change)``; the losses' ``meta`` (variant, seed, evaluation set) included."""
    frame, losses, layers = model_dynamics(model, spec, checkpoints_dir, behaviour, settings, log)
    phase = phase_change_table(frame, settings, spec.task.block_len, layers)
    meta = {"variant": spec.variant, "seed": spec.seed, "eval_seed": behaviour["eval_seed"],
            "eval_size": settings["eval_size"]}
    for r in phase.itertuples():
        log(f"[{spec.name}] {r.metric}: {r.step} (value {r.value:.3f})"
            + (f": {r.note}" if r.note else ""))
    return frame, {"meta": np.array(json.dumps(meta)), **losses}, phase


def read_phase_change(path) -> pd.DataFrame:
    """A phase_change.csv: step as text (an integer or a word), an empty note as ""."""
    from ..core.loading import read_table

    frame = read_table(path, PHASE_COLUMNS, dtype={"step": str, "note": str})
    frame["note"] = frame["note"].fillna("")
    return frame
