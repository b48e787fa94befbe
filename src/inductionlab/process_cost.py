"""What one command cost the machine, from the kernel's accounting, appended to a log.

With ``INDUCTIONLAB_CPU_LOG`` set to a file, every ``inductionlab`` command appends one JSON
line to it as it exits: the command, its arguments, its user and system CPU seconds
(its own and those of the children it waited for, as the kernel counts them: imports,
compiler workers and every thread included) and its peak resident memory. Lines are
appended whole (one ``write`` of a short line to a file opened for appending), so jobs
running at once never interleave. ``benchmarks/run_cost.py`` sets the variable and reads
the lines. Without the variable nothing is written.

A command that runs others in its process (``together``) appends a line for each of them
with what it cost (``part_of`` names the process's command), and its own line then holds
only the rest (imports, parsing): the lines of a log add up to the processes' cost.
"""
from __future__ import annotations

import contextlib
import json
import os
import resource
import sys

LOG_VARIABLE = "INDUCTIONLAB_CPU_LOG"
_PARTS = {"user_s": 0.0, "sys_s": 0.0}  # what the lines of this process's parts hold


def usage() -> dict:
    """CPU seconds (user, system) and peak resident memory (MB) of this process and its
    waited-for children so far."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"user_s": round(own.ru_utime + children.ru_utime, 3),
            "sys_s": round(own.ru_stime + children.ru_stime, 3),
            # Linux gives kilobytes
            "max_rss_mb": round(max(own.ru_maxrss, children.ru_maxrss) / 1024, 1)}


def record(command: str, argv: list[str], status: int) -> None:
    """Append this process's cost (less its parts' lines) to the log the environment
    names, if it names one."""
    now = usage()
    _append({"command": command, "argv": list(argv), "status": status, **now,
             **{k: round(now[k] - _PARTS[k], 3) for k in _PARTS}})


@contextlib.contextmanager
def part_cost(command: str, argv: list[str], part_of: str = "together"):
    """Append the cost of the block, one command run inside another's process, as its own
    line (``part_of``: the process's command)."""
    before = usage()
    status = 1
    try:
        yield
        status = 0
    finally:
        after = usage()
        spent = {k: round(after[k] - before[k], 3) for k in _PARTS}
        for k in _PARTS:
            _PARTS[k] += spent[k]
        _append({"command": command, "argv": list(argv), "status": status, "part_of": part_of,
                 **spent, "max_rss_mb": after["max_rss_mb"]})


def _append(entry: dict) -> None:
    path = os.environ.get(LOG_VARIABLE)
    if not path:
        return
    line = json.dumps(entry) + "\n"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)
    except OSError as err:
        print(f"inductionlab: could not append to {LOG_VARIABLE} file {path}: {err}", file=sys.stderr)
