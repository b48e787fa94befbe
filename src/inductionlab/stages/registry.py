"""Every command of ``inductionlab``: the declarations of every stage folder and of the
workflow's own machinery gathered, and the parser built from them."""
from __future__ import annotations

import argparse

from . import available, documents, reporting, together, tools  # noqa: F401 - importing one registers its commands
from .commands import COMMANDS


def build_parser(description: str = "") -> argparse.ArgumentParser:
    from .. import experiments

    available()  # each stage's package registers its commands
    experiments.available()  # and each experiment's
    parser = argparse.ArgumentParser(prog="inductionlab", description=description)
    sub = parser.add_subparsers(dest="command", required=True)
    for cmd in COMMANDS.values():
        cmd.parser(sub)
    return parser


def run_command(args: argparse.Namespace) -> None:
    """Run the parsed command; one with a ``threads`` option computes on that many threads."""
    cmd = COMMANDS[args.command]
    if "threads" in cmd.options:
        import torch

        torch.set_num_threads(max(1, args.threads))
    cmd.run(**{name: getattr(args, name) for name in cmd.options})
