"""Training dynamics: every metric of the final model, at every checkpoint.

See docs/methods.md, "Training dynamics and the phase change". Nothing is re-implemented here: each checkpoint
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
        form an induction head (:func:`induction_layers`; every layer for a model that has
        none, the control: :func:`fit_layers`), model-level (layer and head -1)
    best_induction_content   the same for the content part (induction − its control):
        the largest over the heads of those layers
    direct_positivity, ov_positivity, ov_sum_positivity, qk_positivity
        circuits.csv (real part of the eigenvalue positivity), per circuit

``per_token_losses.npz``: ``steps`` [n_ckpt]; ``losses`` [n_ckpt, n_seq, T-1] (float32)
next-token losses on one fixed evaluation set shared by every model (``eval_size``
sequences from the generator (behaviour ``eval_seed``, "per-token-loss")); ``tokens``
[n_seq, T] that set; ``meta`` (JSON: variant, seed, eval_seed, eval_size).

``phase_change.csv``: :data:`PHASE_COLUMNS`, three rows per model (:func:`measure_phase_change`):
the logistic fits to the predictable-target loss (``loss_pred``) and to the best head's
induction content part (``induction_content``) — shape, the verdict on "a phase change"
(judged with the span's interval), direction, midpoint and span with their 95 % intervals,
R², asymptotes, the best head's final scores that decide whether induction formed
(``formed``: NaN until the role rule is applied where the tables are stacked,
:func:`decide_formed`) — and ``coincidence``, the gap between the two midpoints in ln
steps with its interval (``value``, ``low``, ``high``) and the verdict on "at the same
time", each with a note and the definition in words.

``per_token_loss_pca.csv`` (all models): one PCA of the per-token loss vectors of every
checkpoint of every model (:func:`pca`); columns variant, seed, step, PC1, PC2,
explained_variance_PC1, explained_variance_PC2 (ratios, the same on every row).
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from ..behaviour.attention import ATTENTION_SCORES
from ...analysis.roles import content_column, control_column, role_threshold
from ...core.formats import NATS, SHARE_OF_ATTENTION, declare_table
from ...core.loading import (CHECKPOINT_NAME, MODEL_FILE, BadInput, checkpoint_steps,
                             load_checkpoint, read_table, retrain)
from ...core.data import TaskConfig, control_sample, sample_sequences
from ...core.seeding import generator
from ...core.weights import model_arrays
from ...core.metrics import per_token_loss
from ...core.tasks import out_of_context

DYNAMICS_COLUMNS = ["variant", "seed", "step", "metric", "layer", "head", "position", "value"]
PHASE_COLUMNS = ["variant", "seed", "metric", "shape", "verdict", "direction", "midpoint",
                 "midpoint_low", "midpoint_high", "span", "span_low", "span_high", "r2", "start", "end", "drop",
                 "one_drop", "formed", "best_head", "final_content", "final_score",
                 "final_chance", "value", "low", "high", "note", "definition"]
# dynamics.csv: one row per checkpoint and quantity (a head's score, a model's loss);
# phase_change.csv: the fits (spans are factors in steps, midpoints steps: no unit).
DYNAMICS = declare_table(
    "dynamics", DYNAMICS_COLUMNS, keys=["step", "metric", "layer", "head", "position"], long=True,
    units={r"loss_\w+|icl_score": NATS,
           r"(best_)?(%s)(_\w+)?" % "|".join(ATTENTION_SCORES): SHARE_OF_ATTENTION})
PHASE_CHANGE_TABLE = declare_table("phase_change", PHASE_COLUMNS, keys=["metric"])

SCALAR_METRICS = ("loss_all", "loss_pred", "acc_pred", "icl_score")
HEAD_SCORES = (ATTENTION_SCORES + tuple(control_column(name) for name in ATTENTION_SCORES)
               + ("copying",))
CHANCE_METRICS = tuple(f"{name}_chance" for name in ATTENTION_SCORES)
BEST_INDUCTION = "best_induction"
BEST_INDUCTION_CONTENT = "best_induction_content"
CIRCUIT_METRICS = {"direct": "direct_positivity", "ov": "ov_positivity",
                   "ov_sum": "ov_sum_positivity", "qk": "qk_positivity"}


# ------------------------------------------------------------------ checkpoints


def checkpoint_files(folder) -> list[tuple[int, Path]]:
    """``(step, path)`` of every checkpoint (``step{N:06d}.pt``) in ``folder``, by step."""
    folder = Path(folder)
    if not folder.is_dir():
        raise BadInput(folder, "no such checkpoints folder" if not folder.exists() else
                       "is a file, not a checkpoints folder", hint=None)
    found = sorted((int(m.group(1)), p) for p in folder.iterdir()
                   if (m := CHECKPOINT_NAME.match(p.name)))
    if not found:
        raise BadInput(folder, "no checkpoints (step*.pt) in it", hint=retrain(folder.parent / MODEL_FILE))
    return found


def check_schedule(files: list[tuple[int, Path]], folder, train) -> None:
    """Every checkpoint that training's schedule writes is in ``files``, else :class:`BadInput`."""
    expected = checkpoint_steps(train.steps, train.n_checkpoints)
    missing = sorted(set(expected) - {step for step, _ in files})
    if missing:
        shown = ", ".join(map(str, missing[:8])) + (" ..." if len(missing) > 8 else "")
        raise BadInput(folder, f"{len(missing)} of the {len(expected)} checkpoints of the training "
                       f"schedule are missing (step {shown})",
                       hint=retrain(Path(folder).parent / MODEL_FILE))


# ------------------------------------------------------------------ one checkpoint


def loss_tokens(task, n: int, seed: int) -> torch.Tensor:
    """The fixed per-token-loss evaluation set: ``n`` sequences of the write-up's task (the
    same for every model, whatever it trained on: one PCA compares them all)."""
    return sample_sequences(n, task, generator(seed, "per-token-loss"))


@torch.no_grad()
def checkpoint_metrics(model, sample, distinct: torch.Tensor,
                       local_window: int, meta: dict,
                       control: torch.Tensor | None = None, masks=None) -> pd.DataFrame:
    """Every dynamics metric of ``model`` in its current state, as tidy rows.

    Columns: metric, layer, head, position, value. ``sample`` (a task sample of the
    model's task) and ``distinct`` are the
    behaviour stage's :func:`behaviour.evaluation_samples` and ``control`` its control
    sample (:func:`~inductionlab.core.data.control_sample`); ``meta`` needs variant and
    seed (for :func:`circuits.circuit_table`); ``masks``: the samples'
    :func:`~inductionlab.stages.behaviour.attention.sample_masks`, read once for every
    checkpoint when given.
    """
    from ..behaviour.attention import head_score_table
    from ..behaviour.behaviour import model_summary
    from ..circuits.circuits import circuit_table

    rows = []

    def add(metric, value, layer=-1, head=-1, position=-1):
        rows.append((metric, int(layer), int(head), int(position), float(value)))

    # as in behaviour.behaviour_results (head_scores.csv and behaviour.csv)
    scores, _, logits = head_score_table(model, sample, distinct, local_window,
                                         return_logits=True, control_tokens=control,
                                         masks=masks)
    metrics = model_summary(model, sample, logits=logits)
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


def fit_layers(frame: pd.DataFrame, layers) -> list[int]:
    """The layers whose best head the dynamics follow: ``layers`` (the model's
    :func:`induction_layers`), or every layer for a model that has none (the control: the
    same curves from a model that cannot form an induction head)."""
    return list(layers) or sorted(int(l) for l in frame.loc[frame["metric"] == "induction",
                                                             "layer"].unique())


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
    from ..behaviour.attention import sample_masks
    from ..behaviour.behaviour import evaluation_samples

    task = spec.task
    meta = {"variant": spec.variant, "seed": spec.seed}
    files = checkpoint_files(checkpoints_dir)
    check_schedule(files, checkpoints_dir, spec.train)
    final = spec.train.steps
    if files[-1][0] != final:
        raise ValueError(f"{checkpoints_dir}: last checkpoint is step {files[-1][0]}, "
                         f"but the model was trained for {final} steps")
    eval_seed = behaviour_settings["eval_seed"]
    n = min(dynamics_settings["n_sequences"], behaviour_settings["n_sequences"])
    write_up = TaskConfig.from_dict(behaviour_settings["task"])
    sample, distinct = evaluation_samples(task, behaviour_settings["n_sequences"], eval_seed)
    control = control_sample(behaviour_settings["n_sequences"], task, eval_seed)
    # a prefix: the behaviour stage's sequences
    sample, distinct, control = sample[:n], distinct[:n], control[:n]
    per_token = loss_tokens(write_up, dynamics_settings["eval_size"], eval_seed)
    # a model whose context is shorter than the write-up's sequences has no per-token
    # losses on them: its file holds no checkpoint, and the PCA no row of it
    unread = out_of_context(model.cfg.seq_len, write_up)
    if unread:
        log(f"[{meta['variant']} seed {meta['seed']}] per-token losses on the write-up's "
            f"task {unread}")
    local_window = behaviour_settings["roles"]["local_window"]
    layers = induction_layers(spec.model.to_dict())
    masks = sample_masks(sample, distinct, local_window)  # the same for every checkpoint

    frames, losses, steps = [], [], []
    for step, path in files:
        load_checkpoint(model, path, step)
        model.eval()
        frame = checkpoint_metrics(model, sample, distinct, local_window, meta, control, masks)
        frames.append(frame.assign(step=step))
        if not unread:
            with torch.no_grad():
                losses.append(per_token_loss(model(per_token), per_token).numpy()
                              .astype(np.float32))
            steps.append(step)
        log(f"[{meta['variant']} seed {meta['seed']}] step {step:>6}: "
            f"{_checkpoint_line(frame, layers)}")
    frame = pd.concat(frames, ignore_index=True)
    frame = (pd.concat([frame, best_induction_rows(frame, fit_layers(frame, layers))],
                       ignore_index=True)
             .sort_values("step", kind="stable").assign(**meta))
    shape = (0, *per_token.shape[:1], per_token.shape[1] - 1)
    return frame[DYNAMICS_COLUMNS], {"steps": np.array(steps, dtype=np.int64),
                                     "losses": (np.stack(losses) if losses
                                                else np.zeros(shape, dtype=np.float32)),
                                     "tokens": per_token.numpy()}, layers


def metric_curve(frame: pd.DataFrame, metric: str, layer: int = -1, head: int = -1,
                 position: int = -1) -> tuple[np.ndarray, np.ndarray]:
    """``(steps, values)`` of one metric of one model, by step."""
    sel = frame[(frame["metric"] == metric) & (frame["layer"] == layer) & (frame["head"] == head)
                & (frame["position"] == position)].sort_values("step")
    return sel["step"].to_numpy(), sel["value"].to_numpy(dtype=float)


# ------------------------------------------------------------------ phase change

LOSS_FIT, INDUCTION_FIT, COINCIDENCE = "loss_pred", "induction_content", "coincidence"
FIT_DEFINITION = (
    "logistic in u = ln(step + 1) fitted to {what} over the checkpoints, y = y_end + "
    "(y_start - y_end) sigmoid(-(u - m)/w): midpoint = e^m - 1 (steps), span = e^(2 ln 9 w) "
    "(the factor in steps over which 10-90 % of the change happens), R^2, 95 % intervals "
    "from a residual bootstrap with the residuals scaled for their autocorrelation (effective "
    "sample size); shape, the point estimate's description: 'phase change' when span <= "
    "{max_span:g} and R^2 >= {min_r2:g}, 'smooth' for a wider single change, 'two drops' when "
    "two logistics fit far better, 'flat' when nothing rises above the noise; verdict on "
    "'a phase change', judged with the span's interval: holds when the whole interval is "
    "<= {max_span:g} and R^2 >= {min_r2:g}, fails when the interval lies above {max_span:g}, "
    "R^2 < {min_r2:g} or the shape is flat or two drops, not measured when a sharp change's "
    "middle lies outside the checkpoints, too close to call otherwise")
COINCIDENCE_DEFINITION = (
    "|ln((midpoint_loss + 1)/(midpoint_induction + 1))|: verdict on 'at the same time' "
    "judged with its 95 % interval (paired bootstrap replicates of the two fits): holds when "
    "the whole interval is <= ln {factor:g}, fails when it lies above, too close to call when "
    "it contains ln {factor:g}; measured when an induction head formed and each curve has "
    "one change (a phase change or a smooth one: a flat curve or two drops have no midpoint)")
NO_LAYER_NOTE = ("no layer can form an induction head (needs layer >= 1 or smeared keys): the "
                 "fit is of the best head of every layer, the control")


def _fit_row(fit, meta: dict, name: str, definition: str, formed: float = 1.0, note: str = "") -> dict:
    from .phase_change import PHASE_CHANGE, SMOOTH, phase_change_verdict

    return {**meta, "metric": name, "shape": fit.shape, "verdict": phase_change_verdict(fit),
            "direction": fit.direction,
            "midpoint": fit.midpoint, "midpoint_low": fit.midpoint_low,
            "midpoint_high": fit.midpoint_high, "span": fit.span, "span_low": fit.span_low,
            "span_high": fit.span_high, "r2": fit.r2, "start": fit.start, "end": fit.end,
            "drop": fit.drop, "one_drop": float(fit.shape in (PHASE_CHANGE, SMOOTH)),
            "formed": formed, "value": math.nan, "low": math.nan, "high": math.nan,
            "note": " ".join(t for t in (note, fit.note) if t), "definition": definition}


def measure_phase_change(frame: pd.DataFrame, layers, seed: int = 0) -> pd.DataFrame:
    """The phase change of one model's dynamics frame, measured as a shape
    (:data:`PHASE_COLUMNS`; :mod:`.phase_change`): a logistic fit to the loss on predictable
    targets, one to the best head's induction content part (over ``layers``, the model's
    :func:`induction_layers`; over every layer for a model that has none, the control), and
    the gap between their midpoints. Whether an induction head formed is left to the
    head-role rule (:func:`decide_formed`: ``formed`` is NaN until then); the induction
    row keeps what it reads, the best head by content part at the last checkpoint
    (``best_head``) with its content part, induction score and the score's chance level.
    A model with no layer that can form one has ``formed`` 0 and no coincidence. Each row's
    ``verdict`` is judged with intervals: "a phase change" on the span's interval for the
    two fits (:func:`.phase_change.phase_change_verdict`), "at the same time" on the gap's
    interval for the coincidence (:func:`.phase_change.same_time`).
    """
    from ...analysis.uncertainty import NOT_MEASURED
    from .phase_change import (MAX_SPAN, MIN_R2, PHASE_CHANGE, SAME_TIME_FACTOR, SMOOTH,
                               fit_logistic, same_time)

    meta = {"variant": frame["variant"].iloc[0], "seed": int(frame["seed"].iloc[0])}
    steps, loss = metric_curve(frame, "loss_pred")
    loss_fit = fit_logistic(steps, loss, seed=seed)
    rows = [_fit_row(loss_fit, meta, LOSS_FIT, FIT_DEFINITION.format(
        what="the loss on predictable targets", max_span=MAX_SPAN, min_r2=MIN_R2))]
    followed = fit_layers(frame, layers)
    best = best_induction_heads(frame, followed, content_column("induction"))
    what = ("the best head's induction content part (induction score - its positional "
            "control), best over " + _layers_phrase(followed))
    definition = FIT_DEFINITION.format(what=what, max_span=MAX_SPAN, min_r2=MIN_R2)
    coincidence = {**meta, "metric": COINCIDENCE, "verdict": NOT_MEASURED, "value": math.nan,
                   "low": math.nan, "high": math.nan, "definition": COINCIDENCE_DEFINITION.format(factor=SAME_TIME_FACTOR)}
    if len(best) >= 5:
        last = best.iloc[-1]
        layer, head = int(last["layer"]), int(last["head"])
        induction_fit = fit_logistic(best["step"].to_numpy(), best["value"].to_numpy(dtype=float),
                                     seed=seed + 1)
        row = _fit_row(induction_fit, meta, INDUCTION_FIT, definition,
                       math.nan if layers else 0.0, "" if layers else NO_LAYER_NOTE)
        rows.append(row | {"best_head": f"L{layer}H{head}", "final_content": float(last["value"]),
                           "final_score": _final_score(frame, layer, head),
                           "final_chance": score_chance(frame, "induction", followed)})
        if layers:
            gap = same_time(loss_fit, induction_fit, SAME_TIME_FACTOR, shapes=(PHASE_CHANGE, SMOOTH))
            coincidence.update(verdict=gap["status"], value=gap["gap"], low=gap["low"],
                               high=gap["high"], note=gap["note"])
        else:
            coincidence["note"] = f"coincidence not measured: {NO_LAYER_NOTE}"
    else:
        coincidence["note"] = "coincidence not measured: no induction scores to fit"
    rows.append(coincidence)
    return pd.DataFrame(rows, columns=PHASE_COLUMNS)


def decide_formed(phase: pd.DataFrame, roles: dict) -> pd.DataFrame:
    """``phase`` (:func:`measure_phase_change` rows of one model or many) with the head-role
    rule ``roles`` (``behaviour.roles``) applied: an induction head formed when the best
    head by content part at the last checkpoint has the induction role (its score at least
    the role threshold over chance, its content part at least ``above_chance``). A model
    where none formed gets the reason in its note, and its coincidence no value and the
    verdict "not measured"."""
    from ...analysis.uncertainty import NOT_MEASURED

    out = phase.copy()
    out["note"] = out["note"].fillna("").astype(str)
    for i in out.index[undecided(out)]:
        r = out.loc[i]
        need = role_threshold(r["final_chance"], roles)
        formed = r["final_content"] >= roles["above_chance"] and r["final_score"] >= need
        out.loc[i, "formed"] = float(formed)
        if not formed:
            why = (f"no induction head formed: at the last checkpoint the best head by content "
                   f"part, {r['best_head']}, has a content part of {r['final_content']:.3f} "
                   f"(needs {roles['above_chance']:g}) and an induction score of "
                   f"{r['final_score']:.3f} (needs {need:.3f}, chance {r['final_chance']:.3f}).")
            out.loc[i, "note"] = " ".join(t for t in (why, r["note"]) if t)
            same = ((out["metric"] == COINCIDENCE) & (out["variant"] == r["variant"])
                    & (out["seed"] == r["seed"]))
            out.loc[same, ["value", "low", "high"]] = math.nan
            out.loc[same, "verdict"] = NOT_MEASURED
            out.loc[same, "note"] = f"coincidence not measured: {why}"
    return out


def undecided(phase: pd.DataFrame) -> pd.Series:
    """The induction rows of ``phase`` whose ``formed`` the role rule has still to decide."""
    return (phase["metric"] == INDUCTION_FIT) & phase["formed"].isna()


def _final_score(frame: pd.DataFrame, layer: int, head: int) -> float:
    """A head's induction score at the last checkpoint."""
    rows = frame[(frame["metric"] == "induction") & (frame["layer"] == layer) & (frame["head"] == head)]
    return float(rows.loc[rows["step"].idxmax(), "value"])


def _layers_phrase(layers) -> str:
    layers = list(layers)
    if not layers:
        return "no layer"
    return ("layer " if len(layers) == 1 else "layers ") + ", ".join(map(str, layers))


def dynamics_results(model, spec, checkpoints_dir, behaviour: dict, settings: dict,
                     log=lambda msg: None) -> tuple[pd.DataFrame, dict, pd.DataFrame]:
    """The dynamics stage's results for one model: ``(dynamics, per-token losses,
    phase_change)``; the losses' ``meta`` (variant, seed, evaluation set) included."""
    frame, losses, layers = model_dynamics(model, spec, checkpoints_dir, behaviour, settings, log)
    phase = measure_phase_change(frame, layers, seed=spec.seed)
    meta = {"variant": spec.variant, "seed": spec.seed, "eval_seed": behaviour["eval_seed"],
            "eval_size": settings["eval_size"]}
    for r in phase.itertuples():
        log(f"[{spec.name}] {r.metric}: " + (f"{r.shape}, midpoint {r.midpoint:.0f}, span "
                                             f"{r.span:.2f}, R2 {r.r2:.3f}" if r.metric != COINCIDENCE
                                             else f"gap {r.value:.3f}") + (f"; {r.note}" if r.note else ""))
    return frame, {"meta": np.array(json.dumps(meta)), **losses}, phase


def read_phase_change(path) -> pd.DataFrame:
    """A phase_change.csv, an empty note as ""."""
    frame = read_table(path, PHASE_COLUMNS, dtype={"note": str, "shape": str, "best_head": str})
    frame["note"] = frame["note"].fillna("")
    return frame
