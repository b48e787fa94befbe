"""Every command of ``inductionlab``: the declarations of every stage folder and of the
workflow's own machinery gathered, and the parser built from them."""
from __future__ import annotations

import argparse

from . import available, documents, reporting, tools  # noqa: F401 - importing one registers its commands
from .commands import COMMANDS, THREADS, Option, command, say


# the commands that import the experiment folders they use themselves (the config check:
# those switched on), so that no other folder's code runs for them
IMPORT_THEIR_OWN = {"check-config"}


def build_parser(description: str = "", command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command: every stage folder's and every experiment folder's
    that imports (one whose import fails is skipped, see :func:`unknown_command`; its
    tables and figures, which the workflow's own commands read, are declared by then).
    For a ``command`` of :data:`IMPORT_THEIR_OWN`, no experiment folder is imported here."""
    available()  # each stage's package registers its commands
    if command not in IMPORT_THEIR_OWN:
        experiment_folders()  # and each experiment's
    parser = argparse.ArgumentParser(prog="inductionlab", description=description)
    sub = parser.add_subparsers(dest="command", required=True)
    for cmd in COMMANDS.values():
        cmd.parser(sub)
    return parser


def experiment_folders() -> dict:
    """Every experiment folder, imported where it imports (its commands registered)."""
    from .. import experiments

    return experiments.available()


def unknown_command(command: str | None) -> str | None:
    """One line when ``command`` is no command and some experiment folder, which might
    declare it, failed to import (naming each such folder and its error); else None."""
    if command is None or command in COMMANDS:
        return None
    broken = [f"{name}: {folder.problem}" for name, folder in experiment_folders().items()
              if folder.problem is not None and "does not import" in folder.problem]
    if not broken:
        return None
    return (f"no command {command!r} among the commands of the stages and of the experiment "
            f"folders that import; the experiment folder(s) that failed to import, which may "
            f"declare it: {'; '.join(broken)}")


def run_command(args: argparse.Namespace, own_process: bool = False) -> None:
    """Run the parsed command; one with a ``threads`` option computes on that many threads.
    ``own_process``: the command is its process's whole work (the console script), so what
    it imports is kept out of the garbage collector's passes (:mod:`..collector`)."""
    cmd = COMMANDS[args.command]
    if "threads" in cmd.options:
        import torch

        torch.set_num_threads(max(1, args.threads))
        if own_process:
            from ..collector import keep_off

            keep_off()  # torch's objects live to the exit
    cmd.run(**{name: getattr(args, name) for name in cmd.options})


@command("together", "run several inductionlab commands in this one process, one after another",
         commands=Option("each a whole command line without the word inductionlab, quoted as "
                         "one argument", type=str, many=True),
         threads=THREADS)
def together(commands, threads):
    """Several commands in one process: the analyses that read only one model and seed run
    one after another in one interpreter, so the package and torch are imported once (about
    two CPU seconds a process), not once a stage. Each runs as itself: its own options, its
    own record naming it as the writer of its files, its own progress lines."""
    import shlex

    from ..process_cost import part_cost

    parser = build_parser()
    parsed = []
    for line in commands:  # every line parsed before any runs: a typo costs nothing
        words = shlex.split(line)
        if words[:1] == ["together"]:
            raise ValueError(f"{line!r}: together runs other commands, not itself")
        args = parser.parse_args(words)
        if "threads" in COMMANDS[args.command].options:
            args.threads = threads
        parsed.append((words, args))
    for i, (words, args) in enumerate(parsed, 1):
        say(f"[{i}/{len(parsed)}] inductionlab {args.command}")
        with part_cost(args.command, words):
            run_command(args)
