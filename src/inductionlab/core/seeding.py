"""Deterministic random generators derived from (seed, purpose).

Every random draw in the project comes from a generator made here, so that the
same config and seed give the same weights, batches and validation sets, and
different purposes (initialisation, training batches, validation) never share
a stream.
"""
from __future__ import annotations

import hashlib

import torch


def derive_seed(seed: int, purpose: str) -> int:
    """A 63-bit integer that depends only on ``seed`` and ``purpose``."""
    digest = hashlib.sha256(f"{int(seed)}:{purpose}".encode()).digest()
    return int.from_bytes(digest[:8], "little") & ((1 << 63) - 1)


def generator(seed: int, purpose: str, device: str | torch.device = "cpu") -> torch.Generator:
    """A ``torch.Generator`` seeded from ``(seed, purpose)``."""
    gen = torch.Generator(device=device)
    gen.manual_seed(derive_seed(seed, purpose))
    return gen


def first_seed(seeds) -> int:
    """The first seed: the one whose model a single-seed figure or table shows (the
    smallest of ``seeds``, so that a table's rows give the same answer as the config)."""
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise ValueError("no seeds")
    return min(seeds)
