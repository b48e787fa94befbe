"""What one command cost the machine, from the kernel's accounting, appended to a log.

With ``INDUCTIONLAB_CPU_LOG`` set to a file, every ``inductionlab`` command appends one JSON
line to it as it exits: the command, its arguments, its user and system CPU seconds
(its own and those of the children it waited for, as the kernel counts them: imports,
compiler workers and every thread included) and its peak resident memory. Lines are
appended whole (one ``write`` of a short line to a file opened for appending), so jobs
running at once never interleave. ``benchmarks/run_cost.py`` sets the variable and reads
the lines. Without the variable nothing is written.
"""
from __future__ import annotations

import json
import os
import resource
import sys

LOG_VARIABLE = "INDUCTIONLAB_CPU_LOG"


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
    """Append this process's cost to the log the environment names, if it names one."""
    path = os.environ.get(LOG_VARIABLE)
    if not path:
        return
    line = json.dumps({"command": command, "argv": list(argv), "status": status, **usage()}) + "\n"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)
    except OSError as err:
        print(f"inductionlab: could not append to {LOG_VARIABLE} file {path}: {err}", file=sys.stderr)
