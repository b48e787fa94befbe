"""The ablation plan: config entries ``{kind, target}`` expanded into concrete ablations.

A pure function of the entry and the model config (:func:`expand_entry`), with the
checks a model must pass (:func:`check_fits`; a config's entries are checked by the
ablations stage, :mod:`inductionlab.stages.ablations.settings`).
Nothing here runs a model; :mod:`inductionlab.stages.ablations.ablations` measures the plan.
"""
from __future__ import annotations

from dataclasses import dataclass

from .model import ModelConfig

# kind -> what it does (the config's enum; the schema lists the same names)
KINDS = {
    "composition_table": "the write-up's table for a layer: queries and keys from the embedding; "
                         "+ keys from the residual (K-composition); + queries from the residual "
                         "(Q-composition); both from the residual (= the model)",
    "remove_head_from_keys": "keys of a layer from the residual minus one earlier head's output, "
                             "for every earlier head",
    "remove_head_from_queries": "queries of a layer from the residual minus one earlier head's "
                                "output, for every earlier head",
    "values_from_embedding": "values of a layer from the embedding only (no V-composition)",
    "zero_heads": "each head's output set to zero, one head at a time",
    "mean_heads": "each head's output replaced by its mean over the evaluation sequences "
                  "(per position), one head at a time",
    "zero_heads_frozen_patterns": "each head zeroed with every layer's attention patterns frozen "
                                  "to the clean run's: only the head's OV part is removed",
    "smear_off": "a smeared layer uses its raw keys (sigma = 1)",
}
LAYER_KINDS = ("composition_table", "remove_head_from_keys", "remove_head_from_queries",
               "values_from_embedding")
HEAD_KINDS = ("zero_heads", "mean_heads", "zero_heads_frozen_patterns")
ALL = "all"

# Streams a layer's queries, keys or values are computed from.
RESIDUAL = "residual"            # resid[layer]: the model
EMBEDDING = "embedding"          # resid[0]: the direct path only
MINUS_HEAD = "residual_minus_head"  # resid[layer] - head_out[source_layer][:, source_head]
STREAMS = (RESIDUAL, EMBEDDING, MINUS_HEAD)

# The write-up's rows: (name, queries from, keys from)
COMPOSITION_ROWS = (("qk_from_embedding", EMBEDDING, EMBEDDING),
                    ("plus_k", EMBEDDING, RESIDUAL),
                    ("plus_q", RESIDUAL, EMBEDDING),
                    ("qk_full", RESIDUAL, RESIDUAL))


@dataclass(frozen=True)
class Ablation:
    """One concrete ablation of one model.

    ``layer``: the layer it acts on (whose queries/keys/values change, whose head is
    ablated, or whose smear is switched off); ``head``: the ablated head (head kinds);
    ``source_layer``/``source_head``: the head whose output is taken out of ``layer``'s
    queries or keys (``remove_head_from_*``). ``status`` is ``ok`` or ``skipped: why``.
    """

    name: str
    kind: str
    layer: int | None = None
    head: int | None = None
    source_layer: int | None = None
    source_head: int | None = None
    queries_from: str = RESIDUAL
    keys_from: str = RESIDUAL
    values_from: str = RESIDUAL
    status: str = "ok"

    @property
    def skipped(self) -> bool:
        return self.status != "ok"


BASELINE = Ablation("baseline", "baseline")


# ---------------------------------------------------------------- config entries

def head_name(layer: int, head: int) -> str:
    return f"L{layer}H{head}"


def _skip(kind: str, target, why: str) -> Ablation:
    suffix = "" if target == ALL else f"_{_target_text(target)}"
    return Ablation(f"{kind}{suffix}", kind, queries_from="", keys_from="", values_from="",
                    status=f"skipped: {why}")


def _target_text(target) -> str:
    if isinstance(target, list):
        return "_".join(head_name(*pair) for pair in target)
    return f"L{target}"


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _layer_targets(kind: str, target, cfg: ModelConfig) -> list[int]:
    """Layers >= 1 a composition kind acts on; ValueError naming an impossible one."""
    L = cfg.n_layers
    if target == ALL:
        return list(range(1, L))
    if not _is_int(target):
        raise ValueError(f"{kind}: target {target!r}; allowed: 'all' or a layer index >= 1")
    if target == 0:
        raise ValueError(f"{kind}: target layer 0 reads only the embedding, so it has no "
                         f"composition to remove; allowed: layers 1..{L - 1} (0-based) or 'all'")
    if not 0 < target < L:
        raise ValueError(f"{kind}: target layer {target} does not exist in a model with "
                         f"{L} layers; allowed: 1..{L - 1} (0-based) or 'all'")
    return [target]


def _head_targets(kind: str, target, cfg: ModelConfig) -> list[tuple[int, int]]:
    """(layer, head) pairs a head kind acts on; ValueError naming an impossible one."""
    L, H = cfg.n_layers, cfg.n_heads
    if target == ALL:
        return [(l, h) for l in range(L) for h in range(H)]
    ok = isinstance(target, list) and target and all(
        isinstance(p, (list, tuple)) and len(p) == 2 and all(_is_int(x) for x in p) for p in target)
    if not ok:
        raise ValueError(f"{kind}: target {target!r}; allowed: 'all' or a list of "
                         f"[layer, head] pairs")
    for l, h in target:
        if not 0 <= l < L:
            raise ValueError(f"{kind}: head [{l}, {h}]: layer {l} does not exist in a model "
                             f"with {L} layers (layers are 0-based)")
        if not 0 <= h < H:
            raise ValueError(f"{kind}: head [{l}, {h}]: head index {h} is out of range for a "
                             f"model with {H} heads per layer (heads are 0-based)")
    return [(int(l), int(h)) for l, h in target]


def expand_entry(entry: dict, cfg: ModelConfig) -> list[Ablation]:
    """The concrete ablations one config entry ``{kind, target}`` asks of a model.

    A model that lacks what a kind needs gets one skipped record saying why (a
    1-layer model has no composition; an unsmeared model no smear to switch off);
    an explicitly named target the model cannot have (a layer or head out of range,
    a layer that is not smeared) raises ``ValueError`` naming it.
    """
    kind, target = entry.get("kind"), entry.get("target", ALL)
    if kind not in KINDS:
        raise ValueError(f"ablation kind {kind!r}; allowed: {', '.join(KINDS)}")
    H = cfg.n_heads
    if kind in LAYER_KINDS:
        if cfg.n_layers < 2:
            if target != ALL and not _is_int(target):
                _layer_targets(kind, target, cfg)  # a malformed target is an error anyway
            return [_skip(kind, target, f"model has {cfg.n_layers} layer; no later layer "
                                        f"reads earlier heads")]
        out = []
        for t in _layer_targets(kind, target, cfg):
            if kind == "composition_table":
                out += [Ablation(f"{row}_L{t}", kind, layer=t, queries_from=q, keys_from=k)
                        for row, q, k in COMPOSITION_ROWS]
            elif kind == "values_from_embedding":
                out.append(Ablation(f"values_from_embedding_L{t}", kind, layer=t,
                                    values_from=EMBEDDING))
            else:
                what = "keys" if kind == "remove_head_from_keys" else "queries"
                out += [Ablation(f"remove_{head_name(sl, h)}_from_{what}_L{t}", kind, layer=t,
                                 source_layer=sl, source_head=h, **{f"{what}_from": MINUS_HEAD})
                        for sl in range(t) for h in range(H)]
        return out
    if kind in HEAD_KINDS:
        prefix = {"zero_heads": "zero", "mean_heads": "mean",
                  "zero_heads_frozen_patterns": "zero_frozen_patterns"}[kind]
        return [Ablation(f"{prefix}_{head_name(l, h)}", kind, layer=l, head=h)
                for l, h in _head_targets(kind, target, cfg)]
    # smear_off
    if target != ALL and not _is_int(target):
        raise ValueError(f"smear_off: target {target!r}; allowed: 'all' or a smeared layer index")
    if not cfg.smear_layers:
        return [_skip(kind, target, "model has no smeared layer")]
    if target == ALL:
        layers = list(cfg.smear_layers)
    elif target in cfg.smear_layers:
        layers = [target]
    else:
        raise ValueError(f"smear_off: target layer {target} is not smeared in this model; "
                         f"smeared layers: {list(cfg.smear_layers)} (0-based)")
    return [Ablation(f"smear_off_L{l}", kind, layer=l) for l in layers]


def expand_entries(entries: list[dict], cfg: ModelConfig) -> list[Ablation]:
    """Every entry's ablations in order; ``ValueError`` if two entries yield the same one."""
    out, seen = [], {}
    for k, entry in enumerate(entries):
        for ablation in expand_entry(entry, cfg):
            if ablation.name in seen or ablation.name == BASELINE.name:
                raise ValueError(f"ablation {ablation.name!r} of entry {k} is also produced by "
                                 f"entry {seen.get(ablation.name, 'baseline')}; list it once")
            seen[ablation.name] = k
            out.append(ablation)
    return out


def check_fits(ablation: Ablation, cfg: ModelConfig) -> None:
    """``ValueError`` if ``ablation`` names a layer, head or smear the model lacks."""
    if ablation.skipped:
        raise ValueError(f"ablation {ablation.name!r} was skipped ({ablation.status}); "
                         f"it cannot be run")
    L, H = cfg.n_layers, cfg.n_heads
    kind, layer = ablation.kind, ablation.layer
    if kind == "baseline":
        return
    if kind not in KINDS:
        raise ValueError(f"ablation {ablation.name!r}: kind {kind!r}; allowed: {', '.join(KINDS)}")
    if layer is None or not 0 <= layer < L:
        raise ValueError(f"ablation {ablation.name!r}: layer {layer} does not exist in a model "
                         f"with {L} layers (0-based)")
    if kind in LAYER_KINDS:
        if layer == 0:
            raise ValueError(f"ablation {ablation.name!r}: layer 0 reads only the embedding; "
                             f"composition needs layer >= 1")
        if kind.startswith("remove_head"):
            sl, sh = ablation.source_layer, ablation.source_head
            if sl is None or sh is None or not 0 <= sl < layer or not 0 <= sh < H:
                raise ValueError(f"ablation {ablation.name!r}: source head [{sl}, {sh}] must be a "
                                 f"head (0..{H - 1}) of a layer before {layer}")
    if kind in HEAD_KINDS and (ablation.head is None or not 0 <= ablation.head < H):
        raise ValueError(f"ablation {ablation.name!r}: head index {ablation.head} is out of range "
                         f"for a model with {H} heads per layer")
    if kind == "smear_off" and layer not in cfg.smear_layers:
        raise ValueError(f"ablation {ablation.name!r}: layer {layer} is not smeared; smeared "
                         f"layers: {list(cfg.smear_layers)}")
