"""Attention-only transformer of the write-up, batched over heads.

Shapes (row-vector convention, as in TransformerLens):
    W_E [V, D]        embedding of one-hot tokens
    W_U [D, V]        unembedding
    W_Q, W_K, W_V [L, H, D, d]
    W_O [L, H, d, D]
    pos [T, d]        positional table added to queries and keys after projection
                      (a fixed buffer for the sinusoidal forms, a parameter for ``learned``)
    smear_alpha[l]    [H, T-1] (per position) or [H, 1] (per head), for smeared layers

T is the model's context (``seq_len``, its n_ctx): its task's sequence length.
There is no LayerNorm, MLP or bias. The positional table enters only the
attention scores; the residual stream carries token information only.

Every layer reads its queries, keys and values from residual streams chosen by
an :class:`Intervention` (by default the full residual stream), so composition
ablations are a small subclass, not a second model.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from . import causal_attention as kernel
from .bounds import EVAL_CHUNK
from .seeding import generator

POS_ENCODINGS = ("original", "standard", "learned")
SMEAR_FORMS = ("per_position", "per_head")
# How W_E starts: "uniform", the original code's (a bias-free nn.Linear on one-hot letters:
# U(-1/sqrt(V), 1/sqrt(V))); "normal", PyTorch's nn.Embedding (N(0, 1))
EMBEDDING_INITS = ("uniform", "normal")
# the largest |smear_init|: sigmoid(20) is 1 - 2e-9, past which the smear weight's
# gradient vanishes and the weight cannot move
SMEAR_INIT_LIMIT = 20.0
# The initialisation settings at their defaults (the original code's): a config that does
# not set them describes the same model, and its documents do not name them
INIT_DEFAULTS = {"embedding_init": "uniform", "smear_init": 1.0}


@dataclass(frozen=True)
class ModelConfig:
    vocab_size: int = 26
    d_model: int = 32
    n_heads: int = 4
    n_layers: int = 1
    seq_len: int = 24
    pos_encoding: str = "original"
    smear_layers: tuple[int, ...] = ()
    smear_form: str = "per_position"
    embedding_init: str = "uniform"
    smear_init: float = 1.0  # every smear logit's starting value (the weight is its sigmoid)

    def __post_init__(self):
        object.__setattr__(self, "smear_layers", tuple(int(l) for l in self.smear_layers))
        problem = init_problem("embedding_init", self.embedding_init) or init_problem(
            "smear_init", self.smear_init)
        if problem:
            raise ValueError(problem)
        object.__setattr__(self, "smear_init", float(self.smear_init))
        if self.smear_init != INIT_DEFAULTS["smear_init"] and not self.smear_layers:
            raise ValueError(f"smear_init={self.smear_init!r} starts the smear weights of "
                             "smeared layers, and smear_layers is empty")
        for name in ("vocab_size", "d_model", "n_heads", "n_layers", "seq_len"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}={value!r} is not a positive integer")
        if self.d_model % self.n_heads:
            raise ValueError(
                f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}"
            )
        if self.pos_encoding not in POS_ENCODINGS:
            raise ValueError(f"pos_encoding={self.pos_encoding!r}; allowed: {POS_ENCODINGS}")
        if self.smear_form not in SMEAR_FORMS:
            raise ValueError(f"smear_form={self.smear_form!r}; allowed: {SMEAR_FORMS}")
        bad = [l for l in self.smear_layers if not 0 <= l < self.n_layers]
        if bad:
            raise ValueError(
                f"smear_layers={list(self.smear_layers)}: layer(s) {bad} do not exist "
                f"in a model with n_layers={self.n_layers} (layers are 0-based)"
            )

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    def to_dict(self) -> dict:
        """The fields as JSON values; an initialisation setting at its default is left out
        (the document of a model that does not set it is as it always was)."""
        d = {k: v for k, v in asdict(self).items()
             if k not in INIT_DEFAULTS or v != INIT_DEFAULTS[k]}
        d["smear_layers"] = list(self.smear_layers)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "ModelConfig":
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"unknown model field(s) {unknown}; allowed: {sorted(known)}")
        return cls(**d)


def init_problem(key: str, value) -> str | None:
    """What is wrong with ``value`` for initialisation setting ``key`` (one line naming
    what is allowed), or None."""
    if key == "embedding_init":
        if value not in EMBEDDING_INITS:
            return f"embedding_init={value!r}; allowed: {', '.join(EMBEDDING_INITS)}"
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value) or abs(value) > SMEAR_INIT_LIMIT:
        return (f"smear_init={value!r}; allowed: a number from {-SMEAR_INIT_LIMIT:g} to "
                f"{SMEAR_INIT_LIMIT:g} (the smear logit's starting value; its sigmoid is the weight)")
    return None


def sinusoidal_table(seq_len: int, d: int, form: str = "original") -> torch.Tensor:
    """Positional table [seq_len, d] (see docs/methods.md, "The model").

    ``original``: for pos >= 1, angle = pos / 10000^(2j/d) with the raw dimension
    index j; sin on even j, cos on odd j; row 0 is zero.
    ``standard``: angle = pos / 10000^(2i/d) for the pair index i = j // 2;
    sin on even j, cos on odd j; row 0 included.
    ``learned``: the ``standard`` table, as the starting point of a trained table.
    """
    pos = torch.arange(seq_len, dtype=torch.float64)[:, None]
    j = torch.arange(d, dtype=torch.float64)[None, :]
    if form == "original":
        exponent = 2 * j / d
    elif form in ("standard", "learned"):
        exponent = 2 * torch.div(j, 2, rounding_mode="floor") / d
    else:
        raise ValueError(f"pos_encoding={form!r}; allowed: {POS_ENCODINGS}")
    angle = pos / 10000.0**exponent
    even = (j.long() % 2 == 0).expand_as(angle)
    table = torch.where(even, torch.sin(angle), torch.cos(angle))
    if form == "original":
        table[0] = 0.0
    return table.float()


def smear_keys(k: torch.Tensor, alpha: torch.Tensor) -> torch.Tensor:
    """k'_j = s_j k_j + (1 - s_j) k_{j-1} for j >= 1, k'_0 = k_0, with s = sigmoid(alpha).

    k: [B, H, T, d]; alpha: [H, T_max - 1] (per position) or [H, 1] (per head).
    """
    return mix_keys(k, torch.sigmoid(alpha))


def mix_keys(k: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
    """k'_j = s_j k_j + (1 - s_j) k_{j-1} for j >= 1, k'_0 = k_0, with the gate s given.

    k: [B, H, T, d]; gate: [H, T_max - 1] or [H, 1]. A gate of 0 gives key j the key of
    position j - 1 exactly (a pure previous-token key); a gate of 1, its own key.
    """
    t = k.shape[2]
    if t < 2:
        return k
    s = gate[:, : t - 1][None, :, :, None]  # [1, H, T-1 or 1, 1]
    mixed = s * k[:, :, 1:] + (1 - s) * k[:, :, :-1]
    return torch.cat([k[:, :, :1], mixed], dim=2)


@dataclass
class Cache:
    """Activations of one forward pass.

    resid[l]    [B, T, D]   input to layer l (resid[0] = embedding, resid[L] = final)
    pattern[l]  [B, H, T, T] attention pattern (query, key)
    head_out[l] [B, H, T, D] each head's write to the residual stream
    """

    tokens: torch.Tensor
    resid: list[torch.Tensor] = field(default_factory=list)
    pattern: list[torch.Tensor] = field(default_factory=list)
    head_out: list[torch.Tensor] = field(default_factory=list)

    @property
    def embed(self) -> torch.Tensor:
        return self.resid[0]


class Intervention:
    """Hooks into the forward pass; the base class changes nothing.

    Subclasses override any of:
    - ``layer_inputs``: residual streams from which a layer's queries, keys and
      values are computed (e.g. keys from the embedding only: no K-composition);
    - ``use_smear``: whether a smeared layer smears its keys;
    - ``smear_gate``: replace or edit a smeared layer's gate s = sigmoid(alpha);
    - ``pattern``: replace or edit a layer's attention pattern;
    - ``head_out``: replace or edit each head's output (zero/mean ablation).

    ``needs_head_out``: set it when ``layer_inputs`` reads ``cache.head_out`` (e.g.
    the residual minus one head's output), so that a plain forward pass forms the
    per-head outputs too. Overriding ``head_out`` implies it.
    """

    needs_head_out = False

    def layer_inputs(self, layer: int, cache: Cache):
        x = cache.resid[layer]
        return x, x, x

    def use_smear(self, layer: int) -> bool:
        return True

    def smear_gate(self, layer: int, gate: torch.Tensor) -> torch.Tensor:
        return gate

    def pattern(self, layer: int, pattern: torch.Tensor) -> torch.Tensor:
        return pattern

    def head_out(self, layer: int, head_out: torch.Tensor) -> torch.Tensor:
        return head_out


NO_INTERVENTION = Intervention()


def needs_head_out(intervention: Intervention) -> bool:
    """Whether a pass under ``intervention`` must form each head's output."""
    return intervention.needs_head_out or type(intervention).head_out is not Intervention.head_out


def _uniform_(param: torch.Tensor, fan_in: int, gen: torch.Generator | None) -> None:
    """``nn.Linear``'s default initialisation: U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
    bound = 1.0 / math.sqrt(fan_in)
    with torch.no_grad():
        param.uniform_(-bound, bound, generator=gen)


class AttentionOnlyTransformer(nn.Module):
    def __init__(self, cfg: ModelConfig, gen: torch.Generator | None = None):
        super().__init__()
        self.cfg = cfg
        # How attention is computed where no intervention edits the pattern: "explicit",
        # the softmax pattern as a tensor between two batched matmuls; "kernel", the C++
        # kernel of causal_attention.py (on a CPU; it gives the pattern too, but without a
        # gradient: a pass that keeps the pattern with gradients takes the explicit form);
        # "sdpa", PyTorch's fused kernel (on a GPU, in training steps only).
        # :func:`choose_attention` sets it for training; analyses keep the explicit form.
        self.attention_form = "explicit"
        # The clamp a model was trained under (:mod:`.clamping`), once it is loaded for
        # analysis: every pass holds it on its own tokens and runs under it, beneath any
        # intervention the pass is given, so that the model is measured as it trained.
        # None while training, which holds its clamp itself.
        self.clamp = None
        V, D, H, d, L, T = (cfg.vocab_size, cfg.d_model, cfg.n_heads, cfg.d_head,
                            cfg.n_layers, cfg.seq_len)
        self.W_E = nn.Parameter(torch.empty(V, D))
        self.W_Q = nn.Parameter(torch.empty(L, H, D, d))
        self.W_K = nn.Parameter(torch.empty(L, H, D, d))
        self.W_V = nn.Parameter(torch.empty(L, H, D, d))
        self.W_O = nn.Parameter(torch.empty(L, H, d, D))
        self.W_U = nn.Parameter(torch.empty(D, V))
        alpha_len = T - 1 if cfg.smear_form == "per_position" else 1
        self.smear_alpha = nn.ParameterDict(
            {str(l): nn.Parameter(torch.full((H, alpha_len), cfg.smear_init))
             for l in cfg.smear_layers}
        )
        table = sinusoidal_table(T, d, cfg.pos_encoding)
        if cfg.pos_encoding == "learned":  # trained like every weight (and weight-decayed)
            self.pos = nn.Parameter(table)
        else:
            self.register_buffer("pos", table, persistent=True)
        # fan_in of the equivalent nn.Linear: one-hot input (V) for the embedding,
        # D for Q/K/V and the unembedding, H*d = D for the output projection.
        if cfg.embedding_init == "normal":
            with torch.no_grad():
                self.W_E.normal_(0.0, 1.0, generator=gen)
        else:
            _uniform_(self.W_E, V, gen)
        for w in (self.W_Q, self.W_K, self.W_V, self.W_O):
            _uniform_(w, D, gen)
        _uniform_(self.W_U, D, gen)

    def n_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def _project(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        """x [B, T, D] times every head's w [H, D, d] -> [B, H, T, d], as one matmul."""
        H, D, d = w.shape
        return (x @ w.permute(1, 0, 2).reshape(D, H * d)).view(*x.shape[:2], H, d).transpose(1, 2)

    def qkv_weight(self, layer: int) -> torch.Tensor:
        """[D, 3 H d]: one layer's queries, keys and values of every head from one stream,
        as one matrix (queries first, heads in order within each)."""
        H, D, d = self.W_Q.shape[1:]
        w = torch.cat([self.W_Q[layer], self.W_K[layer], self.W_V[layer]])  # [3H, D, d]
        return w.permute(1, 0, 2).reshape(D, 3 * H * d)

    def _qkv(self, layer: int, x_q, x_k, x_v, cache: Cache):
        """Queries, keys and values [B, H, T, d] of one layer (before positions and smearing).

        When all three read the same stream they come from one matmul; when that stream
        is the embedding, from a gather of the [V, 3 H d] product (the same numbers,
        without a [B T, D] x [D, 3 H d] product in the forward and backward pass).
        """
        if not (x_q is x_k is x_v):
            return (self._project(x_q, self.W_Q[layer]), self._project(x_k, self.W_K[layer]),
                    self._project(x_v, self.W_V[layer]))
        H, D, d = self.W_Q.shape[1:]
        w = self.qkv_weight(layer)
        if x_q is cache.resid[0]:
            table = self.W_E @ w
            if self.attention_form == "kernel":  # the gather and its gradient in C++
                return kernel.heads_from_table(table, cache.tokens, H)
            qkv = table[cache.tokens]
        else:
            qkv = x_q @ w
        B, T = cache.tokens.shape
        # split position-major, then each seen as [B, H, T, d]: the backward pass joins the
        # kernel's position-major gradients into the product's [B T, 3 H d] in one copy
        return tuple(part.transpose(1, 2) for part in qkv.view(B, T, 3 * H, d).split(H, dim=2))

    def _run(self, tokens: torch.Tensor, intervention: Intervention, per_head: bool,
             keep_pattern: bool = True):
        cfg = self.cfg
        B, T = tokens.shape
        if T > cfg.seq_len:
            raise ValueError(f"sequence length {T} exceeds the model's seq_len={cfg.seq_len}")
        if self.clamp is not None:
            self.clamp.hold(self, tokens)
            intervention = self.clamp.beneath(intervention)
            per_head = per_head or needs_head_out(intervention)
        cache = Cache(tokens=tokens)
        cache.resid.append(self.W_E[tokens])
        pos = self.pos[:T]
        mask = torch.full((T, T), float("-inf"), device=tokens.device).triu(1)  # causal
        scale = 1.0 / math.sqrt(cfg.d_head)
        form = self.attention_form
        if type(intervention).pattern is not Intervention.pattern:
            form = "explicit"  # the pattern is edited between the softmax and the values
        elif form == "sdpa" and (keep_pattern or not torch.is_grad_enabled()):
            form = "explicit"
        elif form == "kernel" and keep_pattern and torch.is_grad_enabled():
            form = "explicit"  # the kernel's pattern carries no gradient
        for l in range(cfg.n_layers):
            q, k, v = self._qkv(l, *intervention.layer_inputs(l, cache), cache)
            q = q + pos
            if str(l) in self.smear_alpha and intervention.use_smear(l):
                k = mix_keys(k, intervention.smear_gate(l, torch.sigmoid(self.smear_alpha[str(l)])))
            k = k + pos
            if form == "kernel":
                z, pattern = kernel.causal_attention(q.contiguous(), k.contiguous(), v.contiguous(),
                                                     scale)
                cache.pattern.append(pattern)
            elif form == "sdpa":
                z = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale)
            else:
                scores = (q @ k.transpose(-1, -2)) * scale + mask
                pattern = intervention.pattern(l, torch.softmax(scores, dim=-1))
                z = pattern @ v  # [B, H, T, d]
                cache.pattern.append(pattern)
            if per_head:
                head_out = intervention.head_out(l, torch.einsum("bhtd,hdD->bhtD", z, self.W_O[l]))
                cache.head_out.append(head_out)
                update = head_out.sum(dim=1)
            else:  # the same sum over heads as one matmul
                update = z.transpose(1, 2).reshape(B, T, -1) @ self.W_O[l].reshape(-1, cfg.d_model)
            cache.resid.append(cache.resid[l] + update)
        return cache.resid[-1] @ self.W_U, cache

    def run_with_cache(self, tokens: torch.Tensor, intervention: Intervention = NO_INTERVENTION,
                       head_out: bool = True):
        """Logits [B, T, V] and the :class:`Cache` of the pass, with every head's output
        unless ``head_out`` is False (then only where the intervention needs them). Without
        an intervention (which may hold per-sequence activations) the pass runs in chunks."""
        per_head = head_out or needs_head_out(intervention)
        if intervention is NO_INTERVENTION:
            return chunked(lambda part: self._run(part, intervention, per_head), tokens, head_out)
        return self._run(tokens, intervention, per_head=per_head)

    def forward(self, tokens: torch.Tensor, intervention: Intervention = NO_INTERVENTION):
        """Logits [B, T, V]. Per-head outputs are formed only when an intervention needs them."""
        return self._run(tokens, intervention, needs_head_out(intervention), keep_pattern=False)[0]


def chunked(run, tokens: torch.Tensor, head_out: bool = True, chunk: int = EVAL_CHUNK):
    """``run(tokens)``, a pass giving (logits, :class:`Cache`), over chunks of ``tokens``
    joined into one: the same numbers (every sequence's pass is its own), faster on a CPU
    for thousands of sequences, whose activations would not stay in the core's cache at
    once. The heads' outputs are joined only with ``head_out`` (a pass that formed them
    only for its intervention's sake leaves them out)."""
    if len(tokens) <= chunk:
        return run(tokens)
    parts = [run(tokens[i:i + chunk]) for i in range(0, len(tokens), chunk)]
    caches = [cache for _, cache in parts]

    def joined(name):
        return [torch.cat(layers) for layers in zip(*(getattr(c, name) for c in caches))]

    return torch.cat([logits for logits, _ in parts]), Cache(
        tokens=tokens, resid=joined("resid"), pattern=joined("pattern"),
        head_out=joined("head_out") if head_out else [])


def choose_attention(model: AttentionOnlyTransformer, device: torch.device, log=None) -> str:
    """Set and return the fastest attention form for training ``model`` on ``device``.

    A GPU takes PyTorch's fused kernel; a CPU the C++ kernel where it builds here, else
    the explicit form (and ``log`` says why).
    """
    if device.type == "cuda":
        model.attention_form = "sdpa"
    else:
        ok, why = kernel.available(model.cfg.seq_len, model.cfg.d_head)
        model.attention_form = "kernel" if ok else "explicit"
        if not ok and log:
            log(f"attention: explicit, the C++ kernel is not available ({why})")
    return model.attention_form


def build_model(cfg: ModelConfig, seed: int) -> AttentionOnlyTransformer:
    """A freshly initialised model; the initial weights depend only on (cfg, seed)."""
    return AttentionOnlyTransformer(cfg, generator(seed, "init"))
