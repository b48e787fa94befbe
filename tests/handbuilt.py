"""Hand-built models whose behaviour is known exactly."""
import torch

from inductionlab.model import AttentionOnlyTransformer, Intervention, ModelConfig


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

    def _run(self, tokens, intervention, per_head):
        return super()._run(tokens, self.fixed, per_head)
