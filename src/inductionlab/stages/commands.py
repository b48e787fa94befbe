"""Every command of ``inductionlab``, declared once: its name, what it does, its options.

A command is a function registered with :func:`command`; each keyword of the
declaration is one option, ``--name-with-dashes`` on the command line and
``name_with_underscores`` as the function's argument. A rule's shell line names every
path it passes (``--model {input.model}``), so it does not depend on argument order.
Only the commands people type by hand (:data:`BY_HAND`) take positional arguments.

The parser imports no stage module's dependencies: every stage imports what it
computes with when it runs, so a light command (``write-json``) stays light.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Callable


@dataclass(frozen=True)
class Option:
    """One option of a command. ``many``: one or more values; ``positional``: given
    without its name (commands typed by hand only)."""

    help: str = ""
    type: Callable = Path
    many: bool = False
    required: bool = True
    default: object = None
    flag: bool = False
    positional: bool = False

    def add_to(self, parser: argparse.ArgumentParser, name: str) -> None:
        if self.flag:
            parser.add_argument(f"--{name.replace('_', '-')}", dest=name, action="store_true",
                                help=self.help)
            return
        kwargs = {"type": self.type, "help": self.help}
        if self.many:
            kwargs["nargs"] = "+" if self.required else "*"
        if self.positional:
            parser.add_argument(name, metavar=name.upper(), **kwargs)
            return
        if not self.required:
            kwargs["default"] = self.default
        parser.add_argument(f"--{name.replace('_', '-')}", dest=name, required=self.required,
                            metavar=name.upper(), **kwargs)


def path(help: str = "") -> Option:
    return Option(help)


def paths(help: str = "") -> Option:
    return Option(help, many=True)


def optional_path(help: str = "") -> Option:
    return Option(help, required=False)


def integer(help: str = "", default: int | None = None) -> Option:
    return Option(help, type=int, required=default is None, default=default)


def text(help: str = "", default: str | None = None, required: bool = False) -> Option:
    return Option(help, type=str, required=required, default=default)


def flag(help: str = "") -> Option:
    return Option(help, flag=True, required=False)


def positive_integer(text: str) -> int:
    """An integer of at least 1 (a count of threads, of steps)."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not a positive integer")
    return value


THREADS = Option("CPU threads of the computation (at least 1)", type=positive_integer,
                 required=False, default=1)


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    options: dict[str, Option]
    run: Callable

    def parser(self, sub) -> argparse.ArgumentParser:
        p = sub.add_parser(self.name, help=self.help, description=self.help)
        for name, option in self.options.items():
            option.add_to(p, name)
        return p


COMMANDS: dict[str, Command] = {}

# Typed by people, documented in the README with positional arguments; no rule runs them.
BY_HAND = ("complete", "circuits", "check-config")


def command(name: str, help: str, /, **options: Option):
    """Register the decorated function as command ``name`` with ``options``."""
    def register(run):
        if name in COMMANDS:
            raise ValueError(f"command {name!r} is declared twice")
        if name not in BY_HAND and any(o.positional for o in options.values()):
            raise ValueError(f"command {name!r}: only commands typed by hand take positional "
                             "arguments")
        COMMANDS[name] = Command(name, help, dict(options), _recorded(name, run, options))
        return run
    return register


# A command given one of these files is about one model and seed: every file it reads that
# belongs to a model must belong to that one (inductionlab.records).
ONE_MODEL_OPTIONS = ("model", "spec", "weights")


def _recorded(name: str, run: Callable, options: dict) -> Callable:
    """``run`` inside a record of what it reads (:class:`inductionlab.records.recording`):
    every file it writes gets a record naming the command, the model and seed, its inputs."""
    one_model = any(options.get(o) is not None and options[o].type is Path
                    for o in ONE_MODEL_OPTIONS)

    def recorded(**kwargs):
        from .. import records

        with records.recording(f"inductionlab {name}", one_model=one_model):
            return run(**kwargs)
    return recorded


def write_tables(tables: dict, outputs: dict) -> None:
    """Each of ``tables`` (name -> frame) to ``outputs[name]``, atomically."""
    from ..atomic import write_csv

    for name, out in outputs.items():
        write_csv(out, tables[name])


def say(message: str) -> None:
    """A stage's progress line, on standard error (the rule's log)."""
    import sys

    print(message, file=sys.stderr, flush=True)


def write_npz(path, arrays: dict) -> None:
    """``arrays`` to the archive ``path``, atomically."""
    import numpy as np

    from ..atomic import atomic_path

    with atomic_path(path, suffix=".npz") as tmp:
        np.savez(tmp, **arrays)


def model_title(path) -> str:
    """'variant seed N:' from a results/{variant}/seed{N}/... path, else the file name."""
    parts = Path(path).parts
    if len(parts) >= 3 and parts[-2].startswith("seed"):
        return f"{parts[-3]} {parts[-2].replace('seed', 'seed ')}:"
    return f"{Path(path).name}:"
