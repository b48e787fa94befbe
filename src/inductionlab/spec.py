"""The resolved description of one model to train: variant, seed, task, model, training.

The workflow writes one ``spec.json`` per (variant, seed) from the validated
config; training reads only that file, so a model's inputs are on disk next to it.
"""
from __future__ import annotations

import json

from .atomic import write_text
from .data import TaskConfig
from .model import ModelConfig


def make_spec(config: dict, variant: str, seed: int) -> dict:
    """The spec of ``variant`` at ``seed`` from a validated config (defaults filled)."""
    if variant not in config["variants"]:
        raise KeyError(f"variant {variant!r} is not in config 'variants': {sorted(config['variants'])}")
    return {
        "variant": variant,
        "seed": int(seed),
        "task": dict(config["task"]),
        "model": dict(config["variants"][variant]),
        "train": dict(config["train"]),
        "device": config.get("device", "cpu"),
    }


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
