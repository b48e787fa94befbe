"""Offset attribution: the logits split exactly into terms, one per component (the direct
path, each head, each chain of heads) and source position, and each term's effect on the
letter at its own source, averaged by offset k = query − source (the offset profile).

The logits of an attention-only model without LayerNorm are a sum of paths. With the
model's own attention patterns A (taken from the clean forward pass and held fixed):

- direct path: the embedding of the query itself, e_{x_i} W_U (source i);
- a layer-0 head h: Σ_j A_h[i, j] e_{x_j} W_OV^h W_U, one term per source j;
- a later head g reads the residual stream, itself a sum of terms, so each term c
  (from source m) that reaches g's values continues as Σ_j A_g[i, j] c[j, m] W_OV^g:
  the term from the embedding (``L1H3``) and one per earlier path (V-composition,
  ``L0H1>L1H3``), for any number of layers.

The sum of every term over components and sources is the model's logits (a test checks
it to 1e-5). A term's self-logit effect is what it adds to the logit of the letter at its
source minus its mean over all letters: positive copies that letter, negative suppresses
it. Offsets are of source positions, not letters: in a task sequence the letter k back is
also the letter k ± 6 back.

``offset_profile.csv`` (per model and seed, :data:`PROFILE_COLUMNS`): per component
(``kind`` ``path``, or ``group``: a sum of paths, :func:`component_groups`), sample
(``task``: the behaviour sample; ``control``: random letters), ``source`` ``offset`` with
offset k, or ``first_copy_of_next`` / ``nearest_copy_of_next`` (offset -1): the effect of
the source holding the first / the nearest earlier copy of the next letter, over queries
whose next letter occurred at least twice before. ``value`` is the mean over queries and
sequences, ``low``/``high`` its 95 % bootstrap interval over sequences, ``n`` the number
of (query, source) pairs.

Programs (:func:`program_fit`): a profile turned into a program, logits = Σ_k w_k ·
onehot(letter k back), and an algorithm's words turned into one (signs on the offsets it
names, one fitted scale), each scored against the model.
"""
from __future__ import annotations

import math
import re

import numpy as np
import torch

from ...core.formats import LOGITS, NATS, declare_table
from ...core.metrics import pooled_units
from ...analysis.roles import ANTI_COPYING, OV_ROLES, ROLES_COLUMN, split_roles
from ...analysis.uncertainty import bootstrap_interval
from ...core.model import NO_INTERVENTION
from ...core.data import control_sample

PROFILE_COLUMNS = ["variant", "seed", "component", "kind", "layer", "head", "role", "sample",
                   "source", "offset", "value", "low", "high", "n"]
PROGRAM_COLUMNS = ["variant", "seed", "program", "algorithm", "sample", "metric", "value",
                   "low", "high", "scale", "definition"]
# offset_profile.csv: the self-logit effect (logits) of each component on the letter k back
# (a head path's role differs across seeds: the summary is per component name);
# algorithm_fit.csv: how much of the model each program explains.
OFFSET_PROFILE = declare_table("offset_profile", PROFILE_COLUMNS,
                               keys=["component", "kind", "sample", "source", "offset"],
                               units={"value|low|high": LOGITS})
ALGORITHM_FIT = declare_table("algorithm_fit", PROGRAM_COLUMNS,
                              keys=["program", "algorithm", "sample", "metric"], long=True,
                              units={"kl": NATS})
SAMPLES = ("task", "control")
DIRECT = "direct"
# the components' groups (offset_profile.csv's ``component`` beside the path names)
ALL, HEADS, EMBEDDING, COMPOSED, ROLE_PREFIX = "all", "heads", "embedding", "composed", "role:"


def layer_group(layer: int, part: str | None = None) -> str:
    """``L1`` (the paths ending at a head of layer 1), ``L1:embedding``, ``L1:composed``."""
    return f"L{layer}" + (f":{part}" if part else "")


def role_group(*members: str) -> str:
    """``role:copying`` (the paths ending at a copying head); ``role:anti_copying+direct``."""
    return ROLE_PREFIX + "+".join(members)


OFFSET_SOURCE = "offset"
COPY_SOURCES = ("first_copy_of_next", "nearest_copy_of_next")
BATCH = 64


def head_name(layer: int, head: int) -> str:
    return f"L{layer}H{head}"


def path_names(n_layers: int, n_heads: int) -> list[tuple[str, ...]]:
    """Every path through the heads, in order: () is the direct path; ("L0H1", "L1H3") is
    head 1 of layer 0 read by head 3 of layer 1 (each later head reads every path that
    ends before its layer, and the embedding)."""
    paths: list[tuple[str, ...]] = [()]
    for l in range(n_layers):
        reads = [p for p in paths if not p or last_head(p[-1])[0] < l]
        paths = paths + [p + (head_name(l, h),) for h in range(n_heads) for p in reads]
    return paths


def component_name(path: tuple[str, ...]) -> str:
    return ">".join(path) if path else DIRECT


@torch.no_grad()
def path_factors(model, tokens: torch.Tensor,
                 intervention=None) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """Every component's residual-stream term in factored form: name -> (weights [B, T, T],
    vectors [B, T, D]), the term of query i and source m being weights[b, i, m] ·
    vectors[b, m] (weights zero for m > i).

    Every term has this form: the direct path's weights are the identity and its vectors
    the embeddings; a head h read after a path p (or after the embedding) moves what each
    source sent through its pattern and its OV matrix, so its weights are A_h · weights_p
    and its vectors vectors_p · W_OV^h; a head whose outputs a training clamp holds sends
    its held vector from each key. A path's term is thus a [B, T, T] product of patterns
    and one vector per source, not a [B, T, T, D] tensor."""
    _, cache = model.run_with_cache(tokens, intervention or NO_INTERVENTION, head_out=False)
    cfg = model.cfg
    held = _held_values(model, tokens)
    embed = model.W_E[tokens]  # [B, T, D]
    B, T = tokens.shape
    ov = [torch.einsum("hDd,hde->hDe", model.W_V[l], model.W_O[l]) for l in range(cfg.n_layers)]
    factors: dict[tuple[str, ...], tuple[torch.Tensor, torch.Tensor]] = {
        (): (torch.eye(T, dtype=embed.dtype).expand(B, T, T), embed)}
    for path in path_names(cfg.n_layers, cfg.n_heads)[1:]:  # a path after its prefix
        l, h = last_head(path[-1])
        pattern = cache.pattern[l][:, h]
        if l in held:  # constants per key: the whole output from the key's own source
            factors[path] = ((pattern, held[l][:, h]) if len(path) == 1
                             else (torch.zeros_like(pattern), torch.zeros_like(embed)))
            continue
        weights, vectors = factors[path[:-1]]
        factors[path] = (pattern @ weights, vectors @ ov[l][h])
    return {component_name(p): f for p, f in factors.items()}


def path_terms(model, tokens: torch.Tensor, intervention=None) -> dict[str, torch.Tensor]:
    """Every component's residual-stream term per query and source: name -> [B, T, T, D]
    (query i, source m; zero for m > i), :func:`path_factors` multiplied out. Their sum
    over components and sources, times W_U, is the model's logits (under
    ``intervention``, e.g. one that fixes the patterns, when given)."""
    return {name: weights[..., None] * vectors[:, None]
            for name, (weights, vectors) in path_factors(model, tokens, intervention).items()}


def _held_values(model, tokens: torch.Tensor) -> dict[int, torch.Tensor]:
    """Layer -> [B, H, T, D]: the value-to-output vectors a model's training clamp holds
    on ``tokens`` (:meth:`~inductionlab.core.clamping.Clamp.held_values`), for the layers
    whose heads' outputs it replaces; none without such a clamp."""
    clamp = getattr(model, "clamp", None)
    if clamp is None:
        return {}
    clamp.hold(model, tokens)
    return {l: v for l in range(model.cfg.n_layers) if (v := clamp.held_values(l)) is not None}


def centred_unembedding(model) -> torch.Tensor:
    """W_U minus its mean over letters [D, V]: a term's logit effect relative to the mean."""
    return model.W_U - model.W_U.mean(dim=1, keepdim=True)


@torch.no_grad()
def self_effects(model, tokens: torch.Tensor, intervention=None) -> dict[str, np.ndarray]:
    """Per component, the self-logit effect [B, T(query), T(source)] (NaN where the source
    lies after the query), computed in batches (``intervention``: as in :func:`path_terms`)."""
    unembed = centred_unembedding(model)
    N, T = tokens.shape
    later = torch.ones(T, T, dtype=torch.bool).triu(1)
    out: dict[str, np.ndarray] = {}
    for start in range(0, N, BATCH):
        batch = tokens[start:start + BATCH]
        target = unembed[:, batch].permute(1, 2, 0)  # [B, T(source), D]
        for name, (weights, vectors) in path_factors(model, batch, intervention).items():
            # the term's effect: its weight times its source vector's effect on the source's letter
            effect = weights * (vectors * target).sum(-1)[:, None]
            effect = effect.masked_fill(later, float("nan"))
            if name not in out:  # filled in place: no list of batches to join
                out[name] = np.empty((N, T, T), dtype=np.float64)
            out[name][start:start + len(batch)] = effect.numpy()
    return out


def offset_means(effect: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per sequence and offset k, the sum of the effect over queries i ≥ k at source i − k
    [B, T], and the number of queries [T]."""
    B, T, _ = effect.shape
    sums = np.stack([np.einsum("bii->b", effect[:, k:, :T - k]) for k in range(T)], axis=1)
    return sums, np.arange(T, 0, -1).astype(np.float64)


def copy_sources(tokens: torch.Tensor) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Queries whose next letter occurred at least twice at or before the query: for each,
    (sequence, query, source) of the first and of the nearest earlier copy, in the order
    of sequence, then query."""
    x = tokens.numpy()
    B, T = x.shape
    # copy[b, i, m]: position m <= i holds the letter that follows query i
    copy = (x[:, None, :] == x[:, 1:, None]) & np.tri(T - 1, T, dtype=bool)
    b, i = np.nonzero(copy.sum(-1) >= 2)
    rows = copy[b, i]
    first, nearest = rows.argmax(-1), T - 1 - rows[:, ::-1].argmax(-1)
    return {name: (b.astype(np.int64), i.astype(np.int64), m.astype(np.int64))
            for name, m in zip(COPY_SOURCES, (first, nearest))}


def component_groups(names: list[str], roles: dict[tuple[int, int], str]) -> dict[str, list[str]]:
    """Sums of paths: ``all``, ``heads`` (all but direct), ``L{l}`` (paths ending at a head
    of layer l), for l ≥ 1 ``L{l}:embedding`` (its heads' terms from the embedding) and
    ``L{l}:composed`` (through earlier heads), and ``role:<role>`` for the OV roles
    copying and anti_copying (paths ending at a head with that role), and
    ``role:anti_copying+direct`` (the write-up's "heads 1, 4 and the direct path"; only
    when some head is anti-copying). A group with no member has no rows."""
    heads = [n for n in names if n != DIRECT]
    groups = {ALL: list(names), HEADS: heads}
    layers = sorted({last_head(n)[0] for n in heads})
    for l in layers:
        mine = [n for n in heads if last_head(n)[0] == l]
        groups[layer_group(l)] = mine
        if l >= 1:
            groups[layer_group(l, EMBEDDING)] = [n for n in mine if ">" not in n]
            groups[layer_group(l, COMPOSED)] = [n for n in mine if ">" in n]
    for role in OV_ROLES:
        groups[role_group(role)] = [n for n in heads if role in split_roles(roles.get(last_head(n)))]
    if groups[role_group(ANTI_COPYING)]:  # the direct path alone is its own component
        groups[role_group(ANTI_COPYING, DIRECT)] = ([DIRECT] * (DIRECT in names)
                                                    + groups[role_group(ANTI_COPYING)])
    return groups


_HEAD = re.compile(r"L(\d+)H(\d+)")


def path_heads(component: str) -> list[tuple[int, int]]:
    """The (layer, head) of each head along a path name: ``L0H1>L1H3`` -> [(0, 1), (1, 3)];
    none for the direct path or a group."""
    return [(int(l), int(h)) for l, h in _HEAD.findall(str(component))]


def last_head(name: str) -> tuple[int, int]:
    """(layer, head) of a path's last head."""
    return path_heads(name)[-1]


def profile_rows(effects: dict[str, np.ndarray], tokens: torch.Tensor, sample: str,
                 roles: dict[tuple[int, int], str], seed: int) -> list[dict]:
    """The rows of :data:`PROFILE_COLUMNS` (without variant and seed) of one sample."""
    names = list(effects)
    groups = component_groups(names, roles)
    sources = copy_sources(tokens)
    rows = []
    components = [(n, "path", [n]) for n in names] + [(g, "group", m) for g, m in groups.items()]
    for name, kind, members in components:
        if not members:
            continue
        effect = sum(effects[m] for m in members)
        layer, head = last_head(name) if kind == "path" and name != DIRECT else (-1, -1)
        role = roles.get((layer, head), "") if kind == "path" else ""
        base = {"component": name, "kind": kind, "layer": layer, "head": head, "role": role,
                "sample": sample}
        sums, counts = offset_means(effect)
        value = sums.sum(axis=0) / (counts * len(sums))
        low, high = bootstrap_interval(sums / counts, seed=seed, purpose=f"offsets:{sample}")
        for k in range(len(counts)):
            rows.append({**base, "source": OFFSET_SOURCE, "offset": k, "value": float(value[k]),
                         "low": float(low[k]), "high": float(high[k]),
                         "n": int(counts[k]) * len(sums)})
        for source, (b, i, m) in sources.items():
            row = {**base, "source": source, "offset": -1, "n": len(b)}
            if len(b) == 0:
                rows.append({**row, "value": math.nan, "low": math.nan, "high": math.nan})
                continue
            per = np.bincount(b, weights=effect[b, i, m], minlength=len(tokens))
            units = np.bincount(b, minlength=len(tokens)).astype(np.float64)
            keep = units > 0
            low, high = bootstrap_interval(per[keep], units[keep], seed=seed,
                                           purpose=f"offsets:{sample}:{source}")
            rows.append({**row, "value": float(per.sum() / units.sum()), "low": low, "high": high})
    return rows


# ---------------------------------------------------------------- programs
FIRST_OCCURRENCE = "next_after_first_occurrence"


def first_occurrence_feature(tokens: torch.Tensor, vocab: int) -> torch.Tensor:
    """[B, T, V]: one-hot of the letter that followed the first earlier occurrence of the
    query's letter (zero where the letter has not occurred before)."""
    x = tokens.numpy()
    B, T = x.shape
    out = torch.zeros(B, T, vocab, dtype=torch.float64)
    for b in range(B):
        for i in range(1, T):
            where = np.flatnonzero(x[b, :i] == x[b, i])
            if len(where) and where[0] + 1 <= i:
                out[b, i, x[b, where[0] + 1]] = 1.0
    return out


def program_logits(weights, tokens: torch.Tensor, vocab: int,
                   first_occurrence: float = 0.0) -> torch.Tensor:
    """Logits [B, T, V] = Σ_k w_k · onehot(letter k back) (+ ``first_occurrence`` · the
    letter after the first earlier occurrence of the current one)."""
    onehot = torch.nn.functional.one_hot(tokens, vocab).double()  # [B, T, V]
    T = tokens.shape[1]
    logits = torch.zeros_like(onehot)
    for k, w in enumerate(np.asarray(weights, dtype=np.float64)[:T]):
        if w:
            logits[:, k:] += float(w) * onehot[:, :T - k]
    if first_occurrence:
        logits = logits + first_occurrence * first_occurrence_feature(tokens, vocab)
    return logits


def written_program(terms: list[dict], seq_len: int) -> tuple[np.ndarray, float]:
    """An algorithm's words as unscaled program weights: each term's ``sign`` × ``weight``
    (default 1) on its ``offsets`` (``weights`` per offset when given), or on the feature
    :data:`FIRST_OCCURRENCE`. Returns (offset weights [seq_len], first-occurrence weight)."""
    w, first = np.zeros(seq_len), 0.0
    for term in terms:
        scale = float(term["sign"]) * float(term.get("weight", 1.0))
        if term.get("feature") == FIRST_OCCURRENCE:
            first += scale
            continue
        offsets = [int(k) for k in term["offsets"]]
        per = term.get("weights", [1.0] * len(offsets))
        for k, p in zip(offsets, per):
            if 0 <= k < seq_len:
                w[k] += scale * float(p)
    return w, first


def _kl_per_query(model_logp: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
    logq = torch.log_softmax(logits, dim=-1)
    return (model_logp.exp() * (model_logp - logq)).sum(-1)


def fit_scale(model_logp: torch.Tensor, unscaled: torch.Tensor) -> float:
    """The scale s ≥ 0 that minimises the mean KL(model ‖ softmax(s · unscaled)): a grid in
    log s, then a golden-section search around its best point.

    With p the model's distribution and u the unscaled logits of a query, KL(s) =
    Σ p log p − s Σ p u + logsumexp(s u) Σ p: only the log-sum-exp depends on s, so each
    trial scale costs one pass over the logits."""
    p = model_logp.exp()
    fixed = (p * model_logp).sum(-1)  # Σ p log p, per query
    linear, mass = (p * unscaled).sum(-1), p.sum(-1)

    def loss(s):
        return float((fixed - s * linear + torch.logsumexp(s * unscaled, dim=-1) * mass).mean())

    grid = np.logspace(-3, 2, 51)
    values = [loss(s) for s in grid]
    best = int(np.argmin(values))
    lo, hi = math.log(grid[max(best - 1, 0)]), math.log(grid[min(best + 1, len(grid) - 1)])
    ratio = (math.sqrt(5) - 1) / 2
    a, b = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
    fa, fb = loss(math.exp(a)), loss(math.exp(b))
    for _ in range(30):
        if fa < fb:
            hi, b, fb = b, a, fa
            a = hi - ratio * (hi - lo)
            fa = loss(math.exp(a))
        else:
            lo, a, fa = a, b, fb
            b = lo + ratio * (hi - lo)
            fb = loss(math.exp(b))
    s = math.exp((lo + hi) / 2)
    return s if loss(s) <= values[best] else float(grid[best])


def program_scores(model_logits: torch.Tensor, logits: torch.Tensor, tokens: torch.Tensor,
                   predictable: torch.Tensor, seed: int, purpose: str) -> dict[str, tuple]:
    """Per metric (value, low, high) over the next-token queries of ``tokens``: argmax
    agreement with the model, KL(model ‖ program), the share of the model's KL from
    uniform that the program removes (1 − KL / KL_uniform), and task accuracy on the
    ``predictable`` targets; intervals bootstrap the sequences."""
    model_logp = torch.log_softmax(model_logits[:, :-1].double(), dim=-1)
    prog = logits[:, :-1]
    target = tokens[:, 1:]
    agree = (prog.argmax(-1) == model_logp.argmax(-1)).double()
    kl = _kl_per_query(model_logp, prog)
    kl_uniform = _kl_per_query(model_logp, torch.zeros_like(prog))
    correct = pooled_units(prog.argmax(-1) == target, predictable)  # [B, T - 1] or one row
    per_seq = {"agreement": agree.mean(1).numpy(), "kl": kl.mean(1).numpy(),
               "accuracy": correct.numpy()}
    out = {}
    for metric, values in per_seq.items():
        low, high = bootstrap_interval(values, seed=seed, purpose=f"{purpose}:{metric}")
        out[metric] = (float(values.mean()), low, high)
    # explained share: one minus a ratio of sums over the same sequences
    num, den = kl.sum(1).numpy(), kl_uniform.sum(1).numpy()
    low, high = bootstrap_interval(num, den, seed=seed, purpose=f"{purpose}:explained")
    out["kl_explained"] = (float(1.0 - num.sum() / den.sum()), 1.0 - high, 1.0 - low)
    return out


def matching_algorithms(algorithms: dict, model_spec: dict) -> dict[str, dict]:
    """The algorithm whose ``applies_to`` (n_layers, smeared) matches the model's spec (name
    -> algorithm; empty when none does). ValueError when several do: a model is scored
    against one write-up program."""
    smeared = bool(model_spec.get("smear_layers"))
    found = {name: a for name, a in algorithms.items()
             if int(a["applies_to"]["n_layers"]) == int(model_spec["n_layers"])
             and bool(a["applies_to"]["smeared"]) == smeared}
    if len(found) > 1:
        raise ValueError(f"algorithms {', '.join(found)} all apply to the same architecture; "
                         f"give each architecture one algorithm")
    return found


def roles_by_head(head_scores, model: str, seed: int) -> dict[tuple[int, int], str]:
    """(layer, head) -> the head's roles cell (``roles`` of the stacked head_scores table,
    where the head-role rule is applied) for ``model`` and ``seed``; heads with none are
    left out. ValueError when the table has no row of that model and seed."""
    rows = head_scores[(head_scores["variant"] == model) & (head_scores["seed"] == int(seed))]
    if rows.empty:
        raise ValueError(f"the stacked head_scores table has no row of {model} seed {seed}")
    return {(int(r["layer"]), int(r["head"])): str(r[ROLES_COLUMN])
            for r in rows.to_dict("records") if split_roles(r[ROLES_COLUMN])}


@torch.no_grad()
def offset_results(model, spec, behaviour_settings: dict, algorithms: dict, roles: dict,
                   log=lambda msg: None):
    """The offsets stage of one model: (profile frame, program frame).

    Both samples are the behaviour stage's (``n_sequences`` task sequences and as many
    random-letter control sequences, from ``eval_seed``). ``algorithms``: the ``algorithms``
    mapping of algorithms.yaml; ``roles``: :func:`roles_by_head`.
    """
    import pandas as pd

    from ..behaviour.behaviour import evaluation_samples

    task, seed = spec.task, int(behaviour_settings["eval_seed"])
    n = int(behaviour_settings["n_sequences"])
    own = evaluation_samples(task, n, seed)[0]
    samples = {"task": own.tokens,
               "control": control_sample(n, task, seed)}
    ident = {"variant": spec.variant, "seed": spec.seed}
    rows = []
    for sample, tokens in samples.items():
        log(f"[{spec.name}] offset attribution on the {sample} sample ({n} sequences)")
        rows += profile_rows(self_effects(model, tokens), tokens, sample, roles, seed)
    profile = pd.DataFrame(rows).assign(**ident)[PROFILE_COLUMNS]

    total = profile[(profile["component"] == ALL) & (profile["sample"] == "task")
                    & (profile["source"] == OFFSET_SOURCE)].sort_values("offset")["value"]
    vocab, predictable = task.vocab_size, own.predictable  # the control's queries are paired
    model_logits = {s: model(t) for s, t in samples.items()}
    programs = {"model": (None, {s: model_logits[s].double() for s in samples}, math.nan,
                          "the model itself")}
    programs["profile"] = (None, {s: program_logits(total.to_numpy(), t, vocab)
                                  for s, t in samples.items()}, math.nan,
                           "logits = Σ_k w_k · onehot(letter k back), w_k the model's offset "
                           "profile (every component, task sample)")
    for name, algorithm in matching_algorithms(algorithms, spec.model.to_dict()).items():
        weights, first = written_program(algorithm["program"], task.seq_len)
        unscaled = {s: program_logits(weights, t, vocab, first) for s, t in samples.items()}
        scale = fit_scale(torch.log_softmax(model_logits["task"][:, :-1].double(), -1),
                          unscaled["task"][:, :-1])
        programs["write_up"] = (name, {s: scale * u for s, u in unscaled.items()}, scale,
                                f"{algorithm['title']}: signs on the offsets its lines name, "
                                f"one fitted scale")
    out = []
    for program, (algorithm, logits, scale, definition) in programs.items():
        for sample, tokens in samples.items():
            scores = program_scores(model_logits[sample], logits[sample], tokens, predictable,
                                    seed, f"program:{sample}")
            for metric, (value, low, high) in scores.items():
                out.append({**ident, "program": program, "algorithm": algorithm or "",
                            "sample": sample, "metric": metric, "value": value, "low": low,
                            "high": high, "scale": scale, "definition": definition})
    log(f"[{spec.name}] " + "; ".join(
        f"{r['program']} {r['metric']} {r['value']:.3f}" for r in out
        if r["sample"] == "task" and r["metric"] in ("agreement", "kl_explained")))
    return profile, pd.DataFrame(out)[PROGRAM_COLUMNS]
