"""Training dynamics: every metric of the final model, at every checkpoint.

See SCIENCE.md, "Training dynamics". Nothing is re-implemented here: each checkpoint
is scored by the functions the other stages call on the final model —
:func:`behaviour.model_summary` (losses, accuracy, ICL
score), :func:`attention.head_score_table` on :func:`behaviour.evaluation_samples`
(head scores) and :func:`circuits.circuit_table` on :func:`weights.model_arrays`
(eigenvalue positivities). The final checkpoint holds the weights of ``model.pt``, so
its rows equal what the circuits and behaviour stages report for the final model.

``dynamics.csv`` is tidy, one row per (step, metric, layer, head, position):

    variant, seed   the model
    step            training step of the checkpoint
    metric          see below
    layer, head     0-based; -1 where not applicable (model-level metrics; an OV sum has head -1)
    position        prediction index i (position i predicting token i + 1) for ``loss_pos``; else -1
    value           the number

Metrics (names as in the tables of the stage that computes them for the final model):

    loss_all, loss_pred, acc_pred, icl_score, loss_pos   behaviour.csv (behaviour sample)
    previous_token, period, prefix_matching, local, copying   head_scores.csv, per head
    direct_positivity, ov_positivity, ov_sum_positivity, qk_positivity
        circuits.csv (real part of the eigenvalue positivity), per circuit

``per_token_losses.npz``: ``steps`` [n_ckpt]; ``losses`` [n_ckpt, n_seq, T-1] (float32)
next-token losses on one fixed evaluation set shared by every model (``eval_size``
sequences from the generator (behaviour ``eval_seed``, "per-token-loss")); ``tokens``
[n_seq, T] that set; ``meta`` (JSON: variant, seed, eval_seed, eval_size).

``phase_change.csv``: one row per (model, detector) with the detected step (an integer,
or "never") and the definition next to it; see :func:`steepest_drop` and
:func:`first_crossing`.

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

DYNAMICS_COLUMNS = ["variant", "seed", "step", "metric", "layer", "head", "position", "value"]
PHASE_COLUMNS = ["variant", "seed", "metric", "step", "value", "layer", "head", "definition"]
PCA_COLUMNS = ["variant", "seed", "step", "PC1", "PC2",
               "explained_variance_PC1", "explained_variance_PC2"]
NEVER = "never"

SCALAR_METRICS = ("loss_all", "loss_pred", "acc_pred", "icl_score")
HEAD_SCORES = ("previous_token", "period", "prefix_matching", "local", "copying")
CIRCUIT_METRICS = {"direct": "direct_positivity", "ov": "ov_positivity",
                   "ov_sum": "ov_sum_positivity", "qk": "qk_positivity"}

STEEPEST_DROP_DEFINITION = (
    "step of steepest drop in loss on predictable targets (behaviour sample): the loss "
    "at the checkpoints, linearly interpolated in u = ln(step + 1) on a uniform grid of "
    "{grid} points and smoothed with a Gaussian of sd {smoothing} in u, falls fastest per "
    "unit of u there; value = that rate (nats per unit ln(step + 1)); 'never' if the "
    "fastest rate is below {min_rate}")
CROSSING_DEFINITION = (
    "first checkpoint step at which the largest period score over all heads (mean "
    "A[i, i - {offset}] over i >= {block_len}, behaviour sample) exceeds {threshold}; "
    "value = that score, layer/head = the head; 'never' if no checkpoint does")


# ------------------------------------------------------------------ checkpoints


_CKPT = re.compile(r"^step(\d+)\.pt$")


def checkpoint_files(folder) -> list[tuple[int, Path]]:
    """``(step, path)`` of every ``step{N:06d}.pt`` in ``folder``, by step."""
    folder = Path(folder)
    found = sorted((int(m.group(1)), p) for p in folder.iterdir() if (m := _CKPT.match(p.name)))
    if not found:
        raise FileNotFoundError(f"{folder}: no checkpoints (step*.pt)")
    return found


def load_checkpoint(model, path, step: int | None = None):
    """Load the weights of checkpoint ``path`` into ``model`` (in place); returns its step."""
    payload = torch.load(path, map_location="cpu", weights_only=True)
    if step is not None and int(payload["step"]) != step:
        raise ValueError(f"{path}: holds step {payload['step']}, its name says {step}")
    model.load_state_dict(payload["state_dict"])
    return int(payload["step"])


# ------------------------------------------------------------------ one checkpoint


def loss_tokens(task, n: int, seed: int) -> torch.Tensor:
    """The fixed per-token-loss evaluation set: ``n`` task sequences, the same for every model."""
    from .data import sample_sequences
    from .seeding import generator

    return sample_sequences(n, task, generator(seed, "per-token-loss"))


@torch.no_grad()
def checkpoint_metrics(model, task, tokens: torch.Tensor, distinct: torch.Tensor,
                       local_window: int, meta: dict) -> pd.DataFrame:
    """Every dynamics metric of ``model`` in its current state, as tidy rows.

    Columns: metric, layer, head, position, value. ``tokens``/``distinct`` are the
    behaviour stage's :func:`behaviour.evaluation_samples`; ``meta`` needs variant and
    seed (for :func:`circuits.circuit_table`).
    """
    from .attention import head_score_table
    from .behaviour import model_summary
    from .circuits import circuit_table
    from .weights import model_arrays

    rows = []

    def add(metric, value, layer=-1, head=-1, position=-1):
        rows.append((metric, int(layer), int(head), int(position), float(value)))

    # as in behaviour.write_behaviour (head_scores.csv and behaviour.csv)
    scores, _, logits = head_score_table(model, tokens, distinct, task.block_len, local_window,
                                         return_logits=True)
    metrics = model_summary(model, tokens, task, logits=logits)
    for name in SCALAR_METRICS:
        add(name, metrics[name])
    for i, v in enumerate(metrics["loss_pos"]):
        add("loss_pos", v, position=i)
    for r in scores.to_dict("records"):
        for name in HEAD_SCORES:
            add(name, r[name], r["layer"], r["head"])
    # as in circuits.write_circuits (circuits.csv), on the same float32 arrays as weights.npz
    circuits = circuit_table(model_arrays(model), meta)
    for r in circuits.to_dict("records"):
        add(CIRCUIT_METRICS[r["circuit"]], r["positivity_real"], r["layer"], r["head"])
    return pd.DataFrame(rows, columns=["metric", "layer", "head", "position", "value"])


# ------------------------------------------------------------------ one model


def model_dynamics(model_path, checkpoints_dir, behaviour_settings: dict, dynamics_settings: dict,
                   log=lambda msg: None):
    """Score every checkpoint of one model.

    Returns ``(frame, losses)``: the tidy :data:`DYNAMICS_COLUMNS` frame and a dict
    with ``steps`` [n_ckpt], ``losses`` [n_ckpt, n_seq, T-1] (float32), ``tokens``.
    The last checkpoint must be the final training step (its weights are model.pt's).
    """
    from .behaviour import evaluation_samples
    from .data import TaskConfig
    from .metrics import per_token_loss
    from .train import load_model

    model, spec = load_model(model_path)
    task = TaskConfig.from_dict(spec["task"])
    meta = {"variant": spec["variant"], "seed": spec["seed"]}
    files = checkpoint_files(checkpoints_dir)
    final = int(spec["train"]["steps"])
    if files[-1][0] != final:
        raise ValueError(f"{checkpoints_dir}: last checkpoint is step {files[-1][0]}, "
                         f"but the model was trained for {final} steps")
    eval_seed = behaviour_settings["eval_seed"]
    tokens, distinct = evaluation_samples(task, behaviour_settings["n_sequences"], eval_seed)
    per_token = loss_tokens(task, dynamics_settings["eval_size"], eval_seed)
    local_window = behaviour_settings["roles"]["local_window"]

    frames, losses, steps = [], [], []
    for step, path in files:
        load_checkpoint(model, path, step)
        model.eval()
        frame = checkpoint_metrics(model, task, tokens, distinct, local_window, meta)
        frames.append(frame.assign(step=step))
        with torch.no_grad():
            losses.append(per_token_loss(model(per_token), per_token).numpy().astype(np.float32))
        steps.append(step)
        pred = frame.loc[frame["metric"] == "loss_pred", "value"].iloc[0]
        period = frame.loc[frame["metric"] == "period", "value"].max()
        log(f"[{meta['variant']} seed {meta['seed']}] step {step:>6}: loss_pred {pred:.4f}, "
            f"max period score {period:.3f}")
    frame = pd.concat(frames, ignore_index=True).assign(**meta)
    return frame[DYNAMICS_COLUMNS], {"steps": np.array(steps, dtype=np.int64),
                                     "losses": np.stack(losses),
                                     "tokens": per_token.numpy()}


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


def first_crossing(steps, values, threshold: float) -> tuple[int | str, int | None]:
    """First step whose value exceeds ``threshold`` (strictly), and its index; else ("never", None)."""
    steps, values = np.asarray(steps), np.asarray(values, dtype=float)
    order = np.argsort(steps)
    above = np.flatnonzero(values[order] > threshold)
    if not len(above):
        return NEVER, None
    i = int(order[above[0]])
    return int(steps[i]), i


def phase_change_table(frame: pd.DataFrame, settings: dict, block_len: int) -> pd.DataFrame:
    """The two phase-change detectors of one model's dynamics frame (:data:`PHASE_COLUMNS`)."""
    variant, seed = frame["variant"].iloc[0], int(frame["seed"].iloc[0])
    smoothing, min_rate = settings["drop_smoothing"], settings["min_drop_rate"]
    steps, loss = metric_curve(frame, "loss_pred")
    drop_step, rate = steepest_drop(steps, loss, smoothing, min_rate)
    rows = [{"variant": variant, "seed": seed, "metric": "steepest_drop_loss_pred",
             "step": drop_step, "value": rate, "layer": -1, "head": -1,
             "definition": STEEPEST_DROP_DEFINITION.format(grid=1024, smoothing=smoothing,
                                                           min_rate=min_rate)}]
    period = frame[frame["metric"] == "period"]
    best = period.loc[period.groupby("step")["value"].idxmax()].sort_values("step")
    threshold = settings["period_threshold"]
    cross_step, i = first_crossing(best["step"].to_numpy(), best["value"].to_numpy(), threshold)
    hit = best.iloc[i] if i is not None else None
    rows.append({"variant": variant, "seed": seed, "metric": "period_score_crossing",
                 "step": cross_step,
                 "value": float(hit["value"]) if hit is not None else float(best["value"].max()),
                 "layer": int(hit["layer"]) if hit is not None else -1,
                 "head": int(hit["head"]) if hit is not None else -1,
                 "definition": CROSSING_DEFINITION.format(offset=block_len - 1, block_len=block_len,
                                                          threshold=threshold)})
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
    with np.load(path, allow_pickle=False) as f:
        out = {k: f[k] for k in f.files}
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


# ------------------------------------------------------------------ files


def write_dynamics(model_path, checkpoints_dir, behaviour_settings_path, dynamics_settings_path,
                   dynamics_csv, losses_npz, phase_csv, log=print) -> None:
    """The dynamics stage of one model: dynamics.csv, per_token_losses.npz, phase_change.csv."""
    from . import atomic

    behaviour = json.loads(Path(behaviour_settings_path).read_text())
    settings = json.loads(Path(dynamics_settings_path).read_text())
    frame, losses = model_dynamics(model_path, checkpoints_dir, behaviour, settings, log)
    variant, seed = frame["variant"].iloc[0], int(frame["seed"].iloc[0])
    phase = phase_change_table(frame, settings, int(behaviour["task"]["block_len"]))
    meta = {"variant": variant, "seed": seed, "eval_seed": behaviour["eval_seed"],
            "eval_size": settings["eval_size"]}
    atomic.write_csv(dynamics_csv, frame)
    atomic.write_csv(phase_csv, phase)
    with atomic.atomic_path(losses_npz, suffix=".npz") as tmp:
        np.savez(tmp, meta=np.array(json.dumps(meta)), **losses)
    for r in phase.itertuples():
        log(f"[{variant} seed {seed}] {r.metric}: {r.step} (value {r.value:.3f})")


def write_per_token_loss_pca(paths, table_csv, figure_png=None) -> pd.DataFrame:
    from . import atomic

    frame = per_token_loss_pca(paths)
    atomic.write_csv(table_csv, frame)
    if figure_png is not None:
        from .dynamics_plots import pca_trajectories
        from .plots import save

        save(pca_trajectories(frame), figure_png)
    return frame


def write_phase_change_table(paths, out_csv) -> pd.DataFrame:
    """Every model's phase_change.csv in one table."""
    from . import atomic

    frame = pd.concat([pd.read_csv(p, dtype={"step": str}) for p in paths], ignore_index=True)
    atomic.write_csv(out_csv, frame[PHASE_COLUMNS])
    return frame
