"""What the tests share: the repository's paths, the tiny config, the snakemake command line
and hand-made specs. Imported by the tests (``from helpers import ...``); the fixtures are in
conftest.py."""
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"
TINY_CONFIG = ROOT / "tests" / "config.tiny.yaml"
EXTRA_STAGE = ROOT / "tests" / "extra_stage.smk"


def write_tiny_config(work):
    """tests/config.tiny.yaml plus the test-only extra stage, as ``work``/config.yaml."""
    config = yaml.safe_load(TINY_CONFIG.read_text())
    config["extra_rules"] = config.get("extra_rules", []) + [str(EXTRA_STAGE)]
    (work / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))


def snakemake_command(work, *args):
    """The ``snakemake`` command line of this repository's workflow, run in ``work``."""
    return [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-d", str(work),
            *map(str, args)]


TRAIN = {"steps": 30, "batch_size": 32, "lr": 1e-3, "weight_decay": 1.0, "eval_every": 10,
         "val_size": 64, "val_seed": 7, "n_checkpoints": 6}


def spec_document(variant: str, seed: int, model: dict, task: dict | None = None) -> dict:
    """A complete spec document for a hand-built model (saved in its files, never trained)."""
    return {"variant": variant, "seed": seed, "task": dict(task or {}), "model": dict(model),
            "train": dict(TRAIN), "device": "cpu"}


def tiny_spec(variant="two_layer", seed=0, steps=30, **model):
    """A spec for a fast training run."""
    model = {"n_layers": 2, "d_model": 32, "n_heads": 4, "pos_encoding": "original",
             "smear_layers": [], "smear_form": "per_position", **model}
    return {
        "variant": variant, "seed": seed,
        "task": {"vocab_size": 26, "block_len": 6, "n_blocks": 4},
        "model": model,
        "train": {**TRAIN, "steps": steps},
        "device": "cpu",
    }


def stage_settings(name: str, task: dict | None = None, **sections) -> dict:
    """Settings file ``name`` as the workflow writes it (results/settings/<name>.json): the
    schema's defaults with ``sections`` (config sections, e.g. behaviour={...}) over them."""
    from inductionlab.config import overlay, validate_config
    from inductionlab.stages.settings import settings_document

    config = overlay({"seeds": [0], "variants": {"one_layer": {"n_layers": 1}},
                      **({"task": dict(task)} if task else {})}, sections)
    return settings_document(validate_config(config, SCHEMA), name)


def write_up_sources(T: int = 24, n: int = 6):
    """The sources of one sequence of the write-up's task (block n, T tokens): [1, T, T]."""
    import torch

    from inductionlab.core.task_kinds import periodic_sources

    return periodic_sources(torch.tensor([n]), torch.tensor([0]), T)


def positional_masks(name: str, T: int = 24, n: int = 6):
    """The copy-seeking scores' masks written with position arithmetic, as they read on the
    write-up's task (block n): the reference that the masks read from sources must equal."""
    import torch

    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    if name == "induction":
        return (j >= 1) & (j <= i) & ((i + 1 - j) % n == 0), torch.arange(T) >= n
    if name == "nearest_copy":
        return j == i - (n - 1), torch.arange(T) >= n
    if name == "first_block":
        return (j >= 1) & (j < n) & (j == (i + 1) % n), torch.arange(T) >= 2 * n
    raise ValueError(name)


def phase_change_table(frame, roles: dict, layers, seed: int = 0):
    """A phase-change table of one model as the stacked table holds it: measured, then the
    head-role rule ``roles`` applied (as the aggregate step applies it)."""
    from inductionlab.stages.dynamics.dynamics import decide_formed, measure_phase_change

    return decide_formed(measure_phase_change(frame, layers, seed), roles)
