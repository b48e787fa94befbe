"""Python's cyclic garbage collector kept off the objects a command never frees.

A command that imports torch holds objects that live from start to exit: about 190,000
tracked by the collector after the imports, 420,000 after a compiled training job (torch,
sympy, inductor's graphs). The collector's full passes walk every one of them: a few times
while the command runs (0.2 s a pass after compiling) and once more as the interpreter
exits, where that pass and what it frees took 1.2-1.4 s after a training job (py-spy:
``gc_collect_main``), spent after the command's work is done and its files are written.
:func:`keep_off` moves every object alive now into the collector's permanent generation,
which its passes skip: called once the heavy imports are done and again as the command
exits, it leaves those passes only the objects made since.

Nothing is freed differently: objects freed by their reference counts (almost all of
them) still are, and a frozen object that becomes garbage is reclaimed when the process
ends, as all memory is. Files are never left to the collector: every output is written
and closed before its command returns.
"""
from __future__ import annotations

import gc


def keep_off() -> int:
    """Freeze every object alive now out of the collector's passes; how many are frozen
    in all."""
    gc.freeze()
    return gc.get_freeze_count()
