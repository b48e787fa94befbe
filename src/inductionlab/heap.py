"""Freed memory kept for the next allocation instead of handed back to the system.

A training step allocates and frees the same few tensors of 0.5 to a few MB every step
(the attention pattern, the gradients of the queries, keys and values, the batch's
activations). glibc's allocator serves blocks that large with their own mappings, or
trims the heap when one at its top is freed, so by default every step maps fresh pages
and the kernel faults in and zeroes each one on first touch: about a tenth of a two_layer
step on the development machine. Raising the two thresholds (``M_MMAP_THRESHOLD`` and
``M_TRIM_THRESHOLD``, as the ``MALLOC_MMAP_THRESHOLD_`` and ``MALLOC_TRIM_THRESHOLD_``
environment variables would at start-up) keeps such blocks in the heap, where the next
step finds them already mapped. A process's peak memory does not grow by it; what it has
freed below that peak is kept until it exits instead of returned at once.

Elsewhere than glibc (macOS, musl) there is no ``mallopt`` of this meaning, and nothing
is changed.
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
