"""Command line: ``inductionlab <command> --option value ...``; the workflow's rules call
these. Every command is declared once, in the stage layer (:mod:`inductionlab.stages`)."""
from __future__ import annotations

import os
import sys

from . import experiments  # noqa: F401 - where a task kind the core lacks is looked for


def build_parser(command: str | None = None):
    """The parser of every command (for ``command``, the one asked: see
    :func:`inductionlab.stages.registry.build_parser`)."""
    from .stages.registry import build_parser as parser_of_every_command

    return parser_of_every_command(__doc__, command)


def main(argv=None, own_process: bool = False) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    asked = words[0] if words and not words[0].startswith("-") else None
    parser = build_parser(asked)
    from .stages.registry import unknown_command

    unknown = unknown_command(asked)
    if unknown:
        print(f"inductionlab: error: {unknown}", file=sys.stderr)
        return 2
    args = parser.parse_args(words)
    status = 1
    try:
        status = _run(args, own_process)
    finally:
        from .process_cost import record

        record(args.command, sys.argv[1:] if argv is None else list(argv), status)
        if own_process:
            from .collector import keep_off

            keep_off()  # the interpreter's last full collection then scans nothing it would free
    return status


def entry() -> int:
    """The console script: one command, the process's whole work."""
    return main(own_process=True)


def _run(args, own_process: bool = False) -> int:
    from .stages.registry import run_command

    # Every command computes with --threads threads (1 where it has no such option), as
    # the workflow's job slots assume, and never more than the cores it may use (more only
    # take turns, and thread pools of tens of thousands crash); set before torch or numpy
    # is imported, whose thread pools read it. A variable set in the environment is left
    # as it is.
    if getattr(args, "threads", None) is not None:
        args.threads = usable_threads(args.command, args.threads)
    threads = str(getattr(args, "threads", 1))
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(name, threads)
    try:
        run_command(args, own_process)
    except Exception as err:  # noqa: BLE001 - sorted below; imported only now, so a light command stays light
        from .config import ConfigError
        from .core.train import TrainingDiverged

        if not isinstance(err, (ConfigError, TrainingDiverged, ValueError, OSError)):
            raise
        # BadInput (a ValueError) names the file; an OSError names it in its message.
        print(f"inductionlab {args.command}: error: {os_words(err)}", file=sys.stderr)
        return 1
    return 0


def os_words(err: Exception) -> str:
    """``err``'s message; the system's own (``[Errno 20] Not a directory: 'x'``) as
    ``x: not a directory``."""
    if isinstance(err, OSError) and err.strerror and str(err).startswith("[Errno"):
        where = f"{err.filename}: " if err.filename is not None else ""
        return f"{where}{err.strerror[0].lower()}{err.strerror[1:]}"
    return str(err)


def usable_threads(command: str, asked: int) -> int:
    """``asked`` threads, at least 1 and at most the cores this process may use (saying so
    on standard error when that is fewer)."""
    from .workflow_checks import usable_cores

    cores = usable_cores()
    if asked > cores:
        print(f"inductionlab {command}: --threads {asked} is more than the {cores} core(s) "
              f"this process may use; using {cores}", file=sys.stderr)
    return max(1, min(asked, cores))


if __name__ == "__main__":
    sys.exit(entry())
