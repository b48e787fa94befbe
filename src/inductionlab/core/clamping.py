"""Interventions during training: a sub-circuit's activations clamped at every step to a
reference, or layer 0 frozen at its initialisation, while everything else learns
(docs/methods.md, "Interventions during training").

The setting is the spec's ``train.intervention`` (absent: none):
``{kind: clamp, part: A|B|C, reference: trained|handbuilt}`` or ``{kind: freeze, part: layer0}``.

The three parts of the textbook induction circuit (L layers, the last one L - 1):

- ``A``, the previous-token part. With two layers or more: layer 0's attention pattern
  and its heads' outputs into the residual stream. In a one-layer model with smeared keys,
  the smear: the gate s of k'_j = s_j k_j + (1 - s_j) k_{j-1}. A one-layer model without
  smeared keys has no previous-token part.
- ``B``, the match: the last layer's attention pattern (its smeared keys, if any, only
  feed it).
- ``C``, the copy: the last layer's value-to-output vectors, o_j = x_j W_V W_O for each
  head and key position j; a head's output at query i is sum_j pattern[i, j] o_j, its
  pattern the model's own.

Clamping X replaces X's activations, at every step, by their values under the reference
on the same batch: constants, through which no gradient flows. The references:

- ``trained``: the same seed's fully trained model (a ``model.pt`` of the same model),
  run on the batch without gradients;
- ``handbuilt``: an exact solution. A: every layer-0 head attends from i to i - 1, and
  position 0 to itself (:func:`previous_token_pattern`); in a smeared model, a gate of 0
  (key j is key j - 1 exactly). B: every last-layer head attends, from query i, equally to
  every key 1 <= j <= i whose previous token is token i, or to itself where there is none
  (:func:`induction_pattern`). C: every head's vector at key j is
  (COPY_GAIN / H) u_{x_j}, with u_v the row v of the pseudo-inverse of the model's current
  W_U (held constant for the step): u_v W_U is the one-hot of token v, so heads that
  attend to key j add COPY_GAIN to token x_j's logit and nothing to any other
  (:func:`copying_values_out`; it needs d_model >= vocab_size).

A freeze keeps layer 0's weights (W_Q, W_K, W_V, W_O of layer 0 and its smear, if any)
at their initial values bit for bit: their gradients are zeroed before every update and
the values put back after it, which undoes AdamW's weight decay too.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .metrics import mean_loss, task_metrics
from .bounds import EVAL_CHUNK
from .model import AttentionOnlyTransformer, Intervention, ModelConfig

KINDS = ("clamp", "freeze")
PARTS = {"clamp": ("A", "B", "C"), "freeze": ("layer0",)}
REFERENCES = ("trained", "handbuilt")
KEYS = ("kind", "part", "reference")
COPY_GAIN = 10.0
NEEDS_REFERENCE = ("train.intervention.reference: 'trained' needs the reference model file "
                   "(inductionlab train --reference path/model.pt)")
# The log columns of a clamped run's validation with the clamp taken away (the same weights).
UNCLAMPED = {"loss_all": "val_loss_all_unclamped", "loss_pred": "val_loss_pred_unclamped",
             "acc_pred": "val_acc_pred_unclamped"}


@dataclass(frozen=True)
class TrainingIntervention:
    """The spec's ``train.intervention``: what is clamped or frozen, and to what."""

    kind: str
    part: str
    reference: str | None = None

    @classmethod
    def from_dict(cls, value) -> "TrainingIntervention | None":
        """The setting, or None for none (absent, None or ``"none"``); ValueError in one
        line naming the key and what is allowed."""
        if value is None or value == "none":
            return None
        if not isinstance(value, dict):
            raise ValueError(f"train.intervention: {value!r} is not a mapping; allowed: none, "
                             "{kind: clamp, part: A|B|C, reference: trained|handbuilt} or "
                             "{kind: freeze, part: layer0}")
        unknown = sorted(set(value) - set(KEYS))
        if unknown:
            raise ValueError(f"train.intervention: unknown key(s) {unknown}; allowed: {list(KEYS)}")
        kind, part, reference = (value.get(k) for k in KEYS)
        if kind not in KINDS:
            raise ValueError(f"train.intervention.kind: {kind!r}; allowed: {', '.join(KINDS)}")
        if part not in PARTS[kind]:
            raise ValueError(f"train.intervention.part: {part!r}; allowed for {kind}: "
                             f"{', '.join(PARTS[kind])}")
        if kind == "clamp" and reference not in REFERENCES:
            raise ValueError(f"train.intervention.reference: {reference!r}; allowed for a clamp: "
                             f"{', '.join(REFERENCES)}")
        if kind == "freeze" and reference is not None:
            raise ValueError(f"train.intervention.reference: {reference!r}; a freeze keeps the "
                             "initial weights and takes no reference: leave it out")
        return cls(kind, part, reference)

    def to_dict(self) -> dict:
        """The spec's value: only the keys that are set."""
        return {k: getattr(self, k) for k in KEYS if getattr(self, k) is not None}

    @property
    def needs_reference(self) -> bool:
        """Whether training needs a reference model file (a clamp to a trained model)."""
        return self.kind == "clamp" and self.reference == "trained"

    @property
    def label(self) -> str:
        """``clamp A to trained``, ``freeze layer0``."""
        return f"{self.kind} {self.part}" + (f" to {self.reference}" if self.reference else "")

    def problem(self, cfg: ModelConfig) -> str | None:
        """Why a model of ``cfg`` cannot take this intervention (one line), or None."""
        smeared_single = cfg.n_layers == 1 and 0 in cfg.smear_layers
        if self.kind == "freeze" and cfg.n_layers < 2:
            return ("train.intervention.part: 'layer0' of a 1-layer model is its only attention "
                    "layer; a freeze needs n_layers >= 2")
        if self.kind == "clamp" and cfg.n_layers == 1 and not smeared_single:
            return (f"train.intervention.part: {self.part!r}; a 1-layer model without smeared "
                    "keys has no induction circuit to clamp (A, B and C need n_layers >= 2 or "
                    "smear_layers: [0])")
        if self.kind == "clamp" and self.part == "C" and self.reference == "handbuilt" \
                and cfg.d_model < cfg.vocab_size:
            return (f"train.intervention: the hand-built copy of part C needs d_model >= "
                    f"vocab_size (here {cfg.d_model} < {cfg.vocab_size})")
        return None


def with_intervention(document: dict, intervention: dict | TrainingIntervention) -> dict:
    """A copy of spec ``document`` trained with ``intervention`` (checked): how an
    experiment registers an intervened model of a variant."""
    setting = intervention if isinstance(intervention, TrainingIntervention) \
        else TrainingIntervention.from_dict(intervention)
    out = {**document, "train": dict(document["train"])}
    if setting is None:
        out["train"].pop("intervention", None)
    else:
        out["train"]["intervention"] = setting.to_dict()
    return out


# ------------------------------------------------------------------ hand-built references

def previous_token_pattern(T: int) -> torch.Tensor:
    """[T, T]: query i attends to key i - 1 with weight 1; query 0 to itself."""
    pattern = torch.zeros(T, T)
    pattern[torch.arange(T), (torch.arange(T) - 1).clamp_min(0)] = 1.0
    return pattern


def induction_pattern(tokens: torch.Tensor) -> torch.Tensor:
    """[B, T, T]: query i attends equally to every key 1 <= j <= i whose previous token
    equals token i; a query with no such key attends to itself."""
    B, T = tokens.shape
    match = torch.zeros(B, T, T, dtype=torch.bool, device=tokens.device)
    match[:, :, 1:] = tokens[:, :, None] == tokens[:, None, :-1]  # query i, key j: x_{j-1} == x_i
    match &= torch.ones(T, T, dtype=torch.bool, device=tokens.device).tril()
    none = ~match.any(-1)
    match |= none[:, :, None] & torch.eye(T, dtype=torch.bool, device=tokens.device)
    weights = match.float()
    return weights / weights.sum(-1, keepdim=True)


def copying_directions(W_U: torch.Tensor) -> torch.Tensor:
    """[V, D]: u_v, the residual direction whose unembedding is the one-hot of token v
    (the rows of W_U's pseudo-inverse; exact when W_U has rank V)."""
    return torch.linalg.pinv(W_U.detach().double()).float()


def copying_values_out(model: AttentionOnlyTransformer, tokens: torch.Tensor) -> torch.Tensor:
    """[B, H, T, D]: every head's hand-built value-to-output vector at every key,
    (COPY_GAIN / H) u_{x_j}."""
    H = model.cfg.n_heads
    out = (COPY_GAIN / H) * copying_directions(model.W_U)[tokens]  # [B, T, D]
    return out[:, None].expand(-1, H, -1, -1)


def values_out(model: AttentionOnlyTransformer, cache, layer: int) -> torch.Tensor:
    """[B, H, T, D]: each head's value-to-output vector x_j W_V W_O at every key j, from the
    layer's input in ``cache``."""
    v = model._project(cache.resid[layer], model.W_V[layer])  # [B, H, T, d]
    return torch.einsum("bhtd,hdD->bhtD", v, model.W_O[layer])


# ------------------------------------------------------------------ the clamps

class Clamp(Intervention):
    """A part of a model replaced by held activations: :meth:`hold` them for a batch, then
    run the model on that batch with this intervention. ``reference``: the trained model,
    or None for the hand-built solution."""

    def __init__(self, cfg: ModelConfig, reference: AttentionOnlyTransformer | None = None):
        self.last = cfg.n_layers - 1
        self.reference = reference
        self.held: dict = {}

    @torch.no_grad()
    def hold(self, model: AttentionOnlyTransformer, tokens: torch.Tensor) -> None:
        """Compute the clamped activations on ``tokens`` (no gradient)."""
        if self.reference is None:
            self.held = self._handbuilt(model, tokens)
        else:
            _, cache = self.reference.run_with_cache(tokens, head_out=self.head_outputs)
            self.held = self._trained(cache)

    head_outputs = False

    def observe_pattern(self, layer: int, pattern: torch.Tensor) -> None:
        """See the pattern a layer's heads finally use (after any other intervention)."""

    def held_values(self, layer: int) -> torch.Tensor | None:
        """[B, H, T, D]: where this clamp replaces a layer's heads' outputs, the held
        value-to-output vectors o_j whose pattern-weighted sum each head writes (the
        same pattern as the pass's); None for a layer it leaves computed by the weights."""
        return None

    def beneath(self, intervention: Intervention) -> Intervention:
        """``intervention`` applied to the model as it trained, under this clamp
        (:class:`UnderClamp`); this clamp alone for none."""
        return self if type(intervention) is Intervention else UnderClamp(self, intervention)

    def _handbuilt(self, model, tokens) -> dict:
        raise NotImplementedError

    def _trained(self, cache) -> dict:
        raise NotImplementedError


class ClampPreviousToken(Clamp):
    """A with two layers or more: layer 0's pattern and (to a trained reference) its heads'
    outputs; the hand-built reference fixes the pattern and leaves the heads' OV to learn."""

    head_outputs = True

    def _handbuilt(self, model, tokens):
        return {"pattern": previous_token_pattern(tokens.shape[1]).to(tokens.device)}

    def _trained(self, cache):
        return {"pattern": cache.pattern[0], "head_out": cache.head_out[0], "cache": cache}

    def held_values(self, layer):
        if layer != 0 or "cache" not in self.held:
            return None
        return values_out(self.reference, self.held["cache"], 0)  # only where asked: not in training

    def pattern(self, layer, pattern):
        return self.held["pattern"].expand_as(pattern) if layer == 0 else pattern

    def head_out(self, layer, head_out):
        return self.held["head_out"] if layer == 0 and "head_out" in self.held else head_out


class ClampSmearGate(Clamp):
    """A in a one-layer smeared model: the gate of layer 0's smeared keys."""

    def _handbuilt(self, model, tokens):
        return {"gate": torch.zeros_like(model.smear_alpha["0"])}

    @torch.no_grad()
    def hold(self, model, tokens):
        if self.reference is None:
            self.held = self._handbuilt(model, tokens)
        else:  # the gate is the same for every sequence: no pass needed
            self.held = {"gate": torch.sigmoid(self.reference.smear_alpha["0"]).detach()}

    def smear_gate(self, layer, gate):
        return self.held["gate"] if layer == 0 else gate


class ClampMatch(Clamp):
    """B: the last layer's attention pattern."""

    def _handbuilt(self, model, tokens):
        return {"pattern": induction_pattern(tokens)[:, None]}

    def _trained(self, cache):
        return {"pattern": cache.pattern[self.last]}

    def pattern(self, layer, pattern):
        return self.held["pattern"].expand_as(pattern) if layer == self.last else pattern


class ClampCopy(Clamp):
    """C: the last layer's value-to-output vectors; each head's output is its own pattern
    times the held vectors (the pattern is seen in :meth:`pattern`, just before)."""

    def _handbuilt(self, model, tokens):
        return {"values_out": copying_values_out(model, tokens)}

    def _trained(self, cache):
        return {"values_out": values_out(self.reference, cache, self.last)}

    def pattern(self, layer, pattern):
        self.observe_pattern(layer, pattern)
        return pattern

    def observe_pattern(self, layer, pattern):
        if layer == self.last:
            self._pattern = pattern

    def head_out(self, layer, head_out):
        if layer != self.last:
            return head_out
        return self._pattern @ self.held["values_out"]

    def held_values(self, layer):
        return self.held["values_out"] if layer == self.last else None


class UnderClamp(Intervention):
    """Another intervention (an ablation, say) on a model that runs under its training
    clamp: the clamp is part of the model as trained, so its hooks come first and the
    other intervention edits what they leave; a copy clamp (C) multiplies its held vectors
    by the pattern the heads finally use."""

    needs_head_out = True

    def __init__(self, clamp: Clamp, outer: Intervention):
        self.clamp, self.outer = clamp, outer

    def layer_inputs(self, layer, cache):
        return self.outer.layer_inputs(layer, cache)

    def use_smear(self, layer):
        return self.outer.use_smear(layer)

    def smear_gate(self, layer, gate):
        return self.outer.smear_gate(layer, self.clamp.smear_gate(layer, gate))

    def pattern(self, layer, pattern):
        final = self.outer.pattern(layer, self.clamp.pattern(layer, pattern))
        self.clamp.observe_pattern(layer, final)
        return final

    def head_out(self, layer, head_out):
        return self.outer.head_out(layer, self.clamp.head_out(layer, head_out))


def clamp_for(setting: TrainingIntervention, cfg: ModelConfig,
              reference: AttentionOnlyTransformer | None = None) -> Clamp:
    """The :class:`Clamp` of a clamp setting on a model of ``cfg``."""
    problem = setting.problem(cfg)
    if problem or setting.kind != "clamp":
        raise ValueError(problem or f"train.intervention: {setting.label} is not a clamp")
    if setting.needs_reference and reference is None:
        raise ValueError(NEEDS_REFERENCE)
    if setting.part == "A":
        cls = ClampPreviousToken if cfg.n_layers > 1 else ClampSmearGate
    else:
        cls = {"B": ClampMatch, "C": ClampCopy}[setting.part]
    return cls(cfg, reference if setting.reference == "trained" else None)


def clamped_loss_function(model: AttentionOnlyTransformer, clamp: Clamp):
    """tokens -> mean training loss of ``model`` with ``clamp`` held on those tokens (eager)."""
    def loss(tokens):
        clamp.hold(model, tokens)
        return mean_loss(model(tokens, clamp), tokens)

    return loss


@torch.no_grad()
def clamped_logits(model: AttentionOnlyTransformer, clamp: Clamp, tokens: torch.Tensor,
                   chunk: int = EVAL_CHUNK) -> torch.Tensor:
    """Logits of ``model`` under ``clamp``, held on each chunk of ``tokens`` in turn."""
    parts = []
    for i in range(0, len(tokens), chunk):
        part = tokens[i:i + chunk]
        clamp.hold(model, part)
        parts.append(model(part, clamp))
    return torch.cat(parts)


def evaluate_clamped(model, clamp: Clamp, sample) -> dict:
    """:func:`~inductionlab.core.metrics.task_metrics` of ``model`` under ``clamp``."""
    return task_metrics(clamped_logits(model, clamp, sample.tokens), sample.tokens,
                        sample.predictable)


# ------------------------------------------------------------------ the freeze

class FrozenLayer:
    """Layer ``layer``'s weights kept at their values when this is made (the initial ones)."""

    def __init__(self, model: AttentionOnlyTransformer, layer: int = 0):
        self.layer = layer
        self.stacked = [getattr(model, n) for n in ("W_Q", "W_K", "W_V", "W_O")]
        self.whole = [p for name, p in model.smear_alpha.items() if name == str(layer)]
        self.saved = [p[layer].detach().clone() for p in self.stacked] \
            + [p.detach().clone() for p in self.whole]

    def before_update(self) -> None:
        """Zero the layer's gradients (AdamW's moments of its weights stay zero)."""
        for p in self.stacked:
            if p.grad is not None:
                p.grad[self.layer].zero_()
        for p in self.whole:
            if p.grad is not None:
                p.grad.zero_()

    @torch.no_grad()
    def after_update(self) -> None:
        """Put the layer's values back (undoing the weight decay's shrinking)."""
        n = len(self.stacked)
        for p, value in zip(self.stacked, self.saved[:n]):
            p[self.layer].copy_(value)
        for p, value in zip(self.whole, self.saved[n:]):
            p.copy_(value)
