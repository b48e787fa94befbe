"""The resolved description of one model to train: name, seed, task, model, training.

The workflow writes one ``spec.json`` per (model, seed) from the validated config;
training reads only that file, so a model's inputs are on disk next to it. A model is
either a variant of the config or derived from one by an experiment (a base variant
and fields of its model that differ); the spec's ``variant`` field is the model's name.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from ..atomic import write_text
from .data import TaskConfig
from .model import ModelConfig


def make_spec(config: dict, variant: str, seed: int, derived: "DerivedModel | None" = None) -> dict:
    """The spec of model ``variant`` at ``seed`` from a validated config (defaults filled):
    a variant of the config, or ``derived`` from one."""
    base = derived.base if derived else variant
    if base not in config["variants"]:
        raise KeyError(f"variant {base!r} is not in config 'variants': {sorted(config['variants'])}")
    return {
        "variant": variant,
        "seed": int(seed),
        "task": dict(config["task"]),
        "model": dict(config["variants"][base]) | (dict(derived.changes) if derived else {}),
        "train": dict(config["train"]),
        "device": config.get("device", "cpu"),
    }


@dataclass(frozen=True)
class DerivedModel:
    """A model an experiment trains: the config's variant ``base`` with ``changes`` to its
    model fields (for example ``pos_encoding: learned``)."""

    base: str
    changes: tuple[tuple[str, object], ...]

    @classmethod
    def of(cls, config: dict, name: str, base: str, changes: dict) -> "DerivedModel":
        """Checked against the config: the base exists, the name is new, every changed
        field is a model field and the result is a valid model. Raises ValueError."""
        if name in config["variants"]:
            raise ValueError(f"model {name!r} is already a variant of the config; choose another name")
        if base not in config["variants"]:
            raise ValueError(f"model {name!r}: base variant {base!r} is not in config 'variants' "
                             f"{sorted(config['variants'])}")
        if not changes:
            raise ValueError(f"model {name!r}: no field of {base!r} is changed, so it is {base!r}")
        derived = cls(base, tuple(sorted(changes.items())))
        model_config(make_spec(config, name, 0, derived))  # unknown field or bad value: ValueError
        return derived


def task_config(spec: dict) -> TaskConfig:
    return TaskConfig.from_dict(spec["task"])


def model_config(spec: dict) -> ModelConfig:
    task = task_config(spec)
    return ModelConfig.from_dict(
        {**spec["model"], "vocab_size": task.vocab_size, "seq_len": task.seq_len}
    )


def write_spec(path, spec: dict) -> None:
    write_text(path, json.dumps(spec, indent=2, sort_keys=True) + "\n")


def read_spec(path) -> dict:
    from .loading import BadInput, read_json

    spec = read_json(path, "a spec.json")
    missing = [k for k in ("variant", "seed", "task", "model", "train") if k not in spec]
    if missing:
        raise BadInput(path, f"spec is missing key(s) {missing}")
    return spec
