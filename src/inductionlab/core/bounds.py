"""Rough upper estimates of the memory a job takes, from the config alone, and the memory
this machine gives a process: a config whose jobs cannot fit is refused before any job
starts, instead of swapping or being killed hours in.

Estimates count the float32 tensors that core/model.py (its explicit attention form, the
one that keeps the most) and core/train.py hold at their peak; :data:`SLACK` covers
temporaries. Measured peaks of training jobs are half to two thirds of the estimate
(one is checked in tests/test_config_bounds.py).
"""
from __future__ import annotations

import os
from pathlib import Path

FLOAT = 4  # bytes of a float32
SLACK = 1.25  # temporaries and the allocator's rounding
BASE = 512 * 2**20  # a process with torch imported, before any tensor
# Sequences per validation pass (core.metrics.evaluate): a chunk's activations stay in the
# core's cache, three times faster than 4,096 at once for a 2-layer model on a CPU, and the
# same logits
EVAL_CHUNK = 256
# a logistic fit over the checkpoints (analysis.phase_change) needs this many points, so the
# checkpoint schedule must give them
MIN_FIT_POINTS = 5


def _shape(variant: dict, task: dict) -> tuple[int, int, int, int, int]:
    """(T, V, D, H, L): sequence length (the variant's own context, if it sets one),
    vocabulary, width, heads and layers."""
    return (variant.get("context") or task["block_len"] * task["n_blocks"], task["vocab_size"],
            variant["d_model"], variant["n_heads"], variant["n_layers"])


def parameter_floats(variant: dict, task: dict) -> int:
    """Weights of one model: embedding, unembedding, Q, K, V, O, positions, smear weights."""
    T, V, D, H, L = _shape(variant, task)
    return 2 * V * D + 4 * L * D * D + T * D + L * H * T


def training_floats(variant: dict, task: dict, train: dict) -> dict[str, int]:
    """The floats one model of a training job holds at its peak, by part: ``step`` (a
    batch through the model and back), ``validation`` (a validation chunk's forward pass
    and the whole validation set's logits; the larger of the two is the peak) and
    ``state`` (weights, gradients, Adam's two moments). See :func:`training_bytes`."""
    T, V, D, H, L = _shape(variant, task)
    pattern = H * T * T
    val = train["val_size"]
    return {"step": train["batch_size"] * (L * (pattern + 8 * T * D) + 4 * pattern + 3 * T * V),
            "validation": (min(val, EVAL_CHUNK) * (L * (pattern + 3 * T * D) + 2 * pattern)
                           + val * T * (V + 3)),
            "state": 4 * parameter_floats(variant, task)}


def training_bytes(variant: dict, task: dict, train: dict) -> int:
    """Peak memory of one training job of ``variant`` (its model fields) on ``task``
    (vocab_size, block_len, n_blocks) with ``train`` (the config's train section).

    Per sequence of a batch, what the forward pass keeps for the backward pass: every
    layer's attention pattern [H, T, T] and its queries, keys, values, heads' output and
    residual (8 x [T, D]); one layer's scores and their gradients at a time (4 x [H, T, T]);
    the logits with their log-softmax and gradient (3 x [T, V]). Or a validation chunk's
    forward pass with the whole validation set's logits, when larger. Plus the weights with
    their gradients and Adam's two moments; all times ``seeds_per_job``, which a stacked
    job holds at once.
    """
    parts = training_floats(variant, task, train)
    per_model = max(parts["step"], parts["validation"]) + parts["state"]
    return BASE + int(SLACK * FLOAT * train.get("seeds_per_job", 1) * per_model)


def analysis_bytes(variant: dict, task: dict, n_sequences: int) -> int:
    """Peak memory of an analysis that scores ``n_sequences`` sequences in one pass,
    keeping every attention pattern and each head's output [H, T, D]: the behaviour
    stage's head scores run three such passes (the sequences, their distinct-letter and
    positional controls) and keep them all."""
    T, V, D, H, L = _shape(variant, task)
    pattern = H * T * T
    per_sequence = 3 * L * (pattern + 4 * T * D) + L * H * T * D + 2 * pattern + 3 * T * V
    return BASE + int(SLACK * FLOAT * n_sequences * per_sequence)


def pca_bytes(n_vectors: int, eval_size: int, seq_len: int) -> int:
    """Peak memory of the one PCA of every checkpoint's per-token losses
    (stages/dynamics/loss_pca.py): ``n_vectors`` (models x seeds x checkpoints) rows of
    ``eval_size`` x (seq_len - 1) losses, in float64, four copies at once (the blocks read,
    the matrix, its centred copy, the SVD's factors)."""
    return BASE + int(SLACK * 8 * 4 * n_vectors * eval_size * (seq_len - 1))


def available_memory() -> int | None:
    """Bytes of memory this process may use: the machine's, capped by a cgroup's
    memory.max (v2) or limit (v1) and by an address-space limit (ulimit -v). None when
    unknown."""
    found = []
    try:
        found.append(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        pass
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(path).read_text().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 2**60:  # v1 writes a huge number for "no limit"
            found.append(int(text))
    try:
        import resource

        limit = resource.getrlimit(resource.RLIMIT_AS)[0]
        if limit != resource.RLIM_INFINITY:
            found.append(limit)
    except (ImportError, ValueError, OSError):
        pass
    return min(found) if found else None


def gigabytes(n: int) -> str:
    return f"{n / 2**30:.1f} GB"
