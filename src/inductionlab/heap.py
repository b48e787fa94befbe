"""Freed memory kept for the next allocation instead of handed back to the system, for the
benchmarks that time bare training steps.

A training step allocates and frees the same few tensors of 0.5 to a few MB every step
(the attention pattern, the gradients of the queries, keys and values, the batch's
activations). In a loop of bare steps glibc's allocator keeps serving blocks that large
with fresh mappings, or trims the top of its heap when they are freed, so every step's
pages are faulted in and zeroed anew: a two_layer step took 11.9-13.9 ms so, against
10.2-10.9 ms with the blocks kept. A training job does not pay this: its steps run at the
kept rate (two_layer: 119 CPU s a 10,000-step job, compiling, validation and checkpoints
included), and keeping freed memory in every command did not lower a run's training
seconds (815 against 853 for the default config's 10 models, one seed). So the commands
leave the allocator alone, and ``benchmarks/train_speed.py`` and ``step_profile.py`` call
:func:`keep_freed_memory` to time a step as a job runs it, not the page faults of a loop
that a job never reaches.

Raising ``M_MMAP_THRESHOLD`` and ``M_TRIM_THRESHOLD`` (as the ``MALLOC_MMAP_THRESHOLD_``
and ``MALLOC_TRIM_THRESHOLD_`` environment variables would at start-up) keeps such
blocks in the heap. Elsewhere than glibc (macOS, musl) there is no ``mallopt`` of this
meaning, and nothing is changed.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import platform

M_TRIM_THRESHOLD = -1  # glibc's malloc.h
M_MMAP_THRESHOLD = -3
KEPT_BYTES = 256 << 20  # blocks up to this size come from the heap, and it is not trimmed below it


def keep_freed_memory(limit: int = KEPT_BYTES) -> bool:
    """Make this process's allocator keep freed blocks up to ``limit`` bytes for reuse;
    True where it did (glibc), False where nothing was changed."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, limit)) and bool(mallopt(M_TRIM_THRESHOLD, limit))
