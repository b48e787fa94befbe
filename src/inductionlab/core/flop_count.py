"""The matrix arithmetic of training, counted from a model's shape: the floating-point
operations (one multiply-add is two) of every matrix product a training step makes; and
the rate a core can do it at, its FP32 peak.

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

import time
from pathlib import Path


def forward_flop(seq_len: int, vocab_size: int, d_model: int, n_layers: int) -> int:
    """Matrix-product operations of one sequence's forward pass."""
    T, V, D = seq_len, vocab_size, d_model
    return n_layers * (8 * T * D * D + 4 * T * T * D) + 2 * T * D * V


def training_flop(seq_len: int, vocab_size: int, d_model: int, n_layers: int,
                  batch_size: int, steps: int) -> int:
    """Matrix-product operations of ``steps`` training steps of ``batch_size`` sequences."""
    return 3 * forward_flop(seq_len, vocab_size, d_model, n_layers) * batch_size * steps


def core_peak(cpuinfo: str | None = None) -> dict:
    """The core's name, vector units, FP32 flop per cycle, clock (GHz) and peak (GFLOP/s),
    from ``/proc/cpuinfo``: two 512-bit FMA pipes do 64 flop a cycle; AMD's Zen 4 runs
    AVX-512 on two 256-bit pipes, 32, as does AVX2 with two FMA pipes; without FMA, 16.
    The clock is the one the kernel reports (``cpu MHz``), often the base clock.
    ``cpuinfo``: that file's text (default: this machine's)."""
    source = Path("/proc/cpuinfo")
    info = cpuinfo if cpuinfo is not None else (source.read_text() if source.exists() else "")
    fields = {}
    for line in info.splitlines():
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    flags = set(fields.get("flags", "").split())
    vendor, family = fields.get("vendor_id", ""), int(fields.get("cpu family", "0") or 0)
    if "avx512f" in flags and vendor == "AuthenticAMD" and family == 25:
        units, per_cycle = "AVX-512 on two 256-bit FMA pipes (Zen 4)", 32
    elif "avx512f" in flags:
        units, per_cycle = "AVX-512, two 512-bit FMA pipes assumed", 64
    elif "fma" in flags and "avx2" in flags:
        units, per_cycle = "AVX2 with two 256-bit FMA pipes", 32
    else:
        units, per_cycle = "no FMA (SSE/AVX)", 16
    ghz = float(fields.get("cpu MHz", "0") or 0) / 1000
    return {"name": fields.get("model name", "unknown core"), "units": units,
            "flop_per_cycle": per_cycle, "ghz": ghz, "gflops": per_cycle * ghz}


def measured_matmul_gflops(n: int = 768, repeats: int = 20) -> float:
    """The rate of a one-thread n x n float32 matrix product (best of ``repeats``)."""
    import torch

    torch.set_num_threads(1)
    a, b = torch.randn(n, n), torch.randn(n, n)
    torch.mm(a, b)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        torch.mm(a, b)
        best = min(best, time.perf_counter() - start)
    return 2 * n**3 / best / 1e9


def at_least_measured(peak: dict, matmul_gflops: float) -> dict:
    """``peak`` raised to a measured matrix product's rate where that is higher: the core
    then runs faster than the clock the kernel reports (a boost clock), at least that fast."""
    if matmul_gflops <= peak["gflops"]:
        return peak
    return peak | {"ghz": matmul_gflops / peak["flop_per_cycle"], "gflops": matmul_gflops,
                   "units": peak["units"] + ", clock at least the matrix product's"}
