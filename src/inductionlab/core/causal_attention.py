"""Causal softmax attention on a CPU as one compiled C++ pass per head, forward and backward.

``causal_attention(q, k, v, scale)`` gives ``(z, pattern)`` with
``pattern = softmax(scale q kᵀ + causal mask)`` and ``z = pattern v``: the numbers of the
model's explicit attention (to float32 rounding), for ``q, k, v`` of shape [B, H, T, d]
(``z``, and the gradients ``dq, dk, dv`` of the backward pass, laid out position-major,
as [B, T, H, d]: the heads joined for the output projection, and the gradients for the
projections' backward pass, without a copy).
The library (``causal_attention.cc``) is built with the machine's C++ compiler for a head
size ``d`` and a longest sequence (one library serves every ``T`` up to the next multiple
of 8) the first time it is asked for, and kept beside inductor's cache; a later process
loads it in milliseconds. It is a ``torch.library`` operator with its own backward, so
``torch.compile`` keeps it as one call inside a compiled training step.

For 8-dimensional heads and 24 positions the pattern, the masked softmax and the weighted
sum never leave a head's registers and stack, which on a CPU takes well under half the time
of the batched matmuls and softmax kernels (``benchmarks/train_speed.py``). The pattern is
an output because the backward pass reads it; it carries no gradient of its own.

:func:`available` says whether the library can be built here (a C++ compiler with GCC's
vector extensions: g++ or clang++, or ``$CXX``) and why not.
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
from pathlib import Path

import torch

SOURCE = Path(__file__).with_name("causal_attention.cc")
FLAGS = ("-O3", "-march=native", "-std=c++17", "-shared", "-fPIC")
_FLOAT_P = ctypes.POINTER(ctypes.c_float)
_LONG_P = ctypes.POINTER(ctypes.c_long)


class KernelUnavailable(RuntimeError):
    """The C++ attention kernel cannot be built or loaded on this machine."""


def supported(seq_len: int, d_head: int) -> bool:
    """Shapes the kernel is written for: a power-of-two head dimension up to 64."""
    return 1 <= seq_len <= 4096 and d_head in (1, 2, 4, 8, 16, 32, 64)


def longest(seq_len: int) -> int:
    """The compiled longest sequence of the library that runs ``seq_len`` positions."""
    return -(-seq_len // 8) * 8


def _compiler() -> str:
    for name in (os.environ.get("CXX"), "g++", "clang++", "c++"):
        if name and shutil.which(name):
            return name
    raise KernelUnavailable("no C++ compiler found (set CXX, or install g++)")


def machine() -> str:
    """What code built with -march=native depends on: the CPU's model and features."""
    lines = []
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.split(":")[0].strip() in ("model name", "flags", "Features", "CPU part"):
                lines.append(line)
                if len(lines) >= 3:
                    break
    except OSError:
        pass
    return "\n".join([platform.machine(), platform.processor(), *lines])


def inductor_cache_dir() -> Path:
    """Where inductor keeps compiled code on disk (its default, or TORCHINDUCTOR_CACHE_DIR)."""
    import getpass

    default = Path(tempfile.gettempdir()) / f"torchinductor_{getpass.getuser()}"
    return Path(os.environ.get("TORCHINDUCTOR_CACHE_DIR", default))


def source_tag() -> str:
    """A digest of the operators' C++ and Python source. Inductor's on-disk cache of compiled
    graphs keys a graph by its code, in which an operator is only its name: a graph compiled
    before the operators changed (their outputs' layout, say) would be taken from the cache
    and fail its checks. :func:`.compile_policy.tag_cache_keys` puts this digest in the key."""
    text = SOURCE.read_text() + Path(__file__).read_text()
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def cache_dir() -> Path:
    """Built libraries, beside inductor's compiled code."""
    return inductor_cache_dir() / "inductionlab"


@functools.lru_cache(maxsize=None)
def _compiler_version(compiler: str) -> str:
    return subprocess.run([compiler, "--version"], capture_output=True, text=True).stdout


def library_path(seq_len: int, d_head: int, compiler: str) -> Path:
    version = _compiler_version(compiler)
    key = "\n".join([SOURCE.read_text(), " ".join(FLAGS), version, machine(),
                     f"T={seq_len} D={d_head}"])
    return cache_dir() / f"causal_attention-T{seq_len}-D{d_head}-{hashlib.sha256(key.encode()).hexdigest()[:16]}.so"


def build(seq_len: int, d_head: int) -> Path:
    """The library for ``(seq_len, d_head)``, compiled now unless a built one is cached.

    Written under a temporary name and renamed, so a process never loads a half-written
    library; two processes building at once both succeed (the last rename wins).
    """
    if not supported(seq_len, d_head):
        raise KernelUnavailable(f"no kernel for seq_len={seq_len}, d_head={d_head} "
                                "(the head dimension must be a power of two up to 64)")
    seq_len = longest(seq_len)
    compiler = _compiler()
    path = library_path(seq_len, d_head, compiler)
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".so.tmp")
    os.close(fd)
    try:
        cmd = [compiler, *FLAGS, f"-DT={seq_len}", f"-DD={d_head}", str(SOURCE), "-o", tmp]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode:
            raise KernelUnavailable(f"{' '.join(cmd)} failed: {done.stderr.strip()[:500]}")
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def _library(seq_len: int, d_head: int) -> ctypes.CDLL:
    return _loaded(longest(seq_len), d_head)


@functools.lru_cache(maxsize=None)
def _loaded(seq_len: int, d_head: int) -> ctypes.CDLL:
    lib = ctypes.CDLL(str(build(seq_len, d_head)))
    # heads in all, heads a batch element, positions, scale
    sizes = [ctypes.c_long, ctypes.c_long, ctypes.c_int, ctypes.c_float]
    lib.causal_attention_forward.argtypes = sizes + [_FLOAT_P] * 5
    lib.causal_attention_backward.argtypes = sizes + [_FLOAT_P] * 8
    lib.causal_attention_forward.restype = lib.causal_attention_backward.restype = None
    lib.heads_from_table.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_long, ctypes.c_long,
                                     _FLOAT_P, _LONG_P] + [_FLOAT_P] * 3
    lib.heads_from_table.restype = ctypes.c_long
    lib.table_from_heads.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_long, _LONG_P] + [_FLOAT_P] * 4
    lib.table_from_heads.restype = None
    return lib


@functools.lru_cache(maxsize=None)
def available(seq_len: int, d_head: int) -> tuple[bool, str]:
    """``(True, "")`` when the kernel loads here for ``d_head`` and every sequence length up
    to ``seq_len`` (greedy decoding runs shorter ones), else ``(False, why)``."""
    try:
        for t in range(8, longest(seq_len) + 1, 8):
            _library(t, d_head)
    except (KernelUnavailable, OSError) as err:
        return False, str(err)
    return True, ""


def _ptr(t: torch.Tensor):
    return ctypes.cast(t.data_ptr(), _FLOAT_P)


def _check(*tensors: torch.Tensor) -> None:
    for t in tensors:
        if t.device.type != "cpu" or t.dtype != torch.float32:
            raise ValueError(f"causal_attention runs on float32 CPU tensors, not {t.dtype} on {t.device}")


@torch.library.custom_op("inductionlab::causal_attention", mutates_args=())
def causal_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                     scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    _check(q, k, v)
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    B, H, T, d = q.shape
    z = _position_major(q)
    pattern = q.new_empty(B, H, T, T)
    _library(T, d).causal_attention_forward(B * H, H, T, scale, _ptr(q), _ptr(k), _ptr(v), _ptr(z),
                                            _ptr(pattern))
    return z, pattern


def _as_position_major(t: torch.Tensor) -> torch.Tensor:
    """``t`` [B, H, T, d] laid out as [B, T, H, d]: as it is, or copied so."""
    if t.transpose(1, 2).is_contiguous():
        return t
    out = _position_major(t)
    out.copy_(t)
    return out


def _position_major(like: torch.Tensor) -> torch.Tensor:
    """An uninitialised [B, H, T, d] tensor laid out as [B, T, H, d]: the heads' outputs as
    the output projection reads them, joined without a copy."""
    B, H, T, d = like.shape
    return like.new_empty(B, T, H, d).transpose(1, 2)


@causal_attention.register_fake
def _(q, k, v, scale):
    B, H, T, d = q.shape
    return _position_major(q), q.new_empty(B, H, T, T)


@torch.library.custom_op("inductionlab::causal_attention_backward", mutates_args=())
def causal_attention_backward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                              pattern: torch.Tensor, dz: torch.Tensor,
                              scale: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    _check(q, k, v, pattern, dz)
    q, k, v, pattern, dz = (t.contiguous() for t in (q, k, v, pattern, dz))
    B, H, T, d = q.shape
    dq, dk, dv = _position_major(q), _position_major(q), _position_major(q)
    _library(T, d).causal_attention_backward(B * H, H, T, scale, _ptr(q), _ptr(k), _ptr(v),
                                             _ptr(pattern), _ptr(dz), _ptr(dq), _ptr(dk), _ptr(dv))
    return dq, dk, dv


@causal_attention_backward.register_fake
def _(q, k, v, pattern, dz, scale):
    return _position_major(q), _position_major(q), _position_major(q)


def _setup_context(ctx, inputs, output):
    q, k, v, scale = inputs
    ctx.save_for_backward(q, k, v, output[1])
    ctx.scale = scale


def _backward(ctx, dz, _dpattern):
    q, k, v, pattern = ctx.saved_tensors
    dq, dk, dv = causal_attention_backward(q, k, v, pattern, dz, ctx.scale)
    return dq, dk, dv, None


causal_attention.register_autograd(_backward, setup_context=_setup_context)


@torch.library.custom_op("inductionlab::heads_from_table", mutates_args=())
def heads_from_table(table: torch.Tensor, tokens: torch.Tensor,
                     n_heads: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Queries, keys and values [B, H, T, d] (contiguous) of every head for ``tokens``
    [B, T], read from ``table`` [V, 3 H d] (the embedding times one layer's projections,
    queries first): ``table[tokens]`` split into heads, without the index's backward pass,
    which on a CPU adds one element at a time (:func:`table_from_heads` adds rows)."""
    _check(table)
    table, tok = table.contiguous(), _tokens(tokens)
    B, T = tok.shape
    d = table.shape[1] // (3 * n_heads)
    q, k, v = (table.new_empty(B, n_heads, T, d) for _ in range(3))
    bad = _library(T, d).heads_from_table(B, T, n_heads, table.shape[0], _ptr(table),
                                          _long_ptr(tok), _ptr(q), _ptr(k), _ptr(v))
    if bad >= 0:
        raise IndexError(f"letter {int(tok.view(-1)[bad])} at position {bad} is not a row of the "
                         f"[{table.shape[0]}, ...] table")
    return q, k, v


@heads_from_table.register_fake
def _(table, tokens, n_heads):
    B, T = tokens.shape
    d = table.shape[1] // (3 * n_heads)
    return tuple(table.new_empty(B, n_heads, T, d) for _ in range(3))


@torch.library.custom_op("inductionlab::table_from_heads", mutates_args=())
def table_from_heads(tokens: torch.Tensor, dq: torch.Tensor, dk: torch.Tensor, dv: torch.Tensor,
                     n_letters: int) -> torch.Tensor:
    """The gradient of :func:`heads_from_table`'s table: each position's gradients added to
    its letter's row, positions in order (batch, then position). The gradients are read
    position-major, as the attention's backward pass writes them."""
    _check(dq, dk, dv)
    tok, (dq, dk, dv) = _tokens(tokens), (_as_position_major(t) for t in (dq, dk, dv))
    B, H, T, d = dq.shape
    dtable = dq.new_zeros(n_letters, 3 * H * d)
    _library(T, d).table_from_heads(B, T, H, _long_ptr(tok), _ptr(dq), _ptr(dk), _ptr(dv),
                                    _ptr(dtable))
    return dtable


@table_from_heads.register_fake
def _(tokens, dq, dk, dv, n_letters):
    B, H, T, d = dq.shape
    return dq.new_empty(n_letters, 3 * H * d)


def _tokens(tokens: torch.Tensor) -> torch.Tensor:
    if tokens.dtype != torch.int64 or tokens.device.type != "cpu" or tokens.dim() != 2:
        raise ValueError(f"tokens must be a [B, T] int64 CPU tensor, not {tokens.dtype} "
                         f"{tuple(tokens.shape)} on {tokens.device}")
    return tokens.contiguous()


def _long_ptr(t: torch.Tensor):
    return ctypes.cast(t.data_ptr(), _LONG_P)


def _table_setup(ctx, inputs, output):
    table, tokens, _ = inputs
    ctx.save_for_backward(tokens)
    ctx.n_letters = table.shape[0]


def _table_backward(ctx, dq, dk, dv):
    (tokens,) = ctx.saved_tensors
    return table_from_heads(tokens, dq, dk, dv, ctx.n_letters), None, None


heads_from_table.register_autograd(_table_backward, setup_context=_table_setup)
