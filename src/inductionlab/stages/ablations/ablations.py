"""Ablations (docs/methods.md, "Ablations"): what a model loses when a path is removed.

Layers are 0-based: the write-up's "layer 2" is layer 1, its "layer-1 heads" are the
heads of layer 0. Every ablation is an :class:`~inductionlab.core.model.Intervention` on
the one model, never a second model:

- composition (``layer_inputs``): a layer's queries, keys or values are computed from
  the embedding (``resid[0]``, the direct path) instead of the full residual stream
  ``resid[layer]``, or from the residual stream minus one earlier head's output;
- head ablation (``head_out``): a head's output is replaced by zero, or by its mean
  over the evaluation sequences at each position (from a clean run);
- pattern-preserving zero ablation (``pattern`` + ``head_out``): the attention
  patterns of *every* layer are frozen to the clean run's patterns on the same input,
  and the head's output is set to zero. The head then still shapes no pattern
  downstream through keys or queries (those are fixed), so what is lost is its OV
  part only: its direct write to the logits and what later heads read from it
  through their values;
- smear off (``use_smear``): a smeared layer uses its raw keys (sigma = 1).

Config entries ``{kind, target}`` expand into concrete :class:`Ablation` records in
:mod:`inductionlab.core.ablation_plan` (a pure function of the entry and the model config);
here :class:`AblatedModel` runs a model under one of them and can be used wherever a model
is (greedy decoding, head scores); :func:`ablation_table` measures every ablation.
"""
from __future__ import annotations

import math
from dataclasses import fields

import numpy as np
import pandas as pd
import torch

from ...core.ablation_plan import (BASELINE, EMBEDDING, LAYER_KINDS, MINUS_HEAD, RESIDUAL, STREAMS,
                                   Ablation, check_fits, expand_entries, head_name)
from ...core.model import NO_INTERVENTION, Intervention, ModelConfig, chunked
from ...core.formats import NATS, SHARE_OF_ATTENTION, declare_table
from ...analysis.roles import INDUCTION, content_column, control_column
from ...analysis.uncertainty import bootstrap_interval, interval_columns, percentile_interval
from ...core.metrics import per_token_loss, pooled_units, task_metrics
from ...core.data import TaskConfig, control_sample
from ...core.tasks import out_of_context

# ---------------------------------------------------------------- interventions

class StreamChoice(Intervention):
    """Queries, keys and values of ``layer`` from chosen residual streams.

    Each of ``queries``, ``keys``, ``values`` is ``residual`` (the model), ``embedding``
    (``resid[0]``) or ``residual_minus_head`` (``resid[layer]`` minus the output of
    head ``source`` = (layer, head) of an earlier layer). Other layers are unchanged.
    """

    def __init__(self, layer: int, queries: str = RESIDUAL, keys: str = RESIDUAL,
                 values: str = RESIDUAL, source: tuple[int, int] | None = None):
        bad = [s for s in (queries, keys, values) if s not in STREAMS]
        if bad:
            raise ValueError(f"stream(s) {bad}; allowed: {STREAMS}")
        if MINUS_HEAD in (queries, keys, values) and (source is None or source[0] >= layer):
            raise ValueError(f"{MINUS_HEAD} needs a source head in a layer before {layer}, "
                             f"got {source}")
        self.layer, self.streams, self.source = layer, (queries, keys, values), source

    @property
    def needs_head_out(self) -> bool:
        """Whether the forward pass must form per-head outputs for this intervention."""
        return MINUS_HEAD in self.streams

    def _stream(self, which: str, cache):
        if which == EMBEDDING:
            return cache.resid[0]
        x = cache.resid[self.layer]
        if which == MINUS_HEAD:
            l, h = self.source
            return x - cache.head_out[l][:, h]
        return x

    def layer_inputs(self, layer, cache):
        if layer != self.layer:
            return super().layer_inputs(layer, cache)
        return tuple(self._stream(s, cache) for s in self.streams)


class HeadAblation(Intervention):
    """Heads' outputs replaced by zero (``means=None``) or by their mean per position.

    ``heads``: (layer, head) pairs, any number at once. ``means``: [L, H, T, D] mean
    outputs (:func:`head_means`). ``patterns``: a list of [B, H, T, T] patterns, one per
    layer, that replace the patterns the pass computes (pattern-preserving ablation).
    """

    needs_head_out = True

    def __init__(self, heads, means: torch.Tensor | None = None, patterns=None):
        self.heads = sorted({(int(l), int(h)) for l, h in heads})
        self.means, self.patterns = means, patterns

    def pattern(self, layer, pattern):
        if self.patterns is None:
            return pattern
        return self.patterns[layer]

    def head_out(self, layer, head_out):
        heads = [h for l, h in self.heads if l == layer]
        if not heads:
            return head_out
        head_out = head_out.clone()
        T = head_out.shape[2]
        for h in heads:
            head_out[:, h] = 0.0 if self.means is None else self.means[layer, h, :T]
        return head_out


class SmearOff(Intervention):
    """The given smeared layers use their raw keys."""

    def __init__(self, layers):
        self.layers = {int(l) for l in layers}

    def use_smear(self, layer):
        return layer not in self.layers


@torch.no_grad()
def head_means(model, tokens: torch.Tensor, batch_size: int = 1024) -> torch.Tensor:
    """Mean output of every head at every position over ``tokens``: [L, H, T, D]."""
    total = None
    for i in range(0, len(tokens), batch_size):
        _, cache = model.run_with_cache(tokens[i:i + batch_size])
        part = torch.stack(cache.head_out).sum(1)  # [L, H, T, D]
        total = part if total is None else total + part
    return total / len(tokens)


class AblatedModel:
    """A model under one ablation; callable like the model, with ``run_with_cache``,
    ``W_U`` and ``cfg``, so greedy decoding and head scores take it unchanged.

    ``means``: [L, H, T, D] head means, required by ``mean_heads``. ``clean``: a store of
    the clean patterns of the token batches already passed, which several ablations that
    freeze the patterns may share (a new one when not given). With the baseline (no
    ablation) every call is exactly the model's.
    """

    def __init__(self, model, ablation: Ablation = BASELINE, means: torch.Tensor | None = None,
                 clean: dict | None = None):
        check_fits(ablation, model.cfg)
        if ablation.kind == "mean_heads" and means is None:
            raise ValueError(f"ablation {ablation.name!r} needs the heads' mean outputs (means=)")
        self.model, self.ablation, self.means = model, ablation, means
        self.clean = {} if clean is None else clean

    @torch.no_grad()
    def clean_patterns(self, tokens: torch.Tensor) -> list[torch.Tensor]:
        """The clean pass's pattern of every layer on ``tokens``, computed once per batch of
        tokens (keyed by their values) for every ablation sharing the store."""
        key = (tuple(tokens.shape), tokens.numpy().tobytes())
        if key not in self.clean:
            self.clean[key] = self.model.run_with_cache(tokens)[1].pattern
        return self.clean[key]

    @property
    def cfg(self) -> ModelConfig:
        return self.model.cfg

    @property
    def W_U(self) -> torch.Tensor:
        return self.model.W_U

    def intervention(self, tokens: torch.Tensor) -> Intervention:
        """The hooks for a pass over ``tokens`` (frozen patterns are those of a clean pass on them)."""
        a = self.ablation
        if a.kind == "baseline":
            return NO_INTERVENTION
        if a.kind in LAYER_KINDS:
            source = None if a.source_layer is None else (a.source_layer, a.source_head)
            return StreamChoice(a.layer, a.queries_from, a.keys_from, a.values_from, source)
        if a.kind == "zero_heads":
            return HeadAblation([(a.layer, a.head)])
        if a.kind == "mean_heads":
            return HeadAblation([(a.layer, a.head)], means=self.means)
        if a.kind == "zero_heads_frozen_patterns":
            return HeadAblation([(a.layer, a.head)], patterns=self.clean_patterns(tokens))
        return SmearOff([a.layer])

    def run_with_cache(self, tokens: torch.Tensor, intervention: Intervention = NO_INTERVENTION,
                       head_out: bool = True):
        if intervention is not NO_INTERVENTION:
            raise ValueError("an AblatedModel applies its own ablation; pass no intervention")
        # in chunks, each with its own intervention (a frozen pattern is its chunk's)
        return chunked(lambda part: self.model.run_with_cache(part, self.intervention(part),
                                                              head_out=head_out), tokens, head_out)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.model(tokens, self.intervention(tokens))

    __call__ = forward


# ---------------------------------------------------------------- measuring

METRICS = ("loss_all", "loss_pred", "acc_pred", "suite_acc")
PER_SEQUENCE = "_per_sequence"  # a measure's per-sequence losses, used for intervals, not kept
REPLICATES = "_replicates"  # its induction content part's bootstrap replicates, not kept
CONTENT = content_column(INDUCTION)  # induction_content: score − positional control
LEFT = f"{CONTENT}_left"  # the share of the baseline's content part left under an ablation
SCORES = ("induction", "first_block", "prefix_matching")  # head scores reported per ablation
LEAD = ["ablation", "kind", "layer", "head", "source_layer", "source_head", "queries_from",
        "keys_from", "values_from", "status"]
# ablations.csv: one row per ablation; its metrics and their change from the baseline (the
# losses' with intervals), then per layer l the head scores' mean, max, chance and control
# (<score>_mean_L<l>, ...) and every head's (<score>_L<l>H<h>); with the control sample, for
# every head of a layer >= 1 its induction content part (induction_content_L<l>H<h>) and the
# share of the baseline's left, with its interval (induction_content_left_L<l>H<h>[_low|_high]).
ABLATIONS = declare_table(
    "ablations", ["variant", "seed", *LEAD, *METRICS, *(f"delta_{m}" for m in METRICS),
                  *interval_columns("delta_loss_all"), *interval_columns("delta_loss_pred")],
    keys=LEAD,
    more=r"(%s)(_(mean|max|chance|control_mean|control_max)_L\d+|_L\d+H\d+)|%s_L\d+H\d+"
         r"|%s_L\d+H\d+(_low|_high)?" % ("|".join(SCORES), CONTENT, LEFT),
    units={r"(delta_)?loss_\w+": NATS,
           "(%s)_(?!content_left_).*" % "|".join(SCORES): SHARE_OF_ATTENTION})  # a share left has none


def suite_accuracy(model, prompts: list[str], task) -> float:
    """Mean greedy accuracy over the in-distribution prompts of the suite (NaN if none)."""
    from ..behaviour.behaviour import prompt_suite

    frame = prompt_suite(model, prompts, task)
    inside = frame[frame["in_distribution"]]
    return float(inside["accuracy"].mean()) if len(inside) else math.nan


@torch.no_grad()
def measure(model, task, sample, distinct: torch.Tensor, prompts: list[str],
            local_window: int, control: torch.Tensor | None = None,
            seed: int = 0, masks=None) -> tuple[dict, list[torch.Tensor]]:
    """Metrics of one (ablated) model and the mean pattern of every layer [H, T, T].

    loss_all, loss_pred, acc_pred on ``tokens``; suite_acc: greedy accuracy on the
    in-distribution ``prompts``; per head ``induction_L{l}H{h}``, ``first_block_L{l}H{h}``
    (on ``tokens``) and ``prefix_matching_L{l}H{h}`` (on ``distinct``), with their mean
    and max over the heads of each layer and their chance level
    (``induction_mean_L{l}``, ``induction_max_L{l}``, ``induction_chance_L{l}``, ...);
    with a ``control`` sample (random sequences), the same mean and max on it
    (``induction_control_mean_L{l}``, ...: the positional control), and per head of every
    layer l >= 1 its induction content part ``induction_content_L{l}H{h}`` with the
    bootstrap replicates of every layer's (resamples seeded from ``seed``; kept under
    ``_replicates`` for :func:`content_left`, not a column). ``masks``: the samples'
    :func:`~inductionlab.stages.behaviour.attention.sample_masks`, when already read.
    """
    from ..behaviour.attention import head_score_table

    tokens, predictable = sample.tokens, sample.predictable
    scores, patterns, logits, *replicates = head_score_table(
        model, sample, distinct, local_window, return_logits=True, copying=False,
        control_tokens=control, seed=seed, content_replicates=control is not None, masks=masks)
    metrics = task_metrics(logits, tokens, predictable)
    row = {k: metrics[k] for k in ("loss_all", "loss_pred", "acc_pred")}
    losses = per_token_loss(logits, tokens).double()  # per sequence, for the deltas' intervals
    row[PER_SEQUENCE] = {"loss_all": losses.mean(-1).numpy(),
                         "loss_pred": pooled_units(losses, predictable).numpy()}
    row["suite_acc"] = suite_accuracy(model, prompts, task)
    for name in SCORES:
        for l, group in scores.groupby("layer"):
            row[f"{name}_mean_L{l}"] = float(group[name].mean())
            row[f"{name}_max_L{l}"] = float(group[name].max())
            row[f"{name}_chance_L{l}"] = float(group[f"{name}_chance"].iloc[0])
            if control is not None:
                row[f"{name}_control_mean_L{l}"] = float(group[control_column(name)].mean())
                row[f"{name}_control_max_L{l}"] = float(group[control_column(name)].max())
    for name in SCORES:
        for r in scores.itertuples():
            row[f"{name}_{head_name(r.layer, r.head)}"] = float(getattr(r, name))
    if control is not None:
        for r in scores[scores["layer"] >= 1].itertuples():
            row[f"{CONTENT}_{head_name(r.layer, r.head)}"] = float(getattr(r, CONTENT))
        row[REPLICATES] = replicates[0]
    return row, patterns


def delta_interval(own: dict | None, base: dict | None, metric: str, seed: int) -> tuple[float, float]:
    """95 % interval of an ablation's loss rise: a bootstrap over sequences of the
    per-sequence difference from the baseline (paired: the same sequences). NaN for a
    skipped ablation."""
    if own is None or base is None:
        return math.nan, math.nan
    return bootstrap_interval(own[metric] - base[metric], seed=seed, purpose="ablation-sequences")


def share_left(ablated, baseline):
    """The share of the baseline's content part left under an ablation (values or replicates)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.divide(ablated, baseline)


def content_left(own: list[np.ndarray] | None, base: list[np.ndarray] | None,
                 own_value: float, base_value: float, layer: int,
                 head: int) -> tuple[float, float, float]:
    """Head (layer, head)'s share of the baseline's induction content part left under an
    ablation, with its 95 % interval: the percentiles of the share over paired bootstrap
    replicates (``own``, ``base``: every layer's [R, H] replicates, the same resamples of
    the sample's and the control's sequences). NaN for a skipped ablation or where the
    baseline's content part is <= 0; the baseline's own share is 1 with interval (1, 1)."""
    if own is None or base is None or not base_value > 0:
        return math.nan, math.nan, math.nan
    low, high = percentile_interval(share_left(own[layer][:, head], base[layer][:, head]))
    return float(share_left(own_value, base_value)), low, high


def content_left_columns(frame: pd.DataFrame, replicates: list) -> pd.DataFrame:
    """Per head of every layer >= 1 the :func:`content_left` share and interval of every
    row (the baseline first, ``replicates`` in the rows' order); none without the control."""
    columns, base = {}, replicates[0]
    for layer in range(1, len(base) if base is not None else 0):
        for head in range(base[layer].shape[1]):
            name = head_name(layer, head)
            values = frame[f"{CONTENT}_{name}"]
            shares = [content_left(own, base, value, values.iloc[0], layer, head)
                      for own, value in zip(replicates, values)]
            for k, key in enumerate((f"{LEFT}_{name}", *interval_columns(f"{LEFT}_{name}"))):
                columns[key] = [share[k] for share in shares]
    return pd.DataFrame(columns, index=frame.index)


def ablation_table(model, ablations: list[Ablation], task, sample,
                   distinct: torch.Tensor, prompts: list[str], local_window: int,
                   log=lambda msg: None, control: torch.Tensor | None = None, seed: int = 0
                   ) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """Measure the baseline and every ablation.

    Returns one row per ablation (baseline first; skipped ablations keep their
    status and empty metrics) with ``delta_*`` = metric minus the baseline's (the loss
    rises with their 95 % interval, ``delta_loss_all_low``/``_high``, a paired bootstrap
    over sequences seeded from ``seed``); with a ``control`` sample, per head of every
    layer >= 1 the share of the baseline's induction content part left
    (``induction_content_left_L{l}H{h}`` and its interval, :func:`content_left`); and the
    mean attention patterns {name: [L, H, T, T]} of every ablation that ran.
    """
    from ..behaviour.attention import sample_masks

    means = head_means(model, sample.tokens) if any(a.kind == "mean_heads" for a in ablations) else None
    clean: dict = {}  # the clean patterns of every batch, shared by the frozen-pattern ablations
    masks = sample_masks(sample, distinct, local_window)  # every ablation is scored on them
    rows, arrays = [], {}
    for ablation in [BASELINE] + [a for a in ablations if a.name != BASELINE.name]:
        row = {f.name: getattr(ablation, f.name) for f in fields(Ablation)}
        row["ablation"] = row.pop("name")
        if not ablation.skipped:
            metrics, patterns = measure(AblatedModel(model, ablation, means, clean), task, sample,
                                        distinct, prompts, local_window, control, seed, masks)
            row.update(metrics)
            arrays[ablation.name] = torch.stack(patterns).numpy().astype(np.float32)
            log(f"{ablation.name}: loss_all {metrics['loss_all']:.3f}, acc_pred "
                f"{metrics['acc_pred']:.3f}, suite_acc {metrics['suite_acc']:.3f}")
        else:
            log(f"{ablation.name}: {ablation.status}")
        rows.append(row)
    per_sequence = [row.pop(PER_SEQUENCE, None) for row in rows]
    replicates = [row.pop(REPLICATES, None) for row in rows]
    frame = pd.DataFrame(rows)
    frame = frame[LEAD + [c for c in frame.columns if c not in LEAD]]
    for c in ("layer", "head", "source_layer", "source_head"):
        frame[c] = frame[c].astype("Int64")
    base = frame.iloc[0]
    deltas = pd.DataFrame({f"delta_{m}": frame[m] - base[m] for m in METRICS})
    for m in ("loss_all", "loss_pred"):  # paired bootstrap over sequences of each delta
        bounds = [delta_interval(own, per_sequence[0], m, seed) for own in per_sequence]
        low, high = interval_columns(f"delta_{m}")
        deltas[low], deltas[high] = [b[0] for b in bounds], [b[1] for b in bounds]
    at = frame.columns.get_loc(METRICS[-1]) + 1
    frame = pd.concat([frame.iloc[:, :at], deltas, frame.iloc[:, at:],
                       content_left_columns(frame, replicates)], axis=1)
    return frame, arrays


def model_ablations(model, spec, behaviour: dict, settings: dict,
                    log=lambda msg: None) -> tuple[pd.DataFrame, dict]:
    """The ablation stage's results for one model: the table (variant and seed first) and
    the ablated attention arrays (their ``names`` included).

    ``behaviour``: the behaviour settings (evaluation sample, prompts, local window);
    ``settings``: the ablation settings (its ``entries``).
    """
    from ..behaviour.behaviour import check_prompt, evaluation_samples

    task = TaskConfig.from_dict(behaviour["task"])  # the write-up's: the prompt suite's
    prompts = [p["prompt"] for p in behaviour["prompts"]]
    for p in prompts:  # checked before any model runs
        check_prompt(p, task)
    ablations = expand_entries(settings["entries"], model.cfg)
    n_run = sum(not a.skipped for a in ablations)
    log(f"[{spec.name}] {n_run} ablation(s) + baseline on "
        f"{behaviour['n_sequences']} sequences; {len(ablations) - n_run} skipped")
    unread = out_of_context(model.cfg.seq_len, task)
    if unread:  # suite_acc is NaN: no prompt is completed
        log(f"[{spec.name}] the prompt suite's accuracy (suite_acc) is {unread}")
        prompts = []
    sample, distinct = evaluation_samples(spec.task, behaviour["n_sequences"], behaviour["eval_seed"])
    control = control_sample(behaviour["n_sequences"], spec.task, behaviour["eval_seed"])
    frame, arrays = ablation_table(model, ablations, task, sample, distinct, prompts,
                                   behaviour["roles"]["local_window"],
                                   log=lambda msg: log(f"[{spec.name}] {msg}"), control=control,
                                   seed=behaviour["eval_seed"])
    frame.insert(0, "seed", spec.seed)
    frame.insert(0, "variant", spec.variant)
    arrays["names"] = np.array(list(arrays))
    return frame, arrays
