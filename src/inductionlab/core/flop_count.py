"""The matrix arithmetic of training, counted from a model's shape: the floating-point
operations (one multiply-add is two) of every matrix product a training step makes.

Per sequence of T positions and per layer, the forward pass multiplies the residual by the
query, key, value and output matrices (4 products of T x D by D x D: 8 T D^2) and forms the
attention scores and their weighted values over all T x T pairs (2 products of T x T x D:
4 T^2 D; the causal half is computed and then masked, so the whole square counts). The
unembedding multiplies T x D by D x V (2 T D V); the embedding and position tables are
lookups, not products. The backward pass makes two products of the same size for each
product of the forward pass (the gradient of each operand), so a step costs three times
its forward pass. Softmax, the optimiser and everything element-wise is left out: the
count is the work a matrix unit must do, the floor of what a step can cost.
"""
from __future__ import annotations


def forward_flop(seq_len: int, vocab_size: int, d_model: int, n_layers: int) -> int:
    """Matrix-product operations of one sequence's forward pass."""
    T, V, D = seq_len, vocab_size, d_model
    return n_layers * (8 * T * D * D + 4 * T * T * D) + 2 * T * D * V


def training_flop(seq_len: int, vocab_size: int, d_model: int, n_layers: int,
                  batch_size: int, steps: int) -> int:
    """Matrix-product operations of ``steps`` training steps of ``batch_size`` sequences."""
    return 3 * forward_flop(seq_len, vocab_size, d_model, n_layers) * batch_size * steps
