"""Hand-built models whose behaviour is known exactly."""
import torch

from inductionlab.core.model import AttentionOnlyTransformer, Intervention, ModelConfig


class FixedShift(Intervention):
    """Every head of every layer attends from i to max(i - shift, 0)."""

    def __init__(self, shift: int):
        self.shift = shift

    def pattern(self, layer, pattern):
        T = pattern.shape[-1]
        fixed = torch.zeros(T, T)
        fixed[torch.arange(T), (torch.arange(T) - self.shift).clamp_min(0)] = 1.0
        return fixed.expand_as(pattern)


class ShiftCopyModel(AttentionOnlyTransformer):
    """One head that attends ``shift`` back and copies the attended token.

    Logits at i: e[x_i] (direct path) + gain * e[x_{i-shift}] (head), so the
    prediction is x_{i-shift} whenever gain > 1; gain < 0 makes the head anti-copy.
    """

    def __init__(self, shift: int, gain: float = 2.0, vocab_size: int = 26, seq_len: int = 24):
        super().__init__(ModelConfig(vocab_size=vocab_size, d_model=vocab_size, n_heads=1,
                                     n_layers=1, seq_len=seq_len))
        eye = torch.eye(vocab_size)
        with torch.no_grad():
            self.W_E.copy_(eye)
            self.W_U.copy_(eye)
            self.W_V.copy_(eye[None, None])
            self.W_O.copy_(gain * eye[None, None])
            self.W_Q.zero_()
            self.W_K.zero_()
        self.fixed = FixedShift(shift)

    def _run(self, tokens, intervention, per_head, **kwargs):
        return super()._run(tokens, self.fixed, per_head, **kwargs)


class FixedPatternCopyModel(ShiftCopyModel):
    """One head with a given attention pattern [T, T] that copies what it attends to."""

    def __init__(self, pattern: torch.Tensor, gain: float = 2.0):
        super().__init__(shift=0, gain=gain, seq_len=pattern.shape[-1])
        self.fixed = FixedPattern(pattern)


class FixedPattern(Intervention):
    """Every head of every layer gets the same fixed pattern [T, T]."""

    def __init__(self, pattern: torch.Tensor):
        self.fixed = pattern

    def pattern(self, layer, pattern):
        return self.fixed.to(pattern.dtype).expand_as(pattern)


def every_copy_pattern(T: int, block_len: int) -> torch.Tensor:
    """From query i >= block_len, equal attention on every earlier copy of token i + 1
    (keys 1 <= j <= i, j ≡ i + 1 mod block_len); earlier queries attend to themselves."""
    pattern = torch.zeros(T, T)
    for i in range(T):
        keys = [j for j in range(1, i + 1) if (i + 1 - j) % block_len == 0] if i >= block_len else [i]
        pattern[i, keys] = 1.0 / len(keys)
    return pattern


class PreviousTokenPattern(Intervention):
    """Head ``head`` of layer ``layer`` attends from i to i - 1; at position 0 it attends nowhere
    (a zero row), so it writes nothing there rather than a spurious "previous token"."""

    def __init__(self, layer: int = 0, head: int = 0):
        self.layer, self.head = layer, head

    def pattern(self, layer, pattern):
        if layer != self.layer:
            return pattern
        T = pattern.shape[-1]
        prev = torch.zeros(T, T)
        prev[torch.arange(1, T), torch.arange(T - 1)] = 1.0
        out = pattern.clone()
        out[:, self.head] = prev
        return out


class _Composed(Intervention):
    """A model's own fixed pattern hook first, then the caller's intervention."""

    def __init__(self, fixed: Intervention, outer: Intervention):
        self.fixed, self.outer = fixed, outer

    def layer_inputs(self, layer, cache):
        return self.outer.layer_inputs(layer, cache)

    def use_smear(self, layer):
        return self.outer.use_smear(layer)

    def pattern(self, layer, pattern):
        return self.outer.pattern(layer, self.fixed.pattern(layer, pattern))

    def head_out(self, layer, head_out):
        return self.outer.head_out(layer, head_out)


class InductionCircuitModel(AttentionOnlyTransformer):
    """A two-layer induction circuit that runs through K-composition; two heads per layer.

    The residual stream (D = 3V) has three subspaces: E (dims 0..V-1) holds the token,
    P (V..2V-1) the previous token, R (2V..3V-1) the output of an irrelevant head.
    - layer 0 head 0: previous-token head (pattern fixed to i -> i-1 by a built-in
      pattern hook that composes with any intervention passed in); OV copies E into P;
    - layer 0 head 1: irrelevant; attends by position only, copies E into R, which
      nothing reads;
    - layer 1 head 0: induction head; queries read E, keys read P (gain ``qk_gain``), so
      query i attends to the key j whose previous token equals token i; OV copies E
      into E with gain ``copy_gain``;
    - layer 1 head 1: writes nothing.
    W_U reads E, so the direct path adds +1 to the current token's logit. On blocks of
    distinct letters the model predicts every token after the first occurrence of
    its predecessor; with keys from the embedding (no K-composition) the induction
    head's keys hold only the position, and the circuit is gone.
    """

    def __init__(self, vocab_size: int = 8, seq_len: int = 24, qk_gain: float = 12.0,
                 copy_gain: float = 10.0):
        V = vocab_size
        super().__init__(ModelConfig(vocab_size=V, d_model=3 * V, n_heads=2, n_layers=2,
                                     seq_len=seq_len))
        eye = torch.eye(V)
        E, P, R = slice(0, V), slice(V, 2 * V), slice(2 * V, 3 * V)
        with torch.no_grad():
            for w in (self.W_E, self.W_U, self.W_Q, self.W_K, self.W_V, self.W_O):
                w.zero_()
            self.W_E[:, E] = eye
            self.W_U[E, :] = eye
            # layer 0: head 0 writes the previous token into P, head 1 the current-ish one into R
            self.W_V[0, 0, E, :V] = eye
            self.W_O[0, 0, :V, P] = eye
            self.W_V[0, 1, E, :V] = eye
            self.W_O[0, 1, :V, R] = eye
            # layer 1 head 0: query = current token, key = previous token, copy the attended token
            self.W_Q[1, 0, E, :V] = qk_gain * eye
            self.W_K[1, 0, P, :V] = qk_gain * eye
            self.W_V[1, 0, E, :V] = eye
            self.W_O[1, 0, :V, E] = copy_gain * eye
        self.fixed = PreviousTokenPattern(layer=0, head=0)

    def _run(self, tokens, intervention, per_head, **kwargs):
        return super()._run(tokens, _Composed(self.fixed, intervention), per_head, **kwargs)


class PositionalShiftModel(AttentionOnlyTransformer):
    """One layer, one head, whose positional table alone makes query i attend ``shift`` back.

    No content term (W_Q = W_K = 0): the scores are p_i·p_j/√d. The table is
    p_i = b_i (e_i + e_{i+shift}) in a head of dimension T + shift, so p_i·p_j = 0 for
    every j < i except j = i − shift, where it is b_i b_{i−shift}, against b_i²·2 on the
    diagonal; with b shrinking by a factor 2.5 every ``shift`` positions the key
    ``shift`` back wins every row i >= shift, by a margin that ``gain`` scales up.
    The residual holds the token in its first V dimensions; the head copies what it
    attends to (OV gain ``copy_gain``) and the direct path adds the current token, so
    the prediction at i is token i − shift. ``learned=False`` keeps the same weights with
    the fixed ``original`` table instead: no position is preferred by the table.
    """

    def __init__(self, shift: int = 5, vocab_size: int = 26, seq_len: int = 24,
                 gain: float = 1.5e3, copy_gain: float = 12.0, learned: bool = True):
        D = seq_len + shift
        super().__init__(ModelConfig(vocab_size=vocab_size, d_model=D, n_heads=1, n_layers=1,
                                     seq_len=seq_len,
                                     pos_encoding="learned" if learned else "original"))
        V = vocab_size
        with torch.no_grad():
            for w in (self.W_E, self.W_U, self.W_Q, self.W_K, self.W_V, self.W_O):
                w.zero_()
            self.W_E[:, :V] = torch.eye(V)
            self.W_U[:V, :] = torch.eye(V)
            self.W_V[0, 0] = torch.eye(D)
            self.W_O[0, 0] = copy_gain * torch.eye(D)
            if learned:
                b = gain * 2.5 ** (-torch.arange(seq_len, dtype=torch.float64) / shift)
                table = torch.zeros(seq_len, D, dtype=torch.float64)
                i = torch.arange(seq_len)
                table[i, i] = b
                table[i, i + shift] = b
                self.pos.copy_(table.float())
