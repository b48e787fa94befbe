"""Values given on Snakemake's command line (``--config key=value``), read as a config file
would read them.

Snakemake reads a ``--config`` value first as an integer, a float or a boolean, then as YAML
with every scalar kept as text: ``--config "seeds=[0,1]"`` gives the seeds ``['0', '1']``,
which no integer setting takes. Here every text inside a given value is read again as YAML
(the safe loader, as :func:`inductionlab.config.read_yaml` reads a file), so ``seeds=[0,1]``
is the list of integers it says and ``train={steps: 100}`` sets one key of ``train:``.
A text YAML reads as text stays as it is.

Snakemake itself refuses a dotted key (``--config train.steps=100``: "Config entry must
start with a valid identifier") before the workflow is read; the nested form above is the
way to set one key of a section.
"""
from __future__ import annotations

import yaml


def _typed(value):
    if isinstance(value, str):
        try:
            read = yaml.safe_load(value)
        except yaml.YAMLError:
            return value
        return read if isinstance(read, (int, float, bool, str)) or read is None else value
    if isinstance(value, dict):
        return {k: _typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    return value


def retype_overrides(config: dict, given) -> dict:
    """``config`` with every value of ``given`` (Snakemake's ``--config`` mapping, already
    merged into ``config``) read again as YAML, in place; ``config`` returned."""
    _merge(config, _typed(dict(given or {})))
    return config


def _merge(target: dict, typed: dict) -> None:
    for key, value in typed.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            _merge(target[key], value)
        else:
            target[key] = value
